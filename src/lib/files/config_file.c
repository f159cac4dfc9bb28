/* A configuration file of cells and host tools (docs/configuration.md), for `codecell serve`
 * and `codecell describe --config`, parsed whole into a plain description (config_file.h):
 * errors name the JSON path of the bad key, and nothing is created here. */
#include "config_file.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "error.h"
#include "json_file.h"
#include "mount_rules.h"
#include "tools.h"
#include "util.h"
#include "upstream_tools.h"

#define CELLS_MAX 64

/* Everything a loader needs while it checks one file. */
struct loader {
        const char *path;
        const char *dir; /* the file's folder: relative sources and commands resolve against it */
        struct tool **tools; /* the file's host tools, parsed once to check them */
        size_t n_tools;
        const struct mcp_servers *servers;
        unsigned flags;
        codecell_error *err;
};

__attribute__((format(printf, 3, 4))) static int bad(struct loader *l, int errno_value,
                                                     const char *fmt, ...)
{
        char text[sizeof(l->err->message)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        return err_set(l->err, CODECELL_ERR_INVALID, errno_value, "%s: %s", l->path, text);
}

/* Refuses a key outside `known` (a NULL-terminated list), naming them all in the error. */
static int only_keys(struct loader *l, const json_t *obj, const char *where,
                     const char *const *known)
{
        const char *key = json_unknown_key(obj, known);
        char problem[512];
        if (!key)
                return 0;
        return bad(l, EINVAL, "%s%s%s: %s", where, *where ? "." : "", key,
                   json_unknown_key_problem("key", key, known, problem, sizeof(problem)));
}

/* An optional string: absent, or a string. */
static int optional_string(struct loader *l, const json_t *v, const char *where, const char *key)
{
        if (v && !json_is_string(v))
                return bad(l, EINVAL, "%s.%s: must be a string", where, key);
        return 0;
}

static int load_mounts(struct loader *l, const json_t *mounts, const char *where,
                       codecell_config *config)
{
        static const char *const keys[] = {"source", "dest", "mode", "description", NULL};
        if (!mounts)
                return 0;
        if (!json_is_array(mounts))
                return bad(l, EINVAL, "%s.mounts: must be an array", where);
        for (size_t i = 0; i < json_array_size(mounts); i++) {
                const json_t *m = json_array_get(mounts, i);
                char at[96];
                snprintf(at, sizeof(at), "%s.mounts[%zu]", where, i);
                if (!json_is_object(m))
                        return bad(l, EINVAL, "%s: must be an object", at);
                int r = only_keys(l, m, at, keys);
                if (r < 0)
                        return r;
                const json_t *source = json_object_get(m, "source");
                const json_t *dest = json_object_get(m, "dest");
                const json_t *mode = json_object_get(m, "mode");
                const json_t *description = json_object_get(m, "description");
                if (!json_is_string(source))
                        return bad(l, EINVAL, "%s.source: must be a string (a host folder)", at);
                if (!json_is_string(dest))
                        return bad(l, EINVAL, "%s.dest: must be a string (a path in the sandbox)",
                                   at);
                codecell_mount_mode how = CODECELL_MOUNT_READ_ONLY;
                if (mode && !codecell_mount_mode_parse(json_string_value(mode), &how))
                        return bad(l, EINVAL, "%s.mode: must be \"ro\", \"rw\" or \"exec\"", at);
                if ((r = optional_string(l, description, at, "description")) < 0)
                        return r;
                const char *src = json_string_value(source);
                char resolved[PATH_MAX];
                if (src[0] && src[0] != '/')
                        snprintf(resolved, sizeof(resolved), "%s/%s", l->dir, src);
                else
                        snprintf(resolved, sizeof(resolved), "%s", src);
                char prefix[sizeof(l->err->message)];
                snprintf(prefix, sizeof(prefix), "%s: %s", l->path, at);
                r = config_add_mount(config, resolved, json_string_value(dest), how,
                                     json_string_value(description), prefix, l->err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A path from the file, relative to the file's folder. */
static void resolve_path(struct loader *l, const char *path, char *buf, size_t size)
{
        if (path[0] && path[0] != '/')
                snprintf(buf, size, "%s/%s", l->dir, path);
        else
                snprintf(buf, size, "%s", path);
}

/* "listed_libraries": the names the description lists, instead of what the probe finds.
 * Whether each loads is known only in the sandbox, when the cell is made. */
static int load_listed_libraries(struct loader *l, const json_t *obj, const char *where,
                                 codecell_config *config)
{
        const json_t *listed = json_object_get(obj, "listed_libraries");
        if (!listed)
                return 0;
        if (!json_is_array(listed))
                return bad(l, EINVAL, "%s.listed_libraries: must be an array of names", where);
        if (json_array_size(listed) > CONFIG_LISTED_LIBRARIES_MAX)
                return bad(l, EINVAL, "%s.listed_libraries: %zu names, over the maximum %d", where,
                           json_array_size(listed), CONFIG_LISTED_LIBRARIES_MAX);
        size_t i;
        const json_t *name;
        json_array_foreach(listed, i, name) {
                if (!json_is_string(name))
                        return bad(l, EINVAL, "%s.listed_libraries[%zu]: must be a string", where,
                                   i);
                const char *problem = config_listed_library_problem(json_string_value(name));
                if (problem)
                        return bad(l, EINVAL, "%s.listed_libraries[%zu]: %s", where, i, problem);
        }
        json_decref(config->listed_libraries);
        free(config->listed_where);
        config->listed_libraries = json_deep_copy(listed);
        if (asprintf(&config->listed_where, "%s: %s.listed_libraries", l->path, where) < 0)
                config->listed_where = NULL;
        if (!config->listed_libraries || !config->listed_where)
                return bad(l, ENOMEM, "%s.listed_libraries: out of memory", where);
        return 0;
}

/* "interpreter": a path; "libraries": folders, each a path or {"path", "mode"}. */
static int load_interpreter(struct loader *l, const json_t *obj, const char *where,
                            codecell_config *config)
{
        static const char *const keys[] = {"path", "mode", NULL};
        const json_t *interpreter = json_object_get(obj, "interpreter");
        const json_t *libraries = json_object_get(obj, "libraries");
        char at[96], prefix[sizeof(l->err->message)], resolved[PATH_MAX];
        int r = 0;
        if (interpreter) {
                if (!json_is_string(interpreter))
                        return bad(l, EINVAL, "%s.interpreter: must be a string (a host path)",
                                   where);
                resolve_path(l, json_string_value(interpreter), resolved, sizeof(resolved));
                snprintf(prefix, sizeof(prefix), "%s: %s.interpreter", l->path, where);
                if ((r = config_set_interpreter(config, resolved, prefix, l->err)) < 0)
                        return r;
        }
        if (libraries && !json_is_array(libraries))
                return bad(l, EINVAL, "%s.libraries: must be an array of folders", where);
        for (size_t i = 0; r == 0 && i < json_array_size(libraries); i++) {
                const json_t *lib = json_array_get(libraries, i);
                const json_t *path = lib, *mode = NULL;
                snprintf(at, sizeof(at), "%s.libraries[%zu]", where, i);
                if (json_is_object(lib)) {
                        if ((r = only_keys(l, lib, at, keys)) < 0)
                                return r;
                        path = json_object_get(lib, "path");
                        mode = json_object_get(lib, "mode");
                }
                if (!json_is_string(path))
                        return bad(l, EINVAL, "%s%s: must be a string (a host folder)%s", at,
                                   json_is_object(lib) ? ".path" : "",
                                   json_is_object(lib) ? "" : " or {\"path\", \"mode\"}");
                codecell_mount_mode how = CODECELL_MOUNT_READ_ONLY;
                if (mode && (!codecell_mount_mode_parse(json_string_value(mode), &how) ||
                             how == CODECELL_MOUNT_READ_WRITE))
                        return bad(l, EINVAL, "%s.mode: must be \"ro\" or \"exec\"", at);
                resolve_path(l, json_string_value(path), resolved, sizeof(resolved));
                snprintf(prefix, sizeof(prefix), "%s: %s", l->path, at);
                r = config_add_library(config, resolved, how, prefix, l->err);
        }
        return r < 0 ? r : load_listed_libraries(l, obj, where, config);
}

static int load_limit(struct loader *l, codecell_config *config, codecell_limit limit,
                      const json_t *v, const char *at)
{
        if (!json_is_integer(v) || json_integer_value(v) <= 0)
                return bad(l, EINVAL, "%s: must be a positive integer", at);
        char buf[96];
        uint64_t value = (uint64_t)json_integer_value(v);
        const char *problem = config_limit_problem(limit, value, buf, sizeof(buf));
        if (problem)
                return bad(l, EINVAL, "%s: %s", at, problem);
        return codecell_config_set_limit(config, limit, value, l->err);
}

/* The limits a cell's "limits" sets: all but the sessions' own, which its "sessions" sets. */
static bool cell_limit(codecell_limit limit)
{
        return limit != CODECELL_LIMIT_SESSIONS && limit != CODECELL_LIMIT_SESSION_IDLE_MS &&
               codecell_limit_name(limit);
}

/* Their names, NULL-terminated, for the error of a name that is none of them. */
static void cell_limit_names(const char *names[CODECELL_LIMIT__COUNT + 1])
{
        size_t n = 0;
        for (int k = 0; k < CODECELL_LIMIT__COUNT; k++)
                if (cell_limit((codecell_limit)k) && codecell_limit_name((codecell_limit)k))
                        names[n++] = codecell_limit_name((codecell_limit)k);
        names[n] = NULL;
}

static int load_limits(struct loader *l, const json_t *limits, const char *where,
                       codecell_config *config)
{
        if (!limits)
                return 0;
        if (!json_is_object(limits))
                return bad(l, EINVAL, "%s.limits: must be an object", where);
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)limits, key, value) {
                char at[128];
                snprintf(at, sizeof(at), "%s.limits.%s", where, key);
                codecell_limit limit;
                if (!codecell_limit_parse(key, &limit) || !cell_limit(limit)) {
                        const char *names[CODECELL_LIMIT__COUNT + 1];
                        char problem[512];
                        cell_limit_names(names);
                        return bad(l, EINVAL, "%s: %s", at,
                                   json_unknown_key_problem("limit", key, names, problem,
                                                            sizeof(problem)));
                }
                int r = load_limit(l, config, limit, value, at);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int load_sessions(struct loader *l, const json_t *sessions, const char *where,
                         codecell_config *config, bool *ret_enabled, bool *ret_default)
{
        static const char *const keys[] = {"enabled", "max", "idle_ms", "default", NULL};
        *ret_enabled = true;
        *ret_default = false;
        if (!sessions)
                return 0;
        char at[96];
        snprintf(at, sizeof(at), "%s.sessions", where);
        if (!json_is_object(sessions))
                return bad(l, EINVAL, "%s: must be an object", at);
        int r = only_keys(l, sessions, at, keys);
        const json_t *enabled = json_object_get(sessions, "enabled");
        if (r == 0 && enabled && !json_is_boolean(enabled))
                return bad(l, EINVAL, "%s.enabled: must be true or false", at);
        *ret_enabled = !enabled || json_is_true(enabled);
        const json_t *by_default = json_object_get(sessions, "default");
        if (r == 0 && by_default && !json_is_boolean(by_default))
                return bad(l, EINVAL, "%s.default: must be true or false", at);
        if (r == 0 && json_is_true(by_default) && !*ret_enabled)
                return bad(l, EINVAL, "%s.default: needs sessions enabled", at);
        *ret_default = json_is_true(by_default);
        char key_at[128];
        const json_t *max = json_object_get(sessions, "max");
        snprintf(key_at, sizeof(key_at), "%s.max", at);
        if (r == 0 && max)
                r = load_limit(l, config, CODECELL_LIMIT_SESSIONS, max, key_at);
        const json_t *idle = json_object_get(sessions, "idle_ms");
        snprintf(key_at, sizeof(key_at), "%s.idle_ms", at);
        if (r == 0 && idle)
                r = load_limit(l, config, CODECELL_LIMIT_SESSION_IDLE_MS, idle, key_at);
        return r;
}

/* "NAME.*" or "NAME.TOOL" of an MCP server: its tools on this cell, which the server's list
 * confirms once it is started. 1 when name is not of an MCP server (a host tool of the file),
 * 0 when recorded in ref, < 0 on error. */
static int parse_mcp_ref(struct loader *l, const char *name, struct tool_ref *ref)
{
        const char *dot = strchr(name, '.');
        struct upstream *u = dot ? mcp_servers_find(l->servers, name, (size_t)(dot - name)) : NULL;
        if (!u)
                return 1;
        ref->server = u;
        ref->which = strdup(dot + 1);
        return ref->which ? 0 : err_sys(l->err, ENOMEM, "cells");
}

/* The cell's "tools": names of the file's host tools and tools of its MCP servers. */
static int parse_tool_names(struct loader *l, const json_t *names, const char *where,
                            struct cell_description *desc)
{
        if (!names)
                return 0;
        if (!json_is_array(names))
                return bad(l, EINVAL, "%s.tools: must be an array of tool names", where);
        desc->tools = calloc(json_array_size(names) + 1, sizeof(*desc->tools));
        if (!desc->tools)
                return err_sys(l->err, ENOMEM, "cells");
        for (size_t i = 0; i < json_array_size(names); i++) {
                const char *name = json_string_value(json_array_get(names, i));
                struct tool_ref *ref = &desc->tools[desc->n_tools++];
                snprintf(ref->at, sizeof(ref->at), "%s.tools[%zu]", where, i);
                for (size_t k = 0; name && k < i; k++)
                        if (strcmp(json_string_value(json_array_get(names, k)), name) == 0)
                                return bad(l, EINVAL, "%s: \"%s\" is listed twice", ref->at, name);
                int mcp = name ? parse_mcp_ref(l, name, ref) : 1;
                if (mcp <= 0) {
                        if (mcp < 0)
                                return mcp;
                        continue;
                }
                size_t found = l->n_tools;
                for (size_t k = 0; name && k < l->n_tools; k++)
                        if (strcmp(l->tools[k]->name, name) == 0)
                                found = k;
                if (found == l->n_tools)
                        return bad(l, EINVAL, "%s: %s%s%s", ref->at,
                                   name ? "no host tool named \"" : "must be a tool name",
                                   name ? name : "",
                                   name ? "\" in the file's \"tools\" (or of its \"mcp_servers\")"
                                        : "");
                ref->host_tool = found;
                /* Cut to the cell's tool_call_ms at each call, it would not be what it says. */
                uint64_t own = l->tools[found]->command.timeout_ms;
                uint64_t cap = codecell_config_get_limit(desc->config, CODECELL_LIMIT_TOOL_CALL_MS);
                if (own > cap)
                        return bad(l, EINVAL,
                                   "%s: tool \"%s\" has timeout_ms %llu, over the cell's "
                                   "tool_call_ms %llu: lower the tool's timeout_ms or raise the "
                                   "cell's limits.tool_call_ms",
                                   ref->at, name, (unsigned long long)own, (unsigned long long)cap);
        }
        return 0;
}

static int load_policy(struct loader *l, const json_t *v, const char *where,
                       codecell_config *config)
{
        static const char *const names[] = {[CODECELL_POLICY_WARN] = "warn",
                                            [CODECELL_POLICY_RAISE] = "raise",
                                            [CODECELL_POLICY_IGNORE] = "ignore"};
        if (!v)
                return 0;
        for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
                if (json_is_string(v) && strcmp(json_string_value(v), names[k]) == 0) {
                        codecell_config_set_policy(config, (codecell_policy)k);
                        return 0;
                }
        return bad(l, EINVAL, "%s.on_unsupported: must be \"warn\", \"raise\" or \"ignore\"",
                   where);
}

/* output_folder, or image_folder: its first name, from when only images came back. */
static int load_output_folder(struct loader *l, const json_t *obj, const char *where,
                              codecell_config *config)
{
        const json_t *output = json_object_get(obj, "output_folder");
        const json_t *image = json_object_get(obj, "image_folder");
        if (output && image)
                return bad(l, EINVAL,
                           "%s: output_folder and image_folder are one setting (image_folder is "
                           "its old name); give only output_folder",
                           where);
        const char *key = output ? "output_folder" : "image_folder";
        const json_t *folder = output ? output : image;
        if (!folder)
                return 0;
        if (!json_is_string(folder))
                return bad(l, EINVAL, "%s.%s: must be a string (a folder in the sandbox)", where,
                           key);
        codecell_error e = {0};
        if (codecell_config_set_output_folder(config, json_string_value(folder), &e) < 0)
                return bad(l, EINVAL, "%s.%s: %s", where, key, e.message);
        return 0;
}

/* A cell's "network": an object, kept for the engine's proxy, which checks what it holds. */
static int load_network(struct loader *l, const json_t *obj, const char *where,
                        codecell_config *config)
{
        const json_t *network = json_object_get(obj, "network");
        if (!network)
                return 0;
        char key[48];
        snprintf(key, sizeof(key), "%s.network", where);
        codecell_error e = {0};
        if (config_set_network_json(config, network, key, &e) < 0)
                return bad(l, e.errno_value ? e.errno_value : EINVAL, "%s", e.message);
        return 0;
}

/* A cell's name is its MCP tool name: within ^[a-zA-Z0-9_-]{1,64}$, the pattern Claude Desktop
 * checks (one name outside it withholds every tool of the server) and OpenAI's function names
 * follow, and starting with a letter. Writes what is wrong, with a name that would do, into
 * why. */
static bool cell_name_problem(const char *name, char *why, size_t n)
{
        if (!name || !*name) {
                snprintf(why, n, "must be a non-empty string (the MCP tool name)");
                return true;
        }
        size_t len = strlen(name), bad_at = len;
        for (size_t k = 0; k < len && bad_at == len; k++)
                if (!isalnum((unsigned char)name[k]) && name[k] != '_' && name[k] != '-')
                        bad_at = k;
        bool letter = isalpha((unsigned char)name[0]);
        if (bad_at == len && len <= 64 && letter)
                return false;
        /* The suggestion: each other character as '_', a letter first, cut to 64. */
        char fix[65];
        size_t f = letter ? 0 : (size_t)snprintf(fix, sizeof(fix), "c_");
        for (size_t k = 0; k < len && f < 64; k++) {
                unsigned char ch = (unsigned char)name[k];
                if ((ch & 0xc0) == 0x80)
                        continue; /* one '_' per UTF-8 character */
                fix[f++] = isalnum(ch) || ch == '_' || ch == '-' ? (char)ch : '_';
        }
        fix[f] = '\0';
        snprintf(why, n,
                 "\"%.*s\" is not a name MCP clients accept (%s; tool names must match "
                 "^[a-zA-Z0-9_-]{1,64}$): try \"%s\"",
                 utf8_prefix(name, 80), name,
                 bad_at < len ? "only letters, digits, '_' and '-'"
                 : !letter    ? "it must start with a letter"
                              : "at most 64 characters",
                 fix);
        return true;
}

static int parse_cell(struct loader *l, const json_t *obj, size_t i, struct cell_description *desc)
{
        static const char *const keys[] = {"name",
                                           "language",
                                           "description",
                                           "mounts",
                                           "limits",
                                           "pool",
                                           "sessions",
                                           "tools",
                                           "allow_subprocesses",
                                           "on_unsupported",
                                           "interpreter",
                                           "libraries",
                                           "image_folder",
                                           "output_folder",
                                           "start",
                                           "listed_libraries",
                                           "network",
                                           NULL};
        char where[32];
        snprintf(where, sizeof(where), "cells[%zu]", i);
        if (!json_is_object(obj))
                return bad(l, EINVAL, "%s: must be an object", where);
        /* A limit written beside the cell's keys instead of inside "limits". */
        const char *stray = json_unknown_key(obj, keys);
        const char *names[CODECELL_LIMIT__COUNT + 1];
        cell_limit_names(names);
        const char *limit = stray ? json_closest_key(stray, names) : NULL;
        if (limit)
                return bad(l, EINVAL,
                           "%s.%s: unknown key (a limit goes inside \"limits\": did you mean "
                           "\"limits\": {\"%s\": …}?)",
                           where, stray, limit);
        int r = only_keys(l, obj, where, keys);
        if (r < 0)
                return r;
        const char *name = json_string_value(json_object_get(obj, "name"));
        char problem[256];
        if (cell_name_problem(name, problem, sizeof(problem)))
                return bad(l, EINVAL, "%s.name: %s", where, problem);
        const json_t *language = json_object_get(obj, "language");
        if (!json_is_string(language))
                return bad(l, EINVAL, "%s.language: must be a string (\"ruby\" or \"python\")",
                           where);
        const json_t *summary = json_object_get(obj, "description");
        const json_t *pool = json_object_get(obj, "pool");
        const json_t *subprocesses = json_object_get(obj, "allow_subprocesses");
        if ((r = optional_string(l, summary, where, "description")) < 0)
                return r;
        if (pool && (!json_is_integer(pool) || json_integer_value(pool) < 0 ||
                     json_integer_value(pool) > 64))
                return bad(l, EINVAL, "%s.pool: must be an integer from 0 to 64", where);
        if (subprocesses && !json_is_boolean(subprocesses))
                return bad(l, EINVAL, "%s.allow_subprocesses: must be true or false", where);
        const json_t *start = json_object_get(obj, "start");
        const char *start_text = json_string_value(start);
        if (start &&
            (!start_text || (strcmp(start_text, "fork") != 0 && strcmp(start_text, "exec") != 0)))
                return bad(l, EINVAL, "%s.start: must be \"fork\" or \"exec\"", where);

        codecell_error e = {0};
        codecell_config *config = codecell_config_new(json_string_value(language), &e);
        if (!config)
                return bad(l, EINVAL, "%s.language: %s", where, e.message);
        desc->config = config;
        r = load_mounts(l, json_object_get(obj, "mounts"), where, config);
        r = r ?: load_limits(l, json_object_get(obj, "limits"), where, config);
        r = r
                    ?: load_sessions(l, json_object_get(obj, "sessions"), where, config,
                                     &desc->offer.sessions, &desc->offer.default_session);
        r = r ?: load_policy(l, json_object_get(obj, "on_unsupported"), where, config);
        r = r ?: load_output_folder(l, obj, where, config);
        r = r ?: load_network(l, obj, where, config);
        r = r ?: load_interpreter(l, obj, where, config);
        r = r ?: parse_tool_names(l, json_object_get(obj, "tools"), where, desc);
        if (r < 0)
                return r;
        codecell_config_set_subprocesses(config, json_is_true(subprocesses));
        if (start_text && strcmp(start_text, "exec") == 0)
                (void)codecell_config_set_start(config, CODECELL_START_EXEC, &e);
        size_t size = pool ? (size_t)json_integer_value(pool) : 2;
        (void)codecell_config_set_pool(config, (l->flags & CODECELL_CELLSET_NO_POOL) ? 0 : size,
                                       &e);
        desc->offer.name = strdup(name);
        desc->offer.summary = strdup(summary ? json_string_value(summary) : "");
        if (!desc->offer.name || !desc->offer.summary)
                return err_sys(l->err, ENOMEM, "cells");
        return 0;
}

/* The file's "mcp_servers", defined (started only once the whole file is good): the cells'
 * "tools" may name their tools. A host tool named like one of theirs ("memory.x" beside the
 * server "memory") could never be called, so it is refused. */
static int define_mcp_servers(struct loader *l, const json_t *obj, struct file_description *d)
{
        int r = mcp_servers_define(obj, l->path, l->dir, &d->servers, l->err);
        l->servers = &d->servers;
        for (size_t k = 0; r == 0 && k < l->n_tools; k++) {
                const char *dot = strchr(l->tools[k]->name, '.');
                if (dot && mcp_servers_find(&d->servers, l->tools[k]->name,
                                            (size_t)(dot - l->tools[k]->name)))
                        r = bad(l, EINVAL,
                                "tools[%zu].name: \"%s\" is in the namespace of the MCP server "
                                "of that name",
                                k, l->tools[k]->name);
        }
        return r;
}

/* The host folder of one of c's exec-capable binds (w: an exec mount, an exec library, then
 * the interpreter's prefix when it is bound), its JSON path into key; NULL past the last. */
static const char *exec_folder(const codecell_config *c, size_t w, char *key, size_t size,
                               char prefix[PATH_MAX])
{
        for (size_t i = 0; i < c->n_mounts; i++)
                if (c->mounts[i].exec && w-- == 0) {
                        snprintf(key, size, "mounts[%zu]", i);
                        return c->mounts[i].source;
                }
        for (size_t i = 0; i < c->n_libraries; i++)
                if (c->libraries[i].exec && w-- == 0) {
                        snprintf(key, size, "libraries[%zu]", i);
                        return c->libraries[i].source;
                }
        if (w != 0 || !c->interpreter || paths_overlap(c->interpreter, "/usr"))
                return NULL;
        /* The folder above its bin/, as mount_plan.c binds it. */
        snprintf(prefix, PATH_MAX, "%s", c->interpreter);
        for (int up = 0; up < 2; up++) {
                char *slash = strrchr(prefix, '/');
                if (slash)
                        *slash = '\0';
        }
        snprintf(key, size, "interpreter");
        return *prefix ? prefix : "/";
}

/* A cell refuses an exec-capable folder that overlaps one of its own read-write mounts
 * (mount_plan.c); a folder another cell of the file mounts read-write is as writable by a
 * guest, and what that guest wrote would run in this cell: refused too. */
static int refuse_exec_over_other_cells(struct loader *l, const struct file_description *d)
{
        for (size_t i = 0; i < d->n_cells; i++) {
                const codecell_config *c = d->cells[i].config;
                char key[48], prefix[PATH_MAX];
                const char *folder;
                for (size_t w = 0; (folder = exec_folder(c, w, key, sizeof(key), prefix)); w++)
                        for (size_t k = 0; k < d->n_cells; k++) {
                                const codecell_config *o = d->cells[k].config;
                                for (size_t m = 0; k != i && m < o->n_mounts; m++)
                                        if (o->mounts[m].read_write &&
                                            paths_overlap(folder, o->mounts[m].source))
                                                return bad(l, EINVAL,
                                                           "cells[%zu].%s: %s overlaps the "
                                                           "read-write mount of cells[%zu] at "
                                                           "%s: a folder a guest can write "
                                                           "cannot hold code that runs",
                                                           i, key, folder, k, o->mounts[m].dest);
                        }
        }
        return 0;
}

int config_file_parse(const char *path, unsigned flags, struct file_description *ret,
                      codecell_error *err)
{
        static const char *const keys[] = {"$schema", "tools", "mcp_servers", "cells", NULL};
        *ret = (struct file_description){.root = json_file_load(path, err)};
        if (!ret->root)
                return -EINVAL;
        _cleanup_free_ char *copy = strdup(path);
        ret->path = strdup(path);
        ret->dir = copy ? strdup(dirname(copy)) : NULL;
        struct loader l = {.path = path, .dir = ret->dir, .flags = flags, .err = err};
        const json_t *root = ret->root, *cells = json_object_get(root, "cells");
        const json_t *tools = json_object_get(root, "tools");
        int r = 0;
        if (!ret->path || !ret->dir) {
                r = err_sys(err, ENOMEM, "config");
                goto out;
        }
        if (!json_is_object(root)) {
                r = bad(&l, EINVAL, "must be a JSON object with \"cells\" (and \"tools\")");
                goto out;
        }
        if ((r = only_keys(&l, root, "", keys)) < 0)
                goto out;
        if (tools && (r = tools_from_json(tools, path, l.dir, TOOL_TIMEOUT_MAX_MS, &l.tools,
                                          &l.n_tools, err)) < 0)
                goto out;
        if ((r = define_mcp_servers(&l, json_object_get(root, "mcp_servers"), ret)) < 0)
                goto out;
        if (!json_is_array(cells) || json_array_size(cells) == 0 ||
            json_array_size(cells) > CELLS_MAX) {
                r = bad(&l, EINVAL, "cells: must be an array of 1 to %d cells", CELLS_MAX);
                goto out;
        }
        ret->cells = calloc(json_array_size(cells), sizeof(*ret->cells));
        if (!ret->cells) {
                r = err_sys(err, ENOMEM, "cells");
                goto out;
        }
        for (size_t i = 0; i < json_array_size(cells); i++) {
                const char *name =
                        json_string_value(json_object_get(json_array_get(cells, i), "name"));
                for (size_t k = 0; name && k < i; k++)
                        if (strcmp(ret->cells[k].offer.name, name) == 0) {
                                r = bad(&l, EINVAL,
                                        "cells[%zu].name: \"%s\" is the name of cells[%zu]", i,
                                        name, k);
                                goto out;
                        }
                ret->n_cells++;
                if ((r = parse_cell(&l, json_array_get(cells, i), i, &ret->cells[i])) < 0)
                        goto out;
        }
        r = refuse_exec_over_other_cells(&l, ret);
out:
        tools_free_list(l.tools, l.n_tools);
        if (r < 0)
                file_description_free(ret);
        return r;
}

void file_description_free(struct file_description *d)
{
        for (size_t i = 0; i < d->n_cells; i++) {
                struct cell_description *c = &d->cells[i];
                free(c->offer.name);
                free(c->offer.summary);
                codecell_config_free(c->config);
                for (size_t k = 0; k < c->n_tools; k++)
                        free(c->tools[k].which);
                free(c->tools);
        }
        free(d->cells);
        mcp_servers_free(&d->servers);
        json_decref(d->root);
        free(d->path);
        free(d->dir);
        *d = (struct file_description){0};
}
