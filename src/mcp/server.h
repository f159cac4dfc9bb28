/* What the parts of the MCP server share: the server and client objects. */
#ifndef CODECELL_MCP_SERVER_H
#define CODECELL_MCP_SERVER_H

#include <pthread.h>

#include "mcp.h"
#include "metrics.h"

/* A tools/call in progress, findable by its request id for notifications/cancelled. */
struct inflight {
        struct inflight *next;
        json_t *id;
        codecell_cancel *cancel;
        const struct mcp_sink *origin; /* mcp_call.origin */
};

struct mcp_server {
        codecell_cellset *cells;
        struct mcp_server_options o;
        json_t *tools;        /* the tools/list array of the legacy era, built once */
        json_t *tools_modern; /* the same for 2026-07-28: session handles instead of names */
        /* The name of the companion tool that lists and closes sessions, or "" when no cell
         * has sessions. */
        char sessions_tool[32];
        struct metrics *metrics;
        struct file_links *links; /* output files too large to embed (its own lock) */
        pthread_mutex_t lock;     /* guards what follows */
        struct mcp_client **clients;
        size_t n_clients;
        size_t n_stateless; /* of them, clients of 2026-07-28 requests (not MCP sessions) */
        size_t runs;        /* tools/call running now */
        unsigned long long next_client;
        bool stopping;
        bool draining;
};

/* Log levels of MCP (RFC 5424 names), least severe first. */
enum mcp_log_level {
        LOG_DEBUG,
        LOG_INFO,
        LOG_NOTICE,
        LOG_WARNING,
        LOG_ERROR,
        LOG_CRITICAL,
        LOG_ALERT,
        LOG_EMERGENCY,
};

struct mcp_ask;

struct mcp_client {
        struct mcp_server *server;
        pthread_mutex_t lock; /* guards what follows */
        /* Requests we sent the client (asks.c), waiting for its answers; answered (broadcast)
         * when one comes in or the client ends. */
        struct mcp_ask *asks;
        pthread_cond_t answered;
        long long next_ask; /* the id of the next one */
        /* It declared elicitation in form mode at initialize (asks.c). */
        bool elicits;
        unsigned refs;
        bool ended;
        bool stateless; /* mcp_client_new_stateless() */
        /* Stands for every client of an HTTP server without bearer tokens, which it cannot
         * tell apart: each handle is then the secret of the client it was given to, so the
         * sessions tool lists none and closes only the one named. */
        bool anonymous;
        int log_level; /* messages at or above are sent; -1 until the client sets one */
        struct inflight *inflight;
        /* Code sessions of this client are named prefix + the name the client chose. */
        char prefix[24];
        /* Its sessions closed to make room for another client (scoped names), until it next
         * uses the name and is told. */
        char **evicted;
        size_t n_evicted;
        /* 2026-07-28: the session handles minted for this client (newest last, at most
         * MCP_HANDLES_KEPT), so that a handle that expired is told apart from one never given. */
        char **handles;
        size_t n_handles;
};

#define MCP_HANDLES_KEPT 4096

/* What a request's era asks of its answer. */
struct mcp_call {
        bool modern;   /* 2026-07-28: stateless, per-request _meta, resultType on every result */
        int log_level; /* modern: the request's io.modelcontextprotocol/logLevel, -1 for none */
        /* The transport's sink of the request's answer: a 2026-07-28 call over HTTP is
         * cancelled by closing its stream, which names no request id. NULL in the legacy era. */
        const struct mcp_sink *origin;
};

/* The server's state without its tools/list (server.c); mcp_server_new() (dispatch.c) adds
 * them. NULL when out of memory. */
struct mcp_server *mcp_server_alloc(codecell_cellset *cells, const struct mcp_server_options *o);
/* The MCP log level named (debug … emergency), or -1. */
int mcp_log_level_named(const char *level);
/* Cancels the client's calls in progress under this request id (notifications/cancelled). */
void mcp_cancel_request(struct mcp_client *client, const json_t *id);

/* tools/list entries of every cell (cell_tools.c). NULL when out of memory. */
json_t *mcp_tools_build(struct mcp_server *server, bool modern);
/* tools/call (cell_tools.c): answers through sink and returns true, or returns false without
 * an answer when the request was cancelled. */
bool mcp_tools_call(struct mcp_server *server, struct mcp_client *client,
                    const struct mcp_call *call, const json_t *id, const json_t *params,
                    struct mcp_sink *sink);
/* The companion tool's call (sessions.c): lists or closes the client's sessions. */
void mcp_sessions_call(struct mcp_server *server, struct mcp_client *client,
                       const struct mcp_call *call, const json_t *id, const json_t *args,
                       struct mcp_sink *sink);
/* The companion tool's tools/list entry (sessions.c). */
json_t *mcp_sessions_tool(struct mcp_server *server, bool modern);
/* {"jsonrpc":"2.0","id":id,"result":result} with, in the modern era, resultType and the
 * server's identity in _meta. Steals result. */
json_t *mcp_result(const struct mcp_call *call, const json_t *id, json_t *result);
/* The same fields as JSON text to splice into a result object written by hand: "" in the
 * legacy era, else ",\"resultType\":…". Static text. */
const char *mcp_result_fields(const struct mcp_call *call);
/* A tool execution error (isError: true) whose text the model reads and acts on. */
json_t *mcp_tool_error(const struct mcp_call *call, const json_t *id, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Encodes message (if not NULL), frees it, and sends the text through sink as the answer.
 * 0, or -1 when message is NULL or could not be encoded or sent. */
int mcp_answer(struct mcp_sink *sink, json_t *message);
/* The same for a notification. */
int mcp_notify(struct mcp_sink *sink, json_t *message);
/* notifications/message to the client when level passes its threshold. */
void mcp_log(struct mcp_client *client, const struct mcp_call *call, struct mcp_sink *sink,
             enum mcp_log_level level, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Longest session name a client may choose: the rest of 64 is the client's prefix. */
#define MCP_SESSION_NAME_MAX 40

/* Session names and handles (sessions.c). A handle is "cs_" and 32 hex digits (128 bits from
 * getrandom): opaque, unguessable, minted by the server. A server with an instance name
 * (--instance) puts it in every handle, "cs_NAME." then the digits, so that a proxy can route
 * the calls that carry it (the Mcp-Param-Session header) to the instance that holds the
 * session (docs/scaling.md). */
#define MCP_HANDLE_LEN (3 + MCP_INSTANCE_MAX + 1 + 32)
int mcp_session_handle_new(struct mcp_client *client, char ret[MCP_HANDLE_LEN + 1]);
/* Whether text has the form of a handle, with or without an instance name; sets *ret_instance
 * to the name ("" for none) and *ret_len to its length. */
bool mcp_handle_parse(const char *text, const char **ret_instance, size_t *ret_len);
/* Whether the handle was minted for this client (it may have expired since). */
bool mcp_session_handle_known(struct mcp_client *client, const char *handle);
/* The schema of a session argument of 2026-07-28 (cell_tools.c), mirrored into the
 * MCP_SESSION_PARAM header. */
json_t *mcp_session_argument(const struct mcp_server *server, const char *description);
/* Whether the client has the session named (unscoped) open in cell. */
bool mcp_session_open(struct mcp_client *client, codecell_cell *cell, const char *name);
/* The client's open sessions of cell, unscoped (NULL-terminated, caller frees each and the
 * array), or NULL. */
char **mcp_session_names(struct mcp_client *client, codecell_cell *cell);

#endif
