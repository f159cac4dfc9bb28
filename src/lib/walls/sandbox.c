#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/sched.h> /* struct clone_args, CLONE_INTO_CGROUP */
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "deadline.h"
#include "error.h"
#include "init_exit.h"
#include "netns.h"
#include "pipe_write.h"
#include "proxy_listener.h"
#include "proc_stat.h"
#include "sandbox_entry.h"
#include "util.h"
#include "zygote_protocol.h"

/* The cgroup namespace, made at clone while the child is still in the engine's cgroup, hides
 * the host's cgroup tree above it; once in its own cgroup, init makes another rooted there
 * (sandbox_init), so the guest sees its cgroup as the root. */
#define NAMESPACES                                                                                 \
        (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | \
         CLONE_NEWCGROUP)

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define __SANITIZE_THREAD__ 1
#endif
#endif
#ifdef __SANITIZE_THREAD__
/* ThreadSanitizer (make tsan) takes the child of a raw clone for the thread that cloned it,
 * with that thread's history and with whatever runtime locks other threads held at that moment:
 * a child that records a synchronisation waits forever. The child is another process; it
 * leaves the runtime alone. */
void __tsan_ignore_thread_begin(void);
void AnnotateIgnoreSyncBegin(const char *file, int line);
static void sanitizer_leave_alone(void)
{
        __tsan_ignore_thread_begin();
        AnnotateIgnoreSyncBegin(__FILE__, __LINE__);
}
#else
static void sanitizer_leave_alone(void) {}
#endif

#define SETUP_TIMEOUT_MS 10000

/* ---- in the sandbox: from clone to exec nothing allocates ------------------------------- */

struct child_fds {
        int ctl, out, err; /* the guest's ends */
        int failure;       /* close-on-exec pipe: a child_failure record on error */
        int sync;          /* read end: one byte once the engine has written the id maps */
        int pinned[2];     /* init -> guest: one byte once init holds the guest's /proc files */
};

static _Noreturn void child_fail(int fd, struct child_failure *fail)
{
        ssize_t n = write(fd, fail, sizeof(*fail));
        (void)n;
        _exit(INIT_EXEC_FAILED);
}

static _Noreturn void child_fail_errno(int fd, const char *what)
{
        struct child_failure fail = {.errno_value = errno};
        failure_append(&fail, what);
        child_fail(fd, &fail);
}

/* Moves fd to at least 10 so the dup2s into 0..3 cannot clobber one another. */
static int lift(int fd)
{
        return fcntl(fd, F_DUPFD_CLOEXEC, 10);
}

/* The exec'd guest's own part of its entry (sandbox_entry.h): init's word that it holds the
 * guest's /proc files (Landlock grants them by inode), then its descriptors. */
