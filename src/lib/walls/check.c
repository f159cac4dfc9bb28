/* codecell_host_check: which isolation layers this host really gives, found by trying each. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "check_causes.h"
#include "cleanup.h"
#include "config.h"
#include "egress_tls.h"
#include "idmap.h"
#include "interpreter.h"
#include "codecell.h"
#include "landlock.h"
#include "runtime.h"
#include "seccomp_filter.h"
#include "util.h"

/* The filter is built for the architecture of this build only (seccomp_filter.c). */
#if defined(__x86_64__)
#define SECCOMP_ARCH_NAME "x86_64; i386 and x32 calls kill"
#elif defined(__aarch64__)
#define SECCOMP_ARCH_NAME "aarch64; AArch32 calls kill"
#else
#define SECCOMP_ARCH_NAME "this architecture"
#endif

static const struct {
        const char *name, *kind; /* kind: as in /proc/sys/user/max_<kind>_namespaces */
        int flag;
} namespaces[] = {
        {"mount_namespace", "mnt", CLONE_NEWNS},    {"pid_namespace", "pid", CLONE_NEWPID},
        {"network_namespace", "net", CLONE_NEWNET}, {"ipc_namespace", "ipc", CLONE_NEWIPC},
        {"uts_namespace", "uts", CLONE_NEWUTS},     {"cgroup_namespace", "cgroup", CLONE_NEWCGROUP},
};
#define N_NS (sizeof(namespaces) / sizeof(namespaces[0]))

/* Root only: whether /tmp (where a jail's fs_allow folders usually are) can be cloned and the
 * clone idmapped, as a cell's read-write mounts and a root caller's jail fs_allow are. */
static bool probe_idmapped_mount(char *why, size_t why_size)
{
        codecell_error err = {0};
        _cleanup_close_ int userns = idmap_userns(0, 0, 65534, 65534, &err);
        if (userns < 0) {
                /* Not the mount's fault: the user namespace the idmap is taken from. */
                snprintf(why, why_size, "userns: %s", err.message);
                return false;
        }
        int r = idmap_probe("/tmp", userns);
        if (r < 0) {
                snprintf(why, why_size, "%s", strerror(-r));
                return false;
        }
        return true;
}

/* In a child: a new user namespace, then each other namespace inside it. Fills ret_errno[0]
 * with the user namespace's errno (0: made) and ret_errno[1 + i] with namespaces[i]'s; returns
 * whether the child answered. */
static bool probe_namespaces(int ret_errno[1 + N_NS])
{
        int fds[2];
        for (size_t i = 0; i < 1 + N_NS; i++)
                ret_errno[i] = EPERM;
        if (pipe2(fds, O_CLOEXEC) < 0)
                return false;
        pid_t pid = fork();
        if (pid == 0) {
                int errs[1 + N_NS] = {0};
                if (unshare(CLONE_NEWUSER) < 0)
                        errs[0] = errno;
                for (size_t i = 0; i < N_NS && errs[0] == 0; i++)
                        if (unshare(namespaces[i].flag) < 0)
                                errs[1 + i] = errno;
                _exit(write(fds[1], errs, sizeof(errs)) == (ssize_t)sizeof(errs) ? 0 : 1);
        }
        close(fds[1]);
        _cleanup_close_ int from_child = fds[0];
        if (pid < 0)
                return false;
        int errs[1 + N_NS], st;
        bool answered = read(from_child, errs, sizeof(errs)) == (ssize_t)sizeof(errs);
        if (wait_child(pid, &st) < 0 || !answered)
                return false;
        memcpy(ret_errno, errs, sizeof(errs));
        return true;
}

/* The errno a probe's child ended with (0: what it tried worked): fork's own when pid is -1,
 * ECHILD when it did not exit. */
static int child_errno(pid_t pid)
{
        if (pid < 0)
                return errno;
        int st;
        if (wait_child(pid, &st) < 0)
                return ECHILD;
        return WIFEXITED(st) ? WEXITSTATUS(st) : ECHILD;
}

/* The errno of a fresh /proc mounted in new user, mount and pid namespaces (0: mounted), as
 * every sandbox's init mounts one. The kernel refuses it (EPERM) where the /proc it would
 * shadow is not wholly visible: a container engine's default masks parts of it. */
static int probe_fresh_proc(void)
{
        pid_t pid = fork();
        if (pid == 0) {
                if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) < 0)
                        _exit(errno & 0xff);
                pid_t init = fork(); /* PID 1 of the new pid namespace, whose /proc it is */
                if (init == 0) {
                        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                                _exit(errno & 0xff);
                        _exit(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                    NULL) == 0
                                      ? 0
                                      : errno & 0xff);
                }
                _exit(child_errno(init));
        }
        return child_errno(pid);
}

