/* The proxy of one sandbox (egress.h has the promise and the threads). A connection's life, in
 * its own thread: read the head, check it (method, allowlist), find the addresses (the
 * operator's, the literal, or a lookup) and drop those it may not reach, connect to one of
 * those checked, then for CONNECT answer 200 and on 443 read and check the ClientHello before
 * a byte goes on, for plain HTTP send the rewritten head and the body it declared; relay both
 * ways until either side ends, the run ends, its deadline passes or its bytes run out. Every
 * refusal is answered with a short text the model can act on, then the socket is closed
 * gently (shut for writing, read to its end for a moment) so the answer is not lost to a
 * reset. */
#include "egress.h"
#include "egress_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "deadline.h"
#include "egress_addr.h"
#include "egress_answer.h"
#include "egress_http.h"
#include "egress_local.h"
#include "egress_lookup.h"
#include "egress_sni.h"
#include "error.h"
#include "util.h"

#define TARGETS_MAX 16
#define LINGER_MS 500.0
#define LINGER_FDS 64
#define THREAD_STACK (1024 * 1024)

/* All n bytes to fd: 0, or WAIT_DEADLINE / WAIT_STOP, or -2 when the peer is gone. */
static int send_all(struct egress_run *run, int fd, const void *data, size_t n)
{
        const char *p = data;
        while (n > 0) {
                ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
                if (w > 0) {
                        p += w;
                        n -= (size_t)w;
                        continue;
                }
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                        int r = egress_wait_for(run, fd, POLLOUT);
                        if (r != WAIT_READY)
                                return r == WAIT_DEADLINE ? -3 : -1;
                        continue;
                }
                return -2;
        }
        return 0;
}

/* A relay forwards what it read at once: Nagle's algorithm would hold a small write (the rest of
 * a TLS flight) until the last one is acknowledged, a delayed ACK later. */
