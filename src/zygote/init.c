/* A forked sandbox's init, PID 1 of its pid namespace (/codecell/codecell-init,
 * docs/security.md "Forked sandboxes"). The zygote makes it with a vfork-like clone into a new
 * pid namespace, which joins the sandbox's network namespace, takes a session of its own and
 * execs this: the zygote waits only for the exec (a few kilobytes), and everything slower runs
 * here, beside the zygote's next order. The one fork of the booted interpreter per run is then
 * the interpreter's own (src/zygote/zygote.c), which the zygote forks into this pid namespace
 * as PID 2 (its child, not init's).
 *
 * argv: the tmpfs options of /tmp and /work. Descriptor 0: a socket to the interpreter. init
 *   - unshares mount, ipc, uts and cgroup namespaces and mounts a fresh /tmp, /work and a /proc
 *     of its pid namespace, and /dev/null over /codecell/walls (the zygote's copy of the walls
 *     is not the guest's to read), with the zygote's CAP_SYS_ADMIN, kept through the exec; gives
 *     up every capability and says so ("m"): the interpreter enters these namespaces by init's
 *     pidfd, and says so;
 *   - becomes undumpable and holds the interpreter's /proc files open: Landlock grants them by
 *     inode, and a /proc/<pid> inode lives only as long as something holds it; says so ("p"),
 *     after which the interpreter puts up its walls;
 *   - reaps whatever is orphaned into it, and exits when the interpreter has ended: its pid
 *     namespace, and every process left in it, ends with it.
 * It takes no signal from its sandbox (PID 1 of a pid namespace gets only the signals it has
 * handlers for: none). A step that fails ends it, and so the sandbox's start.
 *
 * Static, without libc: an exec of a program that starts libc costs three times as much as
 * the whole of this one. So: raw system calls, nothing that needs thread-local storage. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_PATH, also where the build does not define it (bindings/vendor.cmake) */
#endif
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "landlock_proc_files.h"
#include "zygote_protocol.h"

/* The interpreter's pid, here: the zygote forks it as the second process of this namespace. */
#define GUEST_PID 2

static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
        long ret;
#if defined(__x86_64__)
        register long r10 __asm__("r10") = d;
        register long r8 __asm__("r8") = e;
        register long r9 __asm__("r9") = f;
        __asm__ volatile("syscall"
                         : "=a"(ret)
                         : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                         : "rcx", "r11", "memory");
#elif defined(__aarch64__)
        register long x8 __asm__("x8") = n;
        register long x0 __asm__("x0") = a;
        register long x1 __asm__("x1") = b;
        register long x2 __asm__("x2") = c;
        register long x3 __asm__("x3") = d;
        register long x4 __asm__("x4") = e;
        register long x5 __asm__("x5") = f;
        __asm__ volatile("svc 0"
                         : "+r"(x0)
                         : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                         : "memory", "cc");
        ret = x0;
#else
#error "codecell's forked sandboxes' init: add this architecture's system call convention"
#endif
        return ret;
}

#define sys(n, a, b, c, d) sys6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

static _Noreturn void end(int code)
{
        for (;;)
                sys(SYS_exit_group, code, 0, 0, 0);
}

/* Opens /proc/2/<name> (O_PATH), kept for the interpreter's lifetime. Failures are harmless:
 * that file is then unreadable to it. */
static void pin(const char *name)
{
        char path[64] = "/proc/2/";
        unsigned at = 8;
        while (*name && at < sizeof(path) - 1)
                path[at++] = *name++;
        path[at] = '\0';
        (void)sys(SYS_openat, AT_FDCWD, path, O_PATH | O_CLOEXEC, 0);
}

static void say(char what)
{
        if (sys(SYS_write, 0, &what, 1, 0) != 1)
                end(2);
}

static void hear(void)
{
        char byte;
        if (sys(SYS_read, 0, &byte, 1, 0) != 1)
                end(0); /* the zygote could not fork the interpreter, or it is gone */
}

