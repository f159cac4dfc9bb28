#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "deadline.h"
#include "error.h"
#include "fd_passing.h"
#include "proc_stat.h"
#include "proxy_listener.h"
#include "util.h"
#include "zygote_protocol.h"

/* The zygote boots its interpreter before it reads the first order. */
#define REPLY_TIMEOUT_MS 10000

struct zygote {
        pthread_mutex_t lock; /* one order at a time: replies come in order */
        struct sandbox sb;    /* pid -1: not running */
        pid_t pid;            /* the zygote's interpreter, by host pid */
        uint64_t next_id;
        /* The keeper starts the zygote's sandbox, whose parent-death signal is tied to the
         * thread that cloned it: a thread that lives as long as the zygote, not a caller's,
         * whose end would take every sandbox of the cell with it. */
        pthread_t keeper;
        pthread_mutex_t keeper_lock;
        pthread_cond_t keeper_cond;
        const struct zygote_starter *request; /* a start wanted; NULL once done */
        codecell_error *request_err;
        int request_result;
        bool quit;
        void (*warm)(void *ctx);
        void *warm_ctx;
        /* The zygote may make children in a cgroup v2 (clone3 into it): it runs as the user
         * the cgroups belong to, this engine's. Root's zygote runs as the guests' uid, which
         * may not: it is sent no cgroup, and stays in a cgroup namespace of its own. */
        bool may_place;
};

static int start(struct zygote *z, const struct zygote_starter *starter, codecell_error *err);

static void *keep(void *arg)
{
        struct zygote *z = arg;
        pthread_mutex_lock(&z->keeper_lock);
        for (;;) {
                while (!z->request && !z->quit)
                        pthread_cond_wait(&z->keeper_cond, &z->keeper_lock);
                if (z->quit)
                        break;
                pthread_mutex_unlock(&z->keeper_lock);
                int r = start(z, z->request, z->request_err);
                pthread_mutex_lock(&z->keeper_lock);
                z->request_result = r;
                z->request = NULL;
                pthread_cond_broadcast(&z->keeper_cond);
                if (r == 0 && z->warm) {
                        pthread_mutex_unlock(&z->keeper_lock);
                        z->warm(z->warm_ctx);
                        pthread_mutex_lock(&z->keeper_lock);
                }
        }
        pthread_mutex_unlock(&z->keeper_lock);
        return NULL;
}

/* Starts the zygote on the keeper's thread (z->lock held). */
static int start_on_keeper(struct zygote *z, const struct zygote_starter *starter,
                           codecell_error *err)
{
        pthread_mutex_lock(&z->keeper_lock);
        z->request = starter;
        z->request_err = err;
        pthread_cond_broadcast(&z->keeper_cond);
        while (z->request)
                pthread_cond_wait(&z->keeper_cond, &z->keeper_lock);
        int r = z->request_result;
        pthread_mutex_unlock(&z->keeper_lock);
        return r;
}

struct zygote *zygote_new(void (*warm)(void *ctx), void *warm_ctx)
{
        struct zygote *z = calloc(1, sizeof(*z));
        if (!z)
                return NULL;
        z->warm = warm;
        z->warm_ctx = warm_ctx;
        pthread_mutex_init(&z->lock, NULL);
        pthread_mutex_init(&z->keeper_lock, NULL);
        pthread_cond_init(&z->keeper_cond, NULL);
        z->sb = SANDBOX_NONE;
        if (pthread_create(&z->keeper, NULL, keep, z) != 0) {
                pthread_cond_destroy(&z->keeper_cond);
                pthread_mutex_destroy(&z->keeper_lock);
                pthread_mutex_destroy(&z->lock);
                free(z);
                return NULL;
        }
        return z;
}

static void stop(struct zygote *z)
{
        if (z->sb.pid > 0)
                (void)sandbox_destroy(&z->sb, 0, NULL);
}

void zygote_free(struct zygote *z)
{
        if (!z)
                return;
        stop(z);
        pthread_mutex_lock(&z->keeper_lock);
        z->quit = true;
        pthread_cond_broadcast(&z->keeper_cond);
        pthread_mutex_unlock(&z->keeper_lock);
        pthread_join(z->keeper, NULL);
        pthread_cond_destroy(&z->keeper_cond);
        pthread_mutex_destroy(&z->keeper_lock);
        pthread_mutex_destroy(&z->lock);
        free(z);
}