/* The errno of a user namespace made inside a new one (0: made), as a forked sandbox's is
 * inside its zygote's. The outer one maps the caller's ids first, as the zygote's does: without a
 * mapping of its ids, no process may make a user namespace. */
static int probe_nested_user_namespace(void)
{
        uid_t uid = geteuid();
        gid_t gid = getegid();
        pid_t pid = fork();
        if (pid == 0) {
                char map[64];
                if (unshare(CLONE_NEWUSER) < 0 || write_file("/proc/self/setgroups", "deny") < 0)
                        _exit(EPERM);
                snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
                if (write_file("/proc/self/uid_map", map) < 0)
                        _exit(EPERM);
                snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
                if (write_file("/proc/self/gid_map", map) < 0)
                        _exit(EPERM);
                _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno & 0xff);
        }
        return child_errno(pid);
}

/* The fork server and the forked sandboxes' init, embedded at build time (size 0 where they
 * could not be built). */
extern const size_t codecell_zygote_so_size;
extern const size_t codecell_init_bin_size;

static void report(codecell_layer_report *r, const char *name, bool ok, bool required,
                   const char *fmt, const char *arg)
{
        r->name = name;
        r->available = ok;
        r->required = required;
        snprintf(r->detail, sizeof(r->detail), fmt, arg);
}

/* A language's system interpreter: found, and which version it is (it runs the probe a cell
 * runs, so a broken one shows here). */
static void report_interpreter(codecell_layer_report *r, const struct runtime *rt)
{
        codecell_config *config = codecell_config_new(rt->name, NULL);
        struct interpreter_info info = {0};
        codecell_error err = {0};
        bool found = access(rt->interpreter, X_OK) == 0;
        bool ok = found && config &&
                  interpreter_probe(config, rt->interpreter, geteuid() == 0, &info, &err) == 0;
        char text[sizeof(r->detail)];
        if (ok)
                snprintf(text, sizeof(text), "%s, version %s", rt->interpreter, info.version);
        else if (found)
                snprintf(text, sizeof(text), "%s", err.message);
        else
                snprintf(text, sizeof(text), "%s not found: install %s to run this language",
                         rt->interpreter, rt->package_hint);
        report(r, rt->name, ok, false, "%s", text);
        interpreter_info_free(&info);
        codecell_config_free(config);
}

