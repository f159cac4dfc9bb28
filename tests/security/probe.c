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
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sys/un.h>

static long outcome(long r)
{
        return r < 0 ? errno : 0;
}

/* arm64 (and every architecture of the generic table) has none of x86's legacy calls: each is
 * the call the C library makes for it there, so the probe asks the kernel the same question.
 * iopl and ioperm exist on x86 only: elsewhere the kernel answers ENOSYS, as it would. */
#ifndef SYS_fork
#define SYS_fork SYS_clone, SIGCHLD, 0, 0, 0, 0
#endif
#ifndef SYS_chmod
#define SYS_chmod SYS_fchmodat, AT_FDCWD
#endif
#ifndef SYS_mknod
#define SYS_mknod SYS_mknodat, AT_FDCWD
#endif
#ifndef SYS_iopl
#define SYS_iopl -1
#endif
#ifndef SYS_ioperm
#define SYS_ioperm -1
#endif

/* For a call that returns an fd: closes it, and 0 when it was made, else the errno. */
static long fd_outcome(long fd)
{
        if (fd < 0)
                return errno;
        close((int)fd);
        return 0;
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
        return fd_outcome(syscall(SYS_userfaultfd, O_CLOEXEC));
}

static long try_io_uring(void)
{
        char params[120] = {0};
        return fd_outcome(syscall(SYS_io_uring_setup, 1, params));
}

static long try_perf_event_open(void)
{
        /* struct perf_event_attr, software clock: type 1, size 128, config 0. */
        uint32_t attr[32] = {1, 128};
        return fd_outcome(syscall(SYS_perf_event_open, attr, 0, -1, -1, 0));
}

static long try_bpf(void)
{
        char attr[64] = {0};
        return fd_outcome(syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, attr, sizeof(attr)));
}

static long try_fsopen(void)
{
        return fd_outcome(syscall(SYS_fsopen, "tmpfs", 0));
}

static long try_open_tree(void)
{
        return fd_outcome(syscall(SYS_open_tree, AF_UNSPEC, "/tmp", 1 /* OPEN_TREE_CLONE */));
}

static long try_pidfd_getfd(void)
{
        long pidfd = syscall(SYS_pidfd_open, 1, 0);
        if (pidfd < 0)
                return errno;
        long e = fd_outcome(syscall(SYS_pidfd_getfd, pidfd, 0, 0));
        close((int)pidfd);
        return e;
}