/* A step of set_up: one that fails ends init, and so the sandbox's start. */
static void set_up_step(long result)
{
        if (result < 0)
                end(3);
}

/* The sandbox's own namespaces and folders, over the zygote's. */
static void set_up(const char *tmp_options, const char *work_options)
{
        const unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
        const unsigned long namespaces =
                CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
        set_up_step(sys(SYS_unshare, namespaces, 0, 0, 0));
        set_up_step(sys(SYS_mount, 0, "/", 0, MS_REC | MS_PRIVATE));
        set_up_step(sys6(SYS_mount, (long)"tmpfs", (long)"/tmp", (long)"tmpfs", flags,
                         (long)tmp_options, 0));
        set_up_step(sys6(SYS_mount, (long)"tmpfs", (long)"/work", (long)"tmpfs", flags,
                         (long)work_options, 0));
        set_up_step(sys6(SYS_mount, (long)"proc", (long)"/proc", (long)"proc", flags, 0, 0));
        set_up_step(sys6(SYS_mount, (long)"/dev/null", (long)ZYGOTE_WALLS_PATH, 0, MS_BIND, 0, 0));
        /* Security invariant: from here init holds no capability (the bounding set keeps only
         * what the zygote had; with none permitted and no_new_privs, nothing brings one back). */
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct none[2] = {{0, 0, 0}, {0, 0, 0}};
        if (sys(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0) < 0 ||
            sys(SYS_capset, &hdr, none, 0, 0) < 0)
                end(4);
}

static void run(long argc, char **argv)
{
        if (argc != 3)
                end(5);
        set_up(argv[1], argv[2]);
        say('m');
        hear(); /* the interpreter is in: init may become undumpable (entering takes ptrace
                 * access to it) */
        (void)sys(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0);
        static const char *const files[] = {LANDLOCK_PROC_SELF_FILES, 0};
        for (unsigned i = 0; files[i]; i++)
                pin(files[i]);
        long guest = sys(SYS_pidfd_open, GUEST_PID, 0, 0, 0);
        say('p');
        (void)sys(SYS_close, 0, 0, 0, 0);
        if (guest < 0)
                end(0);
        /* Orphans end up here: their ends are read through a signalfd, so that none is missed
         * between a reap and the wait. */
        uint64_t chld = 1ull << (SIGCHLD - 1);
        if (sys(SYS_rt_sigprocmask, SIG_BLOCK, &chld, 0, sizeof(chld)) < 0)
                end(0);
        long sfd = sys(SYS_signalfd4, -1, &chld, sizeof(chld), SFD_NONBLOCK | SFD_CLOEXEC);
        if (sfd < 0)
                end(0);
        for (;;) {
                while (sys(SYS_wait4, -1, 0, WNOHANG | __WALL, 0) > 0)
                        ;
                struct pollfd p[2] = {{.fd = (int)guest, .events = POLLIN},
                                      {.fd = (int)sfd, .events = POLLIN}};
                if (sys6(SYS_ppoll, (long)p, 2, 0, 0, 0, 0) < 0)
                        continue;
                if (p[0].revents)
                        end(0);
                char drain[128 * 8];
                while (sys(SYS_read, sfd, drain, sizeof(drain), 0) > 0)
                        ;
        }
}

/* The entry point: argc and argv are on the stack the kernel made, which is 16-byte aligned
 * here, not as after a call. */
__attribute__((used, noreturn)) void start(long *stack)
{
        run(stack[0], (char **)(stack + 1));
        end(0);
}

#if defined(__x86_64__)
__asm__(".globl _start\n_start:\n\tmov %rsp, %rdi\n\tand $-16, %rsp\n\tcall start\n");
#elif defined(__aarch64__)
__asm__(".globl _start\n_start:\n\tmov x0, sp\n\tbl start\n");
#endif
