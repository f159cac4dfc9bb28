/* A cell's zygote: the fork server that runs inside the cell's booted interpreter (loaded by
 * the prelude with Fiddle or ctypes from /codecell/zygote.so) and makes every sandbox of the
 * cell as a copy of it. The protocol is in src/lib/walls/zygote_protocol.h; the reasoning in
 * docs/security.md ("Forked sandboxes").
 *
 * The fork of the interpreter is the language's (Ruby's fork, Python's os.fork), so that the
 * runtime does everything it does around a fork (Ruby renews its timer and wake-up
 * descriptors, Python its locks); it is the only copy of the interpreter a run costs. This
 * file does everything else, in this order:
 *
 *   zygote   codecell_zygote_start()   once: reads the walls
 *            codecell_zygote_next()    waits for an order (reporting sandboxes' ends); makes
 *                                      the sandbox's init (below) and points its own next
 *                                      child into init's pid namespace
 *            fork                      -> the interpreter, PID 2 of that namespace
 *            codecell_zygote_parent()  answers the engine with both pids
 *   init     a vfork-like clone of the zygote into a new pid namespace (PID 1): its network
 *            namespace, a session of its own; then it execs /codecell/codecell-init
 *            (src/zygote/init.c), a few kilobytes that make new mount, ipc, uts and cgroup
 *            namespaces, fresh /tmp, /work and /proc, give up every capability, hold the
 *            interpreter's /proc files, reap orphans and end the namespace when the
 *            interpreter ends
 *   guest    await_cgroup()            inside fork(): the engine's word that it is in its
 *                                      cgroup, before the runtime's after-fork work
 *            codecell_zygote_guest()   the entry every guest takes (sandbox_entry.c), its
 *                                      own part init's namespaces, its own descriptors and
 *                                      session, a user namespace of its own; then
 *                                      no_new_privs, Landlock, rlimits, no capability,
 *                                      seccomp; then the prelude goes on as in any sandbox:
 *                                      "ready", and the code.
 *
 * The zygote holds CAP_SYS_ADMIN and CAP_SYS_CHROOT in its own user namespace (it makes each
 * sandbox's namespaces, and its interpreter enters them), and nothing else; it never runs
 * guest code. */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd_passing.h"
#include "init_exit.h"
#include "into_cgroup.h"
#include "landlock.h"
#include "proxy_listener.h"
#include "sandbox_entry.h"
#include "zygote_protocol.h"

/* The entry points the preludes call; everything else stays inside the library (it is loaded
 * into the interpreter, beside whatever else the runtime loads). */
#define ZYGOTE_API __attribute__((visibility("default")))

#define ORDERS_FD 3

/* What init unshares (src/zygote/init.c; the pid namespace is its clone's, the network one
 * is joined before its exec). */
#define INIT_NAMESPACES (CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)
/* What the interpreter enters of init's. Its user namespace comes last, its own: see
 * codecell_zygote_guest. */
#define GUEST_JOINS (INIT_NAMESPACES | CLONE_NEWNET)
/* Empty network namespaces kept for the next children (see take_netns). */
#define MAX_IDLE_NETNS 64
/* init's stack while it sets up, before its exec; the zygote waits meanwhile (CLONE_VFORK). */
#define INIT_STACK (64 * 1024)
/* Descriptors a live sandbox costs the zygote (init's and the interpreter's pidfds, the exit
 * pipe, the network namespace), and what it needs besides them and the idle namespaces. */
#define FDS_PER_CHILD 4
#define FDS_OWN 64

/* A sandbox: its init and interpreter, both the zygote's children, reported to the engine
 * once both are reaped. */
struct child {
        pid_t init, guest;
        int init_pidfd, guest_pidfd; /* -1 once reaped */
        int init_status, guest_status;
        bool guest_ended_first; /* reaped while init still ran */
        struct rusage usage;    /* both's, summed */
        int exit_fd;            /* the engine's pipe for its zygote_exit */
        int netns;              /* its network namespace, to be given back */
};

static struct zygote_walls walls;
static struct landlock_plan landlock;
static struct child children[ZYGOTE_MAX_CHILDREN];
static struct sigaction runtime_sigchld; /* the interpreter's, given back to each child */
static size_t n_children;
static size_t children_seen; /* the most slots ever used: beyond it the table was never written */
static int own_pidns = -1;   /* the zygote's pid namespace, to make the next one from */
static int own_netns = -1;   /* the zygote's network namespace, to come back to */
static int idle_netns[MAX_IDLE_NETNS];
static size_t n_idle_netns;
/* The sandbox being made: in the zygote until the fork, then in the interpreter. */
static struct zygote_order order;
static int order_fds[ZYGOTE_ORDER_FDS];
/* cgroup v2 (ZYGOTE_ORDER_CGROUP): the sandbox's cgroup, where init and the interpreter are
 * born (into_cgroup.h); -1 otherwise. Which of them were born there goes with the reply. */
static int order_cgroup = -1;
static uint32_t born;
/* clone3 refused CLONE_INTO_CGROUP here once for good (no kernel support, no permission). */
static bool into_cgroup_refused;
static int next_netns = -1;
/* A network cell's: the listener in next_netns (proxy_listener.h), for the engine alone: it
 * goes with the reply and is closed here right after. */
