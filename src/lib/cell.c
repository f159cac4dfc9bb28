#include "cell.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "disposal.h"
#include "error.h"
#include "pool.h"
#include "result.h"
#include "run_input.h"
#include "sandbox.h"
#include "util.h"

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

/* A user namespace whose only mapping is host `from` -> host `to`, for an idmapped mount that
 * shows the mount folder's owner as the guest (and stores the guest's files as that owner). */
static int idmap_userns(uid_t from_uid, gid_t from_gid, uid_t to_uid, gid_t to_gid,
                        codecell_error *err)
{
        int ready[2];
        if (pipe2(ready, O_CLOEXEC) < 0)
                return err_sys(err, errno, "idmap: pipe");
        pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
        if (pid == 0) {
                /* Exists only to own the namespace until the engine has opened it. */
                close(ready[1]);
                char c;
                (void)!read(ready[0], &c, 1);
                _exit(0);
        }
        close(ready[0]);
        if (pid < 0) {
                close(ready[1]);
                return err_sys(err, errno, "idmap: clone");
        }
        char path[64], map[64];
        int r = 0, fd = -1;
        snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)from_uid, (unsigned)to_uid);
        r = write_file(path, map);
        if (r == 0) {
                snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
                snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)from_gid, (unsigned)to_gid);
                r = write_file(path, map);
        }
        if (r == 0) {
                snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        r = -errno;
        }
        close(ready[1]);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        return r < 0 ? err_sys(err, -r, "idmap: %s", path) : fd;
}

static int add_layer(struct codecell_cell *cell, const char *name)
{
        return json_array_append_new(cell->layers, json_string(name));
}