/* The cell's sandbox with its interpreter in the zygote's mode: the prelude hands over to the
 * fork server, which makes namespaces and mounts for each child, so the zygote itself gets
 * neither Landlock nor seccomp (its children get both; it runs nothing but the server, and
 * holds no capability). Its limits allow for every child's pidfd and pipe, and its children
 * count their processes in user namespaces of their own. */
static int start_from(struct zygote *z, const struct sandbox_spec *cell_spec, codecell_error *err)
{
        struct sandbox_spec spec = *cell_spec;
        size_t n_env = 0;
        while (cell_spec->envp[n_env])
                n_env++;
        const char **envp = calloc(n_env + 2, sizeof(*envp));
        if (!envp)
                return err_sys(err, ENOMEM, "zygote");
        memcpy(envp, cell_spec->envp, n_env * sizeof(*envp));
        envp[n_env] = ZYGOTE_ENV "=1";
        spec.envp = envp;
        spec.zygote = true;
        spec.host_cgroup_namespace = cell_spec->cgroup && cell_spec->cgroup->backend->open_dir &&
                                     cell_spec->host_uid == geteuid();
        spec.cgroup = NULL;
        /* The engine's own limits (an unprivileged engine cannot raise them); for files, room
         * for 4096 or the cell's own limit, whichever is more, which each child lowers. */
        for (size_t i = 0; i < spec.n_rlimits; i++) {
                int resource = spec.rlimits[i].resource;
                if (resource != RLIMIT_NPROC && resource != RLIMIT_CPU && resource != RLIMIT_NOFILE)
                        continue;
                struct rlimit *v = &spec.rlimits[i].value;
                rlim_t cell = v->rlim_max;
                getrlimit(resource, v);
                rlim_t want = cell > 4096 ? cell : 4096;
                if (resource == RLIMIT_NOFILE && v->rlim_max > want)
                        v->rlim_max = want;
                v->rlim_cur = v->rlim_max;
        }
        int r = sandbox_spawn(&spec, &z->sb, err);
        free(envp);
        if (r == 0) {
                z->pid = sandbox_guest_pid(&z->sb);
                z->may_place = spec.host_cgroup_namespace;
        }
        return r;
}

static int start(struct zygote *z, const struct zygote_starter *starter, codecell_error *err)
{
        struct sandbox_spec cell_spec;
        int r = starter->make_spec(starter->ctx, &cell_spec, err);
        if (r == 0)
                r = start_from(z, &cell_spec, err);
        starter->release(starter->ctx);
        return r;
}

_Static_assert(ZYGOTE_ORDER_FDS + 1 <= FD_PASS_MAX, "an order's descriptors fit one message");

/* fds: ZYGOTE_ORDER_FDS of them, then the cgroup's directory when cgroup_dir says so. */
static int send_order(struct zygote *z, bool session, const int *fds, bool cgroup_dir, uint64_t id)
{
        struct zygote_order order = {.magic = ZYGOTE_MAGIC,
                                     .flags = (session ? ZYGOTE_ORDER_SESSION : 0) |
                                              (cgroup_dir ? ZYGOTE_ORDER_CGROUP : 0),
                                     .id = id};
        ssize_t n = fd_pass_send(z->sb.ctl_fd, &order, sizeof(order), fds,
                                 ZYGOTE_ORDER_FDS + (cgroup_dir ? 1 : 0));
        if (n < 0 && errno == ETOOMANYREFS)
                return -ETOOMANYREFS; /* this user's descriptors in flight: not the zygote's end */
        return n == (ssize_t)sizeof(order) ? 0 : -EPIPE;
}

/* The zygote's answer to order id: 0, the sandbox's interpreter and init by their pids in the
 * zygote's pid namespace, their pidfds and a network cell's listener or -1 (which the caller
 * then owns), and which were born in their cgroup (ZYGOTE_BORN_*); a positive errno it sent
 * (with what); or -EPIPE when it is gone or did not answer in time, or sent a third descriptor
 * that is no listener. */
