#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "egress_policy.h"
#include "error.h"
#include "mount_rules.h"

#define MIB (1024ULL * 1024ULL)

static const uint64_t default_limits[CODECELL_LIMIT__COUNT] = {
        [CODECELL_LIMIT_TIMEOUT_MS] = 30000,
        [CODECELL_LIMIT_CPU_MS] = 10000,
        [CODECELL_LIMIT_MEMORY_BYTES] = 256 * MIB,
        [CODECELL_LIMIT_PIDS] = 64,
        [CODECELL_LIMIT_OUTPUT_BYTES] = 1 * MIB,
        [CODECELL_LIMIT_TMP_BYTES] = 64 * MIB,
        [CODECELL_LIMIT_WORK_BYTES] = 64 * MIB,
        [CODECELL_LIMIT_OPEN_FILES] = 256,
        [CODECELL_LIMIT_FILE_BYTES] = 64 * MIB,
        [CODECELL_LIMIT_CODE_BYTES] = 1 * MIB,
        [CODECELL_LIMIT_FRAME_BYTES] = 16 * MIB,
        [CODECELL_LIMIT_TOOL_CALLS] = 1000,
        [CODECELL_LIMIT_TOOL_REQUEST_BYTES] = 1 * MIB,
        [CODECELL_LIMIT_TOOL_ANSWER_BYTES] = 1 * MIB,
        [CODECELL_LIMIT_TOOL_CALL_MS] = 10000,
        [CODECELL_LIMIT_SESSIONS] = 8,
        [CODECELL_LIMIT_SESSION_IDLE_MS] = 300000,
        [CODECELL_LIMIT_MODEL_CHARS] = 20000,
        [CODECELL_LIMIT_IMAGES] = 8,
        [CODECELL_LIMIT_IMAGE_BYTES] = 4 * MIB,
        [CODECELL_LIMIT_FILES_IN] = 32,
        [CODECELL_LIMIT_FILES_IN_BYTES] = 8 * MIB,
        [CODECELL_LIMIT_TOOL_CONCURRENCY] = 8,
        [CODECELL_LIMIT_FILES_OUT] = 16,
        [CODECELL_LIMIT_FILE_OUT_BYTES] = 8 * MIB,
        [CODECELL_LIMIT_APPROVAL_MS] = 120000,
        [CODECELL_LIMIT_SESSION_JOURNAL_BYTES] = 8 * MIB,
        [CODECELL_LIMIT_RESTORE_MS] = 30000,
        [CODECELL_LIMIT_SESSION_RETENTION_MS] = 24ULL * 3600 * 1000,
};

/* Below these the interpreter cannot even start, so a smaller value is a configuration
 * mistake rather than a limit to enforce. */
static const uint64_t minimum_limits[CODECELL_LIMIT__COUNT] = {
        [CODECELL_LIMIT_MEMORY_BYTES] = 16 * MIB,
        [CODECELL_LIMIT_PIDS] = 4,
        [CODECELL_LIMIT_OPEN_FILES] = 16,
        [CODECELL_LIMIT_FRAME_BYTES] = 4096,
        /* Room for a marker and a few lines on each side of it. */
        [CODECELL_LIMIT_MODEL_CHARS] = 400,
};

/* The one list of the limits' names: the configuration file, errors and the bindings
 * (through codecell_limit_name) all take them from here. Every limit has one; a number no
 * limit has yet (22-24, kept for the other parts of issue 30) has none, and the bindings count
 * up to CODECELL_LIMIT_SLOTS past it. */
