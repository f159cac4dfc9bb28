/* The syscall probe: loaded into a guest interpreter (ctypes, from a read-only mount), it calls
 * each system call of the kernel's privileged surface raw, with harmless arguments, and reports
 * what the kernel answered: 0 for success, else the errno. test_probe.py asserts every answer,
 * the way bubblewrap's tests/try-syscall.c is used. */
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/reboot.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <netinet/in.h>

static long outcome(long r)
{
        return r < 0 ? errno : 0;
}

/* A socket: 0 when created (then closed), else the errno. */
static long try_socket(int domain, int type, int protocol)
{
        int fd = socket(domain, type, protocol);
        if (fd < 0)
                return errno;
        close(fd);
        return 0;
}

static long try_clock_settime(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return outcome(syscall(SYS_clock_settime, CLOCK_REALTIME, &ts));
}

static long try_settimeofday(void)
{
        struct timeval tv;
        gettimeofday(&tv, NULL);
        return outcome(syscall(SYS_settimeofday, &tv, NULL));
}

static long try_raise_nofile(void)
{
        struct rlimit r;
        getrlimit(RLIMIT_NOFILE, &r);
        r.rlim_max += 1;
        r.rlim_cur = r.rlim_max;
        return outcome(setrlimit(RLIMIT_NOFILE, &r));
}

static long try_personality(void)
{
        /* Asking for the current persona always works; switching to another is the probe. */
        long r = syscall(SYS_personality, PER_LINUX32);
        if (r >= 0)
                syscall(SYS_personality, PER_LINUX);
        return r < 0 ? errno : 0;
}

static long try_tiocsti(void)
{
        char c = 'x';
        long r = ioctl(0, TIOCSTI, &c);
        return r < 0 ? errno : 0;
}

static long try_ptrace_init(void)
{
        long r = ptrace(PTRACE_ATTACH, 1, NULL, NULL);
        if (r == 0)
                ptrace(PTRACE_DETACH, 1, NULL, NULL);
        return r < 0 ? errno : 0;
}

static long try_proc_mem_of_init(void)
{
        int fd = open("/proc/1/mem", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        char b;
        long r = pread(fd, &b, 1, 0x400000);
        long e = r < 0 ? errno : 0;
        close(fd);
        return e;
}

static long try_userfaultfd(void)
{
        long fd = syscall(SYS_userfaultfd, O_CLOEXEC);
        if (fd >= 0)
                close((int)fd);
        return fd < 0 ? errno : 0;
}

static long try_io_uring(void)
{
        char params[120] = {0};
        long fd = syscall(SYS_io_uring_setup, 1, params);
        if (fd >= 0)
                close((int)fd);
        return fd < 0 ? errno : 0;
}

static long try_perf_event_open(void)
{
        /* struct perf_event_attr, software clock: type 1, size 128, config 0. */
        uint32_t attr[32] = {1, 128};
        long fd = syscall(SYS_perf_event_open, attr, 0, -1, -1, 0);
        if (fd >= 0)
                close((int)fd);
        return fd < 0 ? errno : 0;
}

static long try_bpf(void)
{
        char attr[64] = {0};
        long fd = syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, attr, sizeof(attr));
        if (fd >= 0)
                close((int)fd);
        return fd < 0 ? errno : 0;
}

static long try_fsopen(void)
{
        long fd = syscall(SYS_fsopen, "tmpfs", 0);
        if (fd >= 0)
                close((int)fd);
        return fd < 0 ? errno : 0;
}

static long try_open_tree(void)
{
        long fd = syscall(SYS_open_tree, AF_UNSPEC, "/tmp", 1 /* OPEN_TREE_CLONE */);
        if (fd >= 0)
                close((int)fd);
        return fd < 0 ? errno : 0;
}

static long try_pidfd_getfd(void)
{
        long pidfd = syscall(SYS_pidfd_open, 1, 0);
        if (pidfd < 0)
                return errno;
        long fd = syscall(SYS_pidfd_getfd, pidfd, 0, 0);
        long e = fd < 0 ? errno : 0;
        if (fd >= 0)
                close((int)fd);
        close((int)pidfd);
        return e;
}

static long try_kill_parent_of_init(void)
{
        /* Outside the pid namespace nothing has a pid here; the engine is pid 0 to us. */
        return outcome(kill(getppid(), 0));
}

static long try_socket_tcp(void)
{
        return try_socket(AF_INET, SOCK_STREAM, 0);
}
static long try_socket_udp6(void)
{
        return try_socket(AF_INET6, SOCK_DGRAM, 0);
}
static long try_socket_raw(void)
{
        return try_socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
}
static long try_socket_packet(void)
{
        return try_socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
}
static long try_socket_netlink(void)
{
        return try_socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
}
static long try_socket_unix(void)
{
        return try_socket(AF_UNIX, SOCK_STREAM, 0);
}

struct probe {
        const char *name;
        long (*run)(void);
};

#define RAW(name, ...)                                                                             \
        static long try_##name(void)                                                               \
        {                                                                                          \
                return outcome(syscall(__VA_ARGS__));                                              \
        }
