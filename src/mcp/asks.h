/* Requests from the server to its client (elicitation/create), sent while one of the client's
 * own requests runs, and the client's answers routed back to the thread that asked. A
 * transport hands every JSON-RPC response it reads to mcp_handle(), which brings it here. */
#ifndef CODECELL_MCP_ASKS_H
#define CODECELL_MCP_ASKS_H

#include <jansson.h>
#include <stdbool.h>

#include "mcp.h"
#include "server.h"

/* Notes what the client declared at initialize (params.capabilities). */
void mcp_client_note_capabilities(struct mcp_client *client, const json_t *params);
/* Whether it can be asked by elicitation in form mode. */
bool mcp_client_elicits(struct mcp_client *client);

enum mcp_ask_outcome {
        MCP_ASK_ANSWERED,  /* *ret_answer holds the response (result or error) */
        MCP_ASK_TIMEOUT,   /* no answer by the deadline (the request is then cancelled) */
        MCP_ASK_CANCELLED, /* the client's own request was cancelled meanwhile */
        MCP_ASK_GONE,      /* the client ended, or the request could not be sent */
};

/* Sends the request method(params) through sink (the sink of the client's request that this
 * belongs to: over HTTP its stream) and waits for the answer until deadline (now_ms clock) or
 * cancel. Takes params. *ret_answer: a new reference, when answered. */
enum mcp_ask_outcome mcp_client_ask(struct mcp_client *client, struct mcp_sink *sink,
                                    const char *method, json_t *params, double deadline,
                                    const codecell_cancel *cancel, json_t **ret_answer);
/* A response the client sent: to the thread that waits for it; one nobody asked for, or
 * answered already, is dropped. */
void mcp_client_take_answer(struct mcp_client *client, const json_t *response);

#endif