static const char *const limit_names[CODECELL_LIMIT__COUNT] = {
        [CODECELL_LIMIT_TIMEOUT_MS] = "timeout_ms",
        [CODECELL_LIMIT_CPU_MS] = "cpu_ms",
        [CODECELL_LIMIT_MEMORY_BYTES] = "memory_bytes",
        [CODECELL_LIMIT_PIDS] = "pids",
        [CODECELL_LIMIT_OUTPUT_BYTES] = "output_bytes",
        [CODECELL_LIMIT_TMP_BYTES] = "tmp_bytes",
        [CODECELL_LIMIT_WORK_BYTES] = "work_bytes",
        [CODECELL_LIMIT_OPEN_FILES] = "open_files",
        [CODECELL_LIMIT_FILE_BYTES] = "file_bytes",
        [CODECELL_LIMIT_CODE_BYTES] = "code_bytes",
        [CODECELL_LIMIT_FRAME_BYTES] = "frame_bytes",
        [CODECELL_LIMIT_TOOL_CALLS] = "tool_calls",
        [CODECELL_LIMIT_TOOL_REQUEST_BYTES] = "tool_request_bytes",
        [CODECELL_LIMIT_TOOL_ANSWER_BYTES] = "tool_answer_bytes",
        [CODECELL_LIMIT_TOOL_CALL_MS] = "tool_call_ms",
        [CODECELL_LIMIT_SESSIONS] = "sessions",
        [CODECELL_LIMIT_SESSION_IDLE_MS] = "session_idle_ms",
        [CODECELL_LIMIT_MODEL_CHARS] = "model_chars",
        [CODECELL_LIMIT_IMAGES] = "images",
        [CODECELL_LIMIT_IMAGE_BYTES] = "image_bytes",
        [CODECELL_LIMIT_FILES_IN] = "files_in",
        [CODECELL_LIMIT_FILES_IN_BYTES] = "files_in_bytes",
        [CODECELL_LIMIT_TOOL_CONCURRENCY] = "tool_concurrency",
        [CODECELL_LIMIT_FILES_OUT] = "files_out",
        [CODECELL_LIMIT_FILE_OUT_BYTES] = "file_out_bytes",
        [CODECELL_LIMIT_APPROVAL_MS] = "approval_ms",
        [CODECELL_LIMIT_SESSION_JOURNAL_BYTES] = "session_journal_bytes",
        [CODECELL_LIMIT_RESTORE_MS] = "restore_ms",
        [CODECELL_LIMIT_SESSION_RETENTION_MS] = "session_retention_ms",
};

codecell_config *codecell_config_new(const char *language, codecell_error *err)
{
        const struct runtime *rt = runtime_find(language);
        if (!rt) {
                char names[128];
                runtime_names(names, sizeof(names));
                err_set(err, CODECELL_ERR_INVALID, EINVAL,
                        "unknown language \"%s\" (supported: %s)", language ? language : "", names);
                return NULL;
        }
        codecell_config *c = calloc(1, sizeof(*c));
        if (!c) {
                err_sys(err, ENOMEM, "config");
                return NULL;
        }
        c->runtime = rt;
        memcpy(c->limits, default_limits, sizeof(c->limits));
        c->policy = CODECELL_POLICY_WARN;
        c->pool = 2;
        return c;
}

static void mount_clear(struct cc_mount *m)
{
        free(m->source);
        free(m->dest);
        free(m->description);
}

void codecell_config_free(codecell_config *c)
{
        if (!c)
                return;
        for (size_t i = 0; i < c->n_mounts; i++)
                mount_clear(&c->mounts[i]);
        free(c->mounts);
        free(c->output_folder);
        for (size_t i = 0; i < c->n_libraries; i++) {
                free(c->libraries[i].source);
                free(c->libraries[i].where);
        }
        free(c->libraries);
        free(c->interpreter);
        free(c->interpreter_where);
        json_decref(c->listed_libraries);
        free(c->listed_where);
        json_decref(c->network);
        egress_policy_free(c->network_policy);
        free(c);
}

const char *config_listed_library_problem(const char *name)
{
        static const char *const problem =
                "must be a name the code imports or requires (\"numpy\", \"net/http\"): "
                "letters, digits, '_', '.', '/' and '-', at most 128";
        size_t len = name ? strlen(name) : 0;
        if (len == 0 || len > 128 || name[0] == '.' || name[0] == '/' || name[0] == '-' ||
            strstr(name, ".."))
                return problem;
        for (size_t i = 0; i < len; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-",
                            name[i]))
                        return problem;
        return NULL;
}

/* A bad mount, worded for its caller: "mount SRC:DST: dest must be absolute" through the API,
 * "cells[0].mounts[1].dest: must be absolute" from a configuration file (where). */
static int mount_error(codecell_error *err, int errno_value, const char *where, const char *source,
                       const char *dest, const char *key, const char *what)
{
        if (where)
                return err_set(err, CODECELL_ERR_INVALID, errno_value, "%s.%s: %s", where, key,
                               what);
        return err_set(err, CODECELL_ERR_INVALID, errno_value, "mount %s:%s: %s %s",
                       source ? source : "", dest ? dest : "", key, what);
}

