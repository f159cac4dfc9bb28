/* The connections of the HTTP server that have not yet shown a token, and since when: such a
 * peer holds its connection for header_timeout_ms at most, counted from its accept, and no more
 * than max_pending of them are held at once (a new one past that closes the oldest), so that
 * peers without a token cannot keep token holders from connecting (slowloris). A connection
 * leaves the table once a request on it has passed the bearer token (it may then stay open as
 * long as its requests and streams need) or once it is closed. No libmicrohttpd here: the
 * socket is shut down, which its connection thread sees as the peer's end and closes. */
#ifndef CODECELL_MCP_PEERS_H
#define CODECELL_MCP_PEERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct peer {
        int fd;
        double accepted_ms; /* monotonic */
        bool pending;       /* in the list below: no request on it has shown a token yet */
        struct peer *prev, *next;
};

struct peers {
        pthread_mutex_t lock;     /* guards everything below, and every peer's fields */
        struct peer *head, *tail; /* the pending ones, oldest first */
        unsigned n_pending;
        uint64_t header_timeout_ms;
        unsigned max_pending;
        uint64_t closed; /* pending connections this table shut down, ever */
};

void peers_init(struct peers *p, uint64_t header_timeout_ms, unsigned max_pending);
void peers_destroy(struct peers *p);
/* A new connection on socket fd (pending), or NULL out of memory. Closes the oldest pending
 * one when max_pending are held already. */
struct peer *peers_add(struct peers *p, int fd);
/* A request on it passed the token: no deadline any more. */
void peers_trust(struct peers *p, struct peer *peer);
/* Its connection is closing (before its socket is). Frees peer; NULL is fine. */
void peers_remove(struct peers *p, struct peer *peer);
/* Shuts down the pending connections past their deadline. */
void peers_reap(struct peers *p);

#endif