static int guest_prepare(void *ctx, struct sandbox_entry_failure *ret_failure)
{
        const struct child_fds *fds = ctx;
        close(fds->pinned[1]); /* init's: EOF if init dies before it writes */
        char byte;
        if (read(fds->pinned[0], &byte, 1) != 1)
                return sandbox_entry_failed(ret_failure, errno, "wait for init", NULL);
        int ctl = lift(fds->ctl), out = lift(fds->out), err = lift(fds->err);
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (ctl < 0 || out < 0 || err < 0 || null < 0)
                return sandbox_entry_failed(ret_failure, errno, "set up the guest's fds", NULL);
        if (dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 || dup2(ctl, 3) < 0)
                return sandbox_entry_failed(ret_failure, errno, "dup2", NULL);
        /* Everything else the engine had open (its own sockets, other sandboxes' pipes) closes
         * at exec; the failure pipe stays usable until then. */
        if (syscall(SYS_close_range, 4, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                return sandbox_entry_failed(ret_failure, errno, "close_range", NULL);
        return 0;
}

static _Noreturn void exec_guest(const struct sandbox_spec *spec, struct child_fds *fds)
{
        /* A cell's zygote keeps two capabilities in its own user namespace, to make its
         * sandboxes' namespaces and have their interpreters enter them, and puts up neither
         * Landlock nor a filter (zygote.h): each of its children puts up both. */
        const uint64_t zygote_caps = 1ull << CAP_SYS_ADMIN | 1ull << CAP_SYS_CHROOT |
                                     (spec->network ? 1ull << CAP_NET_ADMIN : 0);
        const struct sandbox_entry entry = {
                .parent_watch = -1, /* init: its death is the EOF guest_prepare waits on */
                .prepare = guest_prepare,
                .prepare_ctx = fds,
                .workdir = "/work",
                .signals = SANDBOX_ENTRY_IGNORE_SIGXFSZ | SANDBOX_ENTRY_RESET_SIGNALS,
                .guest_umask = 022,
                .landlock = spec->zygote ? NULL : spec->landlock,
                .rlimits = spec->rlimits,
                .n_rlimits = spec->n_rlimits,
                .keep_caps = spec->zygote ? zygote_caps : 0,
                .seccomp = spec->zygote ? NULL : &spec->seccomp->prog,
        };
        struct sandbox_entry_failure failure;
        if (sandbox_entry_run(&entry, &failure) < 0) {
                struct child_failure fail = {.errno_value = failure.errno_value};
                failure_append(&fail, failure.what);
                if (failure.path)
                        failure_append(&fail, failure.path);
                child_fail(fds->failure, &fail);
        }
        execve(spec->interpreter, (char *const *)spec->argv, (char *const *)spec->envp);
        child_fail_errno(fds->failure, "exec the interpreter");
}

/* init is a copy of the engine, and the guest can read its /proc/1/cmdline: blank the
 * engine's argv and environment strings in this copy (the engine may have been started with
 * secrets on its command line). Their place comes from /proc/self/stat, fields 48-51. */
static void scrub_command_line(void)
{
        char buf[2048];
        int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return;
        buf[n] = '\0';
        unsigned long long f[52] = {0};
        if (!proc_stat_fields(buf, f, 51))
                return;
        for (int first = 48; first <= 50; first += 2)
                if (f[first + 1] > f[first])
                        memset((void *)(uintptr_t)f[first], 0, f[first + 1] - f[first]);
}

/* Landlock grants the guest its own /proc files (landlock_proc_self_files) by inode, and a
 * /proc/<pid> inode lives only as long as its dentry: pruned under memory pressure, the next
 * lookup makes a new inode that no rule names, and the guest could no longer read its own
 * status. init holds each one open (O_PATH) for the guest's lifetime, before the guest makes
 * its rules. Failures are harmless: that file is then unreadable. No allocation. */
static void pin_proc_files(pid_t guest)
{
        char path[64] = "/proc/";
        size_t at = 6;
        char digits[16];
        size_t n = 0;
        for (unsigned v = (unsigned)guest; n == 0 || v > 0; v /= 10)
                digits[n++] = (char)('0' + v % 10);
        while (n > 0)
                path[at++] = digits[--n];
        path[at++] = '/';
        for (size_t i = 0; landlock_proc_self_files[i]; i++) {
                size_t len = strlen(landlock_proc_self_files[i]);
                if (at + len + 1 > sizeof(path))
                        continue;
                memcpy(path + at, landlock_proc_self_files[i], len + 1);
                (void)open(path, O_PATH | O_CLOEXEC);
        }
}

/* A network cell's listener, made here in the sandbox's own network namespace (this init
 * holds every capability over it until the guest's exec drops them) and queued on the control
 * socket before the interpreter exists: the first thing the engine reads there. init keeps no
 * copy, so no process of the sandbox holds it. */
static void hand_over_listener(const struct child_fds *fds)
{
        int fd = proxy_listener_make();
        if (fd < 0) {
                errno = -fd;
                child_fail_errno(fds->failure, "the proxy's listener");
        }
        int r = proxy_listener_send(fds->ctl, fd);
        close(fd);
        if (r < 0) {
                errno = -r;
                child_fail_errno(fds->failure, "hand the proxy's listener over");
        }
}

/* PID 1 of the sandbox: builds the file system, starts the interpreter and waits for it. When
 * it exits, the kernel kills whatever else is left in the pid namespace. */
static _Noreturn void sandbox_init(const struct sandbox_spec *spec, struct child_fds *fds)
{
        struct child_failure fail = {0};
        scrub_command_line();
        /* A session and process group of the sandbox's own: kill(0, ...) or killpg from the
         * guest reaches only its sandbox, never the engine's group (which the engine's caller,
         * a shell script, shares), whatever Landlock's signal scoping says. */
        (void)setsid();
        /* The raw call: a sanitizer's prctl wrapper records the name under a lock that
         * another thread of the engine may have held at clone, never to be released here. */
        (void)syscall(SYS_prctl, PR_SET_NAME, "codecell-init", 0, 0, 0);
        /* Dies with the engine. The sync read below closes the race with an engine that died
         * before this prctl: its end of the pipe is then closed and the read returns 0. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                child_fail_errno(fds->failure, "set the parent-death signal");
        /* One byte: the id maps are written. */
        char byte;
        if (read(fds->sync, &byte, 1) != 1)
                _exit(INIT_EXEC_FAILED);
        /* Raw system calls, not glibc's set*id(): in a multi-threaded engine glibc would try to
         * apply them to every thread, threads that do not exist in this child, and wait for
         * them forever. */
        if (spec->may_set_groups && syscall(SYS_setgroups, 0, NULL) < 0)
                child_fail_errno(fds->failure, "clear supplementary groups");
        /* Switch to the sandbox's ids first: files the plan creates on its tmpfs need an owner
         * mapped in this namespace. The capabilities of the new user namespace survive the
         * switch: its uid 0 is not mapped, so the "leaving root drops capabilities" rule does
         * not apply. They are dropped for good just before exec. */
        if (syscall(SYS_setresgid, SANDBOX_INNER_GID, SANDBOX_INNER_GID, SANDBOX_INNER_GID) < 0 ||
            syscall(SYS_setresuid, SANDBOX_INNER_UID, SANDBOX_INNER_UID, SANDBOX_INNER_UID) < 0)
                child_fail_errno(fds->failure, "switch to the sandbox uid");
        /* The kernel clears the parent-death signal when the uid changes: arm it again, then
         * make sure the engine did not die in between (its end of the failure pipe would be
         * closed, which poll reports as POLLERR on ours). */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                child_fail_errno(fds->failure, "set the parent-death signal");
        struct pollfd engine = {.fd = fds->failure, .events = POLLOUT};
        if (poll(&engine, 1, 0) < 0 || (engine.revents & (POLLERR | POLLHUP)))
                _exit(INIT_EXEC_FAILED);
        if (mount_plan_apply(spec->plan, spec->tree_fds, &fail) < 0)
                child_fail(fds->failure, &fail);
        if (sethostname("codecell", 8) < 0)
                child_fail_errno(fds->failure, "sethostname");

        /* A second byte: init is in its cgroup, so the interpreter is born there, and every
         * page it touches from its first instruction counts against the memory limit and in
         * the peak (cgroup v1 never moves pages charged before a move). */
        if (read(fds->sync, &byte, 1) != 1)
                _exit(INIT_EXEC_FAILED);
        close(fds->sync);
        /* A cgroup namespace rooted there: /proc/self/cgroup reads "/", not the cgroup's name
         * (the engine's pid and how many sandboxes it has made). */
        if (spec->cgroup && unshare(CLONE_NEWCGROUP) < 0)
                child_fail_errno(fds->failure, "cgroup namespace");
        if (pipe2(fds->pinned, O_CLOEXEC) < 0)
                child_fail_errno(fds->failure, "pipe");
        if (spec->network && !spec->zygote)
                hand_over_listener(fds);
        /* A zygote's interpreter must not have the pid its forked sandboxes' interpreters
         * have (2): runtimes tell a forked child from its parent by its pid (Ruby renews its
         * timer and wake-up descriptors only then). */
        if (spec->zygote) {
                int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, "99", 2) != 2)
                        child_fail_errno(fds->failure, "set the zygote's pid");
                close(fd);
        }
        pid_t guest = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
        if (guest < 0)
                child_fail_errno(fds->failure, "fork the interpreter");
        if (guest == 0)
                exec_guest(spec, fds);
        /* init keeps nothing of the engine's open: EOF on the pipes then means the guest is
         * gone. */
        int pinned = fds->pinned[1];
        if (pinned > 0)
                syscall(SYS_close_range, 0, pinned - 1, 0);
        syscall(SYS_close_range, pinned + 1, ~0U, 0);
        pin_proc_files(guest);
        (void)pipe_write(pinned, "x", 1); /* EPIPE: the guest is gone, and init with it */
        close(pinned);
        init_wait_and_exit(guest);
}

