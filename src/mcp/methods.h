/* The MCP methods this server knows, as one table (mcp_methods, in dispatch.c) in the manner of
 * crun's commands[]: a method's eras, its handler, and every choice a transport makes by method
 * (a thread of its own, an event stream, a new MCP session, a refusal while draining, the
 * headers of 2026-07-28 that repeat its params) are one entry there, which dispatch.c, stdio.c
 * and http.c look up instead of comparing names. A new method is a new entry. */
#ifndef CODECELL_MCP_METHODS_H
#define CODECELL_MCP_METHODS_H

#include <stdbool.h>

/* The two eras of MCP this server speaks, as bits of mcp_method.eras. */
enum mcp_era {
        /* 2025-03-26, 2025-06-18 and 2025-11-25: after initialize, in an MCP session. */
        MCP_ERA_LEGACY = 1 << 0,
        /* 2026-07-28 (MCP_MODERN_PROTOCOL): each request names its revision in its _meta. */
        MCP_ERA_MODERN = 1 << 1,
};

/* One message as its handler gets it (dispatch.c). */
struct mcp_request;

struct mcp_method {
        const char *name;
        /* The eras it is offered in; in any other it is "method not found". A request's era is
         * its message's (mcp_message_modern), a notification's that of the client it goes to
         * (it carries no revision of its own). 0: a method of MCP that this server does not
         * offer, listed for the header it names (name_param). */
        unsigned eras;
        bool notification; /* never answered; else a request, answered once */
        /* A request's handler answers it through the request's sink and returns true, or
         * returns false without an answer when the request was cancelled. NULL: nothing to do
         * (a notification), or not offered. */
        bool (*handle)(const struct mcp_request *request);
        /* It runs code, for as long as the code takes, and may be cancelled
         * (notifications/cancelled; in 2026-07-28 over HTTP also by closing its stream): over
         * stdio it runs on a thread of its own, so that calls overlap and quick requests are
         * not held up behind it; over HTTP it is answered as an event stream when the client
         * wants its progress or log messages. */
        bool long_running;
        /* It opens an MCP session: over HTTP, the Mcp-Session-Id its answer carries. */
        bool opens_session;
        /* New work, turned away with 503 while the HTTP server drains: a run or an MCP session
         * would keep the drain from ending (docs/scaling.md). */
        bool refused_while_draining;
        /* 2026-07-28 over HTTP: the member of params that the Mcp-Name header must repeat, or
         * NULL. */
        const char *name_param;
        /* 2026-07-28 over HTTP: arguments its tool's input schema marks with x-mcp-header are
         * repeated in Mcp-Param-* headers, which must match them. */
        bool param_headers;
};

/* Every method, requests in the order "method not found" names them; a NULL name ends it. */
extern const struct mcp_method mcp_methods[];

/* The method of that name, offered or not, or NULL (also for a NULL name). */
const struct mcp_method *mcp_method_find(const char *name);
/* Whether m (NULL: no method) is offered in era. */
bool mcp_method_offered(const struct mcp_method *m, enum mcp_era era);

#endif