int codecell_host_check(codecell_layer_report *out, size_t max)
{
        /* The layers above, then one report per language. */
        codecell_layer_report all[32];
        size_t n = 0;
        /* A missing layer's detail is its cause on this host and the fix (check_causes.h). */
        char why[sizeof(all[0].detail)];
        int ns_errno[1 + N_NS];
        if (!probe_namespaces(ns_errno))
                ns_errno[0] = ECHILD;
        bool userns = ns_errno[0] == 0;
        if (!userns)
                cause_user_namespace(ns_errno[0], why, sizeof(why));
        report(&all[n++], "user_namespace", userns, true, "%s", userns ? "available" : why);
        for (size_t i = 0; i < N_NS; i++) {
                bool ok = userns && ns_errno[1 + i] == 0;
                if (!userns)
                        snprintf(why, sizeof(why),
                                 "no user namespace to make it in. Fix: as for user_namespace");
                else if (!ok)
                        cause_namespace(namespaces[i].kind, ns_errno[1 + i], why, sizeof(why));
                report(&all[n++], namespaces[i].name, ok, true, "%s", ok ? "available" : why);
        }

        /* Every sandbox mounts a /proc of its own: without it no run can start. */
        int proc_errno = userns ? probe_fresh_proc() : EPERM;
        if (!userns)
                snprintf(why, sizeof(why),
                         "no user namespace to make it in. Fix: as for user_namespace");
        else if (proc_errno)
                cause_fresh_proc(proc_errno, why, sizeof(why));
        report(&all[n++], "fresh_proc", proc_errno == 0, true, "%s",
               proc_errno == 0 ? "a sandbox mounts a /proc of its own" : why);

        errno = 0;
        int abi = landlock_abi();
        int landlock_errno = errno ? errno : ENOSYS;
        char text[64];
        snprintf(text, sizeof(text), "ABI %d", abi);
        if (abi <= 0)
                cause_landlock(landlock_errno, why, sizeof(why));
        report(&all[n++], "landlock", abi > 0, false, "%s", abi > 0 ? text : why);

        /* Landlock is also what keeps the host paths of mounted folders out of the guest's
         * sight (/proc/<pid>/mountinfo): say so, for an operator deciding on_unsupported. */
        report(&all[n++], "proc_paths_hidden", abi > 0, false,
               abi > 0 ? "/proc/<pid>/mountinfo and the like are unreadable in the sandbox "
                         "(Landlock)%s"
                       : "without Landlock the guest can read /proc/self/mountinfo, which shows "
                         "the host path of every mounted folder. Fix: as for landlock%s",
               "");

        /* A network cell's third wall (proxy_listener.h): under ABI 4 its namespace (only the
         * loopback) and seccomp (TCP sockets only) keep it in, but it may bind and connect to
         * other ports of its own loopback; the cell's on_unsupported decides. */
        snprintf(text, sizeof(text), "%d", abi);
        if (abi > 0 && abi < 4)
                cause_landlock_network(abi, why, sizeof(why));
        else if (abi <= 0)
                snprintf(why, sizeof(why), "no Landlock. Fix: as for landlock");
        report(&all[n++], "landlock_network", abi >= 4, false,
               abi >= 4 ? "a network cell's connect reaches only the proxy's port, and it binds "
                          "nothing (Landlock ABI %s)"
                        : "%s",
               abi >= 4 ? text : why);

        /* terminate_tls (egress_tls.h): OpenSSL, loaded only for a cell that asks for it. */
        const char *tls_why = NULL, *tls = egress_tls_library(&tls_why);
        report(&all[n++], "tls_termination", tls != NULL, false,
               tls ? "a network cell's terminate_tls: the engine's TLS with a CA per cell (%s)"
                   : "a network cell cannot use terminate_tls: OpenSSL 3 does not load (%s). "
                     "Fix: install libssl3",
               tls ? tls : tls_why);

        /* Available means the cell's filter compiles here and the kernel takes filters. */
        codecell_error err = {0};
        struct seccomp_program filter;
        bool seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
        if (!seccomp)
                snprintf(err.message, sizeof(err.message), "prctl(PR_GET_SECCOMP): %s",
                         strerror(errno));
        else if (!(seccomp = seccomp_program_compile(&filter, false, &err) == 0))
                ;
        else
                seccomp_program_free(&filter);
        if (!seccomp)
                cause_seccomp(err.message, why, sizeof(why));
        report(&all[n++], "seccomp", seccomp, true,
               seccomp ? "available (libseccomp filter for %s)" : "%s",
               seccomp ? SECCOMP_ARCH_NAME : why);

        struct cgroup_place place;
        err = (codecell_error){0};
        bool cg = cgroup_place_find(&place, &err) == 0;
        if (cg) {
                /* Found is not enough: make one and remove it. */
                char name[64];
                struct cgroup test;
                cgroup_unique_name(name, sizeof(name));
                struct cgroup_limits lim = {.memory_bytes = 64 << 20, .pids = 8};
                cg = place.backend->create(&place, name, &lim, &test, &err) == 0;
                if (cg)
                        place.backend->destroy(&test);
        }
        char where[PATH_MAX + 64];
        if (cg)
                snprintf(where, sizeof(where), "%s under %s", place.backend->name,
                         place.memory_parent);
        if (!cg)
                cause_cgroup(err.message, why, sizeof(why));
        report(&all[n++], "cgroup", cg, false, "%s", cg ? where : why);

        bool root = geteuid() == 0;
        char idmap_why[200] = "";
        bool idmap = root && probe_idmapped_mount(idmap_why, sizeof(idmap_why));
        if (root && !idmap)
                cause_idmapped_mount(idmap_why, why, sizeof(why));
        else if (!root)
                snprintf(why, sizeof(why),
                         "needs root; unprivileged, files written to read-write mounts belong to "
                         "the invoking user. Fix: run codecell as root (the system service)");
        report(&all[n++], "idmapped_mounts", idmap, false,
               idmap ? "used for a cell's read-write mounts and a root caller's jail fs_allow "
                       "(tried on /tmp)%s"
                     : "%s",
               idmap ? "" : why);

        /* Forked cells' sandboxes each take a user namespace inside their zygote's. */
        int nested_errno = userns ? probe_nested_user_namespace() : EPERM;
        bool built = codecell_zygote_so_size > 0 && codecell_init_bin_size > 0;
        bool forks = nested_errno == 0 && built;
        if (!userns)
                snprintf(why, sizeof(why), "no user namespace. Fix: as for user_namespace");
        else if (nested_errno != 0)
                cause_nested_user_namespace(nested_errno, why, sizeof(why));
        else if (!built)
                snprintf(why, sizeof(why),
                         "the fork server or its init was not built into this library: cells "
                         "exec a fresh interpreter for every sandbox. Fix: build with a C "
                         "compiler that links static programs");
        report(&all[n++], "forked_sandboxes", forks, false,
               forks ? "cells fork their sandboxes from a booted interpreter (start \"fork\")%s"
                     : "%s",
               forks ? "" : why);

        const struct runtime *rt;
        for (size_t i = 0; (rt = runtime_at(i)) && n < sizeof(all) / sizeof(all[0]); i++)
                report_interpreter(&all[n++], rt);

        size_t count = n < max ? n : max;
        memcpy(out, all, count * sizeof(*out));
        return (int)count;
}
