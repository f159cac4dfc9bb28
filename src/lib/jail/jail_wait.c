/* The jail's parent side after the fork: moves the keeper into the cgroup (and writes a root
 * caller's keeper's id maps), then reads the answer while it watches the wall clock and the CPU
 * budget, and tells from what the kernel reports how the child ended. */
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
#include "cpu_time.h"
#include "deadline.h"
#include "error.h"
#include "jail.h"
#include "pipe_write.h"
#include "util.h"

/* How often the CPU budget is read while the function runs. */
#define CPU_CHECK_MS 10
/* After a kill, how long the keeper has to report before it is killed too. */
#define KILL_GRACE_MS 5000

struct watch {
        struct codecell_jail *j;
        pid_t keeper, jailed;
        int report_fd, answer_fd; /* -1 once at EOF */
        struct jail_record failed;
        bool ended;
        int jailed_status;
        struct cpu_meter meter;
        bool metering;
        double cpu_ms;
        /* the answer */
        struct jail_answer_head head;
        size_t head_got;
        char *data;
        size_t data_got, data_cap;
        bool over; /* longer than answer_bytes */
        /* kills */
        double killed_at; /* 0: not killed */
        bool wall, cpu;
        /* The answer is complete and the jailed process killed: the rest is collected on the
         * reaper's thread (jail_reaper.c). */
        bool early;
};

static bool answer_complete(const struct watch *w)
{
        return w->head_got == sizeof(w->head) && w->head.magic == JAIL_ANSWER_MAGIC &&
               w->head.len == w->data_got && !w->over;
}

/* Once the answer is complete nothing more is wanted of the jailed process; it is killed at
 * once (with everything it started) and the caller need not wait for the kernel to tear it
 * and the keeper down, unless the jail could write to the host or reach the network: then
 * the caller returns only once nothing of it runs any more. */
static bool may_leave_early(const struct watch *w)
{
        return answer_complete(w) && w->jailed > 0 && w->killed_at == 0 &&
               w->j->n_read_write == 0 && !w->j->options.network &&
               /* a nested jail's keeper ends the rest itself (jail_nested.c) */
               !w->j->nested;
}

static void kill_child(struct watch *w)
{
        if (w->killed_at == 0)
                w->killed_at = now_ms();
        /* The jailed process is PID 1 of its namespace: everything it started dies with it.
         * Before it exists, the keeper (the jailed process dies with it). */
        kill(w->jailed > 0 ? w->jailed : w->keeper, SIGKILL);
}

/* Into the jail's cgroup before it forks the jailed process, while it makes its namespaces;
 * then it may go on: at once, or for a root caller once it has made its user namespace and
 * the parent has written its id maps (jail_keeper_ids.c). */
static int go(struct watch *w, codecell_error *err)
{
        /* EPIPE: the keeper is gone, and its report says why. */
        int r = pipe_write(w->j->go[1], "g", 1) == 1 || errno == EPIPE
                        ? 0
                        : err_sys(err, errno, "jail: release the child");
        close(w->j->go[1]);
        w->j->go[1] = -1;
        return r;
}

static int release_keeper(struct watch *w, codecell_error *err)
{
        int r = jail_cgroup_attach(w->j, w->keeper, err);
        if (r == 0 && !w->j->privileged)
                return go(w, err);
        if (r < 0) {
                close(w->j->go[1]);
                w->j->go[1] = -1;
        }
        return r;
}

static int keeper_unshared(struct watch *w, codecell_error *err)
{
        if (!w->j->privileged || w->j->go[1] < 0)
                return 0; /* not the keeper's: a root caller's keeper says it once */
        codecell_error why = {0};
        int r = jail_keeper_map_ids(w->j, w->keeper, &why);
        if (r == 0)
                return go(w, err);
        /* Gone meanwhile (killed at the deadline): its end is told as any other. */
        if (why.errno_value == ENOENT || why.errno_value == ESRCH)
                r = 0;
        else if (err)
                *err = why;
        close(w->j->go[1]);
        w->j->go[1] = -1;
        return r;
}