/* A layer the host lacks: refuse under "raise", note it under "warn". */
static int missing_layer(struct codecell_cell *cell, const char *what, codecell_error *err)
{
        if (cell->config->policy == CODECELL_POLICY_RAISE)
                return err_set(err, CODECELL_ERR_UNSUPPORTED, ENOTSUP,
                               "%s (on_unsupported is \"raise\")", what);
        if (cell->config->policy == CODECELL_POLICY_WARN)
                json_array_append_new(cell->warnings, json_string(what));
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
static int grant_reading(struct codecell_cell *cell)
{
        struct landlock_plan *ll = &cell->landlock;
        int r = landlock_plan_add(ll, "/", GRANT_LIST);
        /* Every top-level entry of the root, each once: the root is built from the plan. */
        for (size_t i = 0; r == 0 && i < cell->plan.n_ops; i++) {
                const char *dest = cell->plan.ops[i].dest;
                size_t len = 1 + strcspn(dest + 1, "/");
                bool seen = strncmp(dest, "/proc", len) == 0 && len == 5;
                for (size_t j = 0; !seen && j < i; j++)
                        seen = strncmp(cell->plan.ops[j].dest, dest, len) == 0 &&
                               (cell->plan.ops[j].dest[len] == '/' ||
                                cell->plan.ops[j].dest[len] == '\0');
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

static int plan_landlock(struct codecell_cell *cell, codecell_error *err)
{
        struct landlock_plan *ll = &cell->landlock;
        ll->abi = landlock_abi();
        if (ll->abi <= 0)
                return missing_layer(cell, "landlock: not available in this kernel", err);
        int r = grant_reading(cell);
        r = r ?: landlock_plan_add(ll, "/tmp", GRANT_WRITE);
        r = r ?: landlock_plan_add(ll, "/work", GRANT_WRITE);
        for (size_t i = 0; r == 0 && i < cell->plan.n_ops; i++) {
                const struct mount_op *op = &cell->plan.ops[i];
                if (op->kind == OP_BIND && op->devices)
                        r = landlock_plan_add(ll, op->dest, GRANT_DEVICE);
                else if (op->kind == OP_BIND && op->writable)
                        r = landlock_plan_add(ll, op->dest, GRANT_WRITE);
        }
        /* Only the interpreter (and its loader) may be executed: a guest cannot run any other
         * program, even in place of itself. A cell that allows subprocesses may run the
         * system's programs, never a file the guest wrote. */
        if (r == 0 && cell->config->subprocesses)
                r = landlock_plan_add(ll, "/usr", GRANT_EXECUTE_TREE);
        r = r ?: landlock_plan_add(ll, cell->interpreter_real, GRANT_EXECUTE);
        if (r == 0 && cell->elf_interpreter)
                r = landlock_plan_add(ll, cell->elf_interpreter, GRANT_EXECUTE);
        if (r < 0)
                return err_set(err, CODECELL_ERR_INVALID, -r, "landlock: too many rules");
        char name[32];
        snprintf(name, sizeof(name), "landlock_abi_%d", ll->abi);
        return add_layer(cell, name) < 0 ? err_sys(err, ENOMEM, "layers") : 0;
}

static int plan_cgroup(struct codecell_cell *cell, codecell_error *err)
{
        codecell_error why = {0};
        if (cgroup_place_find(&cell->cgroup_place, &why) == 0) {
                cgroup_sweep_stale(&cell->cgroup_place);
                return add_layer(cell, cell->cgroup_place.backend->name) < 0
                               ? err_sys(err, ENOMEM, "layers")
                               : 0;
        }
        char what[sizeof(why.message) + 96];
        snprintf(what, sizeof(what),
                 "cgroup: %s; memory is limited by RLIMIT_AS (per process) and processes "
                 "by RLIMIT_NPROC instead, and the CPU budget cannot count a child the kernel "
                 "reaps by itself (its parent ignores SIGCHLD)",
                 why.message);
        int r = missing_layer(cell, what, err);
        return r < 0 ? r : add_layer(cell, "rlimit_as");
}

static int plan_idmaps(struct codecell_cell *cell, codecell_error *err)
{
        const codecell_config *c = cell->config;
        cell->idmap_fds = malloc((c->n_mounts ? c->n_mounts : 1) * sizeof(int));
        if (!cell->idmap_fds)
                return err_sys(err, ENOMEM, "idmap");
        for (size_t i = 0; i < c->n_mounts; i++)
                cell->idmap_fds[i] = -1;
        if (!cell->privileged || c->n_mounts == 0)
                return 0;
        for (size_t i = 0; i < c->n_mounts; i++) {
                struct stat st;
                if (stat(c->mounts[i].source, &st) < 0)
                        return err_sys(err, errno, "mount %s", c->mounts[i].dest);
                int fd = idmap_userns(st.st_uid, st.st_gid, cell->host_uid, cell->host_gid, err);
                if (fd < 0) {
                        err_prefix(err, "mount %s: ", c->mounts[i].dest);
                        return fd;
                }
                cell->idmap_fds[i] = fd;
        }
        return add_layer(cell, "idmapped_mounts") < 0 ? err_sys(err, ENOMEM, "layers") : 0;
}

codecell_cell *codecell_cell_new(const codecell_config *config, codecell_error *err)
{
        if (!config) {
                err_set(err, CODECELL_ERR_INVALID, EINVAL, "no configuration");
                return NULL;
        }
        struct codecell_cell *cell = calloc(1, sizeof(*cell));
        if (!cell) {
                err_sys(err, ENOMEM, "cell");
                return NULL;
        }
        tool_table_init(&cell->tools);
        session_table_init(&cell->sessions);
        netns_stock_init(&cell->netns);
        pthread_mutex_init(&cell->description_lock, NULL);
        cell->config = config_copy(config);
        cell->layers = json_array();
        cell->warnings = json_array();
        cell->privileged = geteuid() == 0;
        cell->host_uid = cell->privileged ? PRIVILEGED_GUEST_UID : geteuid();
        cell->host_gid = cell->privileged ? PRIVILEGED_GUEST_GID : getegid();
        if (!cell->config || !cell->layers || !cell->warnings) {
                err_sys(err, ENOMEM, "cell");
                goto fail;
        }
        const struct runtime *rt = cell->config->runtime;
        cell->interpreter = cell->config->interpreter ? cell->config->interpreter : rt->interpreter;
        cell->interpreter_real = realpath(cell->interpreter, NULL);
        if (!cell->interpreter_real || access(cell->interpreter_real, X_OK) < 0) {
                err_set(err, CODECELL_ERR_UNSUPPORTED, ENOENT,
                        "%s: interpreter %s not found; install %s", rt->name, cell->interpreter,
                        rt->package_hint);
                goto fail;
        }
        /* An interpreter or library folders the configuration names are checked now; the
         * system's own interpreter is asked only when the description is first wanted
         * (a run does not need it). */
        if ((cell->config->interpreter || cell->config->n_libraries) &&
            interpreter_probe(cell->config, cell->interpreter, cell->privileged, &cell->probe,
                              err) < 0)
                goto fail;
        cell->argv = runtime_argv(rt, rt->boot, (const char *const *)cell->probe.load_paths,
                                  cell->probe.n_load_paths, NULL, 0);
        if (!cell->argv) {
                err_sys(err, ENOMEM, "cell");
                goto fail;
        }
        /* Its own path, not a bare name: Python derives sys.executable from argv[0], and one
         * outside /usr would otherwise be taken for the python3 found in PATH. */
        cell->argv[0] = (char *)cell->interpreter;
        cell->elf_interpreter = elf_interpreter(cell->interpreter_real);
        static const char *const always[] = {
                "user_namespace", "mount_namespace", "pid_namespace",        "network_namespace",
                "ipc_namespace",  "uts_namespace",   "cgroup_namespace",     "pivot_root",
                "seccomp",        "no_new_privs",    "capabilities_dropped", "rlimits",
        };
        for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++)
                add_layer(cell, always[i]);
        if (mount_plan_build(&cell->plan, cell->config, SANDBOX_INNER_UID, err) < 0 ||
            seccomp_program_compile(&cell->seccomp, cell->config->subprocesses, err) < 0 ||
            plan_landlock(cell, err) < 0 || plan_cgroup(cell, err) < 0 ||
            plan_idmaps(cell, err) < 0 ||
            mount_roots_open(&cell->mount_roots, cell->config, err) < 0)
                goto fail;
        for (size_t i = 0; i < cell->config->n_mounts; i++)
                cell->writes_host |= cell->config->mounts[i].read_write;
        if (disposal_start(&cell->disposal, err) < 0 ||
            pool_start(cell, cell->config->pool, &cell->pool, err) < 0)
                goto fail;
        return cell;
fail:
        codecell_cell_free(cell);
        return NULL;
}

void codecell_cell_free(codecell_cell *cell)
{
        if (!cell)
                return;
        /* First the sessions, then the pool whose thread started their kernels: both use
         * everything below. */
        session_table_free(cell);
        pool_stop(cell->pool);
        disposal_stop(cell->disposal);
        netns_stock_free(&cell->netns);
        if (cell->idmap_fds && cell->config)
                for (size_t i = 0; i < cell->config->n_mounts; i++)
                        if (cell->idmap_fds[i] >= 0)
                                close(cell->idmap_fds[i]);
        free(cell->idmap_fds);
        mount_roots_close(&cell->mount_roots);
        mount_plan_free(&cell->plan);
        seccomp_program_free(&cell->seccomp);
        json_decref(cell->layers);
        json_decref(cell->warnings);
        free(cell->interpreter_real);
        free(cell->argv);
        interpreter_info_free(&cell->probe);
        free(cell->elf_interpreter);
        free(cell->description);
        tool_table_free(&cell->tools);
        pthread_mutex_destroy(&cell->description_lock);
        codecell_config_free(cell->config);
        free(cell);
}

int codecell_cell_warmup(codecell_cell *cell, codecell_error *err)
{
        /* Settled: the sandboxes of finished runs collected, the pool full. */
        disposal_flush(cell->disposal);
        return pool_warmup(cell->pool, err);
}

/* The description, built the first time it is wanted: the system's interpreter is probed for
 * its version and libraries then, not when a cell that only runs code is made. Holding
 * description_lock. */
static char *description_locked(struct codecell_cell *cell)
{
        if (!cell->description) {
                /* A system interpreter that cannot be probed still runs code: its description
                 * just names no version and no libraries. */
                if (!cell->probe.version)
                        (void)interpreter_probe(cell->config, cell->interpreter, cell->privileged,
                                                &cell->probe, NULL);
                cell->description = description_build(cell->config, &cell->probe, &cell->tools);
        }
        return cell->description;
}

const char *codecell_cell_warning(const codecell_cell *cell, size_t i)
{
        return json_string_value(json_array_get(cell->warnings, i));
}

const char *codecell_cell_description(const codecell_cell *const_cell)
{
        /* Filled once, under the lock: the cell looks the same to its callers. */
        struct codecell_cell *cell = (struct codecell_cell *)const_cell;
        pthread_mutex_lock(&cell->description_lock);
        const char *text = description_locked(cell);
        pthread_mutex_unlock(&cell->description_lock);
        return text ? text : "";
}

int cell_add_tool(codecell_cell *cell, struct tool *tool, codecell_error *err)
{
        int r = tool_table_add(&cell->tools, tool, err);
        if (r < 0)
                return r;
        /* The next codecell_cell_description() builds it with the tool. */
        pthread_mutex_lock(&cell->description_lock);
        free(cell->description);
        cell->description = NULL;
        pthread_mutex_unlock(&cell->description_lock);
        return 0;
}

int codecell_cell_add_tool(codecell_cell *cell, const char *name, const char *description,
                           const char *input_schema_json, codecell_tool_handler handler,
                           void *userdata, codecell_error *err)
{
        const char *problem = tool_name_problem(name);
        if (problem)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "tool \"%s\": name %s",
                               name ? name : "", problem);
        if (!handler)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "tool \"%s\": no handler", name);
        json_error_t jerr;
        json_t *schema = input_schema_json
                                 ? json_loads(input_schema_json, JSON_REJECT_DUPLICATES, &jerr)
                                 : json_pack("{s:s, s:{}}", "type", "object", "properties");
        if (!schema)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                               "tool \"%s\": input schema is not valid JSON: %s", name, jerr.text);
        problem = tool_schema_problem(schema);
        if (problem) {
                json_decref(schema);
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "tool \"%s\": input schema %s",
                               name, problem);
        }
        struct tool *tool = calloc(1, sizeof(*tool));
        if (!tool) {
                json_decref(schema);
                return err_sys(err, ENOMEM, "tool");
        }
        tool->name = strdup(name);
        tool->description = strdup(description ? description : "");
        tool->input_schema = schema;
        tool->handler = handler;
        tool->userdata = userdata;
        if (!tool->name || !tool->description) {
                tool_free(tool);
                return err_sys(err, ENOMEM, "tool");
        }
        return cell_add_tool(cell, tool, err);
}