static int read_reply(struct zygote *z, uint64_t id, pid_t ret_pids[2], int ret_fds[3],
                      uint32_t *ret_born, char *what, size_t size)
{
        ret_fds[0] = ret_fds[1] = ret_fds[2] = -1;
        struct zygote_reply reply;
        struct pollfd p = {.fd = z->sb.ctl_fd, .events = POLLIN};
        double deadline = now_ms() + REPLY_TIMEOUT_MS;
        for (;;) {
                int k = poll(&p, 1, deadline_poll_ms(deadline));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -EPIPE;
                break;
        }
        struct iovec iov = {.iov_base = &reply, .iov_len = sizeof(reply)};
        union {
                char buf[CMSG_SPACE(sizeof(int) * 3)];
                struct cmsghdr align;
        } control;
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control.buf,
                             .msg_controllen = sizeof(control.buf)};
        ssize_t n;
        while ((n = recvmsg(z->sb.ctl_fd, &msg, MSG_WAITALL | MSG_CMSG_CLOEXEC)) < 0 &&
               errno == EINTR)
                ;
        _cleanup_close_pair_ int fds[2] = {-1, -1};
        _cleanup_close_ int listener = -1;
        int got[3];
        if (n > 0) {
                /* The pidfds, then a network cell's listener; any other is closed. */
                (void)fd_pass_take(&msg, got, 3);
                fds[0] = got[0];
                fds[1] = got[1];
                listener = got[2];
        }
        if (n != (ssize_t)sizeof(reply) || reply.magic != ZYGOTE_MAGIC || reply.id != id ||
            (reply.error == 0 && (reply.pid <= 0 || reply.init <= 0)) ||
            (listener >= 0 && !proxy_listener_check(listener)))
                return -EPIPE;
        reply.what[sizeof(reply.what) - 1] = '\0';
        snprintf(what, size, "%s", reply.what);
        if (reply.error != 0)
                return reply.error;
        ret_pids[0] = reply.pid;
        ret_pids[1] = reply.init;
        /* A claim only: the caller checks it against the cgroup (cgroup.h, holds). */
        *ret_born = reply.born & (ZYGOTE_BORN_INIT | ZYGOTE_BORN_GUEST);
        ret_fds[0] = steal_fd(fds[0]);
        ret_fds[1] = steal_fd(fds[1]);
        ret_fds[2] = steal_fd(listener);
        return 0;
}

/* The pids of a process as each pid namespace from this one down sees it (NSpid), from a
 * pidfd's fdinfo; how many. */
static size_t ns_pids(int pidfd, pid_t *pids, size_t max)
{
        char path[64], text[512];
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
        ssize_t len = read_file(path, text, sizeof(text));
        char *at = len > 0 ? strstr(text, "NSpid:") : NULL;
        size_t n = 0;
        if (!at)
                return 0;
        at += 6;
        for (long v; n < max && (v = strtol(at, &at, 10)) > 0;)
                pids[n++] = (pid_t)v;
        return n;
}

/* The host pid of the process a pidfd the zygote sent names, checked against the pid the
 * zygote gave it in its own namespace (the level below ours); -1 when it has ended (a pidfd
 * of a reaped process shows no pid) or is not that process. */
static pid_t host_pid(int pidfd, pid_t ns_pid)
{
        pid_t seen[4];
        if (pidfd < 0 || ns_pids(pidfd, seen, 4) < 2 || seen[1] != ns_pid)
                return -1;
        return seen[0];
}

