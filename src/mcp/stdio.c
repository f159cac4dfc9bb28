/* The stdio transport: one JSON-RPC message per line on stdin, answers and notifications one
 * per line on stdout (which carries nothing else). A long-running request (tools/call, as
 * methods.h says) runs on its own thread, so calls overlap and answer out of order; everything
 * else is answered at once, in order. At end of input the calls still running are answered
 * before it returns (so `… | codecell serve` gets every answer); on SIGTERM/SIGINT they are
 * cancelled. Either way its sessions are closed.
 * Both eras share the line: a message with a 2026-07-28 _meta goes to the process's modern
 * client (session handles), any other to its legacy one (initialize, session names). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "util.h"
#include "methods.h"
#include "server.h"
#include "transports.h"

struct stdio_sink {
        struct mcp_sink sink;
        int fd;
        pthread_mutex_t lock; /* one whole line at a time */
};

static int stdio_send(struct mcp_sink *sink, char *text, bool answer)
{
        (void)answer;
        struct stdio_sink *out = (struct stdio_sink *)sink;
        size_t n = strlen(text);
        text[n] = '\n'; /* replaces the NUL: the line is written in one piece */
        pthread_mutex_lock(&out->lock);
        (void)write_all(out->fd, text, n + 1); /* failing: the client went away */
        pthread_mutex_unlock(&out->lock);
        free(text);
        return 0;
}

/* Calls running on their own threads, waited for before the transport returns. */
struct jobs {
        pthread_mutex_t lock;
        pthread_cond_t done;
        unsigned running;
};

struct job {
        struct mcp_server *server;
        struct mcp_client *client;
        struct stdio_sink *out;
        struct jobs *jobs;
        json_t *message;
};

static void *run_job(void *arg)
{
        struct job *j = arg;
        mcp_handle(j->server, j->client, j->message, JSONRPC_REQUEST, &j->out->sink);
        json_decref(j->message);
        mcp_client_unref(j->client);
        pthread_mutex_lock(&j->jobs->lock);
        j->jobs->running--;
        pthread_cond_broadcast(&j->jobs->done);
        pthread_mutex_unlock(&j->jobs->lock);
        free(j);
        return NULL;
}

static void handle_line(struct mcp_server *s, struct mcp_client *clients[2], struct stdio_sink *out,
                        struct jobs *jobs, const char *line, size_t len)
{
        enum jsonrpc_kind kind;
        json_t *error = NULL;
        json_t *msg = jsonrpc_parse(line, len, &kind, &error);
        if (!msg) {
                mcp_answer(&out->sink, error);
                return;
        }
        if (kind == JSONRPC_NOTIFICATION) {
                /* Both clients see it; each takes it when its method is offered in the
                 * client's era (notifications/cancelled names a request of either). */
                mcp_handle(s, clients[0], msg, kind, &out->sink);
                mcp_handle(s, clients[1], msg, kind, &out->sink);
                json_decref(msg);
                return;
        }
        struct mcp_client *c = clients[mcp_message_modern(msg)];
        const struct mcp_method *m =
                mcp_method_find(json_string_value(json_object_get(msg, "method")));
        if (kind == JSONRPC_REQUEST && m && m->long_running) {
                struct job *j = malloc(sizeof(*j));
                pthread_t thread;
                pthread_attr_t attr;
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                if (j) {
                        *j = (struct job){.server = s,
                                          .client = mcp_client_ref(c),
                                          .out = out,
                                          .jobs = jobs,
                                          .message = msg};
                        pthread_mutex_lock(&jobs->lock);
                        jobs->running++;
                        pthread_mutex_unlock(&jobs->lock);
                        if (pthread_create(&thread, &attr, run_job, j) == 0) {
                                pthread_attr_destroy(&attr);
                                return;
                        }
                        pthread_mutex_lock(&jobs->lock);
                        jobs->running--;
                        pthread_mutex_unlock(&jobs->lock);
                        mcp_client_unref(c);
                        free(j);
                }
                pthread_attr_destroy(&attr);
                /* No thread to spare: run it here, in order. */
        }
        mcp_handle(s, c, msg, kind, &out->sink);
        json_decref(msg);
}

static bool blank(const char *p, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!strchr(" \t\r", p[i]))
                        return false;
        return true;
}

int mcp_serve_stdio(struct mcp_server *s, int in_fd, int out_fd, size_t max_message, int signal_fd)
{
        struct mcp_client *clients[2] = {mcp_client_new(s), mcp_client_new_stateless(s, false)};
        if (!clients[0] || !clients[1]) {
                mcp_client_unref(clients[0]);
                mcp_client_unref(clients[1]);
                return -ENOMEM;
        }
        struct stdio_sink out = {.sink.send = stdio_send, .fd = out_fd};
        pthread_mutex_init(&out.lock, NULL);
        struct jobs jobs = {.running = 0};
        pthread_mutex_init(&jobs.lock, NULL);
        pthread_cond_init(&jobs.done, NULL);

        size_t cap = max_message + 1, len = 0;
        char *buf = malloc(cap);
        bool skipping = false; /* inside a line that was over the cap */
        int r = buf ? 0 : -ENOMEM;
        while (r == 0) {
                struct pollfd fds[2] = {{.fd = in_fd, .events = POLLIN},
                                        {.fd = signal_fd, .events = POLLIN}};
                if (poll(fds, signal_fd >= 0 ? 2 : 1, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                if (signal_fd >= 0 && fds[1].revents) {
                        mcp_server_stop(s); /* SIGTERM or SIGINT: cancel what runs */
                        break;
                }
                ssize_t n = read(in_fd, buf + len, cap - len);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0)
                        break; /* end of input: the client is gone */
                len += (size_t)n;
                size_t start = 0;
                for (char *nl; (nl = memchr(buf + start, '\n', len - start));) {
                        size_t line_len = (size_t)(nl - (buf + start));
                        if (!skipping && !blank(buf + start, line_len))
                                handle_line(s, clients, &out, &jobs, buf + start, line_len);
                        skipping = false;
                        start += line_len + 1;
                }
                memmove(buf, buf + start, len - start);
                len -= start;
                if (len == cap) {
                        /* No newline within the cap: refuse the message, skip to its end. */
                        mcp_answer(&out.sink, jsonrpc_error(NULL, JSONRPC_PARSE_ERROR,
                                                            "message over %zu bytes", max_message));
                        skipping = true;
                        len = 0;
                }
        }
        free(buf);
        pthread_mutex_lock(&jobs.lock);
        while (jobs.running)
                pthread_cond_wait(&jobs.done, &jobs.lock);
        pthread_mutex_unlock(&jobs.lock);
        for (size_t i = 0; i < 2; i++) {
                mcp_client_end(clients[i]);
                mcp_client_unref(clients[i]);
        }
        pthread_cond_destroy(&jobs.done);
        pthread_mutex_destroy(&jobs.lock);
        pthread_mutex_destroy(&out.lock);
        return r;
}
