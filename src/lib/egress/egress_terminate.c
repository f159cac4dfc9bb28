/* A CONNECT whose TLS the engine terminates (egress_conn.h, egress_tls.h). Its life, in the
 * connection's thread: the guest's handshake with the host's certificate from the cell's CA;
 * one request read whole and checked as strictly as plain HTTP (its Host the tunnel's); TLS
 * to the server, verified; the rewritten head with the operator's headers, the body it
 * declared, and the answer back until the server ends it. One request per connection, as
 * for plain HTTP ("Connection: close"): the guest's client opens another for the next. Every
 * refusal after the guest's handshake is an HTTP answer inside its TLS, which the model
 * reads as it reads any other. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "deadline.h"
#include "egress_conn.h"
#include "egress_host.h"
#include "egress_policy.h"
#include "util.h"

static short events_of(enum egress_tls_status st)
{
        return st == EGRESS_TLS_WANT_WRITE ? POLLOUT : POLLIN;
}

/* Why a wait ended before its socket was ready (WAIT_DEADLINE or WAIT_STOP). */
static const char *wait_end_text(int w)
{
        return w == WAIT_DEADLINE ? "closed at the run's time limit" : "the run ended";
}

/* Records it. */
static void wait_ended(struct egress_conn *c, int w)
{
        if (w != WAIT_READY)
                egress_set_refused(c, "%s", wait_end_text(w));
}

/* Waits for what the side asked for: 0, or -1 (the reason recorded). */
static int wait_side(struct egress_conn *c, int fd, enum egress_tls_status st)
{
        int w = egress_wait_for(c->run, fd, events_of(st));
        wait_ended(c, w);
        return w == WAIT_READY ? 0 : -1;
}

/* 0; -1 when TLS failed (egress_tls_why(s) says why); or -2 when the run ended or reached its
 * time limit first, *ret_wait then saying which. Nothing is recorded: the caller puts the
 * reason in its words. */
static int handshake(struct egress_conn *c, struct egress_tls_side *s, int fd, int *ret_wait)
{
        for (;;) {
                enum egress_tls_status st = egress_tls_handshake(s);
                if (st == EGRESS_TLS_OK)
                        return 0;
                if (st == EGRESS_TLS_ERROR)
                        return -1;
                *ret_wait = egress_wait_for(c->run, fd, events_of(st));
                if (*ret_wait != WAIT_READY)
                        return -2;
        }
}

/* All n bytes over s: 0, or -1 (the reason recorded). Not counted: the caller counts. */
static int send_all_tls(struct egress_conn *c, struct egress_tls_side *s, int fd, const char *data,
                        size_t n)
{
        while (n > 0) {
                size_t put = 0;
                enum egress_tls_status st = egress_tls_write(s, data, n, &put);
                if (st == EGRESS_TLS_OK) {
                        data += put;
                        n -= put;
                        continue;
                }
                if (st == EGRESS_TLS_EOF || st == EGRESS_TLS_ERROR) {
                        egress_set_refused(c, "%s", egress_tls_why(s));
                        return -1;
                }
                if (wait_side(c, fd, st) < 0)
                        return -1;
        }
        return 0;
}

/* A refusal inside the guest's TLS. */
static void refuse_tls(struct egress_conn *c, struct egress_tls_side *guest, int status,
                       const char *body)
{
        char answer[REFUSED_MAX + 256];
        egress_set_refused(c, "%s", body);
        (void)send_all_tls(c, guest, c->client, answer,
                           egress_refusal_text(answer, sizeof(answer), status, body));
}

/* The guest's request head, whole, into buf: its length and *ret_len the bytes read, or -1
 * (refused). */
static int read_request(struct egress_conn *c, struct egress_tls_side *guest,
                        const struct egress_request *connect, char *buf, struct egress_request *req,
                        size_t *ret_len)
{
        size_t len = 0;
        for (;;) {
                size_t got = 0;
                enum egress_tls_status st =
                        egress_tls_read(guest, buf + len, EGRESS_HEAD_MAX - len, &got);
                if (st == EGRESS_TLS_EOF) {
                        egress_set_refused(c, "the guest closed the connection before a whole "
                                              "request");
                        return -1;
                }
                if (st == EGRESS_TLS_ERROR) {
                        egress_set_refused(c, "%s", egress_tls_why(guest));
                        return -1;
                }
                if (st != EGRESS_TLS_OK) {
                        if (wait_side(c, c->client, st) < 0)
                                return -1;
                        continue;
                }
                /* Parsed again only when a line may have ended, as for plain HTTP: a guest
                 * that sends its head a byte per TLS record costs one parse per line, not a
                 * parse of the whole head so far per byte. */
                bool line_end = memchr(buf + len, '\n', got) || memchr(buf + len, '\0', got);
                len += got;
                buf[len] = '\0';
                if (!line_end && len < EGRESS_HEAD_MAX)
                        continue;
                const char *why = NULL;
                int rc = egress_tunnel_request_parse(buf, len, connect->host, connect->kind,
                                                     connect->port, req, &why);
                if (rc == 1) {
                        *ret_len = len;
                        return 0;
                }
                if (rc < 0) {
                        char body[REFUSED_MAX];
                        snprintf(body, sizeof(body), "bad request: %s", why);
                        refuse_tls(c, guest, -rc, body);
                        return -1;
                }
        }
}