static int check_code(struct codecell_cell *cell, const char *code, size_t len, codecell_error *err)
{
        uint64_t max = cell->config->limits[CODECELL_LIMIT_CODE_BYTES];
        if (!code)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "code: missing");
        if (len > max)
                return err_set(err, CODECELL_ERR_INVALID, E2BIG,
                               "code: %zu bytes is over the %llu-byte limit", len,
                               (unsigned long long)max);
        if (!utf8_valid(code, len))
                return err_set(err, CODECELL_ERR_INVALID, EILSEQ, "code: not valid UTF-8");
        if (memchr(code, '\0', len))
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "code: contains a NUL byte");
        return 0;
}

int cell_result_for(struct codecell_cell *cell, const char *code, size_t len, codecell_result **ret,
                    codecell_error *err)
{
        *ret = NULL;
        int r = check_code(cell, code, len, err);
        if (r < 0)
                return r;
        codecell_result *res = result_new();
        if (!res)
                return err_sys(err, ENOMEM, "result");
        res->layers = json_incref(cell->layers);
        res->warnings = json_incref(cell->warnings);
        *ret = res;
        return 0;
}

int codecell_cell_run_with(codecell_cell *cell, const char *code, size_t len,
                           const codecell_run_options *options, codecell_result **ret_result,
                           codecell_error *err)
{
        *ret_result = NULL;
        int r = run_input_check(options, err);
        if (r == 0)
                r = cell_result_for(cell, code, len, ret_result, err);
        if (r == 0)
                execution_run(cell, code, len, options, *ret_result);
        return r;
}

int codecell_cell_run(codecell_cell *cell, const char *code, size_t len,
                      codecell_result **ret_result, codecell_error *err)
{
        return codecell_cell_run_with(cell, code, len, NULL, ret_result, err);
}

void codecell_cell_info_get(codecell_cell *cell, codecell_cell_info *ret)
{
        const codecell_config *c = cell->config;
        *ret = (codecell_cell_info){.language = c->runtime->name, .pool_size = c->pool};
        for (size_t i = 0; i < c->n_mounts; i++)
                ret->writes_host |= c->mounts[i].read_write;
        memcpy(ret->limits, c->limits, sizeof(c->limits)); /* the rest stays 0 */
        ret->pool_ready = pool_ready_count(cell->pool);
        pthread_mutex_lock(&cell->tools.lock);
        ret->tools = cell->tools.n;
        ret->tool_calls = atomic_load(&cell->tools.calls);
        ret->tool_refusals = atomic_load(&cell->tools.refused);
        pthread_mutex_unlock(&cell->tools.lock);
        pthread_mutex_lock(&cell->sessions.lock);
        ret->sessions_open = cell->sessions.n;
        pthread_mutex_unlock(&cell->sessions.lock);
}
