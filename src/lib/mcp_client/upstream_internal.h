/* Between the MCP client (upstream.c) and its transports (upstream_stdio.c, upstream_http.c). */
#ifndef CODECELL_UPSTREAM_INTERNAL_H
#define CODECELL_UPSTREAM_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "upstream.h"

struct pending;

struct transport_ops {
        /* Opens the connection; incoming messages go to upstream_receive(), the end of the
         * connection to upstream_lost(). Called with connect_lock held. */
        int (*open)(struct upstream *u, double deadline, char **ret_error);
        /* Sends one JSON-RPC message (a compact JSON text). 0, or < 0 with *ret_error. */
        int (*send)(struct upstream *u, const char *text, double deadline, char **ret_error);
        /* Closes the connection and frees what open made; waits for its threads. Polite first
         * when `polite` (a clean shutdown), else at once (a server that hangs). */
        void (*close)(struct upstream *u, bool polite);
};

struct upstream {
        struct upstream_spec spec;
        const struct transport_ops *ops;
        atomic_int refs;
        pthread_mutex_t connect_lock; /* one connection attempt at a time */
        pthread_mutex_t lock;         /* everything below */
        pthread_cond_t changed;       /* a response arrived, or the connection was lost */
        pthread_mutex_t write_lock;   /* messages leave whole, one at a time */
        bool connected;               /* initialised and not lost since */
        bool open;                    /* the transport is open (perhaps not initialised) */
        unsigned generation;          /* of the connection: a lost one fails its requests */
        char *down_reason;            /* why the last connection ended, or NULL */
        char *protocol;               /* the revision agreed at initialize */
        int64_t next_id;
        struct pending *pending;
        json_t *tools;      /* the last complete tools/list */
        json_t *refreshing; /* pages of a tools/list after list_changed, or NULL */
        int64_t refresh_id; /* its request in flight, or 0 */
        int64_t ping_id;    /* a ping after a cancelled call, unanswered, or 0 */
        double ping_sent_ms;
        upstream_tools_listener listener;
        void *listener_data;
        unsigned listener_busy; /* calls of the listener under way */
        void *transport;        /* the transport's own state */
};

/* One message from the server (takes it). Called by the transport's reader. */
void upstream_receive(struct upstream *u, json_t *message);
/* The connection ended (reason copied). Called by the transport's reader, at most once per
 * open. */
void upstream_lost(struct upstream *u, const char *reason);

extern const struct transport_ops upstream_stdio_ops;
extern const struct transport_ops upstream_http_ops;

#endif
