/* The configuration's "mcp_servers" (docs/tools.md, "MCP servers"): checked whole, with errors
 * that name the JSON path of the bad key, then each server started, initialised and listed. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "guest_names.h"
#include "host_spawn.h"
#include "json_file.h"
#include "tools.h"
#include "upstream_tools.h"
#include "util.h"

#define SERVERS_MAX 32
/* Time to start, initialise and list one server at load (npx may download it first). */
#define CONNECT_MS 60000.0

/* Of codecell's environment, what a stdio server gets besides its "env" (what the official SDK
 * passes by default): enough to find programs and a home, nothing secret. */
static const char *const inherited[] = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG"};

__attribute__((format(printf, 4, 5))) static int bad(codecell_error *err, const char *path,
                                                     const char *server, const char *fmt, ...)
{
        char text[sizeof(err->message)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        return err_set(err, CODECELL_ERR_INVALID, EINVAL, "%s: mcp_servers.%s%s", path, server,
                       text);
}

/* A server's name becomes a Ruby module and a Python variable: keep it plain. */
static const char *server_name_problem(const char *name)
{
        if (!islower((unsigned char)name[0]))
                return "must start with a lowercase letter";
        if (strlen(name) > 32)
                return "must be at most 32 characters";
        for (const char *p = name; *p; p++)
                if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '_')
                        return "may hold only lowercase letters, digits and '_'";
        if (strcmp(name, "sb") == 0)
                return "is taken (sb is the host-call module)";
        return NULL;
}

static char **string_list(size_t n)
{
        return calloc(n + 1, sizeof(char *));
}

static int only_keys(codecell_error *err, const char *path, const char *server, const json_t *obj)
{
        static const char *const known[] = {"command", "env",      "cwd", "url",
                                            "headers", "approval", NULL};
        const char *key = json_unknown_key(obj, known);
        char problem[512];
        if (!key)
                return 0;
        return bad(err, path, server, ".%s: %s", key,
                   json_unknown_key_problem("key", key, known, problem, sizeof(problem)));
}

/* A JSON object whose values are all strings. */
static bool string_map(const json_t *obj)
{
        const char *key;
        const json_t *value;
        if (!json_is_object(obj))
                return false;
        json_object_foreach((json_t *)obj, key, value)
                if (!json_is_string(value))
                        return false;
        return true;
}

static int stdio_spec(const json_t *def, const char *path, const char *dir, const char *server,
                      struct upstream_spec *spec, codecell_error *err)
{
        const json_t *command = json_object_get(def, "command");
        const json_t *env = json_object_get(def, "env");
        const json_t *cwd = json_object_get(def, "cwd");
        if (!json_is_array(command) || json_array_size(command) == 0)
                return bad(err, path, server, ".command: must be a non-empty array of strings");
        for (size_t k = 0; k < json_array_size(command); k++)
                if (!json_is_string(json_array_get(command, k)))
                        return bad(err, path, server,
                                   ".command: must be a non-empty array of strings");
        if (env && !string_map(env))
                return bad(err, path, server, ".env: must be an object of strings");
        if (cwd && !json_is_string(cwd))
                return bad(err, path, server, ".cwd: must be a string (a folder)");
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)env, key, value)
                if (!*key || strchr(key, '='))
                        return bad(err, path, server, ".env: \"%s\" is not a variable name", key);
        if (cwd) {
                const char *c = json_string_value(cwd);
                char joined[PATH_MAX];
                snprintf(joined, sizeof(joined), "%s%s%s", c[0] == '/' ? "" : dir,
                         c[0] == '/' ? "" : "/", c);
                struct stat st;
                if (stat(joined, &st) < 0 || !S_ISDIR(st.st_mode))
                        return bad(err, path, server, ".cwd: %s: not a folder", c);
                if (!(spec->cwd = realpath(joined, NULL)))
                        return err_sys(err, errno, "mcp_servers.%s.cwd", server);
        }
        spec->argv = string_list(json_array_size(command));
        size_t n_env = sizeof(inherited) / sizeof(inherited[0]) + json_object_size(env);
        spec->env = string_list(n_env);
        if (!spec->argv || !spec->env)
                return err_sys(err, ENOMEM, "mcp_servers");
        const char *program = json_string_value(json_array_get(command, 0));
        char why[800];
        if (!(spec->argv[0] = host_resolve_program(program, dir)))
                return bad(err, path, server, ".command: %s",
                           host_program_problem(program, dir, why, sizeof(why)));
        for (size_t k = 1; k < json_array_size(command); k++)
                if (!(spec->argv[k] = strdup(json_string_value(json_array_get(command, k)))))
                        return err_sys(err, ENOMEM, "mcp_servers");
        size_t e = 0;
        for (size_t k = 0; k < sizeof(inherited) / sizeof(inherited[0]); k++) {
                const char *v = getenv(inherited[k]);
                if (v && !json_object_get(env, inherited[k]) &&
                    asprintf(&spec->env[e++], "%s=%s", inherited[k], v) < 0)
                        return spec->env[--e] = NULL, err_sys(err, ENOMEM, "mcp_servers");
        }
        json_object_foreach((json_t *)env, key, value)
                if (asprintf(&spec->env[e++], "%s=%s", key, json_string_value(value)) < 0) {
                        spec->env[--e] = NULL;
                        return err_sys(err, ENOMEM, "mcp_servers");
                }
        return 0;
}

