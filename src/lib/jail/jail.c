/* The jail's parent side before the fork: options checked, walls prepared (the child only
 * applies them), and the one-call codecell_jail_run. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "error.h"
#include "jail.h"
#include "pipe_write.h"
#include "util.h"

#define DEFAULT_TIMEOUT_MS 30000
#define DEFAULT_MEMORY_BYTES (512ULL << 20)
#define DEFAULT_PIDS 64
#define DEFAULT_ANSWER_BYTES (64ULL << 20)
#define MAX_TIMEOUT_MS (24ULL * 3600 * 1000)
#define MIN_MEMORY_BYTES (1ULL << 20)

/* The seed's implicit read-only paths (agent_jail's SYSTEM_READ_PATHS), so that an
 * interpreter keeps working in the child. */
static const char *const system_read_paths[] = {"/usr", "/lib", "/lib64",       "/proc",
                                                "/dev", "/etc", "/run/systemd", NULL};
/* Devices every program expects to write to. */
static const char *const devices[] = {"/dev/null",   "/dev/zero",    "/dev/full",
                                      "/dev/random", "/dev/urandom", NULL};

/* The filters, compiled once per process (without and with the network). */
static pthread_once_t seccomp_once = PTHREAD_ONCE_INIT;
static struct seccomp_program seccomp_programs[2];
static int seccomp_status;
static codecell_error seccomp_error;

static void compile_filters(void)
{
        for (int network = 0; network < 2 && seccomp_status == 0; network++)
                seccomp_status = seccomp_program_compile_network(&seccomp_programs[network], true,
                                                                 network, &seccomp_error);
}

static void add_layer(struct codecell_jail *j, const char *name)
{
        size_t used = strlen(j->layers);
        snprintf(j->layers + used, sizeof(j->layers) - used, "%s%s", used ? "," : "", name);
}

/* Notes what under the jail's warnings (the first few). */
static int warn_of(struct codecell_jail *j, const char *what, codecell_error *err)
{
        if (j->n_warnings < JAIL_MAX_WARNINGS) {
                j->warnings[j->n_warnings] = strdup(what);
                if (!j->warnings[j->n_warnings])
                        return err_sys(err, ENOMEM, "jail");
                j->n_warnings++;
        }
        return 0;
}

/* A wall replaced by the one the seed itself stands on (RLIMIT_AS for the cgroup): told under
 * "warn" and "raise", refused by neither. */
static int fallen_back(struct codecell_jail *j, const char *what, codecell_error *err)
{
        return j->options.on_unsupported == CODECELL_POLICY_IGNORE ? 0 : warn_of(j, what, err);
}

static int missing_layer(struct codecell_jail *j, const char *what, codecell_error *err)
{
        if (j->options.on_unsupported == CODECELL_POLICY_RAISE)
                return err_set(err, CODECELL_ERR_UNSUPPORTED, ENOTSUP,
                               "%s (on_unsupported is \"raise\")", what);
        return j->options.on_unsupported == CODECELL_POLICY_WARN ? warn_of(j, what, err) : 0;
}

static int check_options(codecell_jail_options *o, codecell_error *err)
{
        if (o->timeout_ms == 0)
                o->timeout_ms = DEFAULT_TIMEOUT_MS;
        if (o->cpu_ms == 0)
                o->cpu_ms = o->timeout_ms;
        if (o->memory_bytes == 0)
                o->memory_bytes = DEFAULT_MEMORY_BYTES;
        if (o->pids == 0)
                o->pids = DEFAULT_PIDS;
        if (o->answer_bytes == 0)
                o->answer_bytes = DEFAULT_ANSWER_BYTES;
        if (o->timeout_ms > MAX_TIMEOUT_MS || o->cpu_ms > MAX_TIMEOUT_MS)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                               "jail: timeout over the %llu-ms maximum",
                               (unsigned long long)MAX_TIMEOUT_MS);
        if (o->memory_bytes < MIN_MEMORY_BYTES)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                               "jail: memory of %llu bytes is below the 1 MiB minimum",
                               (unsigned long long)o->memory_bytes);
        if ((unsigned)o->on_unsupported > CODECELL_POLICY_IGNORE)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                               "jail: on_unsupported must be warn, raise or ignore");
        return 0;
}

