/* What a cell prepares once for all its sandboxes (cell_plan.h). */
#include "cell_plan.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "egress_tls.h"
#include "error.h"
#include "guest_user.h"
#include "idmap.h"
#include "proxy_listener.h"
#include "runtime.h"
#include "sandbox.h"
#include "util.h"
#include "zygote.h"
#include "zygote_walls.h"

static const char *const guest_env[] = {
        "PATH=/usr/bin:/bin", "HOME=/work",      "TMPDIR=/tmp", "LANG=C.UTF-8",
        "USER=sandbox",       "LOGNAME=sandbox", NULL,
};

/* A network cell's guest: the same, with the standard proxy variables on the engine's
 * listener (proxy_listener.h), which is the only way out of its namespace. NO_PROXY empty:
 * nothing is reached directly (there is nothing to reach). */
#define PROXY_URL "http://127.0.0.1:" CODECELL_PROXY_PORT_TEXT
#define GUEST_ENV_NETWORK                                                                          \
        "PATH=/usr/bin:/bin", "HOME=/work", "TMPDIR=/tmp", "LANG=C.UTF-8", "USER=sandbox",         \
                "LOGNAME=sandbox", "HTTP_PROXY=" PROXY_URL, "HTTPS_PROXY=" PROXY_URL,              \
                "ALL_PROXY=" PROXY_URL, "http_proxy=" PROXY_URL, "https_proxy=" PROXY_URL,         \
                "all_proxy=" PROXY_URL, "NO_PROXY=", "no_proxy="
static const char *const guest_env_network[] = {GUEST_ENV_NETWORK, NULL};
/* With terminate_tls: every usual client told to trust the bundle with the cell's CA
 * (OpenSSL's, so Ruby's and Python's ssl; requests; curl; pip). */
static const char *const guest_env_network_tls[] = {
        GUEST_ENV_NETWORK,
        "SSL_CERT_FILE=" MOUNT_PLAN_CA_BUNDLE,
        "REQUESTS_CA_BUNDLE=" MOUNT_PLAN_CA_BUNDLE,
        "CURL_CA_BUNDLE=" MOUNT_PLAN_CA_BUNDLE,
        "PIP_CERT=" MOUNT_PLAN_CA_BUNDLE,
        NULL,
};

