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
};

struct mcp_server {
        codecell_cellset *cells;
        struct mcp_server_options o;
        json_t *tools; /* the tools/list array, built once */
        struct metrics *metrics;
        pthread_mutex_t lock; /* guards what follows */
        struct mcp_client **clients;
        size_t n_clients;
        size_t runs; /* tools/call running now */
        unsigned long long next_client;
        bool stopping;
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

struct mcp_client {
        struct mcp_server *server;
        pthread_mutex_t lock; /* guards what follows */
        unsigned refs;
        bool ended;
        int log_level; /* messages at or above are sent; -1 until the client sets one */
        struct inflight *inflight;
        /* Code sessions of this client are named prefix + the name the client chose. */
        char prefix[24];
        /* Its sessions closed to make room for another client (scoped names), until it next
         * uses the name and is told. */
        char **evicted;
        size_t n_evicted;
};

/* tools/list entries of every cell (tools.c). NULL when out of memory. */
json_t *mcp_tools_build(struct mcp_server *server);
/* tools/call (cell_tools.c): answers through sink and returns true, or returns false without
 * an answer when the request was cancelled. */
bool mcp_tools_call(struct mcp_server *server, struct mcp_client *client, const json_t *id,
                    const json_t *params, struct mcp_sink *sink);
/* Encodes message (if not NULL), frees it, and sends the text through sink as the answer.
 * 0, or -1 when message is NULL or could not be encoded or sent. */
int mcp_answer(struct mcp_sink *sink, json_t *message);
/* The same for a notification. */
int mcp_notify(struct mcp_sink *sink, json_t *message);
/* notifications/message to the client when level passes its threshold. */
void mcp_log(struct mcp_client *client, struct mcp_sink *sink, enum mcp_log_level level,
             const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Longest session name a client may choose: the rest of 64 is the client's prefix. */
#define MCP_SESSION_NAME_MAX 40

#endif