static int next_listener = -1;
static pid_t next_init = -1;
static int next_init_pidfd = -1;
static int handshake[2] = {-1, -1}; /* [0] init's fd 0, [1] the interpreter's end */
static char runtime_comm[16];       /* the interpreter's name, given back to each guest */
/* Written by init's clone before it execs (shared memory): the step that failed. */
static const char *init_failed;
static int init_errno;
static size_t max_children; /* ZYGOTE_MAX_CHILDREN, or fewer when descriptors run out first */
/* Polled: the orders, the wake-up of a child's end, then each sandbox's two pidfds. */
#define POLL_ORDERS 0
#define POLL_WAKE 1
#define POLL_CHILD(i) (2 + 2 * (i))
static struct pollfd polled[POLL_CHILD(ZYGOTE_MAX_CHILDREN)];
/* Written by the SIGCHLD handler: a child ended, maybe one no pidfd of ours watches. */
static int wake_fd = -1;
static pid_t zygote_pid;
static bool forking_guest; /* from an order's init to its interpreter's fork */

/* ---- in a child ------------------------------------------------------------------------- */

/* what, and path after it when not NULL. */
static _Noreturn void child_fail_at(const char *what, const char *path)
{
        char line[256];
        int n = snprintf(line, sizeof(line), "codecell zygote: %s%s: %s\n", what, path ? path : "",
                         strerror(errno));
        if (n > 0)
                (void)!write(STDERR_FILENO, line, (size_t)n);
        _exit(255);
}

static _Noreturn void child_fail(const char *what)
{
        child_fail_at(what, NULL);
}

static void write_file(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                child_fail(path);
        ssize_t n = write(fd, text, strlen(text));
        int saved = errno;
        close(fd);
        errno = saved;
        if (n != (ssize_t)strlen(text))
                child_fail(path);
}

/* The interpreter's user namespace maps its one id to the same id in the zygote's. */
static void map_ids(void)
{
        char map[64];
        write_file("/proc/self/setgroups", "deny");
        snprintf(map, sizeof(map), "%u %u 1\n", walls.inner_uid, walls.inner_uid);
        write_file("/proc/self/uid_map", map);
        snprintf(map, sizeof(map), "%u %u 1\n", walls.inner_gid, walls.inner_gid);
        write_file("/proc/self/gid_map", map);
}

/* A new eventfd at the number of old, with its flags: the runtime's own (Ruby wakes its
 * threads with two) stay where it expects them, but are no longer the zygote's. */
static void renew_eventfd(int old)
{
        int status = fcntl(old, F_GETFL), fdflags = fcntl(old, F_GETFD);
        int fresh = eventfd(0, ((status & O_NONBLOCK) ? EFD_NONBLOCK : 0) | EFD_CLOEXEC);
        if (fresh < 0 || dup3(fresh, old, (fdflags & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0)
                child_fail("renew the runtime's eventfd");
        close(fresh);
}

/* Replaces every descriptor of the zygote the child holds: 0-3 become the child's own (stdin
 * /dev/null, stdout, stderr, control socket), the runtime's eventfds new ones, and everything
 * else (the zygote's other children's pidfds and pipes) is closed: no child shares a
 * descriptor with the zygote or a sibling. */
static void own_descriptors(const int *fds)
{
        int moved[ZYGOTE_ORDER_FDS];
        for (int i = 0; i < ZYGOTE_ORDER_FDS; i++)
                if ((moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 4)) < 0)
                        child_fail("move the run's descriptors");
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, 0) < 0 || dup2(moved[ZYGOTE_FD_OUT], 1) < 0 ||
            dup2(moved[ZYGOTE_FD_ERR], 2) < 0 || dup2(moved[ZYGOTE_FD_CTL], 3) < 0)
                child_fail("dup2");
        /* The zygote's own first, by its tables (cheaper than asking /proc about each); the
         * listing below catches whatever else there is. */
        for (size_t i = 0; i < n_children; i++) {
                close(children[i].init_pidfd);
                close(children[i].guest_pidfd);
                close(children[i].exit_fd);
                close(children[i].netns);
        }
        for (size_t i = 0; i < n_idle_netns; i++)
                close(idle_netns[i]);
        close(own_pidns);
        close(own_netns);
        close(wake_fd);
        int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                child_fail("list descriptors");
        int kept[64];
        size_t n_kept = 0;
        char buf[4096];
        long n;
        /* procfs lists descriptors by number; renewing one in place does not disturb it. */
        while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
                for (long at = 0; at < n;) {
                        struct {
                                uint64_t ino;
                                int64_t off;
                                unsigned short reclen;
                                unsigned char type;
                                char name[];
                        } *d = (void *)(buf + at);
                        at += d->reclen;
                        if (d->name[0] < '0' || d->name[0] > '9')
                                continue;
                        int fd = atoi(d->name);
                        char link[64], target[32];
                        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
                        ssize_t len = readlink(link, target, sizeof(target) - 1);
                        target[len > 0 ? len : 0] = '\0';
                        if (fd <= 3 || fd == dir || strcmp(target, "anon_inode:[eventfd]") != 0)
                                continue;
                        if (n_kept == sizeof(kept) / sizeof(kept[0]))
                                child_fail("too many eventfds");
                        renew_eventfd(fd);
                        kept[n_kept++] = fd;
                }
        }
        close(dir);
        /* Everything above 3 but the renewed eventfds goes (the listing is in order). */
        int from = 4;
        for (size_t i = 0; i < n_kept; i++) {
                if (kept[i] > from && syscall(SYS_close_range, from, kept[i] - 1, 0) < 0)
                        child_fail("close the zygote's descriptors");
                from = kept[i] + 1;
        }
        if (syscall(SYS_close_range, from, ~0U, 0) < 0)
                child_fail("close the zygote's descriptors");
}

