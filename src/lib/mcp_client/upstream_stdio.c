/* The stdio transport of an upstream MCP server: a host program, messages as lines of JSON on
 * its stdin and stdout. The program runs outside the sandbox as the user running codecell, in a
 * process group of its own (what it starts ends with it), with only the environment its
 * configuration gives it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "deadline.h"
#include "exact_integers.h"
#include "host_spawn.h"
#include "pipe_write.h"
#include "upstream_internal.h"
#include "util.h"

/* A message longer than this ends the connection: the server is broken or hostile. */
#define MAX_LINE (64u << 20)
/* The end of its stderr kept, to say why a server died. */
#define TAIL 1000
/* A clean shutdown: time to exit after stdin closes, then after SIGTERM. */
#define EXIT_GRACE_MS 1000

struct stdio_state {
        pid_t pid;
        int in_fd, out_fd, err_fd;
        int wake[2]; /* written by close(): the reader leaves */
        pthread_t reader;
        char tail[TAIL + 1];
        size_t tail_len;
};

/* No parent-death signal: it would fire when the thread that happened to start the server
 * ends; a server whose engine dies sees EOF on its stdin instead. */
static int spawn(const struct upstream_spec *spec, int in, int out, int err, pid_t *ret_pid)
{
        return host_spawn(&(struct host_spawn){.argv = spec->argv,
                                               .env = spec->env,
                                               .cwd = spec->cwd,
                                               .in = in,
                                               .out = out,
                                               .err = err},
                          ret_pid);
}

static void keep_tail(struct stdio_state *s, const char *buf, size_t n)
{
        if (n >= TAIL) {
                memcpy(s->tail, buf + n - TAIL, TAIL);
                s->tail_len = TAIL;
        } else {
                if (s->tail_len + n > TAIL) {
                        size_t drop = s->tail_len + n - TAIL;
                        memmove(s->tail, s->tail + drop, s->tail_len - drop);
                        s->tail_len -= drop;
                }
                memcpy(s->tail + s->tail_len, buf, n);
                s->tail_len += n;
        }
        s->tail[s->tail_len] = '\0';
}

/* Whether pid exits within ms, looked at every 5 ms, and how (into *ret_info unless NULL); it
 * is not reaped. */
static bool exited_within(pid_t pid, double ms, siginfo_t *ret_info)
{
        double until = now_ms() + ms;
        do {
                siginfo_t info = {0};
                if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
                    info.si_pid == pid) {
                        if (ret_info)
                                *ret_info = info;
                        return true;
                }
                usleep(5000);
        } while (now_ms() < until);
        return false;
}

/* Why the server's stdout ended: its exit status (waited for briefly, not reaped: close()
 * reaps it after killing its group) and the last line of its stderr. */
static void describe_end(struct stdio_state *s, const char *what, char *buf, size_t size)
{
        siginfo_t info = {0};
        char status[64] = "";
        if (exited_within(s->pid, 500, &info))
                snprintf(status, sizeof(status),
                         info.si_code == CLD_EXITED ? " (exit code %d)" : " (signal %d)",
                         info.si_status);
        /* The last non-empty line of stderr says most. */
        size_t end = s->tail_len;
        while (end > 0 && (s->tail[end - 1] == '\n' || s->tail[end - 1] == ' '))
                end--;
        size_t start = end;
        while (start > 0 && s->tail[start - 1] != '\n')
                start--;
        char *line = utf8_sanitize(s->tail + start, end - start, NULL);
        snprintf(buf, size, "%s%s%s%s", what, status, line && *line ? ": " : "", line ? line : "");
        utf8_trim_cut(buf);
        free(line);
}

static void *reader_main(void *arg)
{
        struct upstream *u = arg;
        struct stdio_state *s = u->transport;
        char *line = NULL;
        size_t len = 0, cap = 0;
        char buf[65536];
        const char *why = NULL;
        while (!why) {
                struct pollfd p[3] = {{.fd = s->out_fd, .events = POLLIN},
                                      {.fd = s->err_fd, .events = POLLIN},
                                      {.fd = s->wake[0], .events = POLLIN}};
                if (poll(p, s->err_fd >= 0 ? 3 : 1, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        why = "its pipes failed";
                        break;
                }
                if (p[2].revents) {
                        why = "codecell closed the connection";
                        break;
                }
                if (s->err_fd >= 0 && p[1].revents) {
                        ssize_t n = read(s->err_fd, buf, sizeof(buf));
                        if (n > 0)
                                keep_tail(s, buf, (size_t)n);
                        else if (n == 0 || (errno != EINTR && errno != EAGAIN))
                                close_fd(&s->err_fd);
                }
                if (!p[0].revents)
                        continue;
                ssize_t n = read(s->out_fd, buf, sizeof(buf));
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0) {
                        why = "it exited";
                        break;
                }
                for (ssize_t i = 0; i < n && !why; i++) {
                        if (buf[i] != '\n') {
                                if (len + 1 >= cap) {
                                        size_t grown_cap = cap ? cap * 2 : 4096;
                                        char *grown = len + 1 < MAX_LINE ? realloc(line, grown_cap)
                                                                         : NULL;
                                        if (!grown) {
                                                why = "it sent a message over 64 MiB";
                                                break;
                                        }
                                        line = grown;
                                        cap = grown_cap;
                                }
                                line[len++] = buf[i];
                                continue;
                        }
                        /* One message per line; a line that is not JSON (a server that
                         * prints a banner to stdout) is skipped. */
                        json_t *msg =
                                len ? json_loadb_exact(line, len, JSON_REJECT_DUPLICATES, NULL)
                                    : NULL;
                        len = 0;
                        if (msg)
                                upstream_receive(u, msg);
                }
        }
        free(line);
        char reason[1200];
        describe_end(s, why, reason, sizeof(reason));
        upstream_lost(u, reason);
        return NULL;
}