/* The dynamic loader named in an ELF program's PT_INTERP, or NULL. */
static char *elf_interpreter(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        Elf64_Ehdr eh;
        if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
            memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64)
                return NULL;
        for (int i = 0; i < eh.e_phnum; i++) {
                Elf64_Phdr ph;
                off_t off = (off_t)eh.e_phoff + (off_t)i * eh.e_phentsize;
                if (pread(fd, &ph, sizeof(ph), off) != (ssize_t)sizeof(ph))
                        return NULL;
                if (ph.p_type != PT_INTERP || ph.p_filesz == 0 || ph.p_filesz > PATH_MAX)
                        continue;
                char buf[PATH_MAX + 1];
                if (pread(fd, buf, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
                        return NULL;
                buf[ph.p_filesz] = '\0';
                return realpath(buf, NULL);
        }
        return NULL;
}

static int add_layer(struct cell_plan *plan, const char *name)
{
        return json_array_append_new(plan->layers, json_string(name));
}

/* A layer the host lacks: refuse under "raise", note it under "warn". */
static int missing_layer(struct cell_plan *plan, const char *what, codecell_error *err)
{
        if (plan->config->policy == CODECELL_POLICY_RAISE)
                return err_set(err, CODECELL_ERR_UNSUPPORTED, ENOTSUP,
                               "%s (on_unsupported is \"raise\")", what);
        if (plan->config->policy == CODECELL_POLICY_WARN)
                json_array_append_new(plan->warnings, json_string(what));
        return 0;
}

/* Files of /proc readable by every process: the machine's description, nothing of the host's
 * file system. Not its moving counters (/proc/stat's fork count, loadavg's last pid, uptime's
 * idle time, the sysctls' file and inode counts): each shows the host's activity and is a
 * channel between sandboxes. meminfo holds what sysinfo() tells anyway. */
static const char *const proc_global_files[] = {"/proc/cpuinfo", "/proc/meminfo", "/proc/version"};

/* What the guest may read. Everything the sandbox's root holds, but of /proc only the files
 * above and the interpreter's own status files: the rest of /proc/<pid> (mountinfo and
 * statmount's view of it) shows the host path of every mounted folder, and folder names are
 * often customers' names. Directories may be listed everywhere. */
static int grant_reading(struct cell_plan *plan)
{
        struct landlock_plan *ll = &plan->landlock;
        int r = landlock_plan_add(ll, "/", GRANT_LIST);
        /* Every top-level entry of the root, each once: the root is built from the plan. */
        for (size_t i = 0; r == 0 && i < plan->mounts.n_ops; i++) {
                const char *dest = plan->mounts.ops[i].dest;
                size_t len = 1 + strcspn(dest + 1, "/");
                bool seen = strncmp(dest, "/proc", len) == 0 && len == 5;
                for (size_t j = 0; !seen && j < i; j++)
                        seen = strncmp(plan->mounts.ops[j].dest, dest, len) == 0 &&
                               (plan->mounts.ops[j].dest[len] == '/' ||
                                plan->mounts.ops[j].dest[len] == '\0');
                if (!seen)
                        r = landlock_plan_add_copy(ll, dest, len, GRANT_READ);
        }
        for (size_t i = 0; r == 0 && i < sizeof(proc_global_files) / sizeof(proc_global_files[0]);
             i++)
                r = landlock_plan_add(ll, proc_global_files[i], GRANT_READ);
        char path[64];
        for (size_t i = 0; r == 0 && landlock_proc_self_files[i]; i++) {
                int n = snprintf(path, sizeof(path), "/proc/self/%s", landlock_proc_self_files[i]);
                r = landlock_plan_add_copy(ll, path, (size_t)n, GRANT_READ);
        }
        return r;
}

/* A network cell's connect may reach the proxy's port only, and bind nothing (ABI 4 on).
 * Below that the namespace (only its loopback) and seccomp (TCP sockets only) still hold, but
 * the guest may also connect to, and bind, other ports of its own loopback. */
static int plan_landlock_network(struct cell_plan *plan, codecell_error *err)
{
        if (!config_network(plan->config))
                return 0;
        plan->landlock.connect_port = CODECELL_PROXY_PORT;
        if (plan->landlock.abi >= 4)
                return add_layer(plan, "landlock_network") < 0 ? err_sys(err, ENOMEM, "layers") : 0;
        char what[160];
        snprintf(what, sizeof(what),
                 "landlock: ABI %d has no network rules (4 does): a network cell's sandbox may "
                 "bind and connect to any port of its own loopback",
                 plan->landlock.abi);
        return missing_layer(plan, what, err);
}

static int plan_landlock(struct cell_plan *plan, codecell_error *err)
{
        struct landlock_plan *ll = &plan->landlock;
        ll->abi = landlock_abi();
        if (ll->abi <= 0)
                return missing_layer(plan, "landlock: not available in this kernel", err);
        int r = grant_reading(plan);
        r = r ?: landlock_plan_add(ll, "/tmp", GRANT_WRITE);
        r = r ?: landlock_plan_add(ll, "/work", GRANT_WRITE);
        for (size_t i = 0; r == 0 && i < plan->mounts.n_ops; i++) {
                const struct mount_op *op = &plan->mounts.ops[i];
                if (op->kind == OP_BIND && op->devices)
                        r = landlock_plan_add(ll, op->dest, GRANT_DEVICE);
                else if (op->kind == OP_BIND && op->writable)
                        r = landlock_plan_add(ll, op->dest, GRANT_WRITE);
        }
        /* Only the interpreter (and its loader) may be executed: a guest cannot run any other
         * program, even in place of itself. A cell that allows subprocesses may run the
         * system's programs, never a file the guest wrote. */
        if (r == 0 && plan->config->subprocesses)
                r = landlock_plan_add(ll, "/usr", GRANT_EXECUTE_TREE);
        r = r ?: landlock_plan_add(ll, plan->interpreter_real, GRANT_EXECUTE);
        if (r == 0 && plan->elf_interpreter)
                r = landlock_plan_add(ll, plan->elf_interpreter, GRANT_EXECUTE);
        if (r < 0)
                return err_set(err, CODECELL_ERR_INVALID, -r, "landlock: too many rules");
        char name[32];
        snprintf(name, sizeof(name), "landlock_abi_%d", ll->abi);
        if (add_layer(plan, name) < 0)
                return err_sys(err, ENOMEM, "layers");
        return plan_landlock_network(plan, err);
}

static int plan_cgroup(struct cell_plan *plan, codecell_error *err)
{
        codecell_error why = {0};
        if (cgroup_place_find(&plan->cgroup_place, &why) == 0) {
                cgroup_sweep_stale(&plan->cgroup_place);
                return add_layer(plan, plan->cgroup_place.backend->name) < 0
                               ? err_sys(err, ENOMEM, "layers")
                               : 0;
        }
        char what[sizeof(why.message) + 96];
        snprintf(what, sizeof(what),
                 "cgroup: %s; memory is limited by RLIMIT_AS (per process) and processes "
                 "by RLIMIT_NPROC instead, and the CPU budget cannot count a child the kernel "
                 "reaps by itself (its parent ignores SIGCHLD)",
                 why.message);
        int r = missing_layer(plan, what, err);
        if (r < 0)
                return r;
        return add_layer(plan, "rlimit_as") < 0 ? err_sys(err, ENOMEM, "layers") : 0;
}

static int plan_idmaps(struct cell_plan *plan, codecell_error *err)
{
        const codecell_config *c = plan->config;
        plan->idmap_fds = malloc((c->n_mounts ? c->n_mounts : 1) * sizeof(int));
        if (!plan->idmap_fds)
                return err_sys(err, ENOMEM, "idmap");
        for (size_t i = 0; i < c->n_mounts; i++)
                plan->idmap_fds[i] = -1;
        if (!plan->privileged || c->n_mounts == 0)
                return 0;
        size_t idmapped = 0;
        for (size_t i = 0; i < c->n_mounts; i++) {
                struct stat st;
                if (stat(c->mounts[i].source, &st) < 0)
                        return err_sys(err, errno, "mount %s", c->mounts[i].dest);
                int fd = idmap_userns(st.st_uid, st.st_gid, plan->host_uid, plan->host_gid, err);
                if (fd < 0) {
                        err_prefix(err, "mount %s: ", c->mounts[i].dest);
                        return fd;
                }
                /* A file system that takes no idmap (tmpfs before Linux 6.3: Debian 12's
                 * /tmp when it is a tmpfs) keeps a plain bind, as for an unprivileged caller:
                 * every run would fail otherwise, when the sandbox attaches the mount. */
                int r = idmap_probe(c->mounts[i].source, fd);
                if (r == -EINVAL) {
                        close(fd);
                        continue;
                }
                if (r < 0) {
                        close(fd);
                        return err_sys(err, -r, "mount %s: idmap", c->mounts[i].dest);
                }
                plan->idmap_fds[i] = fd;
                idmapped++;
        }
        if (idmapped == 0)
                return 0;
        return add_layer(plan, "idmapped_mounts") < 0 ? err_sys(err, ENOMEM, "layers") : 0;
}

/* The interpreter the sandbox executes, checked now, and the argv that starts it. */
static int plan_interpreter(struct cell_plan *plan, codecell_error *err)
{
        const codecell_config *c = plan->config;
        const struct runtime *rt = c->runtime;
        plan->interpreter = c->interpreter ? c->interpreter : rt->interpreter;
        plan->interpreter_real = realpath(plan->interpreter, NULL);
        if (!plan->interpreter_real || access(plan->interpreter_real, X_OK) < 0)
                return err_set(err, CODECELL_ERR_UNSUPPORTED, ENOENT,
                               "%s: interpreter %s not found; install %s", rt->name,
                               plan->interpreter, rt->package_hint);
        /* An interpreter or library folders the configuration names are checked now; the
         * system's own interpreter is asked only when the description is first wanted
         * (a run does not need it). */
        if (c->interpreter || c->n_libraries) {
                int r = interpreter_probe(c, plan->interpreter, plan->privileged, &plan->probe,
                                          err);
                if (r < 0)
                        return r;
        }
        plan->argv = runtime_argv(rt, rt->boot, (const char *const *)plan->probe.load_paths,
                                  plan->probe.n_load_paths, NULL, 0);
        if (!plan->argv)
                return err_sys(err, ENOMEM, "cell");
        /* Its own path, not a bare name: Python derives sys.executable from argv[0], and one
         * outside /usr would otherwise be taken for the python3 found in PATH. */
        plan->argv[0] = (char *)plan->interpreter;
        const struct egress_policy *policy = config_network_policy(c);
        plan->envp = !policy                 ? guest_env
                     : policy->terminate_tls ? guest_env_network_tls
                                             : guest_env_network;
        plan->elf_interpreter = elf_interpreter(plan->interpreter_real);
        return 0;
}

size_t cell_plan_rlimits(const struct cell_plan *plan, bool session, struct sandbox_rlimit *out)
{
        const uint64_t *lim = plan->config->limits;
        /* A backstop only: the budget itself is enforced by the engine from exec on. A session
         * lives through many evals, each with its own budget, so it has none: the engine
         * watches it during evals, and the reaper between them. */
        rlim_t cpu_s =
                session ? RLIM_INFINITY - 1
                        : (rlim_t)((SANDBOX_STARTUP_TIMEOUT_MS + lim[CODECELL_LIMIT_CPU_MS]) /
                                           1000 +
                                   1);
        struct sandbox_rlimit rl[] = {
                {RLIMIT_CPU, {cpu_s, cpu_s + 1}},
                {RLIMIT_NOFILE, {lim[CODECELL_LIMIT_OPEN_FILES], lim[CODECELL_LIMIT_OPEN_FILES]}},
                {RLIMIT_FSIZE, {lim[CODECELL_LIMIT_FILE_BYTES], lim[CODECELL_LIMIT_FILE_BYTES]}},
                /* Counted per user namespace: this caps the sandbox's own threads. */
                {RLIMIT_NPROC, {lim[CODECELL_LIMIT_PIDS], lim[CODECELL_LIMIT_PIDS]}},
                {RLIMIT_CORE, {0, 0}},
        };
        memcpy(out, rl, sizeof(rl));
        size_t n = sizeof(rl) / sizeof(rl[0]);
        if (!plan->cgroup_place.backend) {
                /* Without a memory cgroup, address space is the only memory limit we have.
                 * The interpreter reserves virtual ranges it never touches (seed 003's sharp
                 * edge), so the cap gets 128 MiB of headroom over the configured limit. */
                rlim_t as = (rlim_t)(lim[CODECELL_LIMIT_MEMORY_BYTES] + (128ULL << 20));
                out[n++] = (struct sandbox_rlimit){RLIMIT_AS, {as, as}};
        }
        return n;
}

/* A sandbox cannot raise a hard limit above the engine's (it has no CAP_SYS_RESOURCE where
 * that counts): a cell whose limit is over it would fail every sandbox's set-up, so it is
 * refused here, naming the limit and how to raise the engine's. */
static int plan_rlimits(const struct cell_plan *plan, codecell_error *err)
{
        static const struct {
                int resource;
                codecell_limit limit;
                const char *raise;
        } checked[] = {
                {RLIMIT_NOFILE, CODECELL_LIMIT_OPEN_FILES, "ulimit -Hn"},
                {RLIMIT_FSIZE, CODECELL_LIMIT_FILE_BYTES, "ulimit -Hf"},
                {RLIMIT_NPROC, CODECELL_LIMIT_PIDS, "ulimit -Hu"},
                /* Set only without a memory cgroup, at the limit plus headroom. */
                {RLIMIT_AS, CODECELL_LIMIT_MEMORY_BYTES, "ulimit -Hv"},
        };
        struct sandbox_rlimit rl[8];
        size_t n = cell_plan_rlimits(plan, false, rl);
        for (size_t k = 0; k < sizeof(checked) / sizeof(checked[0]); k++) {
                struct rlimit engine;
                if (getrlimit(checked[k].resource, &engine) < 0)
                        continue;
                for (size_t i = 0; i < n; i++) {
                        if (rl[i].resource != checked[k].resource ||
                            rl[i].value.rlim_max <= engine.rlim_max)
                                continue;
                        const char *name = codecell_limit_name(checked[k].limit);
                        return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                                       "limit %s: %llu is more than this process may give its "
                                       "sandboxes (its hard limit is %llu%s); lower %s, or "
                                       "raise the hard limit (%s) before starting codecell",
                                       name,
                                       (unsigned long long)plan->config->limits[checked[k].limit],
                                       (unsigned long long)engine.rlim_max,
                                       checked[k].resource == RLIMIT_AS
                                               ? " bytes of address space, and the sandbox "
                                                 "needs 128 MiB over the limit without a "
                                                 "memory cgroup"
                                               : "",
                                       name, checked[k].raise);
                }
        }
        return 0;
}