/* What the zygote knew of its other children (how many, their pids) is not this sandbox's to
 * read in its copy of the zygote's memory. */
static void forget_the_zygote(void)
{
        /* The slots ever used only: clearing whole tables would copy every page of them. */
        memset(children, 0, children_seen * sizeof(children[0]));
        memset(polled, 0, POLL_CHILD(children_seen) * sizeof(polled[0]));
        n_children = children_seen = 0;
        memset(idle_netns, 0, sizeof(idle_netns));
        n_idle_netns = 0;
        memset(&order.id, 0, sizeof(order.id));
        /* The descriptors and pids of this sandbox's making, which tell how many the zygote
         * held and made (closed or moved by now). */
        for (int i = 0; i < ZYGOTE_ORDER_FDS; i++)
                order_fds[i] = -1;
        order_cgroup = -1;
        born = 0;
        next_netns = next_listener = next_init_pidfd = handshake[0] = handshake[1] = wake_fd = -1;
        next_init = -1;
        init_failed = NULL;
        init_errno = 0;
}

/* The environment block the kernel shows as /proc/self/environ, from /proc/self/stat (its
 * 50th and 51st fields); false if unreadable. */
static bool environment_block(char **ret_start, char **ret_end)
{
        char text[1024];
        int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
        if (fd >= 0)
                close(fd);
        if (n <= 0)
                return false;
        text[n] = '\0';
        char *at = strrchr(text, ')'); /* the name may hold spaces and parentheses */
        unsigned long start = 0, end = 0;
        for (int field = 2; at && field <= 51; field++) {
                at = strchr(at + 1, ' ');
                if (at && field == 49)
                        start = strtoul(at + 1, NULL, 10);
                if (at && field == 50)
                        end = strtoul(at + 1, NULL, 10);
        }
        if (start == 0 || end <= start)
                return false;
        *ret_start = (char *)start;
        *ret_end = (char *)end;
        return true;
}

/* The zygote was started with CODECELL_ZYGOTE=1, which the prelude removed from the runtime's
 * environment, but the kernel still shows the block it was exec'd with: the variable is cut
 * out of it, the rest moved up over it (and the runtime's pointers into the block with it),
 * so that a forked guest's /proc/self/environ reads as an exec'd one's, but for NULs at its
 * end. */
static void forget_the_zygote_variable(void)
{
        extern char **environ;
        char *start, *end;
        if (!environment_block(&start, &end))
                return;
        const char name[] = ZYGOTE_ENV "=";
        for (char *entry = start; entry < end; entry += strnlen(entry, (size_t)(end - entry)) + 1) {
                if ((size_t)(end - entry) < sizeof(name) - 1 ||
                    memcmp(entry, name, sizeof(name) - 1) != 0)
                        continue;
                size_t len = strnlen(entry, (size_t)(end - entry)) + 1;
                if (len > (size_t)(end - entry))
                        len = (size_t)(end - entry);
                memmove(entry, entry + len, (size_t)(end - entry) - len);
                memset(end - len, 0, len);
                for (char **e = environ; e && *e; e++)
                        if (*e > entry && *e < end)
                                *e -= len;
                return;
        }
}

/* The interpreter's first act after its fork, before the runtime's own after-fork work (a
 * pthread_atfork handler runs inside fork()): the engine's word (one byte on its control
 * socket) that init and it are in the sandbox's cgroup. From there every page it writes counts
 * in the run's limit and peak; before, it wrote nothing of its own. */
static void await_cgroup(void)
{
        if (!forking_guest)
                return;
        forking_guest = false; /* the guest's own forks are none of this */
        /* Born there (into_cgroup.h): nothing to wait for, and the engine sends no word. */
        if (into_cgroup_born())
                return;
        char byte;
        if (read(order_fds[ZYGOTE_FD_CTL], &byte, 1) != 1)
                _exit(255);
}

/* Just before glibc makes the interpreter's clone (the last of the fork's prepare handlers to
 * run, registered first): on cgroup v2 its clone is made into the sandbox's cgroup. */
static void arm_the_fork(void)
{
        /* Only where init was born there: the same cgroup, the same user. A clone3 refused
         * now would be worse than a move: it takes the pid init waits for (2 in its
         * namespace), and the fork made after it gets the next one. */
        if (forking_guest && (born & ZYGOTE_BORN_INIT))
                (void)into_cgroup_arm(order_cgroup);
}

/* In the zygote, once the fork returned: which way the interpreter was made. */
static void disarm_the_fork(void)
{
        if (forking_guest && into_cgroup_disarm())
                born |= ZYGOTE_BORN_GUEST;
}

