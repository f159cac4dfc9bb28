/* The jail's child side: the keeper (what the caller's fork made) and the jailed process.
 *
 * The keeper is single-threaded (only the thread that forked exists in a child), so it may
 * unshare a user namespace, and it forks the jailed process as a plain copy of itself. A new
 * pid namespace takes in only the children of the process that made it: the keeper stays in
 * the caller's, as the jailed process's parent and reaper, and the jailed process is PID 1 of
 * the new one, which cannot name (nor signal) a process outside. When PID 1 exits the kernel
 * kills everything it started, so a fork bomb ends with it.
 *
 * Neither process allocates on the way: everything was prepared by the parent (jail.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include "jail.h"
#include "pipe_write.h"
#include "sandbox_entry.h"

/* The keeper's exit code when the set-up failed (the record says where). */
#define KEEPER_FAILED 125

static _Noreturn void fail(const struct codecell_jail *j, bool unsupported, int errno_value,
                           const char *what, const char *path)
{
        struct jail_record rec = {
                .type = JAIL_FAILED, .errno_value = errno_value, .unsupported = unsupported};
        size_t n = strlen(what);
        if (n > sizeof(rec.what) - 1)
                n = sizeof(rec.what) - 1;
        memcpy(rec.what, what, n);
        if (path) {
                size_t m = strlen(path);
                if (m > sizeof(rec.what) - 1 - n)
                        m = sizeof(rec.what) - 1 - n;
                memcpy(rec.what + n, path, m);
        }
        (void)pipe_write(j->report[1], &rec, sizeof(rec));
        _exit(KEEPER_FAILED);
}

static void report(const struct codecell_jail *j, int type, int pid, int wait_status)
{
        struct jail_record rec = {.type = type, .pid = pid, .wait_status = wait_status};
        (void)pipe_write(j->report[1], &rec, sizeof(rec));
}

/* Dies with the process that made it. The check after the prctl closes the race with a
 * parent that died before it: its end of `watch` is then closed, which poll reports as
 * POLLHUP or POLLERR (on a write end). */
static void die_with_parent(const struct codecell_jail *j, int watch, short events)
{
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                fail(j, false, errno, "set the parent-death signal", NULL);
        struct pollfd p = {.fd = watch, .events = events};
        if (poll(&p, 1, 0) < 0 || (p.revents & (POLLERR | POLLHUP)))
                _exit(KEEPER_FAILED);
}

/* Every fd from 3 on but those the jail keeps is made to point at /dev/null: the function
 * cannot write to (or read from, or change the epoll set of) what the parent has open —
 * its sockets, its log, its database connections — and the numbers stay taken, so that an
 * object of the parent's that closes its fd later closes nothing of the child's. Eventfds
 * are left alone: they are a runtime's own wake-up counters (Ruby's), which it waits on. */
static void neutralize_fds(const struct codecell_jail *j)
{
        int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                fail(j, false, errno, "open /proc/self/fd", NULL);
        char buf[4096];
        for (;;) {
                long n = syscall(SYS_getdents64, dir, buf, sizeof(buf));
                if (n < 0)
                        fail(j, false, errno, "read /proc/self/fd", NULL);
                if (n == 0)
                        break;
                for (long at = 0; at < n;) {
                        struct {
                                unsigned long long ino;
                                long long off;
                                unsigned short reclen;
                                unsigned char type;
                                char name[];
                        } *d = (void *)(buf + at);
                        at += d->reclen;
                        int fd = 0;
                        const char *c = d->name;
                        if (*c < '0' || *c > '9')
                                continue;
                        for (; *c >= '0' && *c <= '9'; c++)
                                fd = fd * 10 + (*c - '0');
                        if (fd < 3 || fd == dir || fd == j->answer[1] || fd == j->report[1] ||
                            fd == j->null_fd || jail_keeps_open(j, fd))
                                continue;
                        char link[64], target[32];
                        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
                        ssize_t len = readlink(link, target, sizeof(target) - 1);
                        if (len > 0) {
                                target[len] = '\0';
                                if (strcmp(target, "anon_inode:[eventfd]") == 0)
                                        continue;
                        }
                        if (dup3(j->null_fd, fd, O_CLOEXEC) < 0)
                                fail(j, false, errno, "point an inherited fd at /dev/null", NULL);
                }
        }
        close(dir);
}

struct jailed_prepare {
        const struct codecell_jail *j;
        int keeper_alive;
};

/* The jailed process's own part of its entry (sandbox_entry.h): its /proc, its descriptors
 * and its shared mappings. */
