/* Integers beyond 64 bits through jansson, exactly (docs/tools.md, "Big integers"). jansson
 * refuses an integer it cannot hold in json_int_t; an MCP server may answer one, and a guest
 * may pass one, and both of the guest's languages hold them exactly. A value loaded here holds
 * each such integer as a marker string (a NUL, a per-process random token and the digits),
 * which only json_dumps_exact turns back into the number: the token is not the guest's or a
 * server's to know, so no string they send can become a number.
 *
 * For the engine's own use, beside jansson: the upstream (MCP client) path. */
#ifndef CODECELL_EXACT_INTEGERS_H
#define CODECELL_EXACT_INTEGERS_H

#include <jansson.h>
#include <stddef.h>

/* json_loadb, but an integer jansson would refuse as too big is kept (as a marker). */
json_t *json_loadb_exact(const char *text, size_t len, size_t flags, json_error_t *error);
json_t *json_loads_exact(const char *text, size_t flags, json_error_t *error);
/* json_dumps, with every marker written back as its integer's digits. */
char *json_dumps_exact(const json_t *value, size_t flags);

#endif