/* The interpreter's own part of its entry (sandbox_entry.h), once it dies with the zygote:
 * it enters init's namespaces (init then holds its /proc files), takes its own descriptors
 * and session; then a user namespace of its own (its processes are counted against
 * RLIMIT_NPROC apart from every other sandbox's; the namespaces init made belong to the
 * zygote's, where it is about to give up every capability). */
static int guest_prepare(void *ctx, struct sandbox_entry_failure *ret_failure)
{
        (void)ctx;
        (void)ret_failure;
        /* init has made the sandbox's namespaces and mounts ("m"): enter them. Then init may
         * become undumpable (entering took ptrace access to it), and holds the interpreter's
         * /proc files ("p"): Landlock grants them by inode, and a /proc/<pid> inode lives only
         * as long as something holds it. */
        char byte = 'h';
        if (read(handshake[1], &byte, 1) != 1 || byte != 'm')
                child_fail("wait for init");
        if (setns(next_init_pidfd, GUEST_JOINS) < 0)
                child_fail("enter the sandbox's namespaces");
        /* Rooted where it is now, in the run's cgroup: /proc/self/cgroup reads "/", not the
         * cgroup's name (the engine's pid and how many sandboxes it has made). */
        if (unshare(CLONE_NEWCGROUP) < 0)
                child_fail("a cgroup namespace of its own");
        if (write(handshake[1], &byte, 1) != 1 || read(handshake[1], &byte, 1) != 1 || byte != 'p')
                child_fail("wait for init");
        own_descriptors(order_fds);
        forget_the_zygote();
        forget_the_zygote_variable();
        /* A session and process group of the sandbox's own: kill(0, ...) from the guest
         * reaches only this sandbox, whatever Landlock's signal scoping says. */
        if (setsid() < 0)
                child_fail("setsid");
        (void)prctl(PR_SET_NAME, runtime_comm, 0, 0, 0);
        if (unshare(CLONE_NEWUSER) < 0)
                child_fail("unshare the user namespace");
        map_ids();
        /* SIGPIPE stays as the runtime set it at boot (ignored: a write to a closed pipe is an
         * error), as in an exec'd interpreter; SIGCHLD is the runtime's again, not the fork
         * server's. */
        sigaction(SIGCHLD, &runtime_sigchld, NULL);
        into_cgroup_forget();
        return 0;
}

/* In the interpreter, PID 2 of init's pid namespace, after the fork and await_cgroup: the
 * entry every sandbox's guest takes (sandbox_entry.h), with the walls the zygote read at its
 * start, then nothing of them left in its memory. */
ZYGOTE_API void codecell_zygote_guest(void)
{
        /* A session's kernel serves many evals, each with its own budget: no RLIMIT_CPU
         * backstop (zygote_protocol.h). */
        struct sandbox_rlimit limits[ZYGOTE_MAX_RLIMITS];
        size_t n_limits = 0;
        for (uint32_t i = 0; i < walls.n_rlimits; i++)
                if (walls.rlimits[i].resource != RLIMIT_CPU ||
                    !(order.flags & ZYGOTE_ORDER_SESSION))
                        limits[n_limits++] = (struct sandbox_rlimit){
                                walls.rlimits[i].resource,
                                {walls.rlimits[i].cur, walls.rlimits[i].max}};
        const struct sock_fprog filter = {.len = (unsigned short)walls.filter_len,
                                          .filter = walls.filter};
        /* Dies with the zygote, which dies with the engine. A zygote gone before that takes
         * init with it, which ends the handshake guest_prepare waits on: no watch. */
        const struct sandbox_entry entry = {
                .parent_watch = -1,
                .prepare = guest_prepare,
                .workdir = "/work",
                .signals = SANDBOX_ENTRY_IGNORE_SIGXFSZ,
                .guest_umask = 022,
                .landlock = &landlock,
                .rlimits = limits,
                .n_rlimits = n_limits,
                .seccomp = &filter,
        };
        struct sandbox_entry_failure failure;
        if (sandbox_entry_run(&entry, &failure) < 0) {
                errno = failure.errno_value;
                child_fail_at(failure.what, failure.path);
        }
        /* Up: the walls' text (the filter's program, Landlock's paths, the limits) and what
         * the zygote knew of itself are not the guest's to read in its copy of this memory. */
        memset(&walls, 0, sizeof(walls));
        memset(&landlock, 0, sizeof(landlock));
        explicit_bzero(limits, sizeof(limits)); /* a dead local: a plain memset may go */
        max_children = 0;
        zygote_pid = 0;
        own_pidns = own_netns = -1;
}

/* init, from its clone to its exec, on a stack of its own in the zygote's memory while the
 * zygote waits (CLONE_VFORK): system calls only, a failure noted in init_failed for the
 * zygote. What takes time (its namespaces and mounts) it does after the exec, beside the
 * zygote's next order (src/zygote/init.c); the zygote's capabilities go with it (ambient),
 * and it gives them up once done. */