/* Whether dir is one of the fs_allow folders, which the child sees as its own (jail_idmap.c). */
static bool in_fs_allow(const char *dir, const char *const *fs_allow)
{
        for (size_t i = 0; fs_allow && fs_allow[i]; i++) {
                char *real = fs_allow[i][0] ? realpath(fs_allow[i], NULL) : NULL;
                bool same = real && strcmp(real, dir[0] ? dir : "/") == 0;
                free(real);
                if (same)
                        return true;
        }
        return false;
}

/* Whether the child of a root caller (nobody, no supplementary group) may search every folder
 * down to path, by the mode bits: a folder under /root is out of its reach whatever Landlock
 * grants, and opening it for the rule would fail the set-up. An fs_allow folder on the way
 * counts as the child's: it is idmapped so. */
static bool reachable(const char *path, uid_t uid, gid_t gid, const char *const *fs_allow)
{
        char dir[PATH_MAX];
        size_t len = strlen(path);
        if (len >= sizeof(dir))
                return false;
        memcpy(dir, path, len + 1);
        for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
                *slash = '\0';
                struct stat st;
                if (stat(dir[0] ? dir : "/", &st) < 0)
                        return false;
                mode_t x = st.st_uid == uid ? S_IXUSR : st.st_gid == gid ? S_IXGRP : S_IXOTH;
                if (!(st.st_mode & x) && !((st.st_mode & S_IXUSR) && in_fs_allow(dir, fs_allow)))
                        return false;
        }
        return true;
}

/* Resolves one list into jail->paths: a path that does not exist or that the child cannot
 * reach is left out (as the seed does); any other failure names the path. */
static int add_paths(struct codecell_jail *j, const char *const *list, const char *what,
                     const char *const *fs_allow, codecell_error *err)
{
        for (size_t i = 0; list && list[i]; i++) {
                if (!list[i][0])
                        return err_set(err, CODECELL_ERR_INVALID, EINVAL, "jail: %s[%zu] is empty",
                                       what, i);
                char *real = realpath(list[i], NULL);
                if (!real && (errno == ENOENT || errno == ENOTDIR))
                        continue;
                if (!real)
                        return err_sys(err, errno, "jail: %s %.*s", what, utf8_prefix(list[i], 200),
                                       list[i]);
                /* A caller that is not root has the child's own ids and groups: realpath
                 * reaching the path is the answer. */
                if (j->privileged && !reachable(real, j->host_uid, j->host_gid, fs_allow)) {
                        free(real);
                        continue;
                }
                if (j->n_paths >= JAIL_MAX_PATHS) {
                        free(real);
                        return err_set(err, CODECELL_ERR_INVALID, E2BIG,
                                       "jail: more than %d paths in fs_allow and fs_read_allow",
                                       JAIL_MAX_PATHS);
                }
                j->given[j->n_paths] = list[i];
                j->paths[j->n_paths++] = real;
        }
        return 0;
}

static int plan_landlock(struct codecell_jail *j, size_t n_read_write, codecell_error *err)
{
        struct landlock_plan *ll = &j->landlock;
        ll->abi = landlock_abi();
        ll->network = j->options.network;
        if (ll->abi <= 0) {
                ll->abi = 0;
                return missing_layer(j, "landlock: not available in this kernel", err);
        }
        int r = 0;
        struct stat st;
        for (size_t i = 0; r == 0 && system_read_paths[i]; i++)
                if (stat(system_read_paths[i], &st) == 0)
                        r = landlock_plan_add(ll, system_read_paths[i], GRANT_READ);
        for (size_t i = 0; r == 0 && devices[i]; i++)
                if (stat(devices[i], &st) == 0)
                        r = landlock_plan_add(ll, devices[i], GRANT_DEVICE);
        for (size_t i = 0; r == 0 && i < j->n_paths; i++)
                /* What the function leaves in fs_allow is read by the caller afterwards: files
                 * and folders only, never a link to follow or a FIFO to block on. */
                r = landlock_plan_add(ll, j->paths[i],
                                      i < n_read_write ? GRANT_WRITE_FILES : GRANT_READ);
        if (r < 0)
                return err_set(err, CODECELL_ERR_INVALID, -r, "jail: too many Landlock rules");
        char name[32];
        snprintf(name, sizeof(name), "landlock_abi_%d", ll->abi);
        add_layer(j, name);
        return 0;
}

