#include "seccomp_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <termios.h>
#include <unistd.h>

#include "cleanup.h"
#include "error.h"

/* Calls that reach kernel surface a script never needs, or that would let it rebuild the
 * privileges the sandbox took away. Each answers EPERM: an error the guest can read, rather
 * than a kill that would look like a crash. */
static const char *const denied_calls[] = {
        /* namespaces and mounts */
        "unshare",
        "setns",
        "mount",
        "umount",
        "umount2",
        "pivot_root",
        "chroot",
        "open_tree",
        "move_mount",
        "mount_setattr",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        /* other processes */
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "kcmp",
        "pidfd_getfd",
        /* kernel attack surface */
        "bpf",
        "perf_event_open",
        "keyctl",
        "add_key",
        "request_key",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        "userfaultfd",
        "init_module",
        "finit_module",
        "delete_module",
        "kexec_load",
        "kexec_file_load",
        "reboot",
        "swapon",
        "swapoff",
        "acct",
        "quotactl",
        "quotactl_fd",
        "lookup_dcookie",
        "syslog",
        "vhangup",
        "iopl",
        "ioperm",
        "uselib",
        "nfsservctl",
        "fanotify_init",
        /* watching files: an inotify watch on a shared read-only tree (/usr) reports what the
         * host and the other sandboxes open, a window on them and a channel between them */
        "inotify_init",
        "inotify_init1",
        "inotify_add_watch",
        /* anonymous files: the only writable files not on a noexec mount, so the only ones the
         * dynamic loader could map as a program; nothing a script needs */
        "memfd_create",
        "memfd_secret",
        /* extended attributes: an access ACL rewrites a file's mode bits, security.capability
         * would give a file capabilities (see deny_privileged_modes) */
        "setxattr",
        "lsetxattr",
        "fsetxattr",
        "removexattr",
        "lremovexattr",
        "fremovexattr",
        "open_by_handle_at",
        "name_to_handle_at",
        "personality",
        "mbind",
        "migrate_pages",
        "move_pages",
        "set_mempolicy",
        /* the clock and the host's names */
        "settimeofday",
        "clock_settime",
        "clock_adjtime",
        "adjtimex",
        "sethostname",
        "setdomainname",
};

/* The type argument of socket() also carries SOCK_NONBLOCK and SOCK_CLOEXEC. */
#define SOCK_TYPE_MASK 0xf

/* Calls newer than libseccomp 2.5 knows by name, refused by number (every architecture shares
 * the numbers from 424 on): statmount and listmount show each mount's source path on the
 * host. */
static const int denied_numbers[] = {
        457, /* statmount */
        458, /* listmount */
        463, /* setxattrat (6.13), as setxattr */
        466, /* removexattrat */
        440, /* process_madvise: advice on another process's memory, as mbind and move_pages */
        450, /* set_mempolicy_home_node, as set_mempolicy */
        467, /* open_tree_attr (6.15), as open_tree */
        469, /* file_setattr (6.17): inode flags, as FS_IOC_SETFLAGS */
};

/* clone flags refused whether or not subprocesses are allowed (unshare and setns are refused
 * outright; clone3 answers ENOSYS):
 * - every CLONE_NEW*: a nested user namespace would hand the guest every capability over the
 *   new namespaces, and the kernel surface behind them;
 * - CLONE_PARENT, whose child's parent is the caller's parent. A forked sandbox's interpreter
 *   is its zygote's child, so such children would be the zygote's: outside the sandbox, never
 *   reaped by its init, holding its pid namespace open and host pids. No runtime asks for it
 *   (fork, posix_spawn and threads do not). */
static const unsigned long refused_clone_flags[] = {
        CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
        CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET, CLONE_PARENT,
};

/* A call and the argument that holds a file mode. */
struct mode_arg {
        const char *name;
        int nr; /* used when libseccomp does not know the name */
        unsigned int arg;
        bool chmod; /* changes an existing file's mode (else: creates a file with it) */
};

static const struct mode_arg mode_args[] = {
        {"chmod", -1, 1, true},      {"fchmod", -1, 1, true}, {"fchmodat", -1, 2, true},
        {"fchmodat2", 452, 2, true}, {"open", -1, 2, false},  {"openat", -1, 3, false},
        {"creat", -1, 1, false},     {"mknod", -1, 1, false}, {"mknodat", -1, 2, false},
};