/* While a zygote boots, the lock its first child's cgroup move takes is made ready. */
static void warm_cgroups(void *place)
{
        cgroup_place_warm(place);
}

/* A forked cell's zygote, and the walls its children put up (zygote_protocol.h), written into
 * the mount plan's /codecell/walls once the filter and the rules exist. */
static int plan_zygote(struct cell_plan *plan, codecell_error *err)
{
        if (!config_forks(plan->config))
                return 0;
        struct zygote_walls *walls = malloc(sizeof(*walls));
        if (!walls)
                return err_sys(err, ENOMEM, "cell");
        struct sandbox_rlimit rlimits[8];
        size_t n_rlimits = cell_plan_rlimits(plan, false, rlimits);
        int r = zygote_walls_encode(walls, &plan->mounts, &plan->landlock, &plan->seccomp, rlimits,
                                    n_rlimits, SANDBOX_INNER_UID, SANDBOX_INNER_GID, err);
        walls->network = config_network(plan->config) != NULL;
        if (r == 0 &&
            mount_plan_set_contents(&plan->mounts, ZYGOTE_WALLS_PATH, walls, sizeof(*walls)) < 0)
                r = err_sys(err, ENOMEM, "cell");
        free(walls);
        if (r == 0 && !(plan->zygote = zygote_new(plan->cgroup_place.backend ? warm_cgroups : NULL,
                                                  &plan->cgroup_place)))
                r = err_sys(err, ENOMEM, "cell");
        return r;
}