/* One direction of the relay, in plaintext. */
struct tls_leg {
        struct egress_tls_side *from, *to;
        int from_fd, to_fd;
        char *buf;
        size_t len, off;
        bool reading;
        bool out;                     /* guest to server */
        uint64_t left;                /* out: the body's bytes still to pass on */
        struct egress_answer *answer; /* down: the answer, its head rewritten */
};

/* What the leg can do now, without waiting: 1 when something moved, 0 when nothing could,
 * -1 when the connection ends. *want_from / *want_to gather the events each socket waits
 * for. */
static int leg_step(struct egress_conn *c, struct tls_leg *l, short *want_from, short *want_to)
{
        int moved = 0;
        if (l->reading && l->len == 0) {
                size_t cap = RELAY_BUF;
                if (l->out && l->left < cap)
                        cap = (size_t)l->left;
                size_t got = 0, room = l->answer ? egress_answer_room(l->answer) : 0;
                enum egress_tls_status st =
                        egress_tls_read(l->from, room ? l->answer->head + l->answer->len : l->buf,
                                        room ? room : cap, &got);
                if (st == EGRESS_TLS_OK) {
                        if (egress_take_bytes(c, got, l->out) < 0)
                                return -1;
                        l->off = 0;
                        l->len = room ? egress_answer_feed(l->answer, got, false, l->buf) : got;
                        if (l->out && (l->left -= got) == 0)
                                l->reading = false;
                        moved = 1;
                } else if (st == EGRESS_TLS_EOF) {
                        l->reading = false;
                        if (room) /* a head the server left unfinished goes as it is */
                                l->len = egress_answer_feed(l->answer, 0, true, l->buf);
                        l->off = 0;
                        moved = 1;
                } else if (st == EGRESS_TLS_ERROR) {
                        egress_set_refused(c, "%s", egress_tls_why(l->from));
                        return -1;
                } else {
                        *want_from |= events_of(st);
                }
        }
        if (l->len) {
                size_t put = 0;
                enum egress_tls_status st =
                        egress_tls_write(l->to, l->buf + l->off, l->len - l->off, &put);
                if (st == EGRESS_TLS_OK) {
                        l->off += put;
                        if (l->out)
                                c->out += put;
                        else
                                c->in += put;
                        if (l->off == l->len)
                                l->off = l->len = 0;
                        moved = 1;
                } else if (st == EGRESS_TLS_EOF || st == EGRESS_TLS_ERROR) {
                        egress_set_refused(c, "%s", egress_tls_why(l->to));
                        return -1;
                } else {
                        *want_to |= events_of(st);
                }
        }
        return moved;
}

/* The rest of the body up, the answer down, until the server has ended it. */
static void relay_tls(struct egress_conn *c, struct egress_tls_side *guest,
                      struct egress_tls_side *server, char *bufs[2], uint64_t body_left)
{
        struct egress_run *run = c->run;
        _cleanup_free_ struct egress_answer *answer = calloc(1, sizeof(*answer));
        if (!answer) {
                egress_set_refused(c, "out of memory");
                return;
        }
        struct tls_leg up = {.from = guest,
                             .to = server,
                             .from_fd = c->client,
                             .to_fd = c->upstream,
                             .buf = bufs[0],
                             .reading = body_left > 0,
                             .out = true,
                             .left = body_left};
        struct tls_leg down = {.from = server,
                               .to = guest,
                               .from_fd = c->upstream,
                               .to_fd = c->client,
                               .buf = bufs[1],
                               .reading = true,
                               .answer = answer};
        for (;;) {
                if (now_ms() >= run->deadline) {
                        egress_set_refused(c, "closed at the run's time limit");
                        return;
                }
                short want_client = 0, want_server = 0;
                int a = leg_step(c, &up, &want_client, &want_server);
                int b = a < 0 ? -1 : leg_step(c, &down, &want_server, &want_client);
                if (a < 0 || b < 0)
                        return;
                if (!down.reading && down.len == 0)
                        return; /* the answer is whole with the guest */
                if (a || b)
                        continue; /* OpenSSL may hold more than the socket shows */
                struct pollfd p[3];
                /* The run's end is no refusal here, as in the plain relay: most often the
                 * guest has read its whole answer and ended before the server's close came. */
                if (egress_poll_sides(c, want_client, want_server, p) < 0)
                        return;
        }
}