static long try_kill_init(void)
{
        /* init, PID 1 (the exec'd interpreter's parent; a forked one's parent, its zygote, has
         * no pid here: getppid() is 0). Outside the pid namespace nothing has a pid here. */
        return outcome(kill(1, 0));
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

static int exit_at_once(void *arg)
{
        (void)arg;
        syscall(SYS_exit, 0);
        return 0;
}

/* clone(2) with flags, through libc's wrapper (the clone system call, which the filter reads;
 * never clone3) on a stack of its own, so even a CLONE_VM child cannot disturb ours. The child
 * exits at once, so a cell that allows subprocesses runs the probe to its end in one process.
 * 0 when a child was made, else the errno. */
static long try_clone_flags(unsigned long flags)
{
        static char stack[64 * 1024] __attribute__((aligned(16)));
        int pid = clone(exit_at_once, stack + sizeof(stack), (int)flags | SIGCHLD, NULL);
        if (pid < 0)
                return errno;
        waitpid(pid, NULL, 0);
        return 0;
}

static long try_fork(void)
{
        /* The fork system call itself (the filter has a rule of its own for it). */
        long pid = syscall(SYS_fork);
        if (pid == 0)
                syscall(SYS_exit, 0);
        if (pid < 0)
                return errno;
        waitpid((pid_t)pid, NULL, 0);
        return 0;
}

static long try_vfork_like_clone(void)
{
        return try_clone_flags(CLONE_VM | CLONE_VFORK);
}

static long try_clone_newuser(void)
{
        return try_clone_flags(CLONE_NEWUSER);
}
static long try_clone_newuser_newnet_newns(void)
{
        return try_clone_flags(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS);
}
static long try_clone_newpid(void)
{
        return try_clone_flags(CLONE_NEWPID);
}
static long try_clone_newnet(void)
{
        return try_clone_flags(CLONE_NEWNET);
}
static long try_clone_newipc_newuts(void)
{
        return try_clone_flags(CLONE_NEWIPC | CLONE_NEWUTS);
}
static long try_clone_newcgroup(void)
{
        return try_clone_flags(CLONE_NEWCGROUP);
}

/* /bin/sh, in a child where subprocesses are allowed (the answer is the child's exit code: 0,
 * or the errno of execve), in place of this process where they are not (an exec that worked
 * would end the probe, and the test with it). */
static long try_execve_shell(void)
{
        char *argv[] = {"sh", "-c", "exit 0", NULL}, *envp[] = {NULL};
        long pid = syscall(SYS_fork);
        if (pid < 0)
                return outcome(syscall(SYS_execve, "/bin/sh", argv, envp));
        if (pid == 0) {
                syscall(SYS_execve, "/bin/sh", argv, envp);
                syscall(SYS_exit, errno);
        }
        int status = 0;
        waitpid((pid_t)pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A scratch file in /tmp with mode 0644, made fresh. */
static const char *scratch(const char *name)
{
        static char path[64];
        snprintf(path, sizeof(path), "/tmp/probe-%s", name);
        unlink(path);
        int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (fd >= 0)
                close(fd);
        return path;
}

static long try_chmod_setuid(void)
{
        return outcome(syscall(SYS_chmod, scratch("chmod"), 04755));
}
static long try_fchmod_setgid(void)
{
        int fd = open(scratch("fchmod"), O_RDONLY | O_CLOEXEC);
        long r = outcome(syscall(SYS_fchmod, fd, 02755));
        close(fd);
        return r;
}
static long try_fchmodat_setuid(void)
{
        return outcome(syscall(SYS_fchmodat, AT_FDCWD, scratch("fchmodat"), 04755));
}
static long try_fchmodat2_setuid(void)
{
        return outcome(syscall(452 /* fchmodat2 */, AT_FDCWD, scratch("fchmodat2"), 04755, 0));
}
static long try_chmod_world_writable(void)
{
        return outcome(syscall(SYS_chmod, scratch("o+w"), 0666));
}
static long try_open_creat_setuid(void)
{
        unlink("/tmp/probe-creat");
        return fd_outcome(syscall(SYS_openat, AT_FDCWD, "/tmp/probe-creat",
                                  O_CREAT | O_WRONLY | O_CLOEXEC, 06755));
}
static long try_mknod_setgid_file(void)
{
        unlink("/tmp/probe-mknod");
        return outcome(syscall(SYS_mknodat, AT_FDCWD, "/tmp/probe-mknod", S_IFREG | 02755, 0));
}
static long try_openat2(void)
{
        /* struct open_how: flags, mode, resolve. */
        uint64_t how[3] = {O_CREAT | O_WRONLY, 04755, 0};
        return fd_outcome(
                syscall(437 /* openat2 */, AT_FDCWD, "/tmp/probe-openat2", how, sizeof(how)));
}
static long try_setxattr_capability(void)
{
        /* A v2 file capability granting CAP_SETUID (bit 7) permitted and effective. */
        uint32_t cap[5] = {0x02000001, 1u << 7, 0, 0, 0};
        return outcome(syscall(SYS_setxattr, scratch("xattr"), "security.capability", cap,
                               sizeof(cap), 0));
}
static long try_memfd_create(void)
{
        return fd_outcome(syscall(SYS_memfd_create, "probe", 0));
}
static long try_memfd_secret(void)
{
        return fd_outcome(syscall(447 /* memfd_secret */, 0));
}
static long try_mmap_exec_tmp(void)
{
        /* A file the guest wrote, mapped executable (what the dynamic loader does). */
        const char *path = scratch("mmap");
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return errno;
        long r = ftruncate(fd, 4096);
        void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
        r = p == MAP_FAILED ? errno : 0;
        if (p != MAP_FAILED)
                munmap(p, 4096);
        close(fd);
        return r;
}
static long try_inotify_init(void)
{
        return fd_outcome(syscall(SYS_inotify_init1, IN_CLOEXEC));
}
static long try_dnotify_usr_bin(void)
{
        int fd = open("/usr/bin", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        long r = outcome(fcntl(fd, F_NOTIFY, DN_ACCESS | DN_MULTISHOT));
        close(fd);
        return r;
}
static long try_dnotify_high_bits(void)
{
        /* fcntl's command is an int: bits above 31 are dropped by the kernel, not by a filter
         * that compared all 64. */
        int fd = open("/usr/bin", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        long r = outcome(syscall(SYS_fcntl, fd, (1UL << 32) | F_NOTIFY, DN_ACCESS | DN_MULTISHOT));
        close(fd);
        return r;
}
static long try_lease(void)
{
        int fd = open(scratch("lease"), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        long r = outcome(fcntl(fd, F_SETLEASE, F_RDLCK));
        close(fd);
        return r;
}
static long try_dumpable(void)
{
        return outcome(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
}
static long try_socket_unix_dgram(void)
{
        return try_socket(AF_UNIX, SOCK_DGRAM, 0);
}
static long try_socket_unix_raw(void)
{
        return try_socket(AF_UNIX, SOCK_RAW, 0); /* AF_UNIX makes it a datagram socket */
}
static long try_socketpair_dgram(void)
{
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
                return errno;
        close(sv[0]);
        close(sv[1]);
        return 0;
}
static long try_connect_unix_path(void)
{
        /* A socket the guest itself bound in /tmp: connect is refused whatever the target. */
        int server = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un addr = {.sun_family = AF_UNIX, .sun_path = "/tmp/probe-sock"};
        unlink(addr.sun_path);
        long r = bind(server, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(server, 1) < 0
                         ? -1
                         : connect(client, (struct sockaddr *)&addr, sizeof(addr));
        long e = r < 0 ? errno : 0;
        close(server);
        close(client);
        return e;
}
static long try_inode_flags(void)
{
        int fd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        long flags = 0x40 /* FS_NODUMP_FL */;
        long r = outcome(ioctl(fd, 0x40086602 /* FS_IOC_SETFLAGS */, &flags));
        close(fd);
        return r;
}
static long try_file_setattr(void)
{
        char attr[32] = {0};
        return outcome(syscall(469 /* file_setattr */, AT_FDCWD, "/tmp", attr, sizeof(attr), 0));
}
static long try_proc_self_mountinfo(void)
{
        int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
                close(fd);
        return fd < 0 ? errno : 0;
}
/* struct mnt_id_req of statmount and listmount (6.8). */
struct mount_request {
        uint32_t size, spare;
        uint64_t mnt_id, param;
};
#define ROOT_MOUNT 0xffffffffffffffffULL /* LSMT_ROOT */

static long try_statmount(void)
{
        struct mount_request req = {sizeof(req), 0, ROOT_MOUNT, 0x8 /* STATMOUNT_MNT_ROOT */};
        char buf[512];
        return outcome(syscall(457 /* statmount */, &req, buf, sizeof(buf), 0));
}
static long try_listmount(void)
{
        struct mount_request req = {sizeof(req), 0, ROOT_MOUNT, 0};
        uint64_t ids[8];
        return outcome(syscall(458 /* listmount */, &req, ids, 8, 0));
}

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
#ifdef SYS_chown
RAW(chown_root, SYS_chown, "/tmp", 0, 0)
#else
RAW(chown_root, SYS_fchownat, AT_FDCWD, "/tmp", 0, 0, 0)
#endif
RAW(clone3, SYS_clone3, NULL, 0)
RAW(iopl, SYS_iopl, 3)
RAW(ioperm, SYS_ioperm, 0x80, 1, 1)
RAW(syslog, SYS_syslog, 3 /* SYSLOG_ACTION_READ_ALL */, NULL, 0)
RAW(quotactl, SYS_quotactl, 0, NULL, 0, NULL)
RAW(open_by_handle_at, SYS_open_by_handle_at, AT_FDCWD, NULL, 0)
RAW(name_to_handle_at, SYS_name_to_handle_at, AT_FDCWD, "/tmp", NULL, NULL, 0)
RAW(lookup_dcookie, SYS_lookup_dcookie, 0, NULL, 0)
RAW(fanotify_init, SYS_fanotify_init, 0, 0)
RAW(vhangup, SYS_vhangup)
/* open_tree_attr (6.15), as open_tree; process_madvise and set_mempolicy_home_node, as mbind
 * and set_mempolicy. */
RAW(open_tree_attr, 467, AT_FDCWD, "/tmp", 0, NULL, 0)
RAW(process_madvise, 440, -1, NULL, 0, 0, 0)
RAW(set_mempolicy_home_node, 450, 0, 4096, 0, 0)
RAW(process_vm_readv_init, SYS_process_vm_readv, 1, NULL, 0, NULL, 0, 0)
RAW(kcmp, SYS_kcmp, 1, 1, 0, 0, 0)
RAW(move_pages_init, SYS_move_pages, 1, 0, NULL, NULL, NULL, 0)

static const struct probe probes[] = {
        {"socket_unix", try_socket_unix},
        {"socket_unix_dgram", try_socket_unix_dgram},
        {"socket_unix_raw", try_socket_unix_raw},
        {"socketpair_dgram", try_socketpair_dgram},
        {"connect_unix_path", try_connect_unix_path},
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
        {"kill_init", try_kill_init},
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
        {"clone_newuser", try_clone_newuser},
        {"clone_newuser_newnet_newns", try_clone_newuser_newnet_newns},
        {"clone_newpid", try_clone_newpid},
        {"clone_newnet", try_clone_newnet},
        {"clone_newipc_newuts", try_clone_newipc_newuts},
        {"clone_newcgroup", try_clone_newcgroup},
        {"chmod_setuid", try_chmod_setuid},
        {"fchmod_setgid", try_fchmod_setgid},
        {"fchmodat_setuid", try_fchmodat_setuid},
        {"fchmodat2_setuid", try_fchmodat2_setuid},
        {"chmod_world_writable", try_chmod_world_writable},
        {"open_creat_setuid_setgid", try_open_creat_setuid},
        {"mknod_setgid_file", try_mknod_setgid_file},
        {"openat2", try_openat2},
        {"setxattr_capability", try_setxattr_capability},
        {"memfd_create", try_memfd_create},
        {"memfd_secret", try_memfd_secret},
        {"mmap_exec_tmp", try_mmap_exec_tmp},
        {"inode_flags_ioctl", try_inode_flags},
        {"file_setattr", try_file_setattr},
        {"inotify_init1", try_inotify_init},
        {"dnotify_usr_bin", try_dnotify_usr_bin},
        {"dnotify_high_bits", try_dnotify_high_bits},
        {"fcntl_setlease", try_lease},
        {"prctl_set_dumpable", try_dumpable},
        {"proc_self_mountinfo", try_proc_self_mountinfo},
        {"statmount", try_statmount},
        {"listmount", try_listmount},
        {"open_tree_attr", try_open_tree_attr},
        {"process_madvise", try_process_madvise},
        {"set_mempolicy_home_node", try_set_mempolicy_home_node},
};

/* The probe names, space-separated. */
const char *probe_names(void)
{
        static char names[4096];
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
