/* The one rule for the names the guest writes for an MCP server's tools: the binding of a tool
 * ("get-sum" -> get_sum) and, in Ruby, the module of a server (my_docs -> MyDocs). The cell's
 * tools (upstream_tools.c), the configuration's check for collisions (config_mcp.c) and the
 * signatures in the description (tool_signatures.c) all use it, so the guest calls by the
 * name it was told. */
#ifndef CODECELL_GUEST_NAMES_H
#define CODECELL_GUEST_NAMES_H

#include <stddef.h>

/* Each character other than an ASCII letter, digit or '_' becomes '_', and a name that would
 * start with a digit gets a leading '_' ("get-sum" -> "get_sum"). < 0 when it does not fit in
 * size. */
int guest_name_sanitize(const char *name, char *out, size_t size);
/* The Ruby module of a server's bindings: memory -> Memory, my_docs -> MyDocs (the rule of
 * guest/ruby/prelude.rb: a letter or digit at the start or after '_' is upcased, that '_'
 * dropped). */
void guest_module_name(const char *server, char *out, size_t size);

#endif