static int read_report(struct watch *w, codecell_error *err)
{
        struct jail_record rec;
        ssize_t n = read(w->report_fd, &rec, sizeof(rec));
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return 0;
        if (n <= 0) {
                w->report_fd = -1;
                return 0;
        }
        if (n != (ssize_t)sizeof(rec))
                return 0; /* records are written whole; anything else is not ours */
        rec.what[sizeof(rec.what) - 1] = '\0';
        switch (rec.type) {
        case JAIL_FAILED:
                if (w->failed.type == 0)
                        w->failed = rec;
                break;
        case JAIL_STARTED:
                w->jailed = rec.pid;
                w->metering = cpu_meter_init(&w->meter, rec.pid, rec.pid, true,
                                             w->j->has_cgroup ? &w->j->cgroup : NULL);
                if (w->killed_at > 0)
                        kill(w->jailed, SIGKILL);
                break;
        case JAIL_ENDED:
                w->ended = true;
                w->jailed_status = rec.wait_status;
                break;
        case JAIL_UNSHARED:
                return keeper_unshared(w, err);
        }
        return 0;
}

static void read_answer(struct watch *w)
{
        char sink[4096];
        char *into;
        size_t room;
        if (w->head_got < sizeof(w->head)) {
                into = (char *)&w->head + w->head_got;
                room = sizeof(w->head) - w->head_got;
        } else if (w->over) {
                into = sink;
                room = sizeof(sink);
        } else {
                if (w->data_got == w->data_cap) {
                        size_t cap = w->data_cap ? w->data_cap * 2 : 65536;
                        char *grown = realloc(w->data, cap);
                        if (!grown) {
                                w->over = true; /* reported as out of memory below */
                                return;
                        }
                        w->data = grown;
                        w->data_cap = cap;
                }
                into = w->data + w->data_got;
                room = w->data_cap - w->data_got;
        }
        ssize_t n = read(w->answer_fd, into, room);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return;
        if (n <= 0) {
                w->answer_fd = -1;
                return;
        }
        if (w->head_got < sizeof(w->head)) {
                w->head_got += (size_t)n;
                return;
        }
        if (w->over)
                return;
        w->data_got += (size_t)n;
        if (w->data_got > w->j->options.answer_bytes) {
                w->over = true;
                kill_child(w);
        }
}

static void check_cpu(struct watch *w)
{
        if (!w->metering)
                return;
        double ms = cpu_meter_read(&w->meter);
        if (ms > w->cpu_ms)
                w->cpu_ms = ms;
        if (w->killed_at == 0 && w->cpu_ms >= (double)w->j->options.cpu_ms) {
                w->cpu = true;
                kill_child(w);
        }
}

static int supervise(struct watch *w, codecell_error *err)
{
        double deadline = now_ms() + (double)w->j->options.timeout_ms;
        while (w->report_fd >= 0 || w->answer_fd >= 0) {
                double now = now_ms();
                if (w->killed_at == 0 && now >= deadline) {
                        w->wall = true;
                        kill_child(w);
                }
                if (w->killed_at > 0 && now - w->killed_at > KILL_GRACE_MS)
                        kill(w->keeper, SIGKILL);
                double until = w->killed_at > 0 ? w->killed_at + KILL_GRACE_MS + 1 : deadline;
                if (w->metering && w->killed_at == 0 && until > now + CPU_CHECK_MS)
                        until = now + CPU_CHECK_MS;
                int wait_ms = poll_timeout(until - now);
                struct pollfd p[2] = {{.fd = w->report_fd, .events = POLLIN},
                                      {.fd = w->answer_fd, .events = POLLIN}};
                int n = poll(p, 2, wait_ms);
                if (n < 0 && errno != EINTR)
                        return err_sys(err, errno, "jail: poll");
                int r = n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)) ? read_report(w, err)
                                                                               : 0;
                if (r < 0)
                        return r;
                if (n > 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
                        read_answer(w);
                if (w->killed_at == 0)
                        check_cpu(w);
                if (may_leave_early(w)) {
                        kill(w->jailed, SIGKILL);
                        w->early = true;
                        return 0;
                }
        }
        return 0;
}

static char *steal_data(struct watch *w)
{
        char *d = w->data;
        w->data = NULL;
        return d;
}

/* How the child ended, from its answer first (a complete one stands even when the child was
 * killed after giving it), then from the kernel's account. */
