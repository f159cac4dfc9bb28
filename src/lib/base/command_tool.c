/* A command tool: a host program run outside the sandbox for each call, with the arguments as
 * JSON on stdin and its JSON answer on stdout (DESIGN §8). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "command_tool.h"
#include "deadline.h"
#include "host_spawn.h"
#include "pipe_write.h"
#include "util.h"

/* What of a failing tool's stderr reaches the guest. */
#define STDERR_KEPT 2000

/* Starts the tool with its pipes as stdin, stdout and stderr, in its own process group (a
 * timeout ends whatever it started too), and with a parent-death signal: killed with the
 * engine, the tool does not stay behind. 0, or the errno of what failed. */
static int spawn_tool(const struct command_spec *cmd, int in, int out, int err, pid_t *ret_pid)
{
        return host_spawn(&(struct host_spawn){.argv = cmd->argv,
                                               .env = cmd->env,
                                               .in = in,
                                               .out = out,
                                               .err = err,
                                               .die_with_thread = true,
                                               .as_user = cmd->as_user,
                                               .uid = cmd->uid,
                                               .gid = cmd->gid},
                          ret_pid);
}

/* Without a pidfd, how often the tool's exit is checked. */
#define EXIT_POLL_MS 20

/* The tool has exited and is not reaped yet (it still holds its pid and process group). */
static bool has_exited(pid_t pid)
{
        siginfo_t info = {0};
        return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
               info.si_pid == pid;
}

struct stream {
        int fd;
        char *data;
        size_t len, cap; /* cap: bytes kept */
        bool overflow;
};

static void take(struct stream *s)
{
        char buf[65536];
        ssize_t n = read(s->fd, buf, sizeof(buf));
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return;
        if (n <= 0) {
                close_fd(&s->fd);
                return;
        }
        size_t keep = (size_t)n;
        if (s->len + keep > s->cap) {
                keep = s->cap - s->len;
                s->overflow = true;
        }
        if (keep) {
                char *grown = realloc(s->data, s->len + keep + 1);
                if (!grown) {
                        s->overflow = true;
                        return;
                }
                s->data = grown;
                memcpy(s->data + s->len, buf, keep);
                s->len += keep;
                s->data[s->len] = '\0';
        }
}

