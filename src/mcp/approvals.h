/* Approval of host-tool calls by the MCP client (docs/mcp.md, "Approval"): the approval
 * callback of every cell of the server asks the client whose tools/call runs the code, by
 * elicitation in form mode, and records each decision in the operator's log. */
#ifndef CODECELL_MCP_APPROVALS_H
#define CODECELL_MCP_APPROVALS_H

#include <jansson.h>

#include "mcp.h"
#include "server.h"

/* One tools/call's run, as the engine hands it back to its callbacks (the run's
 * options.userdata): where its notifications and questions go. Lives on the call's stack for
 * the run's length; the engine calls nothing with it after the run returns. */
struct mcp_run {
        struct mcp_sink *sink;
        const json_t *progress_token; /* or NULL: no progress reports */
        struct mcp_client *client;
        const struct mcp_call *call;
        const codecell_cancel *cancel;
        const char *cell; /* the MCP tool's name */
};

/* Sets the approval callback of every cell of the server. */
void mcp_approvals_install(struct mcp_server *server);

#endif