static void no_delay(int fd)
{
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Closes the guest's side gently: shut for writing, read what it still sends, for a moment
 * at most, so that the answer already sent is not discarded by a reset. */
static void linger_close(struct egress_run *run, int *fd)
{
        char sink[4096];
        (void)shutdown(*fd, SHUT_WR);
        double until = now_ms() + LINGER_MS;
        while (egress_wait_until(run, *fd, POLLIN, until) == WAIT_READY) {
                ssize_t n = recv(*fd, sink, sizeof(sink), 0);
                if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
                        break;
        }
        close_fd(fd);
}

static void refuse(struct egress_conn *c, int status, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void refuse(struct egress_conn *c, int status, const char *fmt, ...)
{
        char body[REFUSED_MAX], answer[REFUSED_MAX + 256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(body, sizeof(body), fmt, ap);
        va_end(ap);
        utf8_trim_cut(body);
        egress_set_refused(c, "%s", body);
        (void)send_all(c->run, c->client, answer,
                       egress_refusal_text(answer, sizeof(answer), status, body));
        linger_close(c->run, &c->client);
}

/* n bytes on, counted against the run's cap for their direction: 0, or -1 when the
 * connection ends (the reason recorded). */
static int forward(struct egress_conn *c, int to, const char *data, size_t n, bool out)
{
        if (egress_take_bytes(c, n, out) < 0)
                return -1;
        int r = send_all(c->run, to, data, n);
        if (r == -3)
                egress_set_refused(c, "closed at the run's time limit");
        if (r < 0)
                return -1;
        if (out)
                c->out += n;
        else
                c->in += n;
        return 0;
}

/* One direction of the relay: bytes read from one side wait here until the other takes them.
 * A side is read only while its buffer is empty, so a peer that does not read slows its
 * sender down (TCP's own back pressure) and never the other direction. */
struct leg {
        int from, to;
        char *buf;
        size_t len, off; /* buf[off..len) still to send */
        bool reading;    /* from has not ended (nor, for a request body, been read whole) */
        bool out;        /* guest to server */
        struct egress_answer *answer; /* plain HTTP's answer: its head is rewritten; or NULL */
};

/* Reads what leg.from has into the buffer, counted against the cap: 1 read, 0 at its end, -1
 * when the connection ends (the reason recorded). */
static int leg_read(struct egress_conn *c, struct leg *l, size_t want)
{
        struct egress_answer *a = l->answer;
        size_t room = a ? egress_answer_room(a) : 0;
        ssize_t n = recv(l->from, room ? a->head + a->len : l->buf, room ? room : want, 0);
        if (n < 0)
                return errno == EINTR || errno == EAGAIN ? 1 : -1;
        if (n > 0 && egress_take_bytes(c, (size_t)n, l->out) < 0)
                return -1;
        l->off = 0;
        if (room) /* the answer's head: what of it may go on now */
                l->len = egress_answer_feed(a, (size_t)n, n == 0, l->buf);
        else
                l->len = (size_t)n;
        return n == 0 ? 0 : 1;
}

/* Sends what the buffer holds, as far as leg.to takes it now: 0, or -1 when the peer is gone. */
static int leg_write(struct egress_conn *c, struct leg *l)
{
        ssize_t n = send(l->to, l->buf + l->off, l->len - l->off, MSG_NOSIGNAL);
        if (n < 0)
                return errno == EINTR || errno == EAGAIN ? 0 : -1;
        l->off += (size_t)n;
        if (l->out)
                c->out += (uint64_t)n;
        else
                c->in += (uint64_t)n;
        if (l->off == l->len)
                l->off = l->len = 0;
        return 0;
}

static short leg_events(const struct leg *read_leg, const struct leg *write_leg)
{
        return (short)((read_leg->reading && read_leg->len == 0 ? POLLIN : 0) |
                       (write_leg->len ? POLLOUT : 0));
}

/* Relays both ways until each side has ended and all it sent is with the other (plain HTTP:
 * until the server's answer has ended), or the run ends, its deadline passes, its bytes run out.
 * body_left: for plain HTTP, the bytes of the request's body still to pass on (after them nothing
 * more of the guest's goes to the server); UINT64_MAX for a tunnel. bufs: two RELAY_BUF buffers. */
static void relay(struct egress_conn *c, char *bufs[2], uint64_t body_left, bool plain)
{
        struct egress_run *run = c->run;
        _cleanup_free_ struct egress_answer *answer = plain ? calloc(1, sizeof(*answer)) : NULL;
        if (plain && !answer) {
                egress_set_refused(c, "out of memory");
                return;
        }
        struct leg up = {c->client, c->upstream, bufs[0], 0, 0, body_left > 0, true, NULL};
        struct leg down = {c->upstream, c->client, bufs[1], 0, 0, true, false, answer};
        bool shut_up = false, shut_down = false;
        for (;;) {
                if (now_ms() >= run->deadline) {
                        if (plain && c->in == 0 && down.len == 0) {
                                char answer[512];
                                const char *body =
                                        "the server did not answer within the run's time limit";
                                egress_set_refused(c, "%s", body);
                                (void)send(c->client, answer,
                                           egress_refusal_text(answer, sizeof(answer), 504, body),
                                           MSG_NOSIGNAL | MSG_DONTWAIT);
                        }
                        egress_set_refused(c, "closed at the run's time limit");
                        return;
                }
                bool down_done = !down.reading && down.len == 0;
                bool up_done = !up.reading && up.len == 0;
                /* Each side's end is passed on, and the relay ends when both ends have been:
                 * a tunnel's peer may shut its side and still read (a half-close). Plain HTTP
                 * ends with the server's answer; the guest's side is not shut there, which
                 * some servers would take for an abort. */
                if (down_done && (plain || up_done))
                        return;
                if (up_done && !shut_up && !plain) {
                        (void)shutdown(c->upstream, SHUT_WR);
                        shut_up = true;
                }
                if (down_done && !shut_down) {
                        (void)shutdown(c->client, SHUT_WR);
                        shut_down = true;
                }
                short ce = leg_events(&up, &down), ue = leg_events(&down, &up);
                /* An fd with nothing to wait for stays out of poll: its hangup would wake
                 * poll again and again while the other side is slow. */
                struct pollfd p[3];
                int r = egress_poll_sides(c, ce, ue, p);
                if (r == 0)
                        continue;
                if (r < 0)
                        return;
                if ((p[0].revents & POLLOUT) && leg_write(c, &down) < 0)
                        return;
                if ((p[1].revents & POLLOUT) && leg_write(c, &up) < 0)
                        return;
                if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && up.reading && up.len == 0) {
                        size_t want = body_left < RELAY_BUF ? (size_t)body_left : RELAY_BUF;
                        int got = leg_read(c, &up, want);
                        if (got < 0)
                                return;
                        if (got == 0)
                                up.reading = false;
                        else if (plain && (body_left -= up.len) == 0)
                                up.reading = false;
                }
                if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && down.reading &&
                    down.len == 0) {
                        int got = leg_read(c, &down, RELAY_BUF);
                        if (got < 0)
                                return;
                        if (got == 0)
                                down.reading = false;
                }
                if ((p[0].revents & (POLLERR | POLLHUP)) && !(ce & POLLIN) && down.len)
                        return; /* the guest is gone with bytes still for it */
        }
}

struct target {
        struct sockaddr_storage addr;
        socklen_t len;
};

static void address_text(const struct sockaddr *sa, char *buf, size_t size)
{
        const void *a = sa->sa_family == AF_INET
                                ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
                                : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (!inet_ntop(sa->sa_family, a, buf, (socklen_t)size))
                snprintf(buf, size, "?");
}

static void set_port(struct target *t, unsigned port)
{
        if (t->addr.ss_family == AF_INET)
                ((struct sockaddr_in *)&t->addr)->sin_port = htons((uint16_t)port);
        else
                ((struct sockaddr_in6 *)&t->addr)->sin6_port = htons((uint16_t)port);
}

/* The addresses the connection may go to, each checked: 0 and *ret_n > 0, or -1 (refused,
 * answered). */
static int find_targets(struct egress_conn *c, const struct egress_request *req, struct target *t,
                        size_t *ret_n, unsigned *ret_port)
{
        const struct egress_policy *p = c->run->e->policy;
        const struct egress_resolve *ov = egress_policy_resolve(p, req->host);
        *ret_port = req->port;
        if (ov) {
                /* The operator's address: no lookup, no check (it may be a test server on lo). */
                memcpy(&t[0].addr, &ov->addr, ov->addr_len);
                t[0].len = ov->addr_len;
                if (ov->port)
                        *ret_port = ov->port;
                *ret_n = 1;
                return 0;
        }
        if (req->kind != EGRESS_HOST_NAME) {
                memset(&t[0], 0, sizeof(t[0]));
                if (req->kind == EGRESS_HOST_IPV4) {
                        t[0].addr.ss_family = AF_INET;
                        (void)inet_pton(AF_INET, req->host,
                                        &((struct sockaddr_in *)&t[0].addr)->sin_addr);
                        t[0].len = sizeof(struct sockaddr_in);
                } else {
                        t[0].addr.ss_family = AF_INET6;
                        (void)inet_pton(AF_INET6, req->host,
                                        &((struct sockaddr_in6 *)&t[0].addr)->sin6_addr);
                        t[0].len = sizeof(struct sockaddr_in6);
                }
                const char *why = egress_sockaddr_refused((struct sockaddr *)&t[0].addr);
                if (why &&
                    !egress_policy_names_address(p, (struct sockaddr *)&t[0].addr, req->port)) {
                        refuse(c, 403, "%s is a %s address, which this cell may not reach",
                               req->host, why);
                        return -1;
                }
                *ret_n = 1;
                return 0;
        }
        struct egress_lookup *l = egress_lookup_start(req->host);
        if (!l) {
                refuse(c, 502, "cannot look up %s: %s", req->host, strerror(errno));
                return -1;
        }
        int w = egress_wait_for(c->run, egress_lookup_fd(l), POLLIN);
        struct addrinfo *res = NULL;
        int rc = w == WAIT_READY ? egress_lookup_take(l, &res) : 0;
        /* A lookup given up on is left to its thread, which frees it when getaddrinfo returns. */
        egress_lookup_drop(l);
        if (w == WAIT_DEADLINE) {
                refuse(c, 504, "looking up %s took past the run's time limit", req->host);
                return -1;
        }
        if (w == WAIT_STOP) {
                egress_set_refused(c, "the run ended");
                return -1;
        }
        if (rc != 0) {
                refuse(c, 502, "cannot resolve %s: %s", req->host, gai_strerror(rc));
                return -1;
        }
        char refused[256] = "";
        size_t n = 0;
        for (struct addrinfo *ai = res; ai && n < TARGETS_MAX; ai = ai->ai_next) {
                if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
                    ai->ai_addrlen > sizeof(t[n].addr))
                        continue;
                /* A looked-up address is never excused by the allowlist's literals: only a
                 * connection to the literal itself is (above). Nor is one of this host's own. */
                if (egress_sockaddr_refused(ai->ai_addr) || egress_address_local(ai->ai_addr)) {
                        char a[INET6_ADDRSTRLEN];
                        address_text(ai->ai_addr, a, sizeof(a));
                        if (!strstr(refused, a) &&
                            strlen(refused) + strlen(a) + 3 < sizeof(refused))
                                snprintf(refused + strlen(refused),
                                         sizeof(refused) - strlen(refused), "%s%s",
                                         refused[0] ? ", " : "", a);
                        continue;
                }
                memset(&t[n], 0, sizeof(t[n]));
                memcpy(&t[n].addr, ai->ai_addr, ai->ai_addrlen);
                t[n].len = ai->ai_addrlen;
                n++;
        }
        freeaddrinfo(res);
        if (n == 0) {
                refuse(c, 403,
                       "%s resolves only to private addresses (%s), which this cell may not reach",
                       req->host, refused);
                return -1;
        }
        *ret_n = n;
        return 0;
}