static int http_spec(const json_t *def, const char *path, const char *server,
                     struct upstream_spec *spec, codecell_error *err)
{
        const char *url = json_string_value(json_object_get(def, "url"));
        const json_t *headers = json_object_get(def, "headers");
        if (!url ||
            !((strncmp(url, "http://", 7) == 0 && url[7]) ||
              (strncmp(url, "https://", 8) == 0 && url[8])) ||
            strpbrk(url, " \r\n"))
                return bad(err, path, server, ".url: must be an http:// or https:// URL");
        if (headers && !string_map(headers))
                return bad(err, path, server, ".headers: must be an object of strings");
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)headers, key, value) {
                const char *v = json_string_value(value);
                bool ok = *key != '\0';
                for (const char *p = key; *p; p++)
                        ok &= isalnum((unsigned char)*p) || strchr("!#$%&'*+-.^_`|~", *p);
                if (!ok)
                        return bad(err, path, server, ".headers: \"%s\" is not a header name", key);
                if (strpbrk(v, "\r\n"))
                        return bad(err, path, server,
                                   ".headers.%s: a header value cannot hold a line break", key);
        }
        if (!(spec->url = strdup(url)) || !(spec->headers = string_list(json_object_size(headers))))
                return err_sys(err, ENOMEM, "mcp_servers");
        size_t h = 0;
        json_object_foreach((json_t *)headers, key, value)
                if (asprintf(&spec->headers[h++], "%s: %s", key, json_string_value(value)) < 0) {
                        spec->headers[--h] = NULL;
                        return err_sys(err, ENOMEM, "mcp_servers");
                }
        return 0;
}

static void spec_free(struct upstream_spec *spec)
{
        free(spec->name);
        for (char **lists[] = {spec->argv, spec->env, spec->headers}, ***l = lists; l < lists + 3;
             l++) {
                for (char **p = *l; p && *p; p++)
                        free(*p);
                free(*l);
        }
        free(spec->cwd);
        free(spec->url);
}

