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
#include "cleanup.h"
#include "config.h"
#include "idmap.h"
#include "interpreter.h"
#include "codecell.h"
#include "landlock.h"
#include "runtime.h"
#include "util.h"

static const struct {
        const char *name;
        int flag;
} namespaces[] = {
        {"mount_namespace", CLONE_NEWNS},    {"pid_namespace", CLONE_NEWPID},
        {"network_namespace", CLONE_NEWNET}, {"ipc_namespace", CLONE_NEWIPC},
        {"uts_namespace", CLONE_NEWUTS},     {"cgroup_namespace", CLONE_NEWCGROUP},
};
#define N_NS (sizeof(namespaces) / sizeof(namespaces[0]))

/* Root only: whether /tmp (where a jail's fs_allow folders usually are) can be cloned and the
 * clone idmapped, as a cell's read-write mounts and a root caller's jail fs_allow are. */
static bool probe_idmapped_mount(char *why, size_t why_size)
{
        codecell_error err = {0};
        _cleanup_close_ int userns = idmap_userns(0, 0, 65534, 65534, &err);
        if (userns < 0) {
                snprintf(why, why_size, "%s", err.message);
                return false;
        }
        int r = idmap_probe("/tmp", userns);
        if (r < 0) {
                snprintf(why, why_size, "%s", strerror(-r));
                return false;
        }
        return true;
}

/* In a child: a new user namespace, then each other namespace inside it. The exit code has
 * bit 7 set when the user namespace failed, else one bit per namespace that failed. */
static int probe_namespaces(void)
{
        pid_t pid = fork();
        if (pid == 0) {
                if (unshare(CLONE_NEWUSER) < 0)
                        _exit(0x80);
                int failed = 0;
                for (size_t i = 0; i < N_NS; i++)
                        if (unshare(namespaces[i].flag) < 0)
                                failed |= 1 << i;
                _exit(failed);
        }
        if (pid < 0)
                return 0x80;
        int st;
        if (wait_child(pid, &st) < 0)
                return 0x80;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 0x80;
}

/* Whether a user namespace can be made inside a new one (a forked sandbox's, inside its
 * zygote's). The outer one maps the caller's ids first, as the zygote's does: without a
 * mapping of its ids, no process may make a user namespace. */
static bool probe_nested_user_namespace(void)
{
        uid_t uid = geteuid();
        gid_t gid = getegid();
        pid_t pid = fork();
        if (pid == 0) {
                char map[64];
                if (unshare(CLONE_NEWUSER) < 0 || write_file("/proc/self/setgroups", "deny") < 0)
                        _exit(1);
                snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
                if (write_file("/proc/self/uid_map", map) < 0)
                        _exit(1);
                snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
                if (write_file("/proc/self/gid_map", map) < 0)
                        _exit(1);
                _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
        }
        if (pid < 0)
                return false;
        int st;
        if (wait_child(pid, &st) < 0)
                return false;
        return WIFEXITED(st) && WEXITSTATUS(st) == 0;
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
        int ns = probe_namespaces();
        report(&all[n++], "user_namespace", !(ns & 0x80), true,
               (ns & 0x80) ? "unshare(CLONE_NEWUSER) refused%s: enable unprivileged user namespaces"
                           : "available%s",
               "");
        for (size_t i = 0; i < N_NS; i++) {
                bool ok = !(ns & 0x80) && !(ns & (1 << i));
                report(&all[n++], namespaces[i].name, ok, true, ok ? "available%s" : "refused%s",
                       "");
        }

        int abi = landlock_abi();
        char text[64];
        snprintf(text, sizeof(text), "ABI %d", abi);
        report(&all[n++], "landlock", abi > 0, false,
               abi > 0 ? "%s" : "not available (kernel < 5.13 or not in the lsm= list)%s",
               abi > 0 ? text : "");

        /* Landlock is also what keeps the host paths of mounted folders out of the guest's
         * sight (/proc/<pid>/mountinfo): say so, for an operator deciding on_unsupported. */
        report(&all[n++], "proc_paths_hidden", abi > 0, false,
               abi > 0 ? "/proc/<pid>/mountinfo and the like are unreadable in the sandbox "
                         "(Landlock)%s"
                       : "without Landlock the guest can read /proc/self/mountinfo, which shows "
                         "the host path of every mounted folder%s",
               "");

        /* A network cell's third wall (proxy_listener.h): under ABI 4 its namespace (only the
         * loopback) and seccomp (TCP sockets only) keep it in, but it may bind and connect to
         * other ports of its own loopback; the cell's on_unsupported decides. */
        snprintf(text, sizeof(text), "%d", abi);
        report(&all[n++], "landlock_network", abi >= 4, false,
               abi >= 4 ? "a network cell's connect reaches only the proxy's port, and it binds "
                          "nothing (Landlock ABI %s)"
                        : "Landlock ABI %s has no network rules (4 does): a network cell's guest "
                          "may also bind and connect to other ports of its own loopback; its "
                          "on_unsupported applies",
               text);

        bool seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
        report(&all[n++], "seccomp", seccomp, true,
               seccomp ? "available (libseccomp filter, x86_64 only%s)" : "not available%s", "");

        struct cgroup_place place;
        codecell_error err = {0};
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
        report(&all[n++], "cgroup", cg, false, "%s", cg ? where : err.message);

        bool root = geteuid() == 0;
        char idmap_why[200] = "";
        bool idmap = root && probe_idmapped_mount(idmap_why, sizeof(idmap_why));
        report(&all[n++], "idmapped_mounts", idmap, false,
               idmap  ? "used for a cell's read-write mounts and a root caller's jail fs_allow "
                        "(tried on /tmp)%s"
               : root ? "refused on /tmp (%s): a cell's read-write mounts and a jail's fs_allow "
                        "are written as the sandbox's uid may"
                      : "needs root; unprivileged, files written to read-write mounts belong to "
                        "the invoking user%s",
               root ? idmap_why : "");

        /* Forked cells' sandboxes each take a user namespace inside their zygote's. */
        bool nested = !(ns & 0x80) && probe_nested_user_namespace();
        bool forks = nested && codecell_zygote_so_size > 0 && codecell_init_bin_size > 0;
        report(&all[n++], "forked_sandboxes", forks, false,
               forks    ? "cells fork their sandboxes from a booted interpreter (start \"fork\")%s"
               : nested ? "the fork server or its init was not built into this library: cells "
                          "exec a fresh "
                          "interpreter for every sandbox%s"
                        : "nested user namespaces are refused: forked cells cannot start%s",
               "");

        const struct runtime *rt;
        for (size_t i = 0; (rt = runtime_at(i)) && n < sizeof(all) / sizeof(all[0]); i++)
                report_interpreter(&all[n++], rt);

        size_t count = n < max ? n : max;
        memcpy(out, all, count * sizeof(*out));
        return (int)count;
}