/* Connects to the first of the targets that answers, with no lookup of its own: 0 with
 * c->upstream, or -1 (answered). */
static int connect_upstream(struct egress_conn *c, const struct egress_request *req)
{
        struct target t[TARGETS_MAX];
        size_t n = 0;
        unsigned port;
        if (find_targets(c, req, t, &n, &port) < 0)
                return -1;
        int last = ECONNREFUSED;
        for (size_t i = 0; i < n; i++) {
                set_port(&t[i], port);
                int fd = socket(t[i].addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        last = errno;
                        continue;
                }
                no_delay(fd);
                if (connect(fd, (struct sockaddr *)&t[i].addr, t[i].len) == 0) {
                        c->upstream = fd;
                        return 0;
                }
                if (errno != EINPROGRESS) {
                        last = errno;
                        close(fd);
                        continue;
                }
                int w = egress_wait_for(c->run, fd, POLLOUT);
                if (w != WAIT_READY) {
                        close(fd);
                        if (w == WAIT_STOP) {
                                egress_set_refused(c, "the run ended");
                                return -1;
                        }
                        refuse(c, 504, "connecting to %s:%u took past the run's time limit",
                               req->host, req->port);
                        return -1;
                }
                int so = 0;
                socklen_t len = sizeof(so);
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &len) == 0 && so == 0) {
                        c->upstream = fd;
                        return 0;
                }
                last = so ? so : errno;
                close(fd);
        }
        refuse(c, 502, "cannot connect to %s:%u: %s", req->host, req->port, strerror(last));
        return -1;
}

