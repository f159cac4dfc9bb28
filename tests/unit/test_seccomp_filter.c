/* The seccomp filter as the kernel runs it, on the architecture this test was built for: each
 * compiled program (seccomp_filter.c) is run by a classic-BPF interpreter over the
 * seccomp_data the kernel would pass for a call, and the action it returns is checked. The
 * call numbers come from this architecture's own <sys/syscall.h>, not from libseccomp: on
 * arm64 (make test-arm64, under qemu-user, which cannot load a filter but runs this one) that
 * shows every refusal still refuses with arm64's numbers, where x86's legacy calls (open,
 * chmod, fork ...) do not exist, and that a call through the other ABI of the kernel (i386 and
 * x32 on x86_64, AArch32 on arm64) kills the process. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <netinet/in.h>
#include <seccomp.h>

#include "check.h"
#include "seccomp_filter.h"

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define OTHER_ABI AUDIT_ARCH_I386
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#define OTHER_ABI AUDIT_ARCH_ARM
#else
#error "test_seccomp_filter: add this architecture's audit arch and its compat ABI"
#endif

#define ERRNO(e) (SECCOMP_RET_ERRNO | (e))

/* The instructions libseccomp emits (and a few more); anything else fails the test, so that a
 * program this interpreter cannot read is never taken for one that allows. */
static uint32_t run_bpf(const struct sock_fprog *prog, const struct seccomp_data *data)
{
        const uint8_t *bytes = (const uint8_t *)data;
        uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
        for (unsigned pc = 0; pc < prog->len; pc++) {
                const struct sock_filter *in = &prog->filter[pc];
                uint32_t k = in->k;
                switch (in->code) {
                case BPF_LD | BPF_W | BPF_ABS:
                        if (k > sizeof(*data) - 4 || k % 4)
                                return 0xdeadbeef;
                        memcpy(&a, bytes + k, 4);
                        break;
                case BPF_LD | BPF_IMM:
                        a = k;
                        break;
                case BPF_LD | BPF_MEM:
                        a = mem[k % BPF_MEMWORDS];
                        break;
                case BPF_LDX | BPF_IMM:
                        x = k;
                        break;
                case BPF_LDX | BPF_MEM:
                        x = mem[k % BPF_MEMWORDS];
                        break;
                case BPF_ST:
                        mem[k % BPF_MEMWORDS] = a;
                        break;
                case BPF_STX:
                        mem[k % BPF_MEMWORDS] = x;
                        break;
                case BPF_ALU | BPF_AND | BPF_K:
                        a &= k;
                        break;
                case BPF_ALU | BPF_OR | BPF_K:
                        a |= k;
                        break;
                case BPF_MISC | BPF_TAX:
                        x = a;
                        break;
                case BPF_MISC | BPF_TXA:
                        a = x;
                        break;
                case BPF_JMP | BPF_JA:
                        pc += k;
                        break;
                case BPF_JMP | BPF_JEQ | BPF_K:
                        pc += a == k ? in->jt : in->jf;
                        break;
                case BPF_JMP | BPF_JGT | BPF_K:
                        pc += a > k ? in->jt : in->jf;
                        break;
                case BPF_JMP | BPF_JGE | BPF_K:
                        pc += a >= k ? in->jt : in->jf;
                        break;
                case BPF_JMP | BPF_JSET | BPF_K:
                        pc += (a & k) ? in->jt : in->jf;
                        break;
                case BPF_JMP | BPF_JEQ | BPF_X:
                        pc += a == x ? in->jt : in->jf;
                        break;
                case BPF_RET | BPF_K:
                        return k;
                case BPF_RET | BPF_A:
                        return a;
                default:
                        fprintf(stderr, "unknown BPF instruction 0x%x at %u\n", in->code, pc);
                        return 0xdeadbeef;
                }
        }
        return 0xdeadbeef; /* fell off the end: the kernel refuses such a program */
}

static uint32_t verdict_arch(const struct sock_fprog *prog, uint32_t arch, int nr,
                             const uint64_t args[6])
{
        struct seccomp_data data = {.nr = nr, .arch = arch, .instruction_pointer = 0x400000};
        for (int i = 0; i < 6; i++)
                data.args[i] = args[i];
        return run_bpf(prog, &data);
}

#define VERDICT(prog, nr, ...)                                                                     \
        verdict_arch((prog), NATIVE_ARCH, (nr), (const uint64_t[6]){__VA_ARGS__})

