/* The cause of a missing layer and its fix, one line each (check_causes.h). The lines must fit
 * codecell_layer_report's detail (255 bytes): the fix comes first among what gets cut. */
#include "check_causes.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

/* The profile that allows what codecell needs, for a container's runtime (packaging/). */
#define CONTAINER_PROFILE "packaging/kubernetes/seccomp-codecell.json"

static int read_line(const char *path, char *buf, size_t size)
{
        FILE *f = fopen(path, "re");
        if (!f)
                return -1;
        bool ok = fgets(buf, (int)size, f) != NULL;
        fclose(f);
        if (!ok)
                return -1;
        buf[strcspn(buf, "\n")] = '\0';
        return 0;
}

/* A sysctl's value as a number, or -1 where this kernel has no such sysctl. */
static long sysctl_value(const char *path)
{
        char buf[32];
        return read_line(path, buf, sizeof(buf)) == 0 ? strtol(buf, NULL, 10) : -1;
}

/* 2 when a seccomp filter is applied to this process (a container's profile, systemd's
 * SystemCallFilter=, a sandbox this runs in): every refusal may be the filter's. */
static int seccomp_mode(void)
{
        FILE *f = fopen("/proc/self/status", "re");
        if (!f)
                return -1;
        char line[256];
        int mode = -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "Seccomp:", 8) == 0)
                        mode = atoi(line + 8);
        fclose(f);
        return mode;
}

/* Linux's release is at least major.minor. */
static bool kernel_at_least(int major, int minor)
{
        struct utsname u;
        int ma = 0, mi = 0;
        if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
                return true; /* unknown: do not blame the version */
        return ma > major || (ma == major && mi >= minor);
}

/* This root is not pid 1's: a chroot (a container's processes share their init's root). Only
 * root may look at pid 1's root; others never see themselves as chrooted. */
static bool chrooted(void)
{
        struct stat here, init;
        return stat("/", &here) == 0 && stat("/proc/1/root/", &init) == 0 &&
               (here.st_dev != init.st_dev || here.st_ino != init.st_ino);
}

static const char *kernel_release(void)
{
        static struct utsname u;
        return uname(&u) == 0 ? u.release : "?";
}

/* The filter's line, shared by every layer a seccomp filter on codecell can refuse. */
static bool blame_filter(const char *call, char *out, size_t size)
{
        if (seccomp_mode() != 2)
                return false;
        snprintf(out, size,
                 "%s refused by a seccomp filter on codecell itself (Seccomp: 2 in "
                 "/proc/self/status: a container's profile, SystemCallFilter=). Fix: a profile "
                 "that allows it (" CONTAINER_PROFILE ")",
                 call);
        return true;
}