/* ---- in the engine ---------------------------------------------------------------------- */

static int write_id_maps(pid_t pid, const struct sandbox_spec *spec, codecell_error *err)
{
        char path[64], map[64];
        int r;
        if (!spec->may_set_groups) {
                /* An unprivileged writer of gid_map must first give up setgroups(). */
                snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
                if ((r = write_file(path, "deny")) < 0)
                        return err_sys(err, -r, "user namespace: %s", path);
        }
        snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
        snprintf(map, sizeof(map), "%d %u 1\n", SANDBOX_INNER_UID, (unsigned)spec->host_uid);
        if ((r = write_file(path, map)) < 0)
                return err_sys(err, -r, "user namespace: %s", path);
        snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
        snprintf(map, sizeof(map), "%d %u 1\n", SANDBOX_INNER_GID, (unsigned)spec->host_gid);
        if ((r = write_file(path, map)) < 0)
                return err_sys(err, -r, "user namespace: %s", path);
        return 0;
}

/* Waits for the failure pipe: EOF means the interpreter was exec'd; a record means setup
 * failed and says where. */
static int wait_setup(int fd, pid_t pid, codecell_error *err)
{
        struct child_failure fail;
        size_t got = 0;
        double deadline = now_ms() + SETUP_TIMEOUT_MS;
        while (got < sizeof(fail)) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                int n = poll(&p, 1, deadline_poll_ms(deadline));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return err_set(err, CODECELL_ERR_SYSTEM, ETIMEDOUT,
                                       "sandbox set-up did not finish within %d ms",
                                       SETUP_TIMEOUT_MS);
                ssize_t k = read(fd, (char *)&fail + got, sizeof(fail) - got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                got += (size_t)k;
        }
        if (got == 0)
                return 0;
        if (got < sizeof(fail))
                return err_set(err, CODECELL_ERR_SYSTEM, EIO,
                               "sandbox set-up failed (pid %d sent a short report)", (int)pid);
        fail.what[sizeof(fail.what) - 1] = '\0';
        return err_sys(err, fail.errno_value ? fail.errno_value : EIO, "sandbox set-up: %s",
                       fail.what);
}

