#include "seccomp_program.h"

#include <errno.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/ioctl.h>
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

static int add_rules(scmp_filter_ctx ctx, codecell_error *err)
{
        int r;
        for (size_t i = 0; i < sizeof(denied_calls) / sizeof(denied_calls[0]); i++) {
                int nr = seccomp_syscall_resolve_name(denied_calls[i]);
                if (nr == __NR_SCMP_ERROR)
                        continue; /* not a call on this architecture */
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
                if (r < 0)
                        return err_sys(err, -r, "seccomp rule %s", denied_calls[i]);
        }
        /* clone3 passes its flags in memory, which BPF cannot read: ENOSYS makes glibc fall
         * back to clone, which the rule above can check. */
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        if (r < 0)
                return err_sys(err, -r, "seccomp rule clone3");
        /* Sockets: AF_UNIX only. */
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                             SCMP_A0(SCMP_CMP_NE, AF_UNIX));
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socketpair), 1,
                                     SCMP_A0(SCMP_CMP_NE, AF_UNIX));
        if (r < 0)
                return err_sys(err, -r, "seccomp rule socket");
        /* TIOCSTI pushes input into a terminal; the guest has none, but refuse it anyway. The
         * request is an int: compare the low 32 bits only. */
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                             SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
        if (r < 0)
                return err_sys(err, -r, "seccomp rule ioctl");
        return 0;
}

int seccomp_program_compile(struct seccomp_program *ret, bool subprocesses, codecell_error *err)
{
        memset(ret, 0, sizeof(*ret));
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return err_set(err, CODECELL_ERR_SYSTEM, ENOMEM, "seccomp: cannot create a filter");
        int r;
        _cleanup_close_ int fd = -1;
        /* A call made through another ABI (i386 int 0x80, x32) would dodge every rule above:
         * those kill the process. libseccomp checks the arch and, on x86_64, the x32 bit. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0) {
                err_sys(err, -r, "seccomp: bad-arch action");
                goto out;
        }
        r = add_rules(ctx, err);
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

int seccomp_program_load(const struct seccomp_program *p)
{
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p->prog) < 0)
                return -errno;
        return 0;
}