void cause_user_namespace(int e, char *out, size_t size)
{
        long max = sysctl_value("/proc/sys/user/max_user_namespaces");
        long clone_switch = sysctl_value("/proc/sys/kernel/unprivileged_userns_clone");
        long apparmor = sysctl_value("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
        if (access("/proc/self/ns/user", F_OK) < 0)
                snprintf(out, size,
                         "this kernel has no user namespaces. Fix: a kernel built with "
                         "CONFIG_USER_NS=y");
        else if (e == ENOSPC && max == 0)
                snprintf(out, size,
                         "user.max_user_namespaces is 0 here. Fix: sysctl -w "
                         "user.max_user_namespaces=15000 (and in /etc/sysctl.d/ to keep it)");
        else if (e == ENOSPC)
                snprintf(out, size,
                         "the limit of user namespaces is reached (user.max_user_namespaces = "
                         "%ld, or 32 levels of nesting). Fix: raise user.max_user_namespaces",
                         max);
        else if (e == EPERM && clone_switch == 0 && geteuid() != 0)
                snprintf(out, size,
                         "kernel.unprivileged_userns_clone is 0. Fix: sysctl -w "
                         "kernel.unprivileged_userns_clone=1, or run codecell as root");
        else if (e == EPERM && apparmor == 1)
                snprintf(out, size,
                         "AppArmor restricts unprivileged user namespaces "
                         "(kernel.apparmor_restrict_unprivileged_userns = 1). Fix: an AppArmor "
                         "profile for codecell with \"userns,\", or set that sysctl to 0");
        else if (e == EPERM && blame_filter("unshare(CLONE_NEWUSER)", out, size))
                return;
        else if (e == EPERM && chrooted())
                snprintf(out, size,
                         "refused (EPERM): codecell runs in a chroot, where the kernel makes no "
                         "user namespace. Fix: pivot_root or switch_root instead of chroot");
        else if (e == EINVAL)
                snprintf(out, size,
                         "refused (EINVAL): the caller has several threads (an emulator such as "
                         "qemu-user) or is chrooted. Fix: run codecell natively, outside chroot");
        else
                snprintf(out, size,
                         "refused (%s). Fix: look at kernel.unprivileged_userns_clone, "
                         "user.max_user_namespaces and the LSMs' policy (AppArmor, SELinux)",
                         strerror(e));
}

static const struct {
        const char *kind, *config;
} ns_configs[] = {
        {"mnt", "CONFIG_NAMESPACES"}, {"pid", "CONFIG_PID_NS"}, {"net", "CONFIG_NET_NS"},
        {"ipc", "CONFIG_IPC_NS"},     {"uts", "CONFIG_UTS_NS"}, {"cgroup", "CONFIG_CGROUPS"},
};

void cause_namespace(const char *kind, int e, char *out, size_t size)
{
        char path[96];
        snprintf(path, sizeof(path), "/proc/sys/user/max_%s_namespaces", kind);
        long max = sysctl_value(path);
        const char *config = "CONFIG_NAMESPACES";
        for (size_t i = 0; i < sizeof(ns_configs) / sizeof(ns_configs[0]); i++)
                if (strcmp(ns_configs[i].kind, kind) == 0)
                        config = ns_configs[i].config;
        char call[64];
        snprintf(call, sizeof(call), "unshare of a %s namespace", kind);
        if (e == ENOSPC)
                snprintf(out, size,
                         "user.max_%s_namespaces is %ld here, or reached. Fix: sysctl -w "
                         "user.max_%s_namespaces=15000",
                         kind, max, kind);
        else if (e == EINVAL)
                snprintf(out, size, "this kernel has no %s namespaces. Fix: a kernel with %s=y",
                         kind, config);
        else if (e == EPERM && blame_filter(call, out, size))
                return;
        else if (e == EPERM &&
                 sysctl_value("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1)
                /* Ubuntu 24.04: the user namespace is made, without capabilities in it. */
                snprintf(out, size,
                         "%s refused: AppArmor takes every capability in an unprivileged user "
                         "namespace (kernel.apparmor_restrict_unprivileged_userns = 1). Fix: an "
                         "AppArmor profile for codecell with \"userns,\" (docs/operations.md)",
                         call);
        else
                snprintf(out, size, "%s refused (%s). Fix: look at the LSMs' policy", call,
                         strerror(e));
}

void cause_nested_user_namespace(int e, char *out, size_t size)
{
        long max = sysctl_value("/proc/sys/user/max_user_namespaces");
        if (e == ENOSPC)
                snprintf(out, size,
                         "a user namespace inside one is refused: user.max_user_namespaces is "
                         "%ld here (2 a sandbox). Fix: sysctl -w user.max_user_namespaces=15000",
                         max);
        else if (e == EPERM && blame_filter("a nested user namespace", out, size))
                return;
        else
                snprintf(out, size,
                         "a user namespace inside one is refused (%s). Fix: look at the LSMs' "
                         "policy; cells with start \"exec\" still run",
                         strerror(e));
}

void cause_landlock(int e, char *out, size_t size)
{
        char lsm[256] = "";
        bool listed = read_line("/sys/kernel/security/lsm", lsm, sizeof(lsm)) == 0;
        if (e == EOPNOTSUPP)
                snprintf(out, size,
                         "Landlock is built in but not enabled at boot (LSMs: %s). Fix: add "
                         "landlock to lsm= on the kernel's command line",
                         listed ? lsm : "unknown");
        else if (e == ENOSYS && !kernel_at_least(5, 13))
                snprintf(out, size,
                         "Linux %s is older than 5.13. Fix: Linux 5.13 or later (6.7 "
                         "for network rules)",
                         kernel_release());
        else if ((e == ENOSYS || e == EPERM) && blame_filter("landlock_create_ruleset", out, size))
                return;
        else
                snprintf(out, size,
                         "Linux %s has no Landlock (%s). Fix: a kernel with "
                         "CONFIG_SECURITY_LANDLOCK=y and landlock in lsm=",
                         kernel_release(), strerror(e));
}

void cause_landlock_network(int abi, char *out, size_t size)
{
        snprintf(out, size,
                 "Landlock ABI %d (Linux %s) has no network rules: a network cell's guest may also "
                 "use other ports of its own loopback; its on_unsupported applies. Fix: Linux 6.7 "
                 "or later (ABI 4)",
                 abi, kernel_release());
}

void cause_seccomp(const char *why, char *out, size_t size)
{
        if (!kernel_at_least(4, 14))
                snprintf(out, size,
                         "%s: Linux %s is older than 4.14 (no kill-process action). Fix: Linux "
                         "4.14 or later with CONFIG_SECCOMP_FILTER=y",
                         why, kernel_release());
        else
                snprintf(out, size,
                         "%s. Fix: a kernel with CONFIG_SECCOMP_FILTER=y, run natively (qemu-user "
                         "emulates no seccomp)",
                         why);
}

void cause_fresh_proc(int e, char *out, size_t size)
{
        if (e == EPERM)
                snprintf(out, size,
                         "a fresh /proc is refused: parts of this /proc are masked (a "
                         "container's default). Fix: --security-opt systempaths=unconfined "
                         "(Docker), --security-opt unmask=ALL (Podman), procMount: Unmasked "
                         "(Kubernetes)");
        else
                snprintf(out, size,
                         "mount of a fresh /proc failed: %s. Fix: a kernel with "
                         "CONFIG_PROC_FS=y and unprivileged user namespaces",
                         strerror(e));
}

void cause_cgroup(const char *why, char *out, size_t size)
{
        bool v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
        const char *fix;
        if (v2 && geteuid() != 0)
                fix = "systemd-run --user --scope -p Delegate=yes codecell …, or Delegate=yes in "
                      "its unit";
        else if (v2)
                fix = "Delegate=yes in the unit; in a container, --cgroupns=private and a "
                      "writable /sys/fs/cgroup";
        else if (geteuid() != 0)
                fix = "run as root (cgroup v1 has no delegation), or a cgroup v2 host";
        else
                fix = "mount the memory and pids controllers (v1), or boot a unified v2 tree";
        /* The cause is cut, not the fix. */
        int room = (int)size - (int)strlen(fix) - 12;
        bool cut = (int)strlen(why) > room;
        snprintf(out, size, "%.*s%s. Fix: %s", room > 0 ? room : 0, why, cut ? "…" : "", fix);
}

void cause_idmapped_mount(const char *why, char *out, size_t size)
{
        if (strncmp(why, "userns: ", 8) == 0)
                snprintf(out, size,
                         "no user namespace mapping 0 and 65534 to take the idmap from (%s). Fix: "
                         "as for user_namespace; as root on the host, not in a user namespace",
                         why + 8);
        else if (!kernel_at_least(5, 12))
                snprintf(out, size,
                         "refused on /tmp (%s): Linux %s has no idmapped mounts. Fix: Linux 5.12 "
                         "or later (6.3 for tmpfs)",
                         why, kernel_release());
        else if (!kernel_at_least(6, 3))
                snprintf(out, size,
                         "refused on /tmp (%s): Linux %s idmaps no tmpfs. Fix: Linux 6.3, or "
                         "folders on ext4, xfs or btrfs",
                         why, kernel_release());
        else
                snprintf(out, size,
                         "refused on /tmp (%s). Fix: a filesystem that supports idmapped mounts "
                         "(ext4, xfs, btrfs, tmpfs)",
                         why);
}