/* The sandbox's init, with new namespaces. On cgroup v2 (cgroup_fd >= 0) it is born in its
 * cgroup with clone3(CLONE_INTO_CGROUP): nothing to move, and every page it touches from its
 * first one is charged there. A kernel without clone3 (before 5.7) or without
 * CLONE_INTO_CGROUP (5.7 and earlier) answers ENOSYS, E2BIG or EINVAL: *ret_born is false and
 * the caller moves the child as on v1. */
static pid_t clone_init(int flags, int cgroup_fd, bool *ret_born)
{
        *ret_born = false;
        if (cgroup_fd >= 0) {
                struct clone_args args = {
                        .flags = (uint64_t)(flags & ~CSIGNAL) | CLONE_INTO_CGROUP,
                        .exit_signal = (uint64_t)(flags & CSIGNAL),
                        .cgroup = (uint64_t)cgroup_fd,
                };
                pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
                if (pid >= 0 || (errno != ENOSYS && errno != E2BIG && errno != EINVAL)) {
                        *ret_born = pid >= 0;
                        return pid;
                }
        }
        return (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, NULL);
}

int sandbox_spawn(const struct sandbox_spec *spec, struct sandbox *ret, codecell_error *err)
{
        int ctl[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
        int failure[2] = {-1, -1}, sync[2] = {-1, -1};
        int r;
        *ret = SANDBOX_NONE;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0 ||
            pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
            pipe2(failure, O_CLOEXEC) < 0 || pipe2(sync, O_CLOEXEC) < 0) {
                r = err_sys(err, errno, "sandbox: pipes");
                goto fail;
        }
        struct child_fds fds = {.ctl = ctl[1],
                                .out = out[1],
                                .err = errp[1],
                                .failure = failure[1],
                                .sync = sync[0]};
        /* The child is born in the calling thread's network namespace: with a recycled one,
         * this thread steps into it for the clone and straight back out. */
        int flags = NAMESPACES | SIGCHLD, home = -1;
        if (spec->host_cgroup_namespace)
                flags &= ~CLONE_NEWCGROUP;
        if (spec->network && spec->netns_fd >= 0) {
                r = err_set(err, CODECELL_ERR_SYSTEM, EINVAL,
                            "sandbox: a network cell's sandbox needs a namespace of its own");
                goto fail;
        }
        /* v2: the cgroup's directory, for init to be born there. */
        int cgroup_fd = -1;
        if (spec->cgroup && spec->cgroup->backend->open_dir &&
            (cgroup_fd = spec->cgroup->backend->open_dir(spec->cgroup, err)) < 0) {
                r = cgroup_fd;
                goto fail;
        }
        if (spec->netns_fd >= 0) {
                if ((r = netns_enter(spec->netns_fd, &home, err)) < 0)
                        goto fail;
                flags &= ~CLONE_NEWNET;
        }
        bool born_in_cgroup = false;
        pid_t pid = clone_init(flags, cgroup_fd, &born_in_cgroup);
        int clone_errno = errno;
        close_fd(&cgroup_fd); /* the child's copy too: init keeps nothing of the host's tree */
        if (pid != 0 && home >= 0 && (r = netns_leave(home, err)) < 0) {
                if (pid > 0)
                        ret->pid = pid;
                goto fail;
        }
        if (pid < 0) {
                r = err_sys(err, clone_errno, "sandbox: clone with new namespaces");
                goto fail;
        }
        if (pid == 0) {
                sanitizer_leave_alone();
                if (home >= 0)
                        close(home); /* the engine's namespace: nothing of the sandbox's */
                close(ctl[0]);
                close(out[0]);
                close(errp[0]);
                close(failure[0]);
                close(sync[1]);
                sandbox_init(spec, &fds);
        }
        ret->pid = pid;
        close(ctl[1]);
        close(out[1]);
        close(errp[1]);
        close(failure[1]);
        close(sync[0]);
        ctl[1] = out[1] = errp[1] = failure[1] = sync[0] = -1;

        r = write_id_maps(pid, spec, err);
        /* pipe_write: an init that died already must not take the engine down with SIGPIPE. */
        if (r == 0 && pipe_write(sync[1], "x", 1) != 1)
                r = err_sys(err, errno, "sandbox: release the child");
        /* v1 (or a v2 kernel without CLONE_INTO_CGROUP): into its cgroup at once, while init
         * builds the file system: a move into a cgroup v1 hierarchy waits for an RCU grace
         * period (10-20 ms here), mostly hidden behind the mount plan. init forks the
         * interpreter only once told the move is done (at once when born there). */
        if (r == 0 && spec->cgroup && !born_in_cgroup)
                r = spec->cgroup->backend->attach(spec->cgroup, pid, err);
        if (r == 0 && pipe_write(sync[1], "y", 1) != 1)
                r = err_sys(err, errno, "sandbox: release the child");
        close(sync[1]);
        sync[1] = -1;
        if (r == 0)
                r = wait_setup(failure[0], pid, err);
        close(failure[0]);
        failure[0] = -1;
        if (r == 0 && spec->network && !spec->zygote) {
                int listener = proxy_listener_receive(ctl[0]);
                if (listener < 0)
                        r = err_sys(err, -listener, "sandbox: the proxy's listener did not arrive");
                ret->proxy_fd = listener;
        }
        if (r < 0)
                goto fail;
        /* Non-blocking: after the result frame the engine takes what the pipes hold without
         * waiting for the guest to exit. */
        (void)fcntl(out[0], F_SETFL, O_NONBLOCK);
        (void)fcntl(errp[0], F_SETFL, O_NONBLOCK);
        ret->ctl_fd = ctl[0];
        ret->out_fd = out[0];
        ret->err_fd = errp[0];
        return 0;
fail:
        kill_and_reap(steal_pid(ret->pid));
        close_fd(&ret->proxy_fd);
        close_pair(ctl);
        close_pair(out);
        close_pair(errp);
        close_pair(failure);
        close_pair(sync);
        return r;
}

