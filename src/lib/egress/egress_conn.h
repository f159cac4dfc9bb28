/* The proxy's connection and run, shared by egress.c (which accepts, reads the request, and
 * tunnels or passes plain HTTP on) and egress_terminate.c (which serves a CONNECT whose TLS the
 * engine terminates); egress_conn.c has what both use. Who includes it: those three only. */
#ifndef CODECELL_EGRESS_CONN_H
#define CODECELL_EGRESS_CONN_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress.h"
#include "egress_answer.h"
#include "egress_http.h"
#include "egress_tls.h"

#define REFUSED_MAX 768
#define RELAY_BUF 16384
/* Each of a worker's two buffers: a request head (EGRESS_HEAD_MAX and its NUL), what a relay
 * reads (RELAY_BUF), or an answer's rewritten head (egress_answer.h), whichever is largest. */
#define RELAY_BUFS_SIZE (EGRESS_HEAD_MAX + EGRESS_ANSWER_GROWTH)
_Static_assert(RELAY_BUFS_SIZE >= RELAY_BUF && RELAY_BUFS_SIZE > EGRESS_HEAD_MAX,
               "a worker's buffer holds a head, a relay's read and a rewritten answer head");

struct egress_run;
struct egress_worker;

struct egress_conn {
        struct egress_conn *next;
        struct egress_run *run;
        bool done; /* guarded by e->lock: its worker is through with it */
        /* The rest is its worker's alone until done. */
        int client, upstream;
        char host[EGRESS_HOST_MAX * 4 + 8]; /* normalized, or escaped */
        unsigned port;
        uint64_t out, in;
        char refused[REFUSED_MAX]; /* "" when not refused */
};

struct egress_run {
        struct egress *e;
        double deadline; /* INFINITY when none */
        int stop_fd;     /* eventfd: written once, when the run ends */
        _Atomic uint64_t bytes_out, bytes_in;
        unsigned admitted, over_cap;       /* guarded by e->lock */
        struct egress_conn *first, **tail; /* guarded by e->lock */
};

struct egress {
        const struct egress_policy *policy;
        int listen_fd;
        int stop_fd; /* eventfd: egress_stop */
        pthread_t acceptor;
        const struct egress_tls *tls; /* the cell's TLS termination, or NULL */
        egress_log_fn log;
        void *log_userdata;
        pthread_mutex_t lock;
        struct egress_run *run; /* guarded by lock; NULL between runs */
        /* The threads that serve connections, each one at a time and then waiting for the
         * next (a thread made per connection would cost its start on each request's path).
         * Guarded by lock. */
        struct egress_worker *workers, *idle;
        bool stopping;
        pthread_cond_t done; /* a connection is done */
};

enum { WAIT_READY = 1, WAIT_DEADLINE = 0, WAIT_STOP = -1 };

/* Whether fd is ready for events before until (and the run's deadline): WAIT_READY,
 * WAIT_DEADLINE, or WAIT_STOP once the run ends. */
int egress_wait_until(struct egress_run *run, int fd, short events, double until);
/* The same, with the run's deadline only. */
int egress_wait_for(struct egress_run *run, int fd, short events);
/* Waits for the events asked of each side (0: not that side) or the run's end, until the
 * run's deadline: 1 with p's revents (p[2] is the run's stop), 0 to look again (a signal, or
 * the deadline: the caller checks it), -1 when the run has ended or poll failed. */
int egress_poll_sides(struct egress_conn *c, short client_events, short upstream_events,
                      struct pollfd p[3]);
/* Records why the connection was refused or ended early; the first reason counts. */
void egress_set_refused(struct egress_conn *c, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/* The answer to a refused request, into buf: a short text/plain body that closes. */
size_t egress_refusal_text(char *buf, size_t size, int status, const char *body);
/* n bytes more in one direction (out: guest to server), counted against the run's cap: 0, or
 * -1 when they are over it (the reason recorded). */
int egress_take_bytes(struct egress_conn *c, size_t n, bool out);
/* Whether the policy refuses req's method (plain HTTP, or a request inside a terminated
 * tunnel): 0, or the status with the body the guest gets. */
int egress_method_refusal(const struct egress_policy *p, const struct egress_request *req,
                          char *body, size_t size);

/* Serves a CONNECT to a host whose TLS the engine terminates, once c->upstream is connected
 * and the guest has its 200: the guest's handshake, its one request read, checked and given
 * the host's headers, TLS to the server, the answer back. bufs: two of RELAY_BUFS_SIZE. */
void egress_terminate(struct egress_conn *c, const struct egress_request *connect, char *bufs[2]);

#endif
