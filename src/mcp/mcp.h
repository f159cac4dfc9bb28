/* The MCP server (DESIGN §10): the cells of a configuration file as MCP tools, whatever the
 * transport. A transport hands each message to mcp_handle() with a sink for what goes back;
 * stdio.c and http.c are the two transports. */
#ifndef CODECELL_MCP_H
#define CODECELL_MCP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "codecell.h"
#include "jsonrpc.h"

/* Where a message's answer and the notifications sent while it runs go. send gets one
 * message as compact JSON text (malloc'd, NUL-terminated, no newline) and takes it: it frees
 * it, or keeps it as the body it sends. answer is true for the request's answer, false for a
 * notification. It returns 0, or -1 when the message could not be queued (out of memory). It is
 * called from any thread and must be thread-safe. */
struct mcp_sink {
        int (*send)(struct mcp_sink *sink, char *text, bool answer);
};

/* An instance name (--instance): 1 to 16 of a-z, 0-9 and '-', starting with a letter or digit.
 * It goes into every Mcp-Session-Id and session handle, where a proxy reads it. */
#define MCP_INSTANCE_MAX 16
bool mcp_instance_name_valid(const char *name);

struct mcp_server_options {
        const char *transport; /* "stdio" or "http", for the tool descriptions */
        const char *instance;  /* the instance name, or NULL for none */
        size_t max_runs;       /* runs at once across all clients; 0: 16 */
        size_t max_clients;    /* MCP sessions at once (HTTP); 0: 1024 */
        /* Output files up to this size are embedded in a tool result, larger ones linked;
         * 0: 256 KiB. */
        size_t file_inline_bytes;
        double file_link_ms;     /* how long a link may be read; 0: 10 minutes */
        size_t file_links_bytes; /* the linked files kept at once, all clients; 0: 64 MiB */
};

struct mcp_server;
/* One MCP client: over stdio, the process's peer; over HTTP, one Mcp-Session-Id. Code session
 * names are scoped to it. Reference-counted. */
struct mcp_client;

/* The server over the cells of `cells` (not owned: free it after the server). */
struct mcp_server *mcp_server_new(codecell_cellset *cells, const struct mcp_server_options *o);
void mcp_server_free(struct mcp_server *server);
/* Stops taking runs (new tools/call answer an error) and cancels every run in progress. */
void mcp_server_stop(struct mcp_server *server);
/* Marks the server as draining (SIGTERM over HTTP): shown in /metrics; the transport turns
 * new work away and lets what is bound to this instance finish. */
void mcp_server_drain(struct mcp_server *server);
bool mcp_server_draining(struct mcp_server *server);
/* The instance name, or "" for none. */
const char *mcp_server_instance(const struct mcp_server *server);

/* A new client, or NULL past max_clients (or out of memory). */
struct mcp_client *mcp_client_new(struct mcp_server *server);
/* The client of a transport's 2026-07-28 requests: not an MCP session, so neither counted
 * against max_clients nor in /metrics. anonymous: it stands for every client of a server that
 * cannot tell them apart (HTTP without bearer tokens). NULL when out of memory. */
struct mcp_client *mcp_client_new_stateless(struct mcp_server *server, bool anonymous);
struct mcp_client *mcp_client_ref(struct mcp_client *client);
void mcp_client_unref(struct mcp_client *client);
/* Ends the client: cancels its runs, then closes its code sessions. Idempotent. */
void mcp_client_end(struct mcp_client *client);
/* True while a request of the client is being handled (someone besides its owner holds it). */
bool mcp_client_busy(struct mcp_client *client);
/* True once the client asked for log messages (logging/setLevel). */
bool mcp_client_wants_logs(struct mcp_client *client);

/* Whether we speak this MCP revision through initialize (2025-11-25, 2025-06-18, 2025-03-26). */
bool mcp_protocol_supported(const char *version);
/* The revision without initialize that we speak. */
#define MCP_MODERN_PROTOCOL "2026-07-28"
#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
/* Whether a message is of the 2026-07-28 era: its params._meta names a protocol version (any:
 * a version we do not speak is answered as that era answers it). */
bool mcp_message_modern(const json_t *message);

/* Handles one parsed message of the given kind: a request gets exactly one answer through the
 * sink, unless it is cancelled (then none), whatever fails while the answer is built (then a
 * plain internal error); notifications get none. Blocks while a tools/call
 * runs; safe to call from many threads at once. */
void mcp_handle(struct mcp_server *server, struct mcp_client *client, const json_t *message,
                enum jsonrpc_kind kind, struct mcp_sink *sink);
/* Cancels the 2026-07-28 calls whose answer goes to sink: their HTTP stream was closed. (By
 * request id would not do: stateless clients share a client and may reuse ids.) */
void mcp_cancel_answering(struct mcp_client *client, const struct mcp_sink *sink);
/* Parses text and handles it; a malformed text gets its JSON-RPC error through the sink. */
void mcp_handle_text(struct mcp_server *server, struct mcp_client *client, const char *text,
                     size_t len, struct mcp_sink *sink);

/* The name of the Mcp-Param-* header (2026-07-28 HTTP) that mirrors a session argument. */
#define MCP_SESSION_PARAM "Session"
/* Whether the tool's session argument is mirrored into that header (x-mcp-header): a cell
 * with sessions, or the sessions tool. */
bool mcp_tool_mirrors_session(struct mcp_server *server, const char *tool);

/* The tools/list entries (borrowed: valid while the server lives). */
json_t *mcp_server_tools(struct mcp_server *server);

/* The Prometheus text of /metrics. Caller frees. */
char *mcp_server_metrics(struct mcp_server *server);

#endif