/* Virtual memory of this process now, in bytes (0 when unknown). */
static uint64_t address_space_now(void)
{
        char text[128];
        if (read_file("/proc/self/statm", text, sizeof(text)) <= 0)
                return 0;
        return strtoull(text, NULL, 10) * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void add_rlimit(struct codecell_jail *j, int id, rlim_t soft, rlim_t hard)
{
        j->rlimits[j->n_rlimits++] =
                (struct sandbox_rlimit){id, {.rlim_cur = soft, .rlim_max = hard}};
}

static int plan_limits(struct codecell_jail *j, codecell_error *err)
{
        codecell_error why = {0};
        /* Inside another jail the outer's cgroup (if any) holds this one too, and a cgroup
         * of its own is out of the outer's reach: RLIMIT_AS, as for any jail without one. */
        if (!j->nested && jail_cgroup_create(j, &why) == 0)
                add_layer(j, j->cgroup.backend->name);
        if (!j->has_cgroup) {
                char what[sizeof(why.message) + 256];
                snprintf(what, sizeof(what),
                         "cgroup: %s; memory is limited by RLIMIT_AS (on top of what the child "
                         "shares) for each process, not for the jail as a whole (up to pids x "
                         "memory_mb: %llu processes), and processes by RLIMIT_NPROC instead",
                         j->nested ? "none inside another jail" : why.message,
                         (unsigned long long)j->options.pids);
                /* agent_jail's own memory limit: not a missing layer, even under "raise". */
                int r = j->nested ? 0 : fallen_back(j, what, err);
                if (r < 0)
                        return r;
                /* The snapshot's own mappings count against RLIMIT_AS: the budget comes on top. */
                uint64_t as = address_space_now() + j->options.memory_bytes;
                add_rlimit(j, RLIMIT_AS, as, as);
                add_layer(j, "rlimit_as");
        }
        /* The parent reads the CPU time every few ms; RLIMIT_CPU is the wall behind it for
         * each process (whole seconds: SIGXCPU at the first past the budget, SIGKILL one
         * later). */
        rlim_t cpu_s = (rlim_t)((j->options.cpu_ms + 999) / 1000);
        add_rlimit(j, RLIMIT_CPU, cpu_s, cpu_s + 1);
        add_rlimit(j, RLIMIT_NPROC, j->options.pids, j->options.pids);
        /* A core dump would write the caller's memory (its secrets among it) to disk. */
        add_rlimit(j, RLIMIT_CORE, 0, 0);
        jail_clamp_rlimits(j);
        return 0;
}

/* A root caller's fs_allow folders, writable as their owner (jail_idmap.c). */
static int plan_idmaps(struct codecell_jail *j, codecell_error *err)
{
        int r = 0;
        char why[sizeof(err->message)];
        for (size_t i = 0; j->privileged && !j->nested && r == 0 && i < j->n_read_write; i++) {
                int k = jail_idmap_prepare(j, i, j->given[i], why, sizeof(why));
                if (k < 0) /* the kernel cannot: none of them */
                        jail_idmap_close(j);
                if (k != 0)
                        r = missing_layer(j, why, err) < 0 ? -1 : k < 0 ? 1 : 0;
        }
        memset(j->given, 0, sizeof(j->given)); /* the caller's, gone after the call */
        if (r < 0)
                return -1;
        if (j->n_idmapped > 0)
                add_layer(j, "idmapped_fs_allow");
        return 0;
}

static int open_pipes(struct codecell_jail *j, codecell_error *err)
{
        if (pipe2(j->report, O_CLOEXEC) < 0 || pipe2(j->go, O_CLOEXEC) < 0 ||
            pipe2(j->answer, O_CLOEXEC) < 0)
                return err_sys(err, errno, "jail: pipes");
        j->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (j->null_fd < 0)
                return err_sys(err, errno, "jail: /dev/null");
        return 0;
}

codecell_jail *codecell_jail_new(const codecell_jail_options *options, codecell_error *err)
{
        struct codecell_jail *j = calloc(1, sizeof(*j));
        if (!j) {
                err_sys(err, ENOMEM, "jail");
                return NULL;
        }
        j->report[0] = j->report[1] = j->go[0] = j->go[1] = j->answer[0] = j->answer[1] = -1;
        j->null_fd = j->netns_fd = j->alive[0] = j->alive[1] = -1;
        if (options)
                j->options = *options;
        j->options.fs_allow = j->options.fs_read_allow = NULL;
        if (check_options(&j->options, err) < 0)
                goto fail;
        j->parent = getpid();
        j->privileged = geteuid() == 0;
        j->nested = jail_nested();
        /* Never root on the host: a root caller's child runs as nobody. */
        j->host_uid = j->privileged ? 65534 : geteuid();
        j->host_gid = j->privileged ? 65534 : getegid();
        const char *const *fs_allow = options ? options->fs_allow : NULL;
        if (add_paths(j, fs_allow, "fs_allow", fs_allow, err) < 0)
                goto fail;
        size_t n_read_write = j->n_paths;
        j->n_read_write = n_read_write;
        if (add_paths(j, options ? options->fs_read_allow : NULL, "fs_read_allow", fs_allow, err) <
            0)
                goto fail;
        if (j->nested)
                add_layer(j, "inside_another_jail");
        else
                add_layer(j, "user_namespace,mount_namespace,pid_namespace,ipc_namespace,"
                             "uts_namespace");
        if (!j->options.network && !j->nested)
                add_layer(j, "network_namespace");
        add_layer(j, "seccomp,no_new_privs,capabilities_dropped,rlimits");
        pthread_once(&seccomp_once, compile_filters);
        if (seccomp_status < 0) {
                if (err)
                        *err = seccomp_error;
                goto fail;
        }
        j->seccomp = &seccomp_programs[j->options.network ? 1 : 0];
        if (plan_landlock(j, n_read_write, err) < 0 || plan_limits(j, err) < 0 ||
            plan_idmaps(j, err) < 0 ||
            jail_keep_open_plan(j, options ? options->keep_open : NULL, err) < 0 ||
            open_pipes(j, err) < 0)
                goto fail;
        if (j->privileged && !j->options.network) {
                j->netns_fd = jail_netns_take(); /* -1: a new one at unshare */
        }
        return j;
fail:
        codecell_jail_free(j);
        return NULL;
}

void codecell_jail_free(codecell_jail *j)
{
        if (!j)
                return;
        int *fds[] = {&j->report[0], &j->report[1], &j->go[0],    &j->go[1],   &j->answer[0],
                      &j->answer[1], &j->null_fd,   &j->alive[0], &j->alive[1]};
        for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
                close_fd(fds[i]);
        jail_netns_give_back(j->netns_fd);
        jail_idmap_close(j);
        if (j->has_cgroup)
                j->cgroup.backend->destroy(&j->cgroup);
        for (size_t i = 0; i < j->n_paths; i++)
                free(j->paths[i]);
        for (size_t i = 0; i < j->n_warnings; i++)
                free(j->warnings[i]);
        free(j);
}

const char *codecell_jail_warning(const codecell_jail *j, size_t i)
{
        return j && i < j->n_warnings ? j->warnings[i] : NULL;
}

const char *codecell_jail_layers(const codecell_jail *j)
{
        return j ? j->layers : "";
}

/* A misuse in a child has no caller to tell: the child ends, and the parent reports a child
 * that ended before its walls were up. */
#define MISUSED 125

int codecell_jail_enter(codecell_jail *j)
{
        if (!j || j->entered)
                _exit(MISUSED);
        return jail_enter(j);
}

int codecell_jail_enter_namespaces(codecell_jail *j)
{
        if (!j || j->entered)
                _exit(MISUSED);
        return jail_enter_namespaces(j);
}

int codecell_jail_enter_walls(codecell_jail *j)
{
        if (!j || !j->entered || j->jailed || j->alive[0] < 0)
                _exit(MISUSED);
        return jail_enter_walls(j);
}

void codecell_jail_keep(codecell_jail *j, int pid)
{
        if (!j || !j->entered || j->jailed)
                _exit(MISUSED);
        jail_keep(j, pid > 0 ? pid : -EAGAIN);
}

int codecell_jail_answer(codecell_jail *j, codecell_jail_outcome outcome, const void *data,
                         size_t len)
{
        if (!j || !j->jailed)
                return -EINVAL;
        /* A process the function forked holds a copy of the jail: its answers would be
         * interleaved with the function's own. */
        if (getpid() != j->jailed_pid)
                return -EPERM;
        if (outcome != CODECELL_JAIL_VALUE && outcome != CODECELL_JAIL_RAISED &&
            outcome != CODECELL_JAIL_FILESYSTEM && outcome != CODECELL_JAIL_MEMORY)
                return -EINVAL;
        if (j->answered)
                return -EALREADY;
        j->answered = true;
        struct jail_answer_head head = {
                .magic = JAIL_ANSWER_MAGIC, .outcome = (uint32_t)outcome, .len = data ? len : 0};
        /* A small answer goes in one write with its head: the parent wakes once for it. */
        char whole[4096];
        if (head.len <= sizeof(whole) - sizeof(head)) {
                memcpy(whole, &head, sizeof(head));
                if (head.len)
                        memcpy(whole + sizeof(head), data, head.len);
                ssize_t n;
                do
                        n = pipe_write(j->answer[1], whole, sizeof(head) + head.len);
                while (n < 0 && errno == EINTR);
                return n == (ssize_t)(sizeof(head) + head.len) ? 0 : n < 0 ? -errno : -EIO;
        }
        /* The parent may have gone (or stopped reading past answer_bytes): EPIPE, not
         * SIGPIPE. */
        if (pipe_write(j->answer[1], &head, sizeof(head)) != (ssize_t)sizeof(head))
                return -errno;
        for (size_t done = 0; data && done < len;) {
                ssize_t n = pipe_write(j->answer[1], (const char *)data + done, len - done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                done += (size_t)n;
        }
        return 0;
}

const char *codecell_jail_outcome_name(codecell_jail_outcome outcome)
{
        static const char *const names[] = {"value",      "raised",  "timeout",    "memory",
                                            "filesystem", "crashed", "unsupported"};
        return (unsigned)outcome < sizeof(names) / sizeof(names[0]) ? names[outcome] : "unknown";
}

void codecell_jail_result_clear(codecell_jail_result *result)
{
        if (!result)
                return;
        free(result->data);
        memset(result, 0, sizeof(*result));
}

int codecell_jail_run(const codecell_jail_options *options, codecell_jail_fn fn, void *arg,
                      codecell_jail_result *ret, codecell_error *err)
{
        if (!fn || !ret)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "jail: no function or result");
        memset(ret, 0, sizeof(*ret));
        codecell_jail *j = codecell_jail_new(options, err);
        if (!j)
                return -(err && err->errno_value ? err->errno_value : EINVAL);
        /* glibc's fork: its handlers leave malloc and stdio usable in the child even when
         * another thread held their locks. */
        pid_t pid = fork();
        if (pid < 0) {
                int r = err_sys(err, errno, "jail: fork");
                codecell_jail_free(j);
                return r;
        }
        if (pid == 0) {
                codecell_jail_enter(j);
                fn(j, arg);
                if (!j->answered)
                        codecell_jail_answer(j, CODECELL_JAIL_VALUE, NULL, 0);
                _exit(0);
        }
        int r = codecell_jail_wait(j, pid, ret, err);
        codecell_jail_free(j);
        return r;
}