static void classify(struct watch *w, codecell_jail_result *ret)
{
        struct cgroup_stats stats = {.memory_peak_bytes = -1};
        if (w->j->has_cgroup)
                w->j->cgroup.backend->stats(&w->j->cgroup, &stats);
        ret->memory_peak_bytes = stats.memory_peak_bytes;
        ret->cpu_ms = w->cpu_ms;
        int st = w->jailed_status;
        ret->signal = w->ended && WIFSIGNALED(st) ? WTERMSIG(st) : 0;
        ret->exit_code = w->ended && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        bool complete = answer_complete(w) && (w->head.outcome == CODECELL_JAIL_VALUE ||
                                               w->head.outcome == CODECELL_JAIL_RAISED ||
                                               w->head.outcome == CODECELL_JAIL_FILESYSTEM ||
                                               w->head.outcome == CODECELL_JAIL_MEMORY);
        if (complete) {
                ret->outcome = (codecell_jail_outcome)w->head.outcome;
                ret->data = steal_data(w);
                ret->len = w->data_got;
        } else if (w->wall || w->cpu) {
                ret->outcome = CODECELL_JAIL_TIMEOUT;
                ret->cpu = w->cpu;
        } else if (stats.oom_kills > 0) {
                ret->outcome = CODECELL_JAIL_MEMORY;
        } else if (ret->signal == SIGXCPU ||
                   (ret->signal == SIGKILL && w->cpu_ms + 1000 >= (double)w->j->options.cpu_ms)) {
                /* RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL at the hard one. */
                ret->outcome = CODECELL_JAIL_TIMEOUT;
                ret->cpu = true;
        } else if (ret->signal != 0 && stats.memory_failures > 0) {
                ret->outcome = CODECELL_JAIL_MEMORY; /* an allocation refused at the limit */
        } else {
                ret->outcome = CODECELL_JAIL_CRASHED;
        }
}

int codecell_jail_wait(codecell_jail *j, int pid, codecell_jail_result *ret, codecell_error *err)
{
        if (!j || !ret || pid <= 0)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "jail: no jail, result or pid");
        memset(ret, 0, sizeof(*ret));
        ret->exit_code = -1;
        ret->memory_peak_bytes = -1;
        double start = now_ms();
        /* The child's ends: the parent must see EOF once the child is gone. */
        close_fd(&j->report[1]);
        close_fd(&j->go[0]);
        close_fd(&j->answer[1]);
        close_fd(&j->null_fd);
        struct watch w = {.j = j,
                          .keeper = pid,
                          .jailed = -1,
                          .report_fd = j->report[0],
                          .answer_fd = j->answer[0]};
        (void)fcntl(w.answer_fd, F_SETFL, O_NONBLOCK);
        int r = release_keeper(&w, err);
        if (r == 0)
                r = supervise(&w, err);
        if (r < 0) {
                kill(pid, SIGKILL);
                /* The jailed process dies with the keeper (parent-death signal). */
        }
        int keeper_status = 0;
        if (r == 0 && w.early) {
                classify(&w, ret);
                if (jail_reaper_add(j, pid)) {
                        ret->duration_ms = now_ms() - start;
                        goto out;
                }
        }
        (void)wait_child(pid, &keeper_status);
        ret->duration_ms = now_ms() - start;
        if (r < 0 || w.early)
                goto out;
        if (w.failed.type == JAIL_FAILED) {
                r = err_set(
                        err, w.failed.unsupported ? CODECELL_ERR_UNSUPPORTED : CODECELL_ERR_SYSTEM,
                        w.failed.errno_value ? w.failed.errno_value : EIO, "jail set-up: %s: %s",
                        w.failed.what, strerror(w.failed.errno_value ? w.failed.errno_value : EIO));
                goto out;
        }
        if (w.over) {
                r = err_set(err, CODECELL_ERR_SYSTEM, EFBIG,
                            "jail: the answer is over the %llu-byte limit (answer_bytes)",
                            (unsigned long long)j->options.answer_bytes);
                goto out;
        }
        if (!w.ended && w.jailed < 0 && !w.wall && !w.cpu) {
                r = err_set(err, CODECELL_ERR_SYSTEM, EIO,
                            "jail: the child ended before its walls were up (wait status %d)",
                            keeper_status);
                goto out;
        }
        classify(&w, ret);
out:
        free(w.data);
        return r;
}