/* One fork. -EPIPE when the zygote is gone (the caller starts another). */
static int order(struct zygote *z, bool session, int cgroup_dir, struct sandbox *ret,
                 uint32_t *ret_born, codecell_error *err)
{
        _cleanup_close_pair_ int ctl[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1},
                                 ended[2] = {-1, -1};
        int r;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0 ||
            pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(ended, O_CLOEXEC) < 0)
                return err_sys(err, errno, "sandbox: pipes");
        int theirs[ZYGOTE_ORDER_FDS + 1];
        theirs[ZYGOTE_ORDER_FDS] = cgroup_dir;
        theirs[ZYGOTE_FD_CTL] = ctl[1];
        theirs[ZYGOTE_FD_OUT] = out[1];
        theirs[ZYGOTE_FD_ERR] = errp[1];
        theirs[ZYGOTE_FD_EXIT] = ended[1];
        uint64_t id = ++z->next_id;
        if ((r = send_order(z, session, theirs, cgroup_dir >= 0, id)) == -ETOOMANYREFS)
                return err_sys(err, ETOOMANYREFS,
                               "sandbox: too many descriptors in flight for this user (a sandbox "
                               "is holding them in a socket's queue)");
        if (r < 0)
                return r;
        /* Ours are the only copies left besides the zygote's: EOF then means the child (or the
         * zygote) is gone. */
        close_fd(&ctl[1]);
        close_fd(&out[1]);
        close_fd(&errp[1]);
        close_fd(&ended[1]);
        pid_t ns_pid[2] = {0, 0};
        int pidfds[3];
        char what[128] = "";
        r = read_reply(z, id, ns_pid, pidfds, ret_born, what, sizeof(what));
        if (cgroup_dir < 0)
                *ret_born = 0; /* sent no cgroup, it could be born in none */
        if (r > 0)
                return err_sys(err, r, "sandbox: the zygote could not fork (%s)", what);
        if (r < 0)
                return r;
        int guest_pidfd = pidfds[0], pidfd = pidfds[1];
        pid_t guest = host_pid(guest_pidfd, ns_pid[0]), init = host_pid(pidfd, ns_pid[1]);
        *ret = (struct sandbox){.pid = init,
                                .ctl_fd = steal_fd(ctl[0]),
                                .out_fd = steal_fd(out[0]),
                                .err_fd = steal_fd(errp[0]),
                                .pidfd = pidfd,
                                .exit_fd = steal_fd(ended[0]),
                                .forked = true,
                                .guest = guest,
                                .guest_pidfd = guest_pidfd,
                                .proxy_fd = pidfds[2]};
        if (init < 0 || guest < 0) {
                r = err_set(err, CODECELL_ERR_SYSTEM, ESRCH, "sandbox: the zygote's new %s %s",
                            init < 0 ? "init" : "interpreter",
                            (init < 0 ? pidfd : guest_pidfd) < 0
                                    ? "came without its pidfd"
                                    : "ended before its set-up was done");
                /* The other one goes too (the zygote reaps both). */
                for (int i = 0; i < 2; i++)
                        if (pidfds[i] >= 0)
                                (void)syscall(SYS_pidfd_send_signal, pidfds[i], SIGKILL, NULL, 0);
                (void)sandbox_destroy(ret, 0, NULL);
                return r;
        }
        /* Non-blocking, as sandbox_spawn leaves them. */
        (void)fcntl(ret->out_fd, F_SETFL, O_NONBLOCK);
        (void)fcntl(ret->err_fd, F_SETFL, O_NONBLOCK);
        return 0;
}

/* What a zygote that failed wrote before it stopped talking (its boot, or its fork server's
 * start), cut on a character and made valid UTF-8: it may reach a JSON result. */
static void last_words(struct zygote *z, char *buf, size_t size)
{
        char raw[512];
        ssize_t n = z->sb.err_fd >= 0 ? read(z->sb.err_fd, raw, sizeof(raw)) : -1;
        buf[0] = '\0';
        if (n <= 0)
                return;
        char *clean = utf8_sanitize(raw, utf8_cut(raw, (size_t)n, 300), NULL);
        if (clean)
                snprintf(buf, size, "; it said: %s", clean);
        free(clean);
}

int zygote_fork(struct zygote *z, const struct zygote_starter *starter, bool session,
                int cgroup_dir, struct sandbox *ret, uint32_t *ret_born, codecell_error *err)
{
        *ret_born = 0;
        pthread_mutex_lock(&z->lock);
        int r = -EPIPE;
        char said[400] = "";
        /* A zygote that died is replaced once; a second failure is the answer. */
        for (int attempt = 0; attempt < 2 && r == -EPIPE; attempt++) {
                if (z->sb.pid <= 0 && (r = start_on_keeper(z, starter, err)) < 0)
                        break;
                r = order(z, session, z->may_place ? cgroup_dir : -1, ret, ret_born, err);
                if (r == -EPIPE) {
                        last_words(z, said, sizeof(said));
                        stop(z);
                }
        }
        if (r == -EPIPE)
                r = err_set(err, CODECELL_ERR_SYSTEM, EPIPE,
                            "sandbox: the cell's zygote ended without forking%s", said);
        pthread_mutex_unlock(&z->lock);
        return r;
}