int config_add_mount(codecell_config *c, const char *source, const char *dest,
                     codecell_mount_mode mode, const char *description, const char *where,
                     codecell_error *err)
{
        bool read_write = mode == CODECELL_MOUNT_READ_WRITE;
        bool exec = mode == CODECELL_MOUNT_READ_ONLY_EXEC;
        if (!read_write && !exec && mode != CODECELL_MOUNT_READ_ONLY)
                return mount_error(err, EINVAL, where, source, dest, "mode", "is not a mount mode");
        char what[PATH_MAX + 64];
        const char *problem = mount_dest_problem(dest);
        if (problem)
                return mount_error(err, EINVAL, where, source, dest, "dest", problem);
        const char *reserved = mount_dest_reserved(dest);
        if (reserved) {
                snprintf(what, sizeof(what), "overlaps the reserved %s", reserved);
                return mount_error(err, EINVAL, where, source, dest, "dest", what);
        }
        for (size_t i = 0; i < c->n_mounts; i++)
                if (paths_overlap(dest, c->mounts[i].dest)) {
                        snprintf(what, sizeof(what), "overlaps the mount at %s", c->mounts[i].dest);
                        return mount_error(err, EINVAL, where, source, dest, "dest", what);
                }
        if (!source || !*source)
                return mount_error(err, EINVAL, where, source, dest, "source", "is empty");

        _cleanup_free_ char *real = realpath(source, NULL);
        if (!real) {
                snprintf(what, sizeof(what), "%s %s", source,
                         errno == ENOENT ? "does not exist" : "cannot be resolved");
                return mount_error(err, errno, where, source, dest, "source", what);
        }
        struct stat st;
        if (stat(real, &st) < 0)
                return err_sys(err, errno, "mount %s:%s: source", source, dest);
        if (!S_ISDIR(st.st_mode))
                return mount_error(err, ENOTDIR, where, source, dest, "source",
                                   "is not a directory");
        /* What the guest writes must never be on an exec mount. */
        for (size_t i = 0; i < c->n_mounts; i++)
                if ((exec ? c->mounts[i].read_write : read_write && c->mounts[i].exec) &&
                    paths_overlap(real, c->mounts[i].source)) {
                        snprintf(what, sizeof(what),
                                 "%s overlaps the %s mount at %s: a folder the guest can write "
                                 "cannot be exec",
                                 real, exec ? "read-write" : "exec", c->mounts[i].dest);
                        return mount_error(err, EINVAL, where, source, dest, "source", what);
                }

        struct cc_mount *grown = realloc(c->mounts, (c->n_mounts + 1) * sizeof(*grown));
        if (!grown)
                return err_sys(err, ENOMEM, "mount");
        c->mounts = grown;
        struct cc_mount m = {
                .source = steal_ptr(real),
                .dest = strdup(dest),
                .read_write = read_write,
                .exec = exec,
                .description = strdup(description ? description : ""),
        };
        if (!m.dest || !m.description) {
                mount_clear(&m);
                return err_sys(err, ENOMEM, "mount");
        }
        c->mounts[c->n_mounts++] = m;
        return 0;
}

int codecell_config_add_mount(codecell_config *c, const char *source, const char *dest,
                              bool read_write, const char *description, codecell_error *err)
{
        return config_add_mount(c, source, dest,
                                read_write ? CODECELL_MOUNT_READ_WRITE : CODECELL_MOUNT_READ_ONLY,
                                description, NULL, err);
}

int codecell_config_add_mount_mode(codecell_config *c, const char *source, const char *dest,
                                   codecell_mount_mode mode, const char *description,
                                   codecell_error *err)
{
        return config_add_mount(c, source, dest, mode, description, NULL, err);
}

/* A bad interpreter or library, worded for its caller: "interpreter /x: does not exist"
 * through the API, "cells[0].interpreter: /x does not exist" from a configuration file. */
static int path_error(codecell_error *err, int errno_value, const char *where, const char *what,
                      const char *path, const char *problem)
{
        if (where)
                return err_set(err, CODECELL_ERR_INVALID, errno_value, "%s: %s %s", where,
                               path ? path : "", problem);
        return err_set(err, CODECELL_ERR_INVALID, errno_value, "%s %s: %s", what, path ? path : "",
                       problem);
}

/* The canonical path of an existing file (dir false) or directory into *ret_real. */
static int existing(const char *path, bool dir, const char *where, const char *what,
                    char **ret_real, codecell_error *err)
{
        *ret_real = NULL;
        if (!path || !*path)
                return path_error(err, EINVAL, where, what, "", "is empty");
        _cleanup_free_ char *real = realpath(path, NULL);
        struct stat st;
        if (!real || stat(real, &st) < 0)
                return path_error(err, errno, where, what, path,
                                  errno == ENOENT ? "does not exist" : "cannot be resolved");
        if (dir != S_ISDIR(st.st_mode) || (!dir && !S_ISREG(st.st_mode)))
                return path_error(err, dir ? ENOTDIR : EINVAL, where, what, path,
                                  dir ? "is not a directory" : "is not a regular file");
        *ret_real = steal_ptr(real);
        return 0;
}