/* Gives init up to grace_ms to exit by itself (it does right after the guest ends), so its
 * exit code still tells how the guest ended. */
static void wait_exit(pid_t pid, int grace_ms)
{
        if (grace_ms <= 0)
                return;
        _cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0)
                return;
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        while (poll(&p, 1, grace_ms) < 0 && errno == EINTR)
                ;
}

/* init's children by host pid (init has one thread). Returns how many were stored. */
static size_t guest_pids(const struct sandbox *sb, pid_t *pids, size_t max)
{
        return proc_children(sb->pid, pids, 0, max);
}

pid_t sandbox_guest_pid(const struct sandbox *sb)
{
        if (sb->forked)
                return sb->guest;
        pid_t pid = -1;
        return guest_pids(sb, &pid, 1) == 1 ? pid : -1;
}

const char *sandbox_forked_gone(const struct sandbox *sb)
{
        if (syscall(SYS_pidfd_send_signal, sb->pidfd, 0, NULL, 0) < 0)
                return "init";
        if (syscall(SYS_pidfd_send_signal, sb->guest_pidfd, 0, NULL, 0) < 0)
                return "its interpreter";
        return NULL;
}

void sandbox_kill_guest(const struct sandbox *sb)
{
        if (sb->pid <= 0)
                return;
        /* A forked sandbox's interpreter is the zygote's child, reaped by it. */
        if (sb->forked && sb->guest_pidfd >= 0) {
                (void)syscall(SYS_pidfd_send_signal, sb->guest_pidfd, SIGKILL, NULL, 0);
                return;
        }
        /* Killing init's children rather than init lets init reap them, so their CPU time
         * reaches us through init's rusage. */
        pid_t pids[8];
        size_t n = guest_pids(sb, pids, 8);
        for (size_t i = 0; i < n; i++)
                kill(pids[i], SIGKILL);
        if (n == 0)
                kill(sb->pid, SIGKILL);
}