/* The name the guest's hello asked for, if any, must be the CONNECT's host. */
static int check_server_name(struct egress_conn *c, struct egress_tls_side *guest,
                             const struct egress_request *connect)
{
        const char *sni = egress_tls_server_name(guest);
        if (!sni)
                return 0;
        char name[EGRESS_HOST_MAX];
        const char *why = NULL;
        if (egress_host_normalize(sni, strlen(sni), name, &why) && strcmp(name, connect->host) == 0)
                return 0;
        char escaped[EGRESS_HOST_MAX];
        egress_escape(sni, strlen(sni), escaped, sizeof(escaped));
        char body[REFUSED_MAX];
        snprintf(body, sizeof(body),
                 "the TLS ClientHello names %s, not %s, the host of the CONNECT", escaped,
                 connect->host);
        refuse_tls(c, guest, 400, body);
        return -1;
}

void egress_terminate(struct egress_conn *c, const struct egress_request *connect, char *bufs[2])
{
        const struct egress *e = c->run->e;
        const struct egress_policy *p = e->policy;
        struct egress_tls_side *guest = egress_tls_guest_side(e->tls, connect->host, c->client);
        struct egress_tls_side *server = NULL;
        _cleanup_free_ struct egress_request *req = malloc(sizeof(*req));
        _cleanup_free_ char *head = NULL;
        size_t len = 0, head_len = 0;
        char body[REFUSED_MAX];
        if (!guest || !req) {
                egress_set_refused(c, "out of memory");
                goto done;
        }
        int w = WAIT_READY, shaken = handshake(c, guest, c->client, &w);
        /* A guest that gave up on the handshake (its alert sent) and ended its run at once:
         * the alert is in the socket already, and is the reason that counts. Bytes only: a
         * guest gone (its end of the stream) did nothing wrong. */
        char peek;
        if (shaken == -2 && recv(c->client, &peek, 1, MSG_PEEK | MSG_DONTWAIT) == 1 &&
            egress_tls_handshake(guest) == EGRESS_TLS_ERROR)
                shaken = -1;
        if (shaken == -2) {
                wait_ended(c, w); /* not the guest's TLS: the run ended first */
                goto done;
        }
        if (shaken == -1) {
                /* Most often a guest that does not trust the cell's CA: say where it is. */
                egress_set_refused(c,
                                   "%s (the engine terminates TLS to %s: the guest must trust "
                                   "the cell's CA, which SSL_CERT_FILE names)",
                                   egress_tls_why(guest), connect->host);
                goto done;
        }
        if (check_server_name(c, guest, connect) < 0 ||
            read_request(c, guest, connect, bufs[0], req, &len) < 0)
                goto done;
        int status = egress_method_refusal(p, req, body, sizeof(body));
        if (status) {
                refuse_tls(c, guest, status, body);
                goto done;
        }
        if (!(server = egress_tls_server_side(e->tls, connect->host, c->upstream))) {
                egress_set_refused(c, "out of memory");
                goto done;
        }
        shaken = handshake(c, server, c->upstream, &w);
        if (shaken != 0) {
                snprintf(body, sizeof(body), "TLS to %s failed: %s", connect->host,
                         shaken == -1 ? egress_tls_why(server) : wait_end_text(w));
                refuse_tls(c, guest, 502, body);
                goto done;
        }
        head = egress_request_rewrite(req, egress_policy_headers(p, connect->host), &head_len);
        if (!head || egress_take_bytes(c, head_len, true) < 0)
                goto done;
        int sent = send_all_tls(c, server, c->upstream, head, head_len);
        /* Secrets stay no longer than needed in memory the proxy reuses. */
        explicit_bzero(head, head_len);
        if (sent < 0)
                goto done;
        c->out += head_len;
        const char *early = bufs[0] + req->head_len;
        size_t early_len = len - req->head_len;
        uint64_t body_left = req->content_length;
        size_t now = early_len < body_left ? early_len : (size_t)body_left;
        if (now) {
                if (egress_take_bytes(c, now, true) < 0 ||
                    send_all_tls(c, server, c->upstream, early, now) < 0)
                        goto done;
                c->out += now;
        }
        relay_tls(c, guest, server, bufs, body_left - now);
done:
        egress_tls_side_free(server);
        egress_tls_side_free(guest);
}