#define CHECK_VERDICT(prog, want, nr, ...)                                                         \
        do {                                                                                       \
                uint32_t _got = VERDICT(prog, nr, __VA_ARGS__);                                    \
                if (_got != (uint32_t)(want)) {                                                    \
                        fprintf(stderr, "%s:%d: %s (%d): got 0x%x, want 0x%x\n", __FILE__,         \
                                __LINE__, #nr, (int)(nr), _got, (uint32_t)(want));                 \
                        check_failures++;                                                          \
                }                                                                                  \
        } while (0)

/* Refused outright in every cell, by this architecture's number. */
static const struct {
        const char *name;
        int nr;
} refused[] = {
#define R(name)                                                                                    \
        {                                                                                          \
#name, __NR_##name                                                                 \
        }
        R(unshare),
        R(setns),
        R(mount),
        R(umount2),
        R(pivot_root),
        R(chroot),
        R(open_tree),
        R(move_mount),
        R(mount_setattr),
        R(fsopen),
        R(fsconfig),
        R(fsmount),
        R(fspick),
        R(ptrace),
        R(process_vm_readv),
        R(process_vm_writev),
        R(kcmp),
        R(pidfd_getfd),
        R(bpf),
        R(perf_event_open),
        R(keyctl),
        R(add_key),
        R(request_key),
        R(io_uring_setup),
        R(io_uring_enter),
        R(io_uring_register),
        R(userfaultfd),
        R(init_module),
        R(finit_module),
        R(delete_module),
        R(kexec_load),
        R(kexec_file_load),
        R(reboot),
        R(swapon),
        R(swapoff),
        R(acct),
        R(quotactl),
        R(quotactl_fd),
        R(lookup_dcookie),
        R(syslog),
        R(vhangup),
        R(nfsservctl),
        R(fanotify_init),
        R(inotify_init1),
        R(inotify_add_watch),
        R(memfd_create),
        R(setxattr),
        R(lsetxattr),
        R(fsetxattr),
        R(removexattr),
        R(lremovexattr),
        R(fremovexattr),
        R(open_by_handle_at),
        R(name_to_handle_at),
        R(personality),
        R(mbind),
        R(migrate_pages),
        R(move_pages),
        R(set_mempolicy),
        R(settimeofday),
        R(clock_settime),
        R(clock_adjtime),
        R(adjtimex),
        R(sethostname),
        R(setdomainname),
/* x86's own, or only where the architecture has them */
#ifdef __NR_umount
        R(umount),
#endif
#ifdef __NR_iopl
        R(iopl),
#endif
#ifdef __NR_ioperm
        R(ioperm),
#endif
#ifdef __NR_uselib
        R(uselib),
#endif
#ifdef __NR_inotify_init
        R(inotify_init),
#endif
#ifdef __NR_memfd_secret
        R(memfd_secret),
#endif
#undef R
        /* newer than the headers: the same number everywhere from 424 on */
        {"statmount", 457},
        {"listmount", 458},
        {"setxattrat", 463},
        {"removexattrat", 466},
        {"process_madvise", 440},
        {"set_mempolicy_home_node", 450},
        {"open_tree_attr", 467},
        {"file_setattr", 469},
};

/* What every cell refuses or allows, whatever its network and subprocesses. */
static void check_common(const struct sock_fprog *p)
{
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
                uint32_t got = VERDICT(p, refused[i].nr, 0);
                if (got != ERRNO(EPERM)) {
                        fprintf(stderr, "%s (%d): got 0x%x, want EPERM\n", refused[i].name,
                                refused[i].nr, got);
                        check_failures++;
                }
        }
        /* Everyday calls pass. */
        CHECK_VERDICT(p, SECCOMP_RET_ALLOW, __NR_read, 0, 0, 0);
        CHECK_VERDICT(p, SECCOMP_RET_ALLOW, __NR_write, 1, 0, 0);
        CHECK_VERDICT(p, SECCOMP_RET_ALLOW, __NR_getpid, 0);
        CHECK_VERDICT(p, SECCOMP_RET_ALLOW, __NR_openat, AT_FDCWD, 0, O_RDONLY, 0);
        CHECK_VERDICT(p, SECCOMP_RET_ALLOW, __NR_openat, AT_FDCWD, 0, O_CREAT | O_WRONLY, 0644);
        CHECK_VERDICT(p, SECCOMP_RET_ALLOW, __NR_fchmodat, AT_FDCWD, 0, 0755, 0);
        CHECK_VERDICT(p, SECCOMP_RET_ALLOW, __NR_fcntl, 0, F_GETFL, 0);
        CHECK_VERDICT(p, SECCOMP_RET_ALLOW, __NR_prctl, PR_SET_DUMPABLE, 0);
        CHECK_VERDICT(p, SECCOMP_RET_ALLOW, __NR_clone,
                      CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD, 0);
        CHECK_VERDICT(p, SECCOMP_RET_ALLOW, __NR_socketpair, AF_UNIX, SOCK_STREAM, 0);
        CHECK_VERDICT(p, SECCOMP_RET_ALLOW, 1000, 0); /* no such call: the kernel says ENOSYS */

        /* setuid and setgid bits, and o+w on what exists. */
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_openat, AT_FDCWD, 0, O_CREAT | O_WRONLY, 04755);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_openat, AT_FDCWD, 0, O_CREAT | O_WRONLY, 02755);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_fchmodat, AT_FDCWD, 0, 04755, 0);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_fchmodat, AT_FDCWD, 0, 0666, 0);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_fchmod, 3, 02755);
        CHECK_VERDICT(p, ERRNO(EPERM), 452 /* fchmodat2 */, AT_FDCWD, 0, 04755, 0);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_mknodat, AT_FDCWD, 0, S_IFREG | 02755, 0);