static int jailed_prepare(void *ctx, struct sandbox_entry_failure *ret_failure)
{
        const struct jailed_prepare *p = ctx;
        const struct codecell_jail *j = p->j;
        close(p->keeper_alive);
        /* A /proc of this pid namespace: the host's processes (their command lines) out of
         * sight. Refused where the host's /proc is partly covered (a container's masked
         * paths); the host's then stays, and Landlock's ptrace scoping still keeps the
         * other processes' private files out of reach. */
        (void)mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
        for (int fd = 0; fd < 3; fd++)
                if (!jail_keeps_open(j, fd) && dup2(j->null_fd, fd) < 0)
                        return sandbox_entry_failed(ret_failure, errno,
                                                    "stdin, stdout and stderr to /dev/null", NULL);
        neutralize_fds(j);
        /* The caller's shared mappings would carry the function's writes out (a file of
         * root's, the caller's own memory): private copies instead (jail_shared_maps.c). */
        int r = jail_unshare_mappings();
        if (r < 0)
                return sandbox_entry_failed(ret_failure, -r, "copy the shared mappings", NULL);
        return 0;
}

/* The jailed process: PID 1 of the new pid namespace, still holding the capabilities of the
 * new user namespace. Builds the last walls and returns to the caller's function. */
static void jailed_setup(struct codecell_jail *j, int keeper_alive)
{
        struct jailed_prepare prepare = {.j = j, .keeper_alive = keeper_alive};
        const struct sandbox_entry entry = {
                /* EOF when the keeper, its parent, is gone */
                .parent_watch = keeper_alive,
                .parent_watch_events = POLLIN,
                .prepare = jailed_prepare,
                .prepare_ctx = &prepare,
                .guest_umask = -1,
                .landlock = &j->landlock,
                .rlimits = j->rlimits,
                .n_rlimits = j->n_rlimits,
                .seccomp = &j->seccomp->prog,
        };
        struct sandbox_entry_failure failure;
        if (sandbox_entry_run(&entry, &failure) < 0) {
                if (failure.parent_gone)
                        _exit(KEEPER_FAILED);
                fail(j, false, failure.errno_value, failure.what, failure.path);
        }
        /* The function cannot forge the keeper's records. */
        close(j->report[1]);
        j->report[1] = -1;
}

/* The keeper, once the jailed process is started: nothing of the caller's stays open, no
 * signal of the caller's handlers runs; it reaps the jailed process and says how it ended. */
static _Noreturn void keep(struct codecell_jail *j, pid_t jailed, int keeper_alive)
{
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL);
        int keep_fds[2] = {j->report[1] < keeper_alive ? j->report[1] : keeper_alive,
                           j->report[1] < keeper_alive ? keeper_alive : j->report[1]};
        if (keep_fds[0] > 0)
                syscall(SYS_close_range, 0, keep_fds[0] - 1, 0);
        if (keep_fds[1] > keep_fds[0] + 1)
                syscall(SYS_close_range, keep_fds[0] + 1, keep_fds[1] - 1, 0);
        syscall(SYS_close_range, keep_fds[1] + 1, ~0U, 0);
        report(j, JAIL_STARTED, jailed, 0);
        int status = 0;
        while (waitpid(jailed, &status, 0) < 0)
                if (errno != EINTR)
                        _exit(KEEPER_FAILED);
        if (j->nested)
                jail_nested_end_rest();
        report(j, JAIL_ENDED, jailed, status);
        _exit(0);
}

/* Writes text to one of the keeper's own /proc files. */
static void write_own(const struct codecell_jail *j, const char *name, const char *text)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/%s", name);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
                fail(j, false, errno, "user namespace: write /proc/self/", name);
        close(fd);
}

/* A caller that is not root: its keeper maps its own ids, one each, the same inside as on the
 * host (the function sees its real uid), what any unprivileged process may do in the
 * namespace it just made. It is the caller's uid and dumpable as the caller is: nothing of
 * another user's is exposed. (A root caller's maps are the parent's: jail_keeper_ids.c.) */
static void map_own_ids(const struct codecell_jail *j)
{
        char map[64];
        write_own(j, "setgroups", "deny");
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)j->host_uid, (unsigned)j->host_uid);
        write_own(j, "uid_map", map);
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)j->host_gid, (unsigned)j->host_gid);
        write_own(j, "gid_map", map);
}

/* A root caller's keeper, once the parent has mapped nobody in its namespace: becomes nobody
 * through the map, keeping the capabilities it holds there (the jailed process needs them for
 * its /proc; the walls drop them). Changing its uid leaves it non-dumpable (fs.suid_dumpable
 * aside, hence the prctl): its /proc files stay root's, and no process of nobody's on the
 * host may ptrace it or take its fds. Raw system calls: glibc's set*id() would signal the
 * caller's other threads, which do not exist here. */
