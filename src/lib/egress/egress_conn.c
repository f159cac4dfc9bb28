/* What the proxy's connections share, in egress.c's relay and egress_terminate.c's
 * (egress_conn.h): the waits on the run, the record of a refusal and its answer, the byte caps,
 * the method checks. */
#include "egress_conn.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "deadline.h"
#include "egress_host.h"
#include "util.h"

/* Whether fd is ready for events before until (and the run's deadline): WAIT_READY,
 * WAIT_DEADLINE, or WAIT_STOP once the run ends. */
int egress_wait_until(struct egress_run *run, int fd, short events, double until)
{
        if (run->deadline < until)
                until = run->deadline;
        for (;;) {
                if (now_ms() >= until)
                        return WAIT_DEADLINE;
                struct pollfd p[2] = {{fd, events, 0}, {run->stop_fd, POLLIN, 0}};
                int r = poll(p, 2, isinf(until) ? -1 : deadline_poll_ms(until));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0 || p[1].revents)
                        return WAIT_STOP;
                if (r > 0)
                        return WAIT_READY;
        }
}

int egress_wait_for(struct egress_run *run, int fd, short events)
{
        return egress_wait_until(run, fd, events, INFINITY);
}

void egress_set_refused(struct egress_conn *c, const char *fmt, ...)
{
        if (c->refused[0])
                return; /* the first reason is the one that counts */
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->refused, sizeof(c->refused), fmt, ap);
        va_end(ap);
        utf8_trim_cut(c->refused);
}

static const char *status_text(int status)
{
        switch (status) {
        case 400:
                return "Bad Request";
        case 403:
                return "Forbidden";
        case 405:
                return "Method Not Allowed";
        case 429:
                return "Too Many Requests";
        case 502:
                return "Bad Gateway";
        case 504:
                return "Gateway Timeout";
        default:
                return "Error";
        }
}

/* The answer to a refused request, into buf: a short text/plain body that closes. */
size_t egress_refusal_text(char *buf, size_t size, int status, const char *body)
{
        int n = snprintf(buf, size,
                         "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
                         status, status_text(status), strlen(body) + 1, body);
        return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

int egress_take_bytes(struct egress_conn *c, size_t n, bool out)
{
        struct egress_run *run = c->run;
        uint64_t cap = run->e->policy->bytes;
        uint64_t was = atomic_fetch_add(out ? &run->bytes_out : &run->bytes_in, (uint64_t)n);
        if (was + n <= cap)
                return 0;
        egress_set_refused(c, "over %llu bytes %s this run", (unsigned long long)cap,
                           out ? "out" : "in");
        return -1;
}

int egress_poll_sides(struct egress_conn *c, short client_events, short upstream_events,
                      struct pollfd p[3])
{
        struct egress_run *run = c->run;
        p[0] = (struct pollfd){client_events ? c->client : -1, client_events, 0};
        p[1] = (struct pollfd){upstream_events ? c->upstream : -1, upstream_events, 0};
        p[2] = (struct pollfd){run->stop_fd, POLLIN, 0};
        int r = poll(p, 3, isinf(run->deadline) ? -1 : deadline_poll_ms(run->deadline));
        if (r < 0 && errno == EINTR)
                return 0;
        if (r < 0 || p[2].revents)
                return -1;
        return r > 0 ? 1 : 0;
}

/* TRACE (and TRACK, IIS's) answers with the request the server received: to a host the proxy
 * adds headers to, it would hand the operator's secret to the guest. Compared without case:
 * methods are case-sensitive, but a lenient server may take "trace" for TRACE. */
static bool echoes_request(const struct egress_request *req)
{
        return req->method_len == 5 && (strncasecmp(req->method, "TRACE", 5) == 0 ||
                                        strncasecmp(req->method, "TRACK", 5) == 0);
}

int egress_method_refusal(const struct egress_policy *p, const struct egress_request *req,
                          char *body, size_t size)
{
        if (!egress_policy_method_allowed(p, req->method, req->method_len)) {
                char method[64];
                egress_escape(req->method, req->method_len, method, sizeof(method));
                int n = snprintf(body, size,
                                 "method %s is not allowed for this cell; allowed: ", method);
                for (size_t i = 0; n >= 0 && (size_t)n < size && i < p->n_methods; i++)
                        n += snprintf(body + n, size - (size_t)n, "%s%s", i ? ", " : "",
                                      p->methods[i]);
                utf8_trim_cut(body);
                return 405;
        }
        if (echoes_request(req) && egress_policy_headers(p, req->host)) {
                snprintf(body, size,
                         "method %.*s is not allowed to %s: its answer is the request as the "
                         "server got it, with the headers this proxy adds there",
                         (int)req->method_len, req->method, req->host);
                return 405;
        }
        return 0;
}