static int stdio_open(struct upstream *u, double deadline, char **ret_error)
{
        (void)deadline;
        struct stdio_state *s = calloc(1, sizeof(*s));
        _cleanup_close_pair_ int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
        _cleanup_close_pair_ int wake[2] = {-1, -1};
        if (!s || pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
            pipe2(err, O_CLOEXEC) < 0 || pipe2(wake, O_CLOEXEC) < 0) {
                if (asprintf(ret_error, "could not be started: %s", strerror(errno)) < 0)
                        *ret_error = NULL;
                free(s);
                return -1;
        }
        int r = spawn(&u->spec, in[0], out[1], err[1], &s->pid);
        close_fd(&in[0]);
        close_fd(&out[1]);
        close_fd(&err[1]);
        if (r != 0) {
                if (asprintf(ret_error, "could not be started: %s: %s", u->spec.argv[0],
                             strerror(r)) < 0)
                        *ret_error = NULL;
                free(s);
                return -1;
        }
        s->in_fd = steal_fd(in[1]);
        s->out_fd = steal_fd(out[0]);
        s->err_fd = steal_fd(err[0]);
        s->wake[0] = steal_fd(wake[0]);
        s->wake[1] = steal_fd(wake[1]);
        (void)fcntl(s->in_fd, F_SETFL, O_NONBLOCK);
        u->transport = s;
        if (pthread_create(&s->reader, NULL, reader_main, u) != 0) {
                u->transport = NULL;
                kill(-s->pid, SIGKILL);
                (void)wait_child(s->pid, NULL);
                close(s->in_fd);
                close(s->out_fd);
                close(s->err_fd);
                close_pair(s->wake);
                free(s);
                *ret_error = strdup("could not be started: no thread");
                return -1;
        }
        return 0;
}

static int stdio_send(struct upstream *u, const char *text, double deadline, char **ret_error)
{
        struct stdio_state *s = u->transport;
        if (!s || s->in_fd < 0) {
                *ret_error = strdup("the connection is closed");
                return -1;
        }
        /* The message and its newline, without blocking past the deadline on a server that
         * stopped reading. */
        size_t len = strlen(text);
        for (int part = 0; part < 2; part++) {
                const char *p = part ? "\n" : text;
                size_t left = part ? 1 : len;
                while (left > 0) {
                        ssize_t w = pipe_write(s->in_fd, p, left);
                        if (w > 0) {
                                p += w;
                                left -= (size_t)w;
                                continue;
                        }
                        if (w < 0 && errno == EINTR)
                                continue;
                        int wait = deadline_poll_ms(deadline);
                        if (w < 0 && errno == EAGAIN && wait > 0) {
                                struct pollfd pfd = {.fd = s->in_fd, .events = POLLOUT};
                                (void)poll(&pfd, 1, wait);
                                continue;
                        }
                        *ret_error = strdup(w < 0 && errno == EAGAIN ? "it does not read its input"
                                                                     : "its input is closed");
                        return -1;
                }
        }
        return 0;
}

/* MCP's stdio shutdown: close its stdin, wait, SIGTERM, wait, SIGKILL. Whatever is left of its
 * process group goes with it (the leader is not reaped until then, so the group cannot be a
 * stranger's). */
static void stdio_close(struct upstream *u, bool polite)
{
        struct stdio_state *s = u->transport;
        if (!s)
                return;
        pthread_mutex_lock(&u->write_lock);
        close_fd(&s->in_fd);
        pthread_mutex_unlock(&u->write_lock);
        if (!polite || !exited_within(s->pid, EXIT_GRACE_MS, NULL)) {
                if (polite) {
                        kill(-s->pid, SIGTERM);
                        if (!exited_within(s->pid, EXIT_GRACE_MS, NULL))
                                kill(-s->pid, SIGKILL);
                } else {
                        kill(-s->pid, SIGKILL);
                }
        }
        kill(-s->pid, SIGKILL);
        (void)!write(s->wake[1], "x", 1);
        pthread_join(s->reader, NULL);
        (void)wait_child(s->pid, NULL);
        close_fd(&s->out_fd);
        close_fd(&s->err_fd);
        close_pair(s->wake);
        pthread_mutex_lock(&u->write_lock); /* a sender of the old connection sees it gone */
        u->transport = NULL;
        pthread_mutex_unlock(&u->write_lock);
        free(s);
}

const struct transport_ops upstream_stdio_ops = {
        .open = stdio_open,
        .send = stdio_send,
        .close = stdio_close,
};