/* Security invariant: nothing the guest makes or changes carries S_ISUID or S_ISGID. In a
 * read-write folder the file is the host's, owned by the folder's owner: a setuid bit there is
 * a setuid program on the host. The kernel lets an owner set both bits, so the filter refuses
 * every call that passes them, and (chmod family) the world-write bit, which would open a
 * host folder, the mount point included, to every local user. mkdir drops both bits itself;
 * openat2 passes its mode in memory, which BPF cannot read: ENOSYS, and libc falls back to
 * openat. Extended attributes are refused: an access ACL rewrites the mode bits and
 * security.capability would give a file capabilities. */
static int deny_privileged_modes(scmp_filter_ctx ctx, codecell_error *err)
{
        for (size_t i = 0; i < sizeof(mode_args) / sizeof(mode_args[0]); i++) {
                const struct mode_arg *m = &mode_args[i];
                int nr = seccomp_syscall_resolve_name(m->name);
                if (nr == __NR_SCMP_ERROR)
                        nr = m->nr;
                if (nr < 0)
                        continue; /* not a call on this architecture */
                const scmp_datum_t bits[] = {S_ISUID, S_ISGID, S_IWOTH};
                size_t n_bits = m->chmod ? 3 : 2;
                for (size_t b = 0; b < n_bits; b++) {
                        int r = seccomp_rule_add(
                                ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                SCMP_CMP(m->arg, SCMP_CMP_MASKED_EQ, bits[b], bits[b]));
                        if (r < 0)
                                return err_sys(err, -r, "seccomp rule %s", m->name);
                }
        }
        /* umask is left alone (reading it means setting it, in Ruby): a file the guest creates
         * gets the guest's umask, 022 unless it changes it; what exists, the mount point
         * included, cannot be opened to the world by chmod. */
        int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
        return r < 0 ? err_sys(err, -r, "seccomp rule openat2") : 0;
}

static int deny_clone_flags(scmp_filter_ctx ctx, codecell_error *err)
{
        for (size_t i = 0; i < sizeof(refused_clone_flags) / sizeof(refused_clone_flags[0]); i++) {
                unsigned long flag = refused_clone_flags[i];
                int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                         SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
                if (r < 0)
                        return err_sys(err, -r, "seccomp rule clone flags");
        }
        return 0;
}

/* A call refused when one argument matches, as SCMP_CMP takes it: NE compares the argument
 * with a; MASKED_EQ is (argument & a) == b. An int argument (an fcntl or ioctl command) is
 * compared on its low 32 bits only, the ones the kernel reads. */
struct arg_rule {
        int nr;
        int errno_value;
        unsigned int arg;
        enum scmp_compare op;
        scmp_datum_t a, b;
        const char *why;
};

#define INT_BITS 0xffffffffu

static const struct arg_rule arg_rules[] = {
        /* Sockets: AF_UNIX only. */
        {SCMP_SYS(socket), EAFNOSUPPORT, 0, SCMP_CMP_NE, AF_UNIX, 0, "socket"},
        {SCMP_SYS(socketpair), EAFNOSUPPORT, 0, SCMP_CMP_NE, AF_UNIX, 0, "socketpair"},
        /* dnotify (F_NOTIFY) signals a watcher when files of a directory are opened, the same
         * window on the host as inotify; a lease (F_SETLEASE) signals when another process
         * opens a file the guest holds. */
        {SCMP_SYS(fcntl), EPERM, 1, SCMP_CMP_MASKED_EQ, INT_BITS, F_NOTIFY, "fcntl F_NOTIFY"},
        {SCMP_SYS(fcntl), EPERM, 1, SCMP_CMP_MASKED_EQ, INT_BITS, F_SETLEASE, "fcntl F_SETLEASE"},
        /* Inode flags (chattr): nodump, sync, noatime … would stay on a read-write folder's
         * files and on the folder itself after the run (file_setattr is in denied_numbers). */
        {SCMP_SYS(ioctl), EPERM, 1, SCMP_CMP_MASKED_EQ, INT_BITS, 0x40086602, "FS_IOC_SETFLAGS"},
        {SCMP_SYS(ioctl), EPERM, 1, SCMP_CMP_MASKED_EQ, INT_BITS, 0x40046602, "FS_IOC32_SETFLAGS"},
        {SCMP_SYS(ioctl), EPERM, 1, SCMP_CMP_MASKED_EQ, INT_BITS, 0x401c5820, "FS_IOC_FSSETXATTR"},
        /* TIOCSTI pushes input into a terminal; the guest has none, but refuse it anyway. */
        {SCMP_SYS(ioctl), EPERM, 1, SCMP_CMP_MASKED_EQ, INT_BITS, TIOCSTI, "TIOCSTI"},
};