/* One server's definition into a client, not started yet. */
static int load_one(const char *name, const json_t *def, const char *path, const char *dir,
                    struct upstream **ret, codecell_error *err)
{
        const char *problem = server_name_problem(name);
        if (problem)
                return bad(err, path, name, ": the name %s", problem);
        if (!json_is_object(def))
                return bad(err, path, name, ": must be an object");
        int r = only_keys(err, path, name, def);
        if (r < 0)
                return r;
        bool has_command = json_object_get(def, "command"), has_url = json_object_get(def, "url");
        if (has_command == has_url)
                return bad(err, path, name,
                           ": must have either \"command\" (a stdio server) or \"url\" (a "
                           "Streamable HTTP server)");
        if (has_command && json_object_get(def, "headers"))
                return bad(err, path, name, ".headers: only for a \"url\" server");
        if (has_url && (json_object_get(def, "env") || json_object_get(def, "cwd")))
                return bad(err, path, name, ".%s: only for a \"command\" server",
                           json_object_get(def, "env") ? "env" : "cwd");
        struct upstream_spec spec = {.name = strdup(name)};
        const char *approval =
                tool_approval_from_json(json_object_get(def, "approval"), &spec.approval);
        r = !spec.name    ? err_sys(err, ENOMEM, "mcp_servers")
            : approval    ? bad(err, path, name, ".approval: %s", approval)
            : has_command ? stdio_spec(def, path, dir, name, &spec, err)
                          : http_spec(def, path, name, &spec, err);
        struct upstream *u = r == 0 ? upstream_new(&spec) : NULL;
        if (r == 0 && !u)
                r = err_sys(err, ENOMEM, "mcp_servers");
        spec_free(&spec); /* empty when upstream_new took it */
        *ret = u;
        return r;
}

int mcp_servers_define(const json_t *obj, const char *path, const char *dir,
                       struct mcp_servers *ret, codecell_error *err)
{
        *ret = (struct mcp_servers){0};
        if (!obj)
                return 0;
        if (!json_is_object(obj) || json_object_size(obj) > SERVERS_MAX)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                               "%s: mcp_servers: must be an object of at most %d servers", path,
                               SERVERS_MAX);
        ret->list = calloc(json_object_size(obj) + 1, sizeof(*ret->list));
        if (!ret->list)
                return err_sys(err, ENOMEM, "mcp_servers");
        const char *name;
        const json_t *def;
        int r = 0;
        json_object_foreach((json_t *)obj, name, def) {
                if ((r = load_one(name, def, path, dir, &ret->list[ret->n], err)) < 0)
                        goto fail;
                ret->n++;
                /* Two servers must not share a Ruby module (a1 and a_1 are both A1). */
                char mine[40], theirs[40];
                guest_module_name(name, mine, sizeof(mine));
                for (size_t k = 0; k + 1 < ret->n; k++) {
                        guest_module_name(upstream_name(ret->list[k]), theirs, sizeof(theirs));
                        if (strcmp(mine, theirs) == 0) {
                                r = bad(err, path, name,
                                        ": its Ruby module would be %s, as that of "
                                        "mcp_servers.%s",
                                        mine, upstream_name(ret->list[k]));
                                goto fail;
                        }
                }
        }
        return 0;
fail:
        mcp_servers_free(ret);
        return r;
}

int mcp_servers_start(struct mcp_servers *s, const char *path, codecell_error *err)
{
        for (size_t i = 0; i < s->n; i++) {
                struct upstream *u = s->list[i];
                char why[600];
                const char *problem;
                codecell_error e = {0};
                if (upstream_connect(u, now_ms() + CONNECT_MS, &e) < 0)
                        return bad(err, path, upstream_name(u),
                                   ": the server could not be used: %s", e.message);
                if ((problem = upstream_collision(u, why, sizeof(why))))
                        return bad(err, path, upstream_name(u), ": %s", problem);
        }
        return 0;
}

int mcp_servers_load(const json_t *obj, const char *path, const char *dir, struct mcp_servers *ret,
                     codecell_error *err)
{
        /* All checked before any is started: a bad file starts nothing. */
        int r = mcp_servers_define(obj, path, dir, ret, err);
        r = r ?: mcp_servers_start(ret, path, err);
        if (r < 0)
                mcp_servers_free(ret);
        return r;
}

void mcp_servers_free(struct mcp_servers *s)
{
        for (size_t i = 0; i < s->n; i++)
                upstream_unref(s->list[i]);
        free(s->list);
        *s = (struct mcp_servers){0};
}

struct upstream *mcp_servers_find(const struct mcp_servers *s, const char *name, size_t len)
{
        for (size_t i = 0; i < s->n; i++) {
                const char *n = upstream_name(s->list[i]);
                if (strlen(n) == len && strncmp(n, name, len) == 0)
                        return s->list[i];
        }
        return NULL;
}
