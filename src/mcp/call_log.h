/* The operator's log line of one tools/call (oplog.h): who, which cell and session, the
 * status and what it cost; the code and what it produced only with --log-content. */
#ifndef CODECELL_MCP_CALL_LOG_H
#define CODECELL_MCP_CALL_LOG_H

#include <jansson.h>

#include "codecell.h"

/* client: the client's session prefix ("m3-", logged as "m3"); session: as the client named
 * it, or NULL;
 * code: the code as received; network: the run's connections through its cell's proxy
 * (codecell_result_network_json, parsed), or NULL; duration_ms: from the call to the result. */
void call_log(const char *client, const char *cell, const char *session, const json_t *code,
              const codecell_result *res, const json_t *network, double duration_ms);

#endif
