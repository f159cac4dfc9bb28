/* The egress wing: the engine's proxy for one sandbox, through which alone its guest reaches
 * the network (issue 31). The sandbox's namespace has only lo; on it listens a socket the
 * engine made and handed here. The proxy speaks HTTP/1.x: CONNECT host:port for TLS (its
 * ClientHello's SNI must name the same host on 443) and absolute-URI plain HTTP; each host is
 * checked against the cell's egress_policy, resolved here, in the engine, and every address
 * that is not public is refused unless the operator named it; the connect goes to the address
 * checked. Connections are admitted only during a run (egress_run_begin .. egress_run_end),
 * within its deadline, its connection count and its bytes, and all of them close at its end.
 *
 * Threads: one acceptor per proxy; workers, each serving one admitted connection at a time and
 * then waiting for the next (one from the start, another made whenever all are busy), joined
 * by egress_stop; a detached thread per getaddrinfo (egress_lookup.h). Every wait of a worker
 * polls the run's stop eventfd, so egress_run_end returns as soon as each has seen it. The
 * lock order: egress.lock only (a lookup's lock is never held with it).
 *
 * Who includes it: the run wing, which makes one per sandbox of a cell with a policy. */
#ifndef CODECELL_EGRESS_H
#define CODECELL_EGRESS_H

#include <jansson.h>
#include <stdint.h>

#include "codecell.h"
#include "egress_policy.h"

struct egress_tls;

/* Called once per connection, from a proxy thread (so it must be thread-safe), when it ends:
 * host as the guest named it (normalized, or escaped to printable ASCII; "" when the request
 * never named one), port (0 likewise), outcome "ok" or the refusal's text, the bytes relayed
 * each way (out: guest to server). */
typedef void (*egress_log_fn)(void *userdata, const char *host, unsigned port, const char *outcome,
                              uint64_t bytes_out, uint64_t bytes_in);

struct egress;

/* Starts the proxy on listen_fd (a listening TCP socket; taken, closed by egress_stop and on
 * failure). policy, and tls (the cell's TLS termination, or NULL for none), are borrowed and
 * must outlive the proxy; log may be NULL. */
struct egress *egress_start(const struct egress_policy *policy, const struct egress_tls *tls,
                            int listen_fd, egress_log_fn log, void *log_userdata,
                            codecell_error *err);
/* Opens a run: connections are admitted until egress_run_end. deadline_ms on now_ms()'s clock,
 * or <= 0 for none. A run still open is ended first (its record dropped). */
void egress_run_begin(struct egress *e, double deadline_ms);
/* Ends the run: every connection closes, every thread of it is joined. The run's connections,
 * in the order they were accepted: [{"host","port","bytes_out","bytes_in","refused"?}], with
 * one entry {"host":"","port":0,"refused":"over N connections this run: M refused"} for those
 * over the cap. An empty array when no run was open. */
json_t *egress_run_end(struct egress *e);
/* Ends a run still open, closes the listener, stops the acceptor, frees. NULL is fine. */
void egress_stop(struct egress *e);

#endif