/* Without subprocesses, only threads may be created: fork and vfork are refused, and clone
 * when it lacks CLONE_THREAD. */
static int deny_processes(scmp_filter_ctx ctx, codecell_error *err)
{
        int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(fork), 0);
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(vfork), 0);
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
        return r < 0 ? err_sys(err, -r, "seccomp rule fork") : 0;
}

enum net_rules {
        NET_UNIX, /* every cell: AF_UNIX only, no connect */
        NET_ALL,  /* the jail's network option: every family, connect */
        NET_TCP,  /* a network cell: TCP over IPv4 or IPv6 only, connect (allow_tcp_only) */
};

/* Refuses every socket() but AF_INET or AF_INET6, SOCK_STREAM (with SOCK_NONBLOCK and
 * SOCK_CLOEXEC), protocol 0 or IPPROTO_TCP. libseccomp takes one comparison per argument and
 * rule, so each refusal is a rule of its own (any one that matches refuses): the family and
 * the protocol compared whole (a value with high bits set is refused, never let through), the
 * type by its low four bits (the kernel refuses unknown flags above them itself). */
static int allow_tcp_only(scmp_filter_ctx ctx, codecell_error *err)
{
        const int nr = SCMP_SYS(socket);
        int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1,
                                 SCMP_A0(SCMP_CMP_LT, AF_INET));
        r = r
                    ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1,
                                        SCMP_A0(SCMP_CMP_GT, AF_INET6));
        for (int family = AF_INET + 1; r == 0 && family < AF_INET6; family++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1,
                                     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)family));
        for (int type = 0; r == 0 && type <= SOCK_TYPE_MASK; type++)
                if (type != SOCK_STREAM)
                        r = seccomp_rule_add(
                                ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                SCMP_A1(SCMP_CMP_MASKED_EQ, SOCK_TYPE_MASK, (scmp_datum_t)type));
        r = r
                    ?: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                        SCMP_A2(SCMP_CMP_GT, IPPROTO_TCP));
        for (int proto = 1; r == 0 && proto < IPPROTO_TCP; proto++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                     SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)proto));
        return r < 0 ? err_sys(err, -r, "seccomp rule socket (TCP only)") : 0;
}

static int add_rules(scmp_filter_ctx ctx, enum net_rules net, codecell_error *err)
{
        const bool network = net != NET_UNIX;
        int r;
        for (size_t i = 0; i < sizeof(denied_calls) / sizeof(denied_calls[0]); i++) {
                /* By name, for the architecture this was built for: arm64 has none of x86's
                 * legacy calls (umount, iopl, uselib, inotify_init ...), for which libseccomp
                 * answers a negative pseudo number; their replacements are in the table. */
                int nr = seccomp_syscall_resolve_name(denied_calls[i]);
                if (nr < 0)
                        continue; /* not a call on this architecture */
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
                if (r < 0)
                        return err_sys(err, -r, "seccomp rule %s", denied_calls[i]);
        }
        for (size_t i = 0; i < sizeof(denied_numbers) / sizeof(denied_numbers[0]); i++) {
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), denied_numbers[i], 0);
                if (r < 0)
                        return err_sys(err, -r, "seccomp rule %d", denied_numbers[i]);
        }
        if ((r = deny_clone_flags(ctx, err)) < 0 || (r = deny_privileged_modes(ctx, err)) < 0)
                return r;
        /* A process that changed uid is not dumpable, and so no other process of the uid it
         * runs as may ptrace it or enter its namespaces through /proc: a root caller's jail
         * (nobody, holding a copy of root's memory) and a root engine's guests. Made dumpable
         * again, any process of nobody's on the host could. Becoming undumpable stays allowed
         * (the sandbox's init does it once the interpreter is in). */
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prctl), 2,
                             SCMP_A0(SCMP_CMP_EQ, PR_SET_DUMPABLE), SCMP_A1(SCMP_CMP_NE, 0));
        if (r < 0)
                return err_sys(err, -r, "seccomp rule prctl PR_SET_DUMPABLE");
        /* clone3 passes its flags in memory, which BPF cannot read: ENOSYS makes glibc fall
         * back to clone, which the rule above can check. */
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        if (r < 0)
                return err_sys(err, -r, "seccomp rule clone3");
        for (size_t i = 0; i < sizeof(arg_rules) / sizeof(arg_rules[0]); i++) {
                const struct arg_rule *rule = &arg_rules[i];
                if ((network && rule->nr == SCMP_SYS(socket)) ||
                    (net == NET_ALL && rule->nr == SCMP_SYS(socketpair)))
                        continue;
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(rule->errno_value), rule->nr, 1,
                                     SCMP_CMP(rule->arg, rule->op, rule->a, rule->b));
                if (r < 0)
                        return err_sys(err, -r, "seccomp rule %s", rule->why);
        }
        /* A UNIX socket file is reached by connect, or by a datagram's address, not by open:
         * neither a read-only mount nor Landlock (to ABI 7) stops that, and a mounted folder
         * may hold a host service's socket (an agent's, a database's). So the guest connects
         * nowhere, and has no datagram sockets (SOCK_RAW is a datagram socket in AF_UNIX);
         * socketpair and sockets it binds and accepts on itself still work. */
        if (net == NET_ALL)
                return 0;
        /* A network cell makes no AF_UNIX socket at all (allow_tcp_only): its connect reaches
         * TCP addresses only, in a namespace where the proxy's listener is the one to reach. */
        if (net == NET_TCP && (r = allow_tcp_only(ctx, err)) < 0)
                return r;
        r = net == NET_TCP ? 0 : seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(connect), 0);
        for (int type = SOCK_DGRAM; r >= 0 && type <= SOCK_RAW; type++) {
                if (net == NET_UNIX)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 2,
                                             SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
                                             SCMP_A1(SCMP_CMP_MASKED_EQ, SOCK_TYPE_MASK, type));
                if (r >= 0)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 2,
                                             SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
                                             SCMP_A1(SCMP_CMP_MASKED_EQ, SOCK_TYPE_MASK, type));
        }
        if (r < 0)
                return err_sys(err, -r, "seccomp rule connect");
        return 0;
}