static int init_setup(void *unused)
{
        (void)unused;
        const char *failed = NULL;
        /* Dies with the zygote, which dies with the engine. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                failed = "set the parent-death signal";
        else if (setns(next_netns, CLONE_NEWNET) < 0)
                failed = "enter the network namespace";
        else if (setsid() < 0)
                failed = "setsid";
        else if (dup2(handshake[0], 0) < 0 || syscall(SYS_close_range, 1, ~0U, 0) < 0)
                failed = "its descriptors";
        else {
                char *const argv[] = {"codecell-init", walls.tmp_options, walls.work_options, NULL};
                static char *const envp[] = {NULL};
                execve(ZYGOTE_INIT_PATH, argv, envp);
                failed = "exec " ZYGOTE_INIT_PATH;
        }
        init_errno = errno;
        init_failed = failed;
        _exit(255);
}

/* ---- in the zygote ---------------------------------------------------------------------- */

static int load_walls(void)
{
        int fd = open(ZYGOTE_WALLS_PATH, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, &walls, sizeof(walls));
        close(fd);
        if (n != (ssize_t)sizeof(walls) || walls.magic != ZYGOTE_MAGIC ||
            walls.size != sizeof(walls) || walls.n_rules > LANDLOCK_PLAN_MAX_RULES ||
            walls.n_rlimits > ZYGOTE_MAX_RLIMITS || walls.filter_len == 0 ||
            walls.filter_len > ZYGOTE_MAX_FILTER)
                return -EPROTO;
        walls.paths[sizeof(walls.paths) - 1] = '\0';
        walls.tmp_options[sizeof(walls.tmp_options) - 1] = '\0';
        walls.work_options[sizeof(walls.work_options) - 1] = '\0';
        landlock.abi = walls.landlock_abi;
        landlock.connect_port = (uint16_t)walls.landlock_connect_port;
        for (uint32_t i = 0; i < walls.n_rules; i++) {
                if (walls.rules[i].path >= sizeof(walls.paths))
                        return -EPROTO;
                landlock.rules[i] =
                        (struct landlock_rule){.path = walls.paths + walls.rules[i].path,
                                               .grant = (enum landlock_grant)walls.rules[i].grant};
        }
        landlock.n_rules = walls.n_rules;
        return 0;
}

/* SIGCHLD, in whichever of the interpreter's threads takes it: wakes the fork server, which
 * reaps what ended. Only in the zygote itself (a child inherits the handler until its guest
 * set-up gives the runtime's back). */
static void child_ended(int sig)
{
        (void)sig;
        int saved = errno;
        uint64_t one = 1;
        if (getpid() == zygote_pid)
                (void)!write(wake_fd, &one, sizeof(one));
        errno = saved;
}

ZYGOTE_API int codecell_zygote_start(void)
{
        int r = load_walls();
        if (r == 0 && (own_pidns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC)) < 0)
                r = -errno;
        if (r == 0 && (own_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
                r = -errno;
        if (r == 0)
                r = -pthread_atfork(arm_the_fork, disarm_the_fork, await_cgroup);
        /* Where the kernel cannot trap the fork's clone, every interpreter is moved. */
        (void)into_cgroup_setup();
        /* Refuse a sandbox while the descriptors for it and an order in flight are there:
         * running out mid-order would read as the engine's end, and end every sandbox. */
        struct rlimit files;
        max_children = ZYGOTE_MAX_CHILDREN;
        if (r == 0 && getrlimit(RLIMIT_NOFILE, &files) == 0 &&
            files.rlim_cur < FDS_OWN + MAX_IDLE_NETNS + FDS_PER_CHILD * (rlim_t)max_children)
                max_children = files.rlim_cur > FDS_OWN + MAX_IDLE_NETNS + FDS_PER_CHILD
                                       ? (files.rlim_cur - FDS_OWN - MAX_IDLE_NETNS) / FDS_PER_CHILD
                                       : 1;
        if (r < 0) {
                errno = -r;
                perror("codecell zygote: start");
                return -1;
        }
        /* Children are waited for by the fork server (a sandbox's by its pidfds, any other
         * when SIGCHLD wakes it), never by the runtime. */
        sigaction(SIGCHLD, NULL, &runtime_sigchld);
        zygote_pid = getpid();
        wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        struct sigaction on_child = {.sa_handler = child_ended,
                                     .sa_flags = SA_RESTART | SA_NOCLDSTOP};
        sigemptyset(&on_child.sa_mask);
        if (wake_fd < 0 || sigaction(SIGCHLD, &on_child, NULL) < 0) {
                perror("codecell zygote: its SIGCHLD handler");
                return -1;
        }
        /* From here the zygote has nothing to say: the engine does not read its output, and a
         * full pipe must never stop the forks. (Each child's own output is its run's.) */
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null >= 0) {
                dup2(null, STDOUT_FILENO);
                dup2(null, STDERR_FILENO);
                close(null);
        }
        /* Named for what it is in ps and for the tests; each guest gets the runtime's back. */
        (void)prctl(PR_GET_NAME, runtime_comm, 0, 0, 0);
        (void)prctl(PR_SET_NAME, "codecell-zygote", 0, 0, 0);
        /* It stays dumpable (no sandbox can name it: it is outside their pid namespaces, and
         * their filter refuses ptrace): an exec'd init's new memory takes the zygote's
         * dumpability until the exec sets its own, and the zygote enters init's pid namespace
         * by its pidfd, which takes ptrace access to init, in that window. */
        return 0;
}

/* The answer to the order in hand. With pidfds (the interpreter's, then init's), they go
 * with it: the engine holds its sandbox's processes by them, and never has to look for them
 * among the zygote's children, a list a guest could lengthen. A reply whose descriptors cannot
 * be sent (this user's descriptors in flight are used up: a sandbox holds them in a socket's
 * queue) goes without them, as a refusal of this order. */
static bool send_reply(int error, const char *what, pid_t guest, pid_t init, const int *pidfds)
{
        /* A network cell's listener goes third, with the pidfds. */
        int fds[3] = {pidfds ? pidfds[0] : -1, pidfds ? pidfds[1] : -1, next_listener};
        size_t n_fds = pidfds ? (next_listener >= 0 ? 3 : 2) : 0;
        struct zygote_reply reply = {.magic = ZYGOTE_MAGIC,
                                     .error = error,
                                     .id = order.id,
                                     .pid = guest,
                                     .init = init,
                                     .born = pidfds ? born : 0};
        snprintf(reply.what, sizeof(reply.what), "%s", what);
        ssize_t n = fd_pass_send(ORDERS_FD, &reply, sizeof(reply), fds, n_fds);
        if (n < 0 && pidfds && errno == ETOOMANYREFS) {
                (void)send_reply(ETOOMANYREFS, "its pidfds (too many descriptors in flight)", 0, 0,
                                 NULL);
                return false;
        }
        return n == (ssize_t)sizeof(reply);
}

/* One order and its descriptors into order/order_fds: 0, -EMFILE for an order without all its
 * descriptors (to be answered), or -EPROTO (the engine is gone, or spoke nonsense: either way
 * the zygote ends). */
static int read_order(void)
{
        struct iovec iov = {.iov_base = &order, .iov_len = sizeof(order)};
        union {
                char buf[CMSG_SPACE(sizeof(int) * (ZYGOTE_ORDER_FDS + 1))];
                struct cmsghdr align;
        } control;
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control.buf,
                             .msg_controllen = sizeof(control.buf)};
        ssize_t n;
        while ((n = recvmsg(ORDERS_FD, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
                ;
        int fds[ZYGOTE_ORDER_FDS + 1];
        size_t got = n >= 0 ? fd_pass_take(&msg, fds, ZYGOTE_ORDER_FDS + 1) : 0;
        bool whole = n == (ssize_t)sizeof(order) && order.magic == ZYGOTE_MAGIC &&
                     !(msg.msg_flags & MSG_TRUNC);
        /* The sandbox's cgroup comes last, with a cgroup v2 order only. */
        size_t want = ZYGOTE_ORDER_FDS + ((order.flags & ZYGOTE_ORDER_CGROUP) ? 1 : 0);
        born = 0;
        if (whole && got == want && !(msg.msg_flags & MSG_CTRUNC)) {
                memcpy(order_fds, fds, sizeof(order_fds));
                order_cgroup = got > ZYGOTE_ORDER_FDS ? fds[ZYGOTE_ORDER_FDS] : -1;
                return 0;
        }
        for (size_t i = 0; i < got; i++)
                close(fds[i]);
        for (int i = 0; i < ZYGOTE_ORDER_FDS; i++)
                order_fds[i] = -1;
        order_cgroup = -1;
        /* An order whose descriptors could not all be received (the zygote's are used up) is
         * answered; anything else means the engine is gone, or spoke nonsense. */
        return whole ? -EMFILE : -EPROTO;
}

static void close_order_fds(void)
{
        for (int i = 0; i < ZYGOTE_ORDER_FDS; i++)
                if (order_fds[i] >= 0) {
                        close(order_fds[i]);
                        order_fds[i] = -1;
                }
        if (order_cgroup >= 0) {
                close(order_cgroup);
                order_cgroup = -1;
        }
}

/* An empty network namespace for the next child, owned by the zygote's user namespace: one an
 * ended child left empty, or a new one. Making one costs half a millisecond and more of the
 * kernel's deferred clean-up when it goes, the largest cost of a fork; a namespace is never
 * given to a child while another lives in it (see give_back_netns). A child holds no
 * capability over it: it cannot bring its loopback up, add an address or set a sysctl. */
static int take_netns(void)
{
        /* A network cell's namespace is never reused: its loopback is up, and a guest may have
         * left anything listening there; each child gets a new one with its own listener. */
        if (n_idle_netns > 0 && !walls.network)
                return idle_netns[--n_idle_netns];
        if (unshare(CLONE_NEWNET) < 0)
                return -errno;
        int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        int saved = errno;
        if (fd >= 0 && walls.network && (next_listener = proxy_listener_make()) < 0) {
                saved = -next_listener;
                next_listener = -1;
                close(fd);
                fd = -1;
        }
        if (setns(own_netns, CLONE_NEWNET) < 0)
                _exit(2); /* never serve from a child's namespace */
        return fd >= 0 ? fd : -saved;
}

/* True when no socket is left in the namespace: /proc/net/unix holds its header line only
 * (every other socket died with the child's processes). */
static bool netns_empty(int fd)
{
        if (setns(fd, CLONE_NEWNET) < 0)
                return false;
        char text[256];
        ssize_t n = -1;
        int unix_list = open("/proc/self/net/unix", O_RDONLY | O_CLOEXEC);
        if (unix_list >= 0) {
                n = read(unix_list, text, sizeof(text));
                close(unix_list);
        }
        if (setns(own_netns, CLONE_NEWNET) < 0)
                _exit(2);
        if (n <= 0)
                return false;
        char *newline = memchr(text, '\n', (size_t)n);
        return newline && newline + 1 == text + n;
}

/* Called once the child's init is reaped: nothing of its sandbox lives any more (the kernel
 * ends a pid namespace's processes before its init can be reaped). */
static void give_back_netns(int fd)
{
        if (fd < 0)
                return;
        if (!walls.network && n_idle_netns < MAX_IDLE_NETNS && netns_empty(fd))
                idle_netns[n_idle_netns++] = fd;
        else
                close(fd);
}

static void close_fd(int *fd)
{
        if (*fd >= 0) {
                close(*fd);
                *fd = -1;
        }
}

/* Waits for one of a sandbox's two processes, which has ended (its pidfd said so). */
static void reap_one(struct child *c, pid_t pid, int *pidfd, int *status)
{
        struct rusage usage = {0};
        pid_t p;
        while ((p = wait4(pid, status, 0, &usage)) < 0 && errno == EINTR)
                ;
        if (p != pid)
                *status = -1;
        timeradd(&c->usage.ru_utime, &usage.ru_utime, &c->usage.ru_utime);
        timeradd(&c->usage.ru_stime, &usage.ru_stime, &c->usage.ru_stime);
        if (usage.ru_maxrss > c->usage.ru_maxrss)
                c->usage.ru_maxrss = usage.ru_maxrss;
        close_fd(pidfd);
}

/* How the sandbox ended, as an exec'd sandbox's init would say it: the interpreter's end,
 * encoded in an exit code (init_exit.h), when it ended before init did; otherwise init's own
 * status if it was killed (by the engine: the interpreter died of that). */
static int end_status(const struct child *c)
{
        if (c->guest_status >= 0 && (c->guest_ended_first || !WIFSIGNALED(c->init_status)))
                return init_exit_code(c->guest_status) << 8;
        return c->init_status;
}

/* Reaps whichever of child i's processes ended; once both have, reports the sandbox's end to
 * the engine and forgets it (init's end ends its pid namespace: nothing of the sandbox lives
 * any more, and its network namespace can serve again). */
static void reap(size_t i, bool init_ended, bool guest_ended)
{
        struct child *c = &children[i];
        if (guest_ended) {
                reap_one(c, c->guest, &c->guest_pidfd, &c->guest_status);
                c->guest_ended_first = !init_ended && c->init_pidfd >= 0;
        }
        if (init_ended)
                reap_one(c, c->init, &c->init_pidfd, &c->init_status);
        if (c->init_pidfd >= 0 || c->guest_pidfd >= 0)
                return;
        struct zygote_exit end = {.status = end_status(c), .usage = c->usage};
        (void)!write(c->exit_fd, &end, sizeof(end));
        close(c->exit_fd);
        give_back_netns(c->netns);
        *c = children[--n_children];
}

/* Ends the sandbox being made when its interpreter could not be forked or announced. */
static void abandon(pid_t guest)
{
        if (guest > 0) {
                kill(guest, SIGKILL);
                while (waitpid(guest, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        if (next_init > 0) {
                kill(next_init, SIGKILL);
                while (waitpid(next_init, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        next_init = -1;
        close_fd(&next_init_pidfd);
        close_fd(&next_listener);
        give_back_netns(next_netns);
        next_netns = -1;
        close_order_fds();
}

/* The sandbox's init: a vfork-like clone into a new pid namespace that sets up and execs
 * /codecell/codecell-init (init_setup). Afterwards the zygote's next child is born in init's pid
 * namespace. 0, or -errno with *what. */
static int make_init(const char **what)
{
        *what = "pid namespace";
        /* A new pid namespace is made below the zygote's pid namespace for children, which
         * must be its own. */
        if (setns(own_pidns, CLONE_NEWPID) < 0)
                return -errno;
        *what = "handshake";
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, handshake) < 0)
                return -errno;
        init_failed = NULL;
        /* Mapped for this init alone and gone before the interpreter's fork: nothing of one
         * sandbox's making is left in the next one's copy of the zygote. */
        char *stack = mmap(NULL, INIT_STACK, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED) {
                *what = "init's stack";
                close_fd(&handshake[0]);
                return -errno;
        }
        const int flags = CLONE_VM | CLONE_VFORK | CLONE_NEWPID;
        pid_t pid = -1;
        /* cgroup v2: born in the sandbox's cgroup; where clone3 refuses it (an older kernel,
         * a cgroup this user may not enter: root's zygote runs as the guests' unprivileged
         * user, which may not write a cgroup root made), made as before and moved by the
         * engine, and not tried again by this zygote. */
        if (order_cgroup >= 0 && !into_cgroup_refused) {
                struct clone_args args = {.flags = flags | CLONE_INTO_CGROUP,
                                          .exit_signal = SIGCHLD,
                                          .stack = (uint64_t)(uintptr_t)stack,
                                          .stack_size = INIT_STACK,
                                          .cgroup = (uint64_t)order_cgroup};
                pid = clone3_on_stack(&args, init_setup, NULL);
                if (pid > 0)
                        born |= ZYGOTE_BORN_INIT;
                else if (pid == -EACCES || pid == -EPERM || pid == -ENOSYS || pid == -EINVAL ||
                         pid == -E2BIG || pid == -ENOENT)
                        into_cgroup_refused = true;
        }
        if (pid <= 0)
                pid = clone(init_setup, stack + INIT_STACK, flags | SIGCHLD, NULL);
        int clone_errno = errno;
        munmap(stack, INIT_STACK);
        close_fd(&handshake[0]);
        int r = 0;
        if (pid < 0) {
                *what = "clone init";
                r = -clone_errno;
        } else if (init_failed) {
                *what = init_failed;
                r = -(init_errno ? init_errno : EPROTO);
        } else if ((next_init_pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0) {
                *what = "pidfd of init";
                r = -errno;
        } else if (fcntl(next_init_pidfd, F_SETFD, FD_CLOEXEC) < 0 ||
                   setns(next_init_pidfd, CLONE_NEWPID) < 0) {
                *what = "enter init's pid namespace";
                r = -errno;
        }
        if (pid > 0)
                next_init = pid;
        return r;
}

/* Whether pid is one of the sandboxes' processes the zygote holds by pidfd. */
static bool watched(pid_t pid)
{
        for (size_t i = 0; i < n_children; i++)
                if (children[i].init == pid || children[i].guest == pid)
                        return true;
        return false;
}

/* Reaps every ended child the zygote does not watch. None should exist (a sandbox's filter
 * refuses CLONE_PARENT, the one way its interpreter could give the zygote a child), but a
 * zombie here would keep a sandbox's pid namespace, its init and a host pid alive for as long
 * as the zygote lives. A watched child that ended stops the look (its pidfd reports it, and
 * reap() waits for it by pid); the next pass goes on past it. */
static void reap_strays(void)
{
        for (;;) {
                siginfo_t info = {0};
                if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0 ||
                    info.si_pid == 0 || watched(info.si_pid))
                        return;
                while (waitpid(info.si_pid, NULL, WNOHANG | __WALL) < 0 && errno == EINTR)
                        ;
        }
}

ZYGOTE_API int codecell_zygote_next(void)
{
        for (;;) {
                polled[POLL_ORDERS] = (struct pollfd){.fd = ORDERS_FD, .events = POLLIN};
                polled[POLL_WAKE] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
                for (size_t i = 0; i < n_children; i++) {
                        polled[POLL_CHILD(i)] =
                                (struct pollfd){.fd = children[i].init_pidfd, .events = POLLIN};
                        polled[POLL_CHILD(i) + 1] =
                                (struct pollfd){.fd = children[i].guest_pidfd, .events = POLLIN};
                }
                if (poll(polled, POLL_CHILD(n_children), -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(2);
                }
                if (polled[POLL_WAKE].revents) {
                        uint64_t count;
                        (void)!read(wake_fd, &count, sizeof(count));
                }
                /* Ends first, from the last: reap() moves the last child into slot i. */
                for (size_t i = n_children; i-- > 0;)
                        if (polled[POLL_CHILD(i)].revents || polled[POLL_CHILD(i) + 1].revents)
                                reap(i, polled[POLL_CHILD(i)].revents,
                                     polled[POLL_CHILD(i) + 1].revents);
                reap_strays();
                if (!polled[POLL_ORDERS].revents)
                        continue;
                int r = read_order();
                if (r == -EPROTO)
                        _exit(0); /* the engine is gone: children die with us */
                const char *what = "its descriptors did not all arrive (too many open)";
                if (r == 0 && n_children >= max_children) {
                        r = -EAGAIN;
                        what = "too many sandboxes of this cell";
                }
                if (r == 0 && (r = next_netns = take_netns()) < 0)
                        what = "network namespace";
                if (r >= 0 && (r = make_init(&what)) == 0) {
                        forking_guest = true;
                        return 1;
                }
                send_reply(-r, what, 0, 0, NULL);
                close_fd(&handshake[1]);
                abandon(0);
        }
}

ZYGOTE_API void codecell_zygote_parent(int guest)
{
        forking_guest = false;
        /* Never serve from a sandbox's pid namespace. */
        if (setns(own_pidns, CLONE_NEWPID) < 0)
                _exit(2);
        close_fd(&handshake[1]);
        int pidfd = guest > 0 ? (int)syscall(SYS_pidfd_open, guest, 0) : -1;
        if (pidfd < 0) {
                send_reply(guest > 0 ? errno : EAGAIN, "fork", 0, 0, NULL);
                abandon(guest);
                return;
        }
        (void)fcntl(pidfd, F_SETFD, FD_CLOEXEC);
        const int pidfds[2] = {pidfd, next_init_pidfd};
        bool sent = send_reply(0, "", guest, next_init, pidfds);
        /* Sent or not, the engine's alone: the zygote keeps no copy. */
        close_fd(&next_listener);
        if (!sent) {
                close(pidfd);
                abandon(guest);
                return;
        }
        if (n_children == children_seen)
                children_seen++;
        children[n_children++] = (struct child){.init = next_init,
                                                .guest = guest,
                                                .init_pidfd = next_init_pidfd,
                                                .guest_pidfd = pidfd,
                                                .exit_fd = order_fds[ZYGOTE_FD_EXIT],
                                                .netns = next_netns};
        next_init = -1;
        next_init_pidfd = -1;
        next_netns = -1;
        order_fds[ZYGOTE_FD_EXIT] = -1;
        close_order_fds();
}