/* A TLS alert (fatal, unrecognized_name) for a guest whose ClientHello is refused: its TLS
 * library reports a handshake failure rather than a hang. */
static void tls_refuse(struct egress_conn *c, const char *fmt, const char *a, const char *b)
{
        static const unsigned char alert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x70};
        egress_set_refused(c, fmt, a, b);
        (void)send_all(c->run, c->client, alert, sizeof(alert));
        linger_close(c->run, &c->client);
}

/* The tunnel's first bytes on port 443: the whole ClientHello, its SNI the CONNECT host. Then
 * on to the server. 0, or -1 (refused). */
static int check_hello(struct egress_conn *c, const struct egress_request *req, const char *early,
                       size_t early_len)
{
        _cleanup_free_ unsigned char *hello = malloc(EGRESS_HELLO_MAX);
        if (!hello)
                return -1;
        size_t n = early_len < EGRESS_HELLO_MAX ? early_len : EGRESS_HELLO_MAX;
        memcpy(hello, early, n);
        char name[EGRESS_HOST_MAX];
        const char *why = NULL;
        int rc;
        while ((rc = egress_client_hello_sni(hello, n, name, &why)) == 0) {
                int w = n < EGRESS_HELLO_MAX ? egress_wait_for(c->run, c->client, POLLIN)
                                             : WAIT_STOP;
                if (w == WAIT_DEADLINE)
                        egress_set_refused(c, "closed at the run's time limit");
                if (w != WAIT_READY)
                        return -1;
                ssize_t got = recv(c->client, hello + n, EGRESS_HELLO_MAX - n, 0);
                if (got == 0) {
                        egress_set_refused(
                                c, "the guest closed the tunnel before its TLS ClientHello");
                        return -1;
                }
                if (got < 0 && errno != EINTR && errno != EAGAIN)
                        return -1;
                if (got > 0)
                        n += (size_t)got;
        }
        /* A CONNECT to an address goes there whatever a hello could name; a client sends no
         * name for an address, and one that does is checked as any other. */
        if (rc < 0 && why == egress_sni_none && req->kind != EGRESS_HOST_NAME)
                return forward(c, c->upstream, (const char *)hello, n, true);
        if (rc < 0) {
                tls_refuse(c, "TLS to %s refused: %s", req->host, why);
                return -1;
        }
        if (strcmp(name, req->host) != 0) {
                tls_refuse(c, "the TLS ClientHello names %s, not %s, the host of the CONNECT", name,
                           req->host);
                return -1;
        }
        return forward(c, c->upstream, (const char *)hello, n, true);
}