/* A cell with terminate_tls: its CA, made now, and the bundle its sandboxes trust. */
static int plan_tls(struct cell_plan *plan, codecell_error *err)
{
        const struct egress_policy *policy = config_network_policy(plan->config);
        if (!policy || !policy->terminate_tls)
                return 0;
        if (!(plan->egress_tls = egress_tls_new(policy, err)))
                return -1;
        size_t len = 0;
        _cleanup_free_ char *bundle = egress_tls_bundle(plan->egress_tls, &len);
        if (!bundle ||
            mount_plan_set_contents(&plan->mounts, MOUNT_PLAN_CA_BUNDLE, bundle, len) < 0)
                return err_sys(err, ENOMEM, "cell");
        return 0;
}

int cell_plan_build(struct cell_plan *plan, const codecell_config *config, codecell_error *err)
{
        *plan = (struct cell_plan){.config = config};
        netns_stock_init(&plan->netns);
        plan->layers = json_array();
        plan->warnings = json_array();
        plan->privileged = geteuid() == 0;
        plan->host_uid = plan->privileged ? PRIVILEGED_GUEST_UID : geteuid();
        plan->host_gid = plan->privileged ? PRIVILEGED_GUEST_GID : getegid();
        int r = !plan->layers || !plan->warnings ? err_sys(err, ENOMEM, "cell") : 0;
        r = r ?: plan_interpreter(plan, err);
        if (r < 0)
                goto fail;
        static const char *const always[] = {
                "user_namespace", "mount_namespace", "pid_namespace",        "network_namespace",
                "ipc_namespace",  "uts_namespace",   "cgroup_namespace",     "pivot_root",
                "seccomp",        "no_new_privs",    "capabilities_dropped", "rlimits",
        };
        for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++)
                add_layer(plan, always[i]);
        r = mount_plan_build(&plan->mounts, config, SANDBOX_INNER_UID, err);
        r = r
                    ?: config_network(config)
                       ? seccomp_program_compile_tcp(&plan->seccomp, config->subprocesses, err)
                       : seccomp_program_compile(&plan->seccomp, config->subprocesses, err);
        r = r ?: plan_landlock(plan, err);
        r = r ?: plan_cgroup(plan, err);
        r = r ?: plan_rlimits(plan, err);
        r = r ?: plan_idmaps(plan, err);
        r = r ?: mount_roots_open(&plan->mount_roots, config, err);
        r = r ?: plan_tls(plan, err);
        r = r ?: plan_zygote(plan, err);
        if (r < 0)
                goto fail;
        for (size_t i = 0; i < config->n_mounts; i++)
                plan->writes_host |= config->mounts[i].read_write;
        return 0;
fail:
        cell_plan_free(plan);
        return r;
}

void cell_plan_free(struct cell_plan *plan)
{
        if (!plan->config)
                return; /* zeroed: never built, or freed already */
        /* First: its children hold the cell's mounts and namespaces. */
        zygote_free(plan->zygote);
        netns_stock_free(&plan->netns);
        if (plan->idmap_fds)
                for (size_t i = 0; i < plan->config->n_mounts; i++)
                        close_fd(&plan->idmap_fds[i]);
        free(plan->idmap_fds);
        mount_roots_close(&plan->mount_roots);
        mount_plan_free(&plan->mounts);
        seccomp_program_free(&plan->seccomp);
        egress_tls_free(plan->egress_tls);
        json_decref(plan->layers);
        json_decref(plan->warnings);
        free(plan->interpreter_real);
        free(plan->argv);
        interpreter_info_free(&plan->probe);
        free(plan->elf_interpreter);
        *plan = (struct cell_plan){.config = NULL};
}