int config_set_interpreter(codecell_config *c, const char *path, const char *where,
                           codecell_error *err)
{
        _cleanup_free_ char *real = NULL;
        int r = existing(path, false, where, "interpreter", &real, err);
        if (r < 0)
                return r;
        if (access(real, X_OK) < 0)
                return path_error(err, errno, where, "interpreter", path, "is not executable");
        /* Whether it runs, and is this language, is known when the cell probes it; its
         * errors then name where the path came from. */
        char *origin = where ? strdup(where) : NULL;
        if (where && !origin)
                return err_sys(err, ENOMEM, "interpreter");
        free(c->interpreter);
        free(c->interpreter_where);
        c->interpreter = steal_ptr(real);
        c->interpreter_where = origin;
        return 0;
}

int config_add_library(codecell_config *c, const char *path, codecell_mount_mode mode,
                       const char *where, codecell_error *err)
{
        if (mode != CODECELL_MOUNT_READ_ONLY && mode != CODECELL_MOUNT_READ_ONLY_EXEC)
                return path_error(err, EINVAL, where, "library", path,
                                  "mode: a library folder is never writable (\"ro\" or \"exec\")");
        if (c->n_libraries >= CONFIG_LIBRARIES_MAX) {
                char what[64];
                snprintf(what, sizeof(what), "is one too many (at most %d library folders)",
                         CONFIG_LIBRARIES_MAX);
                return path_error(err, E2BIG, where, "library", path, what);
        }
        _cleanup_free_ char *real = NULL;
        int r = existing(path, true, where, "library", &real, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < c->n_libraries; i++)
                if (strcmp(c->libraries[i].source, real) == 0)
                        return path_error(err, EINVAL, where, "library", path, "is listed twice");
        _cleanup_free_ char *origin = where ? strdup(where) : NULL;
        struct cc_library *grown = realloc(c->libraries, (c->n_libraries + 1) * sizeof(*grown));
        if (!grown || (where && !origin))
                return err_sys(err, ENOMEM, "library");
        c->libraries = grown;
        c->libraries[c->n_libraries++] = (struct cc_library){
                .source = steal_ptr(real),
                .exec = mode == CODECELL_MOUNT_READ_ONLY_EXEC,
                .where = steal_ptr(origin),
        };
        return 0;
}

int codecell_config_set_interpreter(codecell_config *c, const char *path, codecell_error *err)
{
        return config_set_interpreter(c, path, NULL, err);
}

int codecell_config_add_library(codecell_config *c, const char *path, codecell_mount_mode mode,
                                codecell_error *err)
{
        return config_add_library(c, path, mode, NULL, err);
}

const char *codecell_limit_name(codecell_limit limit)
{
        return (unsigned)limit < CODECELL_LIMIT__COUNT ? limit_names[limit] : NULL;
}

bool codecell_limit_parse(const char *name, codecell_limit *ret)
{
        for (int k = 0; name && k < CODECELL_LIMIT__COUNT; k++)
                if (limit_names[k] && strcmp(name, limit_names[k]) == 0) {
                        *ret = (codecell_limit)k;
                        return true;
                }
        return false;
}

const char *config_limit_problem(codecell_limit limit, uint64_t value, char *buf, size_t size)
{
        if (value == 0)
                return "must be above 0";
        if (value < minimum_limits[limit]) {
                snprintf(buf, size, "%llu is below the minimum %llu", (unsigned long long)value,
                         (unsigned long long)minimum_limits[limit]);
                return buf;
        }
        return NULL;
}

int codecell_config_set_limit(codecell_config *c, codecell_limit limit, uint64_t value,
                              codecell_error *err)
{
        if ((unsigned)limit >= CODECELL_LIMIT__COUNT || !limit_names[limit])
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "unknown limit %d", (int)limit);
        char buf[96];
        const char *problem = config_limit_problem(limit, value, buf, sizeof(buf));
        if (problem)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "limit %s: %s",
                               limit_names[limit], problem);
        c->limits[limit] = value;
        return 0;
}

uint64_t codecell_config_get_limit(const codecell_config *c, codecell_limit limit)
{
        if ((unsigned)limit >= CODECELL_LIMIT__COUNT)
                return 0;
        return c->limits[limit];
}

void codecell_config_set_policy(codecell_config *c, codecell_policy policy)
{
        c->policy = policy;
}

/* The fork server (src/zygote/zygote.c) and the forked sandboxes' init (src/zygote/init.c),
 * embedded at build time; size 0 where they could not be built. */