/* bufs: two of RELAY_BUFS_SIZE (the head's, then the relay's second). */
static void serve(struct egress_conn *c, char *bufs[2])
{
        char *buf = bufs[0];
        struct egress_run *run = c->run;
        const struct egress_policy *p = run->e->policy;
        _cleanup_free_ struct egress_request *req = malloc(sizeof(*req));
        if (!req)
                return;
        size_t len = 0;
        const char *why = NULL;
        for (;;) {
                int w = egress_wait_for(run, c->client, POLLIN);
                if (w == WAIT_DEADLINE) {
                        refuse(c, 504, "the request did not come within the run's time limit");
                        return;
                }
                if (w == WAIT_STOP) {
                        egress_set_refused(c, "the run ended before the request was whole");
                        return;
                }
                ssize_t n = recv(c->client, buf + len, EGRESS_HEAD_MAX - len, 0);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0) {
                        egress_set_refused(
                                c, "the guest closed the connection before a whole request");
                        return;
                }
                /* The head is parsed again only when a line may have ended: a guest that sends
                 * it a byte at a time costs one parse per line (100 at most), not per byte. */
                bool line_end =
                        memchr(buf + len, '\n', (size_t)n) || memchr(buf + len, '\0', (size_t)n);
                len += (size_t)n;
                buf[len] = '\0';
                if (!line_end && len < EGRESS_HEAD_MAX)
                        continue;
                int rc = egress_request_parse(buf, len, req, &why);
                if (rc == 1)
                        break;
                if (rc < 0) {
                        refuse(c, -rc, "bad request: %s", why);
                        return;
                }
        }
        snprintf(c->host, sizeof(c->host), "%s", req->host);
        c->port = req->port;
        char body[REFUSED_MAX];
        int status = req->connect ? 0 : egress_method_refusal(p, req, body, sizeof(body));
        if (status) {
                refuse(c, status, "%s", body);
                return;
        }
        if (!egress_policy_allows(p, req->host, req->port)) {
                bool v6 = req->kind == EGRESS_HOST_IPV6;
                refuse(c, 403,
                       "network access to %s%s%s:%u is not allowed for this cell; allowed: %s",
                       v6 ? "[" : "", req->host, v6 ? "]" : "", req->port,
                       egress_policy_allowed_text(run->e->policy));
                return;
        }
        if (!req->connect && p->terminate_tls && egress_policy_headers(p, req->host)) {
                /* The operator asked for these headers inside TLS, to a server the engine
                 * verified: plain HTTP would hand them to whoever is on the path or answers
                 * the engine's lookup. */
                refuse(c, 400,
                       "plain HTTP to %s is refused: this cell adds headers there only inside "
                       "TLS (terminate_tls): use https://",
                       req->host);
                return;
        }
        if (!req->connect && req->port == 443 && egress_policy_headers(p, req->host)) {
                /* Where TLS is expected, plain HTTP would carry the secret unencrypted. */
                refuse(c, 400,
                       "plain HTTP to %s:443 is refused: this proxy adds headers there, and on "
                       "port 443 they go only inside TLS (use https://)",
                       req->host);
                return;
        }
        if (connect_upstream(c, req) < 0)
                return;
        const char *early = buf + req->head_len;
        size_t early_len = len - req->head_len;
        if (req->connect) {
                static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
                if (send_all(run, c->client, ok, sizeof(ok) - 1) < 0)
                        return;
                if (egress_tls_terminates(run->e->tls, req->host)) {
                        /* The guest's hello goes to the engine's TLS, not on: bytes it sent
                         * before the 200 would have to be handed to OpenSSL, and no client
                         * sends any. */
                        if (early_len) {
                                egress_set_refused(c, "the guest sent TLS before the proxy's "
                                                      "answer to CONNECT");
                                return;
                        }
                        egress_terminate(c, req, bufs);
                        return;
                }
                if (req->port == 443) {
                        if (check_hello(c, req, early, early_len) < 0)
                                return;
                } else if (early_len && forward(c, c->upstream, early, early_len, true) < 0) {
                        return;
                }
                relay(c, bufs, UINT64_MAX, false);
                return;
        }
        size_t head_len = 0;
        _cleanup_free_ char *head =
                egress_request_rewrite(req, egress_policy_headers(p, req->host), &head_len);
        if (!head || forward(c, c->upstream, head, head_len, true) < 0)
                return;
        /* Secrets stay no longer than needed in memory the proxy reuses. */
        explicit_bzero(head, head_len);
        uint64_t body_left = req->content_length;
        size_t now = early_len < body_left ? early_len : (size_t)body_left;
        if (now && forward(c, c->upstream, early, now, true) < 0)
                return;
        relay(c, bufs, body_left - now, true);
}