#ifdef __NR_chmod
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_chmod, 0, 04755);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_open, 0, O_CREAT | O_WRONLY, 04755);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_creat, 0, 02755);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_mknod, 0, S_IFREG | 04755, 0);
#endif
        CHECK_VERDICT(p, ERRNO(ENOSYS), __NR_openat2, AT_FDCWD, 0, 0, 24);
        CHECK_VERDICT(p, ERRNO(ENOSYS), __NR_clone3, 0, 88);

        /* Namespaces by clone, CLONE_PARENT, becoming dumpable again. */
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_clone, CLONE_NEWUSER | SIGCHLD, 0);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_clone, CLONE_THREAD | CLONE_VM | CLONE_NEWNS, 0);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_clone, CLONE_THREAD | CLONE_VM | CLONE_PARENT, 0);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_prctl, PR_SET_DUMPABLE, 1);

        /* Watching and changing files through fcntl and ioctl; TIOCSTI. */
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_fcntl, 3, F_NOTIFY, 0);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_fcntl, 3, F_SETLEASE, 0);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_ioctl, 3, 0x40086602 /* FS_IOC_SETFLAGS */, 0);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_ioctl, 3, TIOCSTI, 0);
        /* an int command's high half is not the kernel's: ignored, as the kernel does */
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_ioctl, 3, 0xffffffff00000000ull | TIOCSTI, 0);

        /* A call through the kernel's other ABI kills the process whatever its number. */
        const uint64_t none[6] = {0};
        CHECK(verdict_arch(p, OTHER_ABI, __NR_read, none) == SECCOMP_RET_KILL_PROCESS);
        CHECK(verdict_arch(p, OTHER_ABI, 26 /* ptrace on i386 and arm */, none) ==
              SECCOMP_RET_KILL_PROCESS);
#if defined(__x86_64__)
        /* x32 shares the x86_64 audit arch and sets bit 30 of the number. */
        CHECK(VERDICT(p, 0x40000000 | __NR_read, 0) == SECCOMP_RET_KILL_PROCESS);
        CHECK(VERDICT(p, 0x40000000 | __NR_unshare, 0) == SECCOMP_RET_KILL_PROCESS);
        CHECK(verdict_arch(p, AUDIT_ARCH_AARCH64, __NR_read, none) == SECCOMP_RET_KILL_PROCESS);
#else
        CHECK(verdict_arch(p, AUDIT_ARCH_X86_64, __NR_read, none) == SECCOMP_RET_KILL_PROCESS);
#endif
}

/* A process made with clone without CLONE_THREAD, as fork is everywhere (arm64 has no fork
 * call: its C library's fork is this clone). */
static void check_processes(const struct sock_fprog *p, bool allowed)
{
        uint32_t want = allowed ? SECCOMP_RET_ALLOW : ERRNO(EPERM);
        CHECK_VERDICT(p, want, __NR_clone, SIGCHLD, 0);
        CHECK_VERDICT(p, want, __NR_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0);
#ifdef __NR_fork
        CHECK_VERDICT(p, want, __NR_fork, 0);
        CHECK_VERDICT(p, want, __NR_vfork, 0);
#endif
        CHECK_VERDICT(p, SECCOMP_RET_ALLOW, __NR_execve, 0, 0, 0);
}