static void become_nobody(const struct codecell_jail *j)
{
        if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
                fail(j, false, errno, "keep capabilities", NULL);
        if (syscall(SYS_setresgid, j->host_gid, j->host_gid, j->host_gid) < 0 ||
            syscall(SYS_setresuid, j->host_uid, j->host_uid, j->host_uid) < 0)
                fail(j, false, errno, "switch to the jail's uid", NULL);
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
                fail(j, false, errno, "not dumpable", NULL);
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct caps[2];
        if (syscall(SYS_capget, &hdr, caps) < 0)
                fail(j, false, errno, "read the capabilities", NULL);
        caps[0].effective = caps[0].permitted;
        caps[1].effective = caps[1].permitted;
        if (syscall(SYS_capset, &hdr, caps) < 0)
                fail(j, false, errno, "raise the capabilities", NULL);
        /* The uid change cleared the parent-death signal. */
        die_with_parent(j, j->report[1], POLLOUT);
}

/* The keeper of a jail inside another one (jail_nested.c): no namespace of its own (the
 * outer's filter refuses them), a subreaper for what the jailed process leaves behind. */
static int enter_nested(struct codecell_jail *j)
{
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
                fail(j, false, errno, "child subreaper", NULL);
        char byte;
        if (read(j->go[0], &byte, 1) != 1)
                _exit(KEEPER_FAILED);
        close(j->go[0]);
        j->go[0] = -1;
        if (pipe2(j->alive, O_CLOEXEC) < 0)
                fail(j, false, errno, "pipe", NULL);
        j->entered = true;
        return 0;
}

int jail_enter_namespaces(struct codecell_jail *j)
{
        close(j->report[0]);
        close(j->go[1]);
        close(j->answer[0]);
        j->report[0] = j->go[1] = j->answer[0] = -1;
        die_with_parent(j, j->report[1], POLLOUT);
        if (j->nested)
                return enter_nested(j);
        int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS |
                    CLONE_NEWCGROUP;
        if (j->netns_fd >= 0) {
                /* A recycled empty namespace (root only): joined while the keeper still holds
                 * the host's capabilities. */
                if (setns(j->netns_fd, CLONE_NEWNET) < 0)
                        fail(j, false, errno, "join the empty network namespace", NULL);
                close(j->netns_fd);
                j->netns_fd = -1;
        } else if (!j->options.network) {
                flags |= CLONE_NEWNET;
        }
        /* A root caller's keeper makes its namespaces as root (owned so: jail_keeper_ids.c),
         * with no supplementary group, which nobody could not drop later. */
        if (j->privileged && syscall(SYS_setgroups, 0, NULL) < 0)
                fail(j, false, errno, "clear supplementary groups", NULL);
        if (unshare(flags) < 0) {
                int e = errno;
                /* EINVAL: more than one thread; EPERM, ENOSPC, EUSERS: user namespaces are
                 * off or exhausted on this host. */
                fail(j, e != EINVAL, e,
                     e == EINVAL ? "new namespaces: the child has more than one thread"
                                 : "new namespaces (user namespaces unavailable?)",
                     NULL);
        }
        if (j->privileged)
                report(j, JAIL_UNSHARED, 0, 0);
        else
                map_own_ids(j);
        /* One byte once the parent has moved the keeper into the jail's cgroup (the jailed
         * process must be born there) and, for a root caller, written its id maps. */
        char byte;
        if (read(j->go[0], &byte, 1) != 1)
                _exit(KEEPER_FAILED);
        close(j->go[0]);
        j->go[0] = -1;
        if (j->privileged)
                become_nobody(j);
        /* As nobody: the way to an idmapped folder is searched as the jail's uid sees it. */
        const char *path = NULL;
        int r = jail_idmap_attach(j, &path);
        if (r < 0)
                fail(j, false, -r, "fs_allow: mount the idmapped folder at ", path);
        if (sethostname("codecell", 8) < 0)
                fail(j, false, errno, "sethostname", NULL);
        if (pipe2(j->alive, O_CLOEXEC) < 0)
                fail(j, false, errno, "pipe", NULL);
        j->entered = true;
        return 0;
}

int jail_enter_walls(struct codecell_jail *j)
{
        close(j->alive[1]);
        j->alive[1] = -1;
        jailed_setup(j, j->alive[0]);
        j->alive[0] = -1;
        jail_mark_jailed();
        j->jailed = true;
        j->jailed_pid = getpid();
        return 0;
}

void jail_keep(struct codecell_jail *j, pid_t jailed)
{
        if (jailed <= 0)
                fail(j, false, jailed < 0 ? -jailed : EIO, "fork the jailed process", NULL);
        close(j->alive[0]);
        keep(j, jailed, j->alive[1]);
}

int jail_enter(struct codecell_jail *j)
{
        jail_enter_namespaces(j);
        /* The keeper is single-threaded: glibc's fork is a plain copy of it. */
        pid_t jailed = fork();
        if (jailed == 0)
                return jail_enter_walls(j);
        jail_keep(j, jailed < 0 ? -errno : jailed);
        _exit(KEEPER_FAILED);
}