static void conn_serve(struct egress_conn *c, char *bufs[2])
{
        struct egress *e = c->run->e;
        serve(c, bufs);
        close_fd(&c->upstream);
        close_fd(&c->client);
        if (e->log)
                e->log(e->log_userdata, c->host, c->port, c->refused[0] ? c->refused : "ok", c->out,
                       c->in);
}

struct egress_worker {
        struct egress *e;
        pthread_t thread;
        pthread_cond_t wake;
        struct egress_conn *conn; /* guarded by e->lock: the one to serve next */
        struct egress_worker *next, *next_idle;
};

/* Serves a connection, marks it done, waits for the next, until the proxy stops. */
static void *worker_main(void *arg)
{
        struct egress_worker *w = arg;
        struct egress *e = w->e;
        char *bufs[2] = {malloc(RELAY_BUFS_SIZE), malloc(RELAY_BUFS_SIZE)};
        pthread_mutex_lock(&e->lock);
        for (;;) {
                while (!w->conn && !e->stopping)
                        pthread_cond_wait(&w->wake, &e->lock);
                struct egress_conn *c = steal_ptr(w->conn);
                if (!c)
                        break;
                pthread_mutex_unlock(&e->lock);
                if (bufs[0] && bufs[1]) {
                        conn_serve(c, bufs);
                } else {
                        egress_set_refused(c, "out of memory");
                        close_fd(&c->client);
                }
                pthread_mutex_lock(&e->lock);
                c->done = true;
                pthread_cond_broadcast(&e->done);
                w->next_idle = e->idle;
                e->idle = w;
        }
        pthread_mutex_unlock(&e->lock);
        free(bufs[0]);
        free(bufs[1]);
        return NULL;
}

/* A worker for c (NULL: one waiting for the next connection): an idle one, or a new one.
 * Called with e->lock held. 0, or an errno. */
static int hand_over(struct egress *e, struct egress_conn *c)
{
        struct egress_worker *w = c ? e->idle : NULL;
        if (w) {
                e->idle = w->next_idle;
                w->conn = c;
                pthread_cond_signal(&w->wake);
                return 0;
        }
        if (!(w = calloc(1, sizeof(*w))))
                return ENOMEM;
        w->e = e;
        w->conn = c;
        pthread_cond_init(&w->wake, NULL);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, THREAD_STACK);
        int r = pthread_create(&w->thread, &attr, worker_main, w);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                pthread_cond_destroy(&w->wake);
                free(w);
                return r;
        }
        w->next = e->workers;
        e->workers = w;
        if (!c) {
                w->next_idle = e->idle;
                e->idle = w;
        }
        return 0;
}

struct lingering {
        int fd;
        double until;
};

/* A refusal the acceptor answers itself (no run, over the cap): no thread, the answer sent
 * as far as the socket takes it at once, then the fd kept for LINGER_MS and read to its end. */
static void refuse_at_once(struct egress *e, struct lingering *ling, int fd, int status,
                           const char *body)
{
        char answer[REFUSED_MAX + 256], sink[4096];
        while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
                ;
        (void)send(fd, answer, egress_refusal_text(answer, sizeof(answer), status, body),
                   MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)shutdown(fd, SHUT_WR);
        if (e->log)
                e->log(e->log_userdata, "", 0, body, 0, 0);
        for (size_t i = 0; i < LINGER_FDS; i++)
                if (ling[i].fd < 0) {
                        ling[i].fd = fd;
                        ling[i].until = now_ms() + LINGER_MS;
                        return;
                }
        close(fd);
}