static void check_unix_only(const struct sock_fprog *p)
{
        CHECK_VERDICT(p, ERRNO(EAFNOSUPPORT), __NR_socket, AF_INET, SOCK_STREAM, 0);
        CHECK_VERDICT(p, ERRNO(EAFNOSUPPORT), __NR_socket, AF_NETLINK, SOCK_RAW, 0);
        CHECK_VERDICT(p, SECCOMP_RET_ALLOW, __NR_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_socket, AF_UNIX, SOCK_DGRAM, 0);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_socketpair, AF_UNIX, SOCK_DGRAM, 0);
        CHECK_VERDICT(p, ERRNO(EPERM), __NR_connect, 3, 0, 110);
}

int main(void)
{
        /* qemu-user answers none of the kernel's seccomp questions, so libseccomp there finds
         * API level 1 and refuses the kill-process action every kernel since 4.14 has. The
         * program it emits does not depend on the level: tell it the kernel's. */
        if (seccomp_api_get() < 3) {
                printf("libseccomp finds API level %u (qemu-user?): compiling for level 3\n",
                       seccomp_api_get());
                if (seccomp_api_set(3) < 0)
                        return 1;
        }
        codecell_error err = {0};
        struct seccomp_program plain, forks, net, tcp;
        if (seccomp_program_compile(&plain, false, &err) < 0 ||
            seccomp_program_compile(&forks, true, &err) < 0 ||
            seccomp_program_compile_network(&net, true, true, &err) < 0 ||
            seccomp_program_compile_tcp(&tcp, false, &err) < 0) {
                fprintf(stderr, "compile: %s\n", err.message);
                return 1;
        }
        const struct sock_fprog *all[] = {&plain.prog, &forks.prog, &net.prog, &tcp.prog};
        for (size_t i = 0; i < 4; i++)
                check_common(all[i]);

        check_processes(&plain.prog, false);
        check_processes(&forks.prog, true);
        check_processes(&net.prog, true);
        check_processes(&tcp.prog, false);

        check_unix_only(&plain.prog);
        check_unix_only(&forks.prog);

        /* The jail's network option: every family, connect. */
        CHECK_VERDICT(&net.prog, SECCOMP_RET_ALLOW, __NR_socket, AF_INET, SOCK_DGRAM, 0);
        CHECK_VERDICT(&net.prog, SECCOMP_RET_ALLOW, __NR_connect, 3, 0, 16);

        /* A network cell: TCP over IPv4 or IPv6 only, connect allowed, no AF_UNIX socket. */
        CHECK_VERDICT(&tcp.prog, SECCOMP_RET_ALLOW, __NR_socket, AF_INET, SOCK_STREAM, 0);
        CHECK_VERDICT(&tcp.prog, SECCOMP_RET_ALLOW, __NR_socket, AF_INET6,
                      SOCK_STREAM | SOCK_NONBLOCK, IPPROTO_TCP);
        CHECK_VERDICT(&tcp.prog, SECCOMP_RET_ALLOW, __NR_connect, 3, 0, 16);
        CHECK_VERDICT(&tcp.prog, ERRNO(EPERM), __NR_socket, AF_INET, SOCK_DGRAM, 0);
        CHECK_VERDICT(&tcp.prog, ERRNO(EPERM), __NR_socket, AF_INET, SOCK_STREAM, IPPROTO_UDP);
        CHECK_VERDICT(&tcp.prog, ERRNO(EAFNOSUPPORT), __NR_socket, AF_UNIX, SOCK_STREAM, 0);
        CHECK_VERDICT(&tcp.prog, ERRNO(EAFNOSUPPORT), __NR_socket, AF_PACKET, SOCK_STREAM, 0);
        CHECK_VERDICT(&tcp.prog, ERRNO(EAFNOSUPPORT), __NR_socket, 0x100000000ull | AF_INET,
                      SOCK_STREAM, 0);

        seccomp_program_free(&plain);
        seccomp_program_free(&forks);
        seccomp_program_free(&net);
        seccomp_program_free(&tcp);
        printf("seccomp filter checked on audit arch 0x%x, %zu refused calls\n", NATIVE_ARCH,
               sizeof(refused) / sizeof(refused[0]));
        CHECK_DONE();
}