static int compile(struct seccomp_program *ret, bool subprocesses, enum net_rules net,
                   codecell_error *err);

int seccomp_program_compile(struct seccomp_program *ret, bool subprocesses, codecell_error *err)
{
        return compile(ret, subprocesses, NET_UNIX, err);
}

int seccomp_program_compile_network(struct seccomp_program *ret, bool subprocesses, bool network,
                                    codecell_error *err)
{
        return compile(ret, subprocesses, network ? NET_ALL : NET_UNIX, err);
}

int seccomp_program_compile_tcp(struct seccomp_program *ret, bool subprocesses, codecell_error *err)
{
        return compile(ret, subprocesses, NET_TCP, err);
}

static int compile(struct seccomp_program *ret, bool subprocesses, enum net_rules net,
                   codecell_error *err)
{
        memset(ret, 0, sizeof(*ret));
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return err_set(err, CODECELL_ERR_SYSTEM, ENOMEM, "seccomp: cannot create a filter");
        int r;
        _cleanup_close_ int fd = -1;
        /* A call made through another ABI of the kernel would dodge every rule above, its
         * numbers being other calls': on x86_64 i386's (int 0x80) and x32's, on arm64 AArch32's
         * (a 32-bit program the guest execs). Those kill the process. The filter holds the
         * native architecture only; libseccomp checks the audit arch and, on x86_64, the x32
         * bit (test_seccomp_filter runs the program on both). */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0) {
                err_sys(err, -r, "seccomp: bad-arch action");
                goto out;
        }
        r = add_rules(ctx, net, err);
        if (r == 0 && !subprocesses)
                r = deny_processes(ctx, err);
        if (r < 0)
                goto out;

        /* Export the BPF once into memory; each sandbox loads these bytes. */
        fd = memfd_create("codecell-seccomp", MFD_CLOEXEC);
        if (fd < 0) {
                r = err_sys(err, errno, "seccomp: memfd_create");
                goto out;
        }
        r = seccomp_export_bpf(ctx, fd);
        if (r < 0) {
                err_sys(err, -r, "seccomp: export");
                goto out;
        }
        off_t size = lseek(fd, 0, SEEK_END);
        if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0) {
                r = err_set(err, CODECELL_ERR_SYSTEM, EINVAL, "seccomp: bad program size");
                goto out;
        }
        struct sock_filter *filter = malloc((size_t)size);
        if (!filter) {
                r = err_sys(err, ENOMEM, "seccomp");
                goto out;
        }
        if (pread(fd, filter, (size_t)size, 0) != size) {
                free(filter);
                r = err_sys(err, errno ? errno : EIO, "seccomp: read back");
                goto out;
        }
        ret->prog.filter = filter;
        ret->prog.len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
        r = 0;
out:
        seccomp_release(ctx);
        return r;
}

void seccomp_program_free(struct seccomp_program *p)
{
        if (!p)
                return;
        free(p->prog.filter);
        p->prog.filter = NULL;
}