static void admit(struct egress *e, struct lingering *ling, int fd)
{
        char body[REFUSED_MAX];
        pthread_mutex_lock(&e->lock);
        struct egress_run *run = e->run;
        if (!run) {
                pthread_mutex_unlock(&e->lock);
                refuse_at_once(e, ling, fd, 403,
                               "no code is running: network access is open only while a run lasts");
                return;
        }
        if (run->admitted >= e->policy->connections) {
                run->over_cap++;
                pthread_mutex_unlock(&e->lock);
                snprintf(body, sizeof(body), "over %u connections this run",
                         e->policy->connections);
                refuse_at_once(e, ling, fd, 429, body);
                return;
        }
        struct egress_conn *c = calloc(1, sizeof(*c));
        int r = ENOMEM;
        if (c) {
                c->run = run;
                c->client = fd;
                c->upstream = -1;
                r = hand_over(e, c);
        }
        if (r != 0) {
                pthread_mutex_unlock(&e->lock);
                free(c);
                snprintf(body, sizeof(body), "the proxy cannot take this connection: %s",
                         strerror(r));
                refuse_at_once(e, ling, fd, 502, body);
                return;
        }
        run->admitted++;
        *run->tail = c;
        run->tail = &c->next;
        pthread_mutex_unlock(&e->lock);
}

static void *acceptor_main(void *arg)
{
        struct egress *e = arg;
        struct lingering ling[LINGER_FDS];
        struct pollfd p[2 + LINGER_FDS];
        for (size_t i = 0; i < LINGER_FDS; i++)
                ling[i].fd = -1;
        for (;;) {
                double next = INFINITY;
                p[0] = (struct pollfd){e->listen_fd, POLLIN, 0};
                p[1] = (struct pollfd){e->stop_fd, POLLIN, 0};
                for (size_t i = 0; i < LINGER_FDS; i++) {
                        p[2 + i] = (struct pollfd){ling[i].fd, POLLIN, 0};
                        if (ling[i].fd >= 0 && ling[i].until < next)
                                next = ling[i].until;
                }
                int r = poll(p, 2 + LINGER_FDS, isinf(next) ? -1 : deadline_poll_ms(next));
                if (r < 0 && errno != EINTR)
                        break;
                if (r > 0 && p[1].revents)
                        break;
                for (size_t i = 0; i < LINGER_FDS; i++) {
                        if (ling[i].fd < 0)
                                continue;
                        char sink[4096];
                        ssize_t n = p[2 + i].revents
                                            ? recv(ling[i].fd, sink, sizeof(sink), MSG_DONTWAIT)
                                            : -1;
                        bool done =
                                now_ms() >= ling[i].until || n == 0 ||
                                (p[2 + i].revents && n < 0 && errno != EAGAIN && errno != EINTR);
                        if (done)
                                close_fd(&ling[i].fd);
                }
                if (r > 0 && p[0].revents) {
                        int fd = accept4(e->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                        if (fd >= 0) {
                                no_delay(fd);
                                admit(e, ling, fd);
                        } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                                   errno == ENOMEM)
                                (void)poll(NULL, 0, 50); /* out of fds: let some close first */
                }
        }
        for (size_t i = 0; i < LINGER_FDS; i++)
                close_fd(&ling[i].fd);
        return NULL;
}

/* Every worker told to end, and joined. */
static void stop_workers(struct egress *e)
{
        pthread_mutex_lock(&e->lock);
        e->stopping = true;
        for (struct egress_worker *w = e->workers; w; w = w->next)
                pthread_cond_signal(&w->wake);
        struct egress_worker *all = steal_ptr(e->workers);
        e->idle = NULL;
        pthread_mutex_unlock(&e->lock);
        for (struct egress_worker *w = all, *next; w; w = next) {
                next = w->next;
                pthread_join(w->thread, NULL);
                pthread_cond_destroy(&w->wake);
                free(w);
        }
}