void sandbox_interrupt_guest(const struct sandbox *sb, pid_t guest)
{
        if (sb->pid <= 0 || guest <= 0)
                return;
        if (sb->forked) {
                if (sb->guest_pidfd >= 0)
                        (void)syscall(SYS_pidfd_send_signal, sb->guest_pidfd, SIGINT, NULL, 0);
                return;
        }
        /* The pid is held first, then checked to be init's child still: init reaps the guest
         * as it ends, and a pid checked before being held could name another process by the
         * time the signal goes. A pidfd names the process it was opened on, whatever happens
         * to the number. */
        int fd = (int)syscall(SYS_pidfd_open, guest, 0);
        if (fd < 0)
                return;
        pid_t pids[8];
        size_t n = guest_pids(sb, pids, 8);
        for (size_t i = 0; i < n; i++)
                if (pids[i] == guest)
                        (void)syscall(SYS_pidfd_send_signal, fd, SIGINT, NULL, 0);
        close(fd);
}

/* How a forked sandbox ended, from its zygote, which waited for its init and interpreter: an
 * exit code as init's in sandbox_destroy, or -1 when init had to be killed or the zygote died
 * first. */
static int forked_end(struct sandbox *sb, int grace_ms, struct rusage *ret_usage)
{
        if (grace_ms > 0) {
                struct pollfd p = {.fd = sb->pidfd, .events = POLLIN};
                while (poll(&p, 1, grace_ms) < 0 && errno == EINTR)
                        ;
        }
        (void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
        /* init's death ends the interpreter; killed itself, it cannot wait for that. */
        if (sb->guest_pidfd >= 0)
                (void)syscall(SYS_pidfd_send_signal, sb->guest_pidfd, SIGKILL, NULL, 0);
        struct zygote_exit end;
        size_t got = 0;
        /* The zygote reports as soon as the kernel has reaped the child. */
        struct pollfd p = {.fd = sb->exit_fd, .events = POLLIN};
        double deadline = now_ms() + SETUP_TIMEOUT_MS;
        while (got < sizeof(end)) {
                int n = poll(&p, 1, deadline_poll_ms(deadline));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                ssize_t k = read(sb->exit_fd, (char *)&end + got, sizeof(end) - got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                got += (size_t)k;
        }
        if (got < sizeof(end) || end.status < 0)
                return -1;
        if (ret_usage)
                *ret_usage = end.usage;
        return WIFEXITED(end.status) ? WEXITSTATUS(end.status) : -1;
}

int sandbox_destroy(struct sandbox *sb, int grace_ms, struct rusage *ret_usage)
{
        int status = -1;
        if (sb->forked && sb->pid > 0) {
                status = forked_end(sb, grace_ms, ret_usage);
                sb->pid = sb->guest = -1;
        }
        if (sb->pid > 0) {
                wait_exit(sb->pid, grace_ms);
                /* Killed before this kill (from outside), init took its pid namespace with it:
                 * the interpreter was killed by SIGKILL, as init would have said. Peeked at,
                 * not reaped: the wait below reaps it. */
                siginfo_t info = {0};
                bool killed_first =
                        waitid(P_PID, (id_t)sb->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
                        info.si_pid == sb->pid &&
                        (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED);
                kill(sb->pid, SIGKILL);
                int st = 0;
                struct rusage usage = {0};
                while (wait4(sb->pid, &st, 0, &usage) < 0 && errno == EINTR)
                        ;
                /* Killed by us, init could not report how the guest ended: -1. */
                status = WIFEXITED(st) ? WEXITSTATUS(st) : killed_first ? 128 + SIGKILL : -1;
                if (ret_usage)
                        *ret_usage = usage;
                sb->pid = -1;
        }
        close_fd(&sb->ctl_fd);
        close_fd(&sb->out_fd);
        close_fd(&sb->err_fd);
        close_fd(&sb->pidfd);
        close_fd(&sb->exit_fd);
        close_fd(&sb->guest_pidfd);
        close_fd(&sb->proxy_fd);
        return status;
}

int sandbox_guest_signal(int init_status)
{
        return init_status > 128 && init_status < 128 + 65 ? init_status - 128 : 0;
}

int sandbox_guest_exit_code(int init_status)
{
        if (init_status < 0 || init_status == INIT_EXEC_FAILED || sandbox_guest_signal(init_status))
                return -1;
        return init_status;
}