extern const size_t codecell_zygote_so_size;
extern const size_t codecell_init_bin_size;

bool config_forks(const codecell_config *c)
{
        return c->start == CODECELL_START_FORK && codecell_zygote_so_size > 0 &&
               codecell_init_bin_size > 0;
}

int codecell_config_set_start(codecell_config *c, codecell_start start, codecell_error *err)
{
        if (start != CODECELL_START_FORK && start != CODECELL_START_EXEC)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                               "start: %d is neither CODECELL_START_FORK nor CODECELL_START_EXEC",
                               (int)start);
        c->start = start;
        return 0;
}

void codecell_config_set_subprocesses(codecell_config *c, bool allowed)
{
        c->subprocesses = allowed;
}

int codecell_config_set_image_folder(codecell_config *c, const char *path, codecell_error *err)
{
        return codecell_config_set_output_folder(c, path, err);
}

int codecell_config_set_output_folder(codecell_config *c, const char *path, codecell_error *err)
{
        const char *problem = path ? mount_dest_problem(path) : NULL;
        if (problem)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "output folder %s: %s", path,
                               problem);
        /* Somewhere the code can write: its scratch trees or a read-write folder. */
        bool writable = path && (paths_overlap(path, "/work") || paths_overlap(path, "/tmp"));
        for (size_t i = 0; path && !writable && i < c->n_mounts; i++)
                writable = c->mounts[i].read_write && paths_overlap(path, c->mounts[i].dest) &&
                           strlen(path) >= strlen(c->mounts[i].dest);
        if (path && !writable)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                               "output folder %s: the code cannot write there; use /work, /tmp "
                               "or a read-write folder (added before it)",
                               path);
        char *copy = path ? strdup(path) : NULL;
        if (path && !copy)
                return err_sys(err, ENOMEM, "output folder");
        free(c->output_folder);
        c->output_folder = copy;
        return 0;
}

int codecell_config_set_pool(codecell_config *c, size_t size, codecell_error *err)
{
        if (size > 64)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                               "pool: %zu is over the maximum 64", size);
        c->pool = size;
        return 0;
}

codecell_config *config_copy(const codecell_config *src)
{
        codecell_config *c = calloc(1, sizeof(*c));
        if (!c)
                return NULL;
        *c = *src;
        c->mounts = NULL;
        c->n_mounts = 0;
        c->output_folder = NULL;
        if (src->output_folder && !(c->output_folder = strdup(src->output_folder)))
                goto fail;
        c->libraries = NULL;
        c->n_libraries = 0;
        c->interpreter = c->interpreter_where = NULL;
        c->listed_libraries = NULL;
        c->listed_where = NULL;
        c->network = NULL;
        c->network_policy = NULL;
        if (src->network && (!(c->network = json_deep_copy(src->network)) ||
                             !(c->network_policy = egress_policy_copy(src->network_policy))))
                goto fail;
        if ((src->listed_libraries &&
             !(c->listed_libraries = json_deep_copy(src->listed_libraries))) ||
            (src->listed_where && !(c->listed_where = strdup(src->listed_where))))
                goto fail;
        if ((src->interpreter && !(c->interpreter = strdup(src->interpreter))) ||
            (src->interpreter_where && !(c->interpreter_where = strdup(src->interpreter_where))))
                goto fail;
        if (src->n_libraries && !(c->libraries = calloc(src->n_libraries, sizeof(*c->libraries))))
                goto fail;
        for (size_t i = 0; i < src->n_libraries; i++) {
                const struct cc_library *lib = &src->libraries[i];
                c->libraries[i] = (struct cc_library){
                        .source = strdup(lib->source),
                        .exec = lib->exec,
                        .where = lib->where ? strdup(lib->where) : NULL,
                };
                c->n_libraries++;
                if (!c->libraries[i].source || (lib->where && !c->libraries[i].where))
                        goto fail;
        }
        if (src->n_mounts) {
                c->mounts = calloc(src->n_mounts, sizeof(*c->mounts));
                if (!c->mounts)
                        goto fail;
        }
        for (size_t i = 0; i < src->n_mounts; i++) {
                const struct cc_mount *m = &src->mounts[i];
                c->mounts[i] = (struct cc_mount){
                        .source = strdup(m->source),
                        .dest = strdup(m->dest),
                        .read_write = m->read_write,
                        .exec = m->exec,
                        .description = strdup(m->description),
                };
                c->n_mounts++;
                if (!c->mounts[i].source || !c->mounts[i].dest || !c->mounts[i].description)
                        goto fail;
        }
        return c;
fail:
        codecell_config_free(c);
        return NULL;
}