struct egress *egress_start(const struct egress_policy *policy, const struct egress_tls *tls,
                            int listen_fd, egress_log_fn log, void *log_userdata,
                            codecell_error *err)
{
        struct egress *e = calloc(1, sizeof(*e));
        int flags = fcntl(listen_fd, F_GETFL);
        if (!e || flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) < 0) {
                err_sys(err, e ? errno : ENOMEM, "egress proxy");
                goto fail;
        }
        e->policy = policy;
        e->tls = tls;
        e->listen_fd = listen_fd;
        e->log = log;
        e->log_userdata = log_userdata;
        e->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (e->stop_fd < 0) {
                err_sys(err, errno, "egress proxy");
                goto fail;
        }
        pthread_mutex_init(&e->lock, NULL);
        pthread_cond_init(&e->done, NULL);
        /* The acceptor, and the workers (it starts those beyond the first), block SIGPIPE:
         * OpenSSL writes to a socket the peer may have closed with write(2), which has no
         * MSG_NOSIGNAL, and the library leaves the process's own handling of the signal
         * alone. A SIGPIPE raised in such a thread stays pending on it, and is discarded when
         * it ends. One worker waits from the start, so that a run's first connection does not
         * wait for a thread either. */
        sigset_t pipe_set, was;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &was);
        pthread_mutex_lock(&e->lock);
        (void)hand_over(e, NULL); /* without it, the first connection makes one */
        pthread_mutex_unlock(&e->lock);
        int r = pthread_create(&e->acceptor, NULL, acceptor_main, e);
        pthread_sigmask(SIG_SETMASK, &was, NULL);
        if (r != 0) {
                stop_workers(e);
                pthread_cond_destroy(&e->done);
                pthread_mutex_destroy(&e->lock);
                err_sys(err, r, "egress proxy: thread");
                goto fail;
        }
        return e;
fail:
        if (e) {
                if (e->stop_fd > 0)
                        close(e->stop_fd);
                free(e);
        }
        close(listen_fd);
        return NULL;
}

void egress_run_begin(struct egress *e, double deadline_ms)
{
        if (e->run)
                json_decref(egress_run_end(e));
        struct egress_run *run = calloc(1, sizeof(*run));
        if (!run)
                return; /* no run: connections are refused as between runs */
        run->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (run->stop_fd < 0) {
                free(run);
                return;
        }
        run->e = e;
        run->deadline = deadline_ms > 0 ? deadline_ms : INFINITY;
        run->tail = &run->first;
        atomic_init(&run->bytes_out, 0);
        atomic_init(&run->bytes_in, 0);
        pthread_mutex_lock(&e->lock);
        e->run = run;
        pthread_mutex_unlock(&e->lock);
}

json_t *egress_run_end(struct egress *e)
{
        json_t *list = json_array();
        pthread_mutex_lock(&e->lock);
        struct egress_run *run = steal_ptr(e->run);
        pthread_mutex_unlock(&e->lock);
        if (!run)
                return list;
        /* Every wait of the run's workers polls stop_fd: each sees it, closes its fds and is
         * done, so the waits are short. A lookup still in getaddrinfo is not waited for. */
        (void)eventfd_write(run->stop_fd, 1);
        for (struct egress_conn *c = run->first, *next; c; c = next) {
                next = c->next;
                pthread_mutex_lock(&e->lock);
                while (!c->done)
                        pthread_cond_wait(&e->done, &e->lock);
                pthread_mutex_unlock(&e->lock);
                json_t *o =
                        json_pack("{s:s, s:i, s:I, s:I}", "host", c->host, "port", (int)c->port,
                                  "bytes_out", (json_int_t)c->out, "bytes_in", (json_int_t)c->in);
                if (o && c->refused[0])
                        json_object_set_new(o, "refused", json_string(c->refused));
                if (o)
                        json_array_append_new(list, o);
                free(c);
        }
        if (run->over_cap) {
                char why[128];
                snprintf(why, sizeof(why), "over %u connections this run: %u refused",
                         e->policy->connections, run->over_cap);
                json_array_append_new(list,
                                      json_pack("{s:s, s:i, s:i, s:i, s:s}", "host", "", "port", 0,
                                                "bytes_out", 0, "bytes_in", 0, "refused", why));
        }
        close(run->stop_fd);
        free(run);
        return list;
}

void egress_stop(struct egress *e)
{
        if (!e)
                return;
        json_decref(egress_run_end(e));
        (void)eventfd_write(e->stop_fd, 1);
        pthread_join(e->acceptor, NULL);
        stop_workers(e);
        close(e->listen_fd);
        close(e->stop_fd);
        pthread_cond_destroy(&e->done);
        pthread_mutex_destroy(&e->lock);
        free(e);
}