RAW(mount, SYS_mount, "none", "/tmp", "tmpfs", 0, NULL)
RAW(umount2, SYS_umount2, "/tmp", 0)
RAW(unshare_user, SYS_unshare, CLONE_NEWUSER)
RAW(unshare_mount, SYS_unshare, CLONE_NEWNS)
RAW(unshare_net, SYS_unshare, CLONE_NEWNET)
RAW(setns, SYS_setns, 0, 0)
RAW(pivot_root, SYS_pivot_root, "/tmp", "/tmp")
RAW(chroot, SYS_chroot, "/tmp")
RAW(keyctl, SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1)
RAW(add_key, SYS_add_key, "user", "codecell", "x", 1, KEY_SPEC_SESSION_KEYRING)
RAW(init_module, SYS_init_module, NULL, 0, "")
RAW(finit_module, SYS_finit_module, 0, "", 0)
RAW(delete_module, SYS_delete_module, "loop", 0)
RAW(kexec_load, SYS_kexec_load, 0, 0, NULL, 0)
RAW(kexec_file_load, SYS_kexec_file_load, -1, -1, 0, "", 0)
RAW(reboot, SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, LINUX_REBOOT_CMD_CAD_OFF, NULL)
RAW(swapon, SYS_swapon, "/tmp/swap", 0)
RAW(acct, SYS_acct, NULL)
RAW(sethostname, SYS_sethostname, "x", 1)
RAW(setuid_root, SYS_setuid, 0)
RAW(setgid_root, SYS_setgid, 0)
RAW(mknod_device, SYS_mknod, "/tmp/dev", 020600, 0x0801)
RAW(chown_root, SYS_chown, "/tmp", 0, 0)
RAW(fork, SYS_fork)
RAW(vfork_like_clone, SYS_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0, 0, 0)
RAW(clone3, SYS_clone3, NULL, 0)
RAW(execve_shell, SYS_execve, "/bin/sh", (char *[]){"sh", "-c", "true", NULL}, (char *[]){NULL})
RAW(iopl, SYS_iopl, 3)
RAW(ioperm, SYS_ioperm, 0x80, 1, 1)
RAW(syslog, SYS_syslog, 3 /* SYSLOG_ACTION_READ_ALL */, NULL, 0)
RAW(quotactl, SYS_quotactl, 0, NULL, 0, NULL)
RAW(open_by_handle_at, SYS_open_by_handle_at, AT_FDCWD, NULL, 0)
RAW(name_to_handle_at, SYS_name_to_handle_at, AT_FDCWD, "/tmp", NULL, NULL, 0)
RAW(lookup_dcookie, SYS_lookup_dcookie, 0, NULL, 0)
RAW(fanotify_init, SYS_fanotify_init, 0, 0)
RAW(vhangup, SYS_vhangup)
RAW(process_vm_readv_init, SYS_process_vm_readv, 1, NULL, 0, NULL, 0, 0)
RAW(kcmp, SYS_kcmp, 1, 1, 0, 0, 0)
RAW(move_pages_init, SYS_move_pages, 1, 0, NULL, NULL, NULL, 0)

static const struct probe probes[] = {
        {"socket_unix", try_socket_unix},
        {"socket_tcp", try_socket_tcp},
        {"socket_udp6", try_socket_udp6},
        {"socket_raw", try_socket_raw},
        {"socket_packet", try_socket_packet},
        {"socket_netlink", try_socket_netlink},
        {"mount", try_mount},
        {"umount2", try_umount2},
        {"unshare_user", try_unshare_user},
        {"unshare_mount", try_unshare_mount},
        {"unshare_net", try_unshare_net},
        {"setns", try_setns},
        {"pivot_root", try_pivot_root},
        {"chroot", try_chroot},
        {"fsopen", try_fsopen},
        {"open_tree", try_open_tree},
        {"keyctl", try_keyctl},
        {"add_key", try_add_key},
        {"bpf", try_bpf},
        {"perf_event_open", try_perf_event_open},
        {"io_uring_setup", try_io_uring},
        {"userfaultfd", try_userfaultfd},
        {"init_module", try_init_module},
        {"finit_module", try_finit_module},
        {"delete_module", try_delete_module},
        {"kexec_load", try_kexec_load},
        {"kexec_file_load", try_kexec_file_load},
        {"reboot", try_reboot},
        {"swapon", try_swapon},
        {"acct", try_acct},
        {"clock_settime", try_clock_settime},
        {"settimeofday", try_settimeofday},
        {"sethostname", try_sethostname},
        {"personality_linux32", try_personality},
        {"ioctl_tiocsti", try_tiocsti},
        {"ptrace_attach_init", try_ptrace_init},
        {"proc_1_mem", try_proc_mem_of_init},
        {"process_vm_readv_init", try_process_vm_readv_init},
        {"pidfd_getfd_init", try_pidfd_getfd},
        {"kcmp", try_kcmp},
        {"move_pages_init", try_move_pages_init},
        {"kill_engine", try_kill_parent_of_init},
        {"setuid_root", try_setuid_root},
        {"setgid_root", try_setgid_root},
        {"raise_rlimit_nofile", try_raise_nofile},
        {"mknod_device", try_mknod_device},
        {"chown_root", try_chown_root},
        {"fork", try_fork},
        {"vfork_like_clone", try_vfork_like_clone},
        {"clone3", try_clone3},
        {"execve_shell", try_execve_shell},
        {"iopl", try_iopl},
        {"ioperm", try_ioperm},
        {"syslog", try_syslog},
        {"quotactl", try_quotactl},
        {"open_by_handle_at", try_open_by_handle_at},
        {"name_to_handle_at", try_name_to_handle_at},
        {"lookup_dcookie", try_lookup_dcookie},
        {"fanotify_init", try_fanotify_init},
        {"vhangup", try_vhangup},
};

/* The probe names, space-separated. */
const char *probe_names(void)
{
        static char names[2048];
        if (!names[0])
                for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
                        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                                 i ? " " : "", probes[i].name);
        return names;
}

/* 0 when the call succeeded, else its errno; -1 for an unknown name. */
long probe_run(const char *name)
{
        for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
                if (strcmp(probes[i].name, name) == 0) {
                        errno = 0;
                        return probes[i].run();
                }
        return -1;
}