int command_tool_call(const struct command_spec *cmd, const char *name, const char *args_json,
                      double deadline_ms, uint64_t timeout_ms, size_t max_answer, int stop_fd,
                      char **ret_json, char **ret_error)
{
        _cleanup_close_pair_ int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
        *ret_json = *ret_error = NULL;
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
                *ret_error =
                        str_printf("tool \"%s\" could not be started: %s", name, strerror(errno));
                return -1;
        }
        pid_t pid;
        int r = spawn_tool(cmd, in[0], out[1], err[1], &pid);
        close_fd(&in[0]);
        close_fd(&out[1]);
        close_fd(&err[1]);
        if (r != 0) {
                *ret_error = str_printf("tool \"%s\" could not be started: %s: %s", name,
                                        cmd->argv[0], strerror(r));
                return -1;
        }
        (void)fcntl(in[1], F_SETFL, O_NONBLOCK);
        struct stream so = {.fd = steal_fd(out[0]), .cap = max_answer + 1};
        struct stream se = {.fd = steal_fd(err[0]), .cap = STDERR_KEPT};
        size_t sent = 0, total = strlen(args_json);
        double call_deadline = now_ms() + (double)timeout_ms;
        double deadline = call_deadline < deadline_ms ? call_deadline : deadline_ms;
        /* The deadline holds on the process, whatever it does with its pipes: it is watched
         * through a pidfd (or polled where there is none), not through EOF. */
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        bool exited = false, timed_out = false, stopped = false;
        int status = 0;
        while (!exited || so.fd >= 0 || se.fd >= 0) {
                struct pollfd p[5];
                int n = 0;
                if (stop_fd >= 0)
                        p[n++] = (struct pollfd){.fd = stop_fd, .events = POLLIN};
                if (in[1] >= 0)
                        p[n++] = (struct pollfd){.fd = in[1], .events = POLLOUT};
                if (so.fd >= 0)
                        p[n++] = (struct pollfd){.fd = so.fd, .events = POLLIN};
                if (se.fd >= 0)
                        p[n++] = (struct pollfd){.fd = se.fd, .events = POLLIN};
                if (!exited && pidfd >= 0)
                        p[n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
                int wait = deadline_poll_ms(deadline);
                if (wait == 0) {
                        timed_out = !exited;
                        break;
                }
                if (!exited && pidfd < 0 && wait > EXIT_POLL_MS)
                        wait = EXIT_POLL_MS;
                if (poll(p, (nfds_t)n, wait) < 0 && errno != EINTR)
                        break;
                /* The execution is over: nobody waits for this answer, and the tool must not
                 * outlive the run that asked for it. */
                if (stop_fd >= 0 && p[0].revents) {
                        stopped = true;
                        break;
                }
                for (int i = 0; i < n; i++) {
                        if (!p[i].revents || p[i].fd == pidfd || p[i].fd == stop_fd)
                                continue;
                        if (p[i].fd == in[1]) {
                                ssize_t w = pipe_write(in[1], args_json + sent, total - sent);
                                if (w > 0)
                                        sent += (size_t)w;
                                /* EPIPE: the tool closed its stdin early; what it answers
                                 * still counts. */
                                if ((w < 0 && errno != EAGAIN && errno != EINTR) || sent == total)
                                        close_fd(&in[1]); /* EOF: the arguments are complete */
                        } else if (p[i].fd == so.fd) {
                                take(&so);
                        } else {
                                take(&se);
                        }
                }
                if (!exited && has_exited(pid)) {
                        /* Whatever it left in its process group ends with the call; the
                         * group still exists (the leader is not reaped yet), so the signal
                         * cannot reach a stranger. */
                        kill(-pid, SIGKILL);
                        (void)wait_child(pid, &status);
                        exited = true;
                        close_fd(&in[1]);
                }
        }
        if (!exited) {
                kill(-pid, SIGKILL);
                kill(pid, SIGKILL);
                (void)wait_child(pid, &status);
        }
        close_fd(&pidfd);
        close_fd(&so.fd);
        close_fd(&se.fd);
        if (stopped) {
                *ret_error = str_printf("tool \"%s\" was stopped: the execution ended", name);
        } else if (timed_out) {
                if (call_deadline <= deadline_ms)
                        *ret_error = str_printf("tool \"%s\" did not answer within %llu ms", name,
                                                (unsigned long long)timeout_ms);
                else
                        *ret_error = str_printf("tool \"%s\" was stopped: the execution's time "
                                                "limit was reached",
                                                name);
        } else if (WIFSIGNALED(status)) {
                *ret_error =
                        str_printf("tool \"%s\" was killed by signal %d", name, WTERMSIG(status));
        } else if (WEXITSTATUS(status) != 0) {
                /* Its stderr, trimmed, is what the guest can act on. */
                size_t n = se.len;
                while (n > 0 && (se.data[n - 1] == '\n' || se.data[n - 1] == ' '))
                        n--;
                size_t clean_len = 0;
                char *clean = utf8_sanitize(se.data ? se.data : "", n, &clean_len);
                *ret_error = str_printf("tool \"%s\" failed (exit code %d)%s%s%s", name,
                                        WEXITSTATUS(status), clean_len ? ": " : "",
                                        clean ? clean : "", se.overflow ? " …" : "");
                free(clean);
        } else if (so.overflow) {
                *ret_error = str_printf("tool \"%s\" answered more than the %zu-byte limit", name,
                                        max_answer);
        } else {
                *ret_json = so.data ? so.data : strdup("");
                so.data = NULL;
        }
        free(so.data);
        free(se.data);
        return *ret_json ? 0 : -1;
}
