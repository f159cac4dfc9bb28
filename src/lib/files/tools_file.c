/* Command tools from a JSON file (docs/tools.md), validated whole before any is added, with
 * errors that name the JSON path of the bad key. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cell.h"
#include "cleanup.h"
#include "error.h"
#include "host_spawn.h"
#include "json_file.h"
#include "tools.h"
#include "upstream_tools.h"
#include "util.h"

/* A tool's environment: this, plus the variables its config names. Nothing else of the
 * engine's environment reaches a tool. */
static const char *const base_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"};

static int bad(codecell_error *err, const char *path, size_t i, const char *key, const char *what)
{
        return err_set(err, CODECELL_ERR_INVALID, EINVAL, "%s: tools[%zu]%s%s: %s", path, i,
                       key ? "." : "", key ? key : "", what);
}

/* Room for n strings and the NULL after them, all NULL yet. */
static char **string_list(size_t n)
{
        return calloc(n + 1, sizeof(char *));
}

int tool_from_json(const json_t *obj, size_t i, const char *path, const char *dir,
                   uint64_t max_call_ms, struct tool **ret, codecell_error *err)
{
        static const char *const keys[] = {"name",       "description", "command",  "input_schema",
                                           "timeout_ms", "env",         "approval", NULL};
        if (!json_is_object(obj))
                return bad(err, path, i, NULL, "must be an object");
        const char *unknown = json_unknown_key(obj, keys);
        if (unknown) {
                char what[512];
                return bad(err, path, i, unknown,
                           json_unknown_key_problem("key", unknown, keys, what, sizeof(what)));
        }
        const char *name = json_string_value(json_object_get(obj, "name"));
        const char *problem = tool_name_problem(name);
        if (problem)
                return bad(err, path, i, "name", problem);
        const json_t *description = json_object_get(obj, "description");
        if (description && !json_is_string(description))
                return bad(err, path, i, "description", "must be a string");
        const json_t *command = json_object_get(obj, "command");
        if (!json_is_array(command) || json_array_size(command) == 0)
                return bad(err, path, i, "command", "must be a non-empty array of strings");
        for (size_t k = 0; k < json_array_size(command); k++)
                if (!json_is_string(json_array_get(command, k)))
                        return bad(err, path, i, "command", "must be a non-empty array of strings");
        const json_t *schema = json_object_get(obj, "input_schema");
        char why[384];
        if (schema && (problem = tool_schema_problem(schema, why, sizeof(why))))
                return bad(err, path, i, "input_schema", problem);
        const json_t *timeout = json_object_get(obj, "timeout_ms");
        if (timeout && (!json_is_integer(timeout) || json_integer_value(timeout) <= 0 ||
                        (uint64_t)json_integer_value(timeout) > max_call_ms)) {
                char what[128];
                snprintf(what, sizeof(what), "must be an integer from 1 to %llu",
                         (unsigned long long)max_call_ms);
                return bad(err, path, i, "timeout_ms", what);
        }
        const json_t *env = json_object_get(obj, "env");
        if (env && !json_is_array(env))
                return bad(err, path, i, "env", "must be an array of variable names");
        bool approval = false;
        if ((problem = tool_approval_from_json(json_object_get(obj, "approval"), &approval)))
                return bad(err, path, i, "approval", problem);

        struct tool *tool = calloc(1, sizeof(*tool));
        if (!tool)
                return err_sys(err, ENOMEM, "tool");
        tool->name = strdup(name);
        tool->description = strdup(description ? json_string_value(description) : "");
        tool->input_schema = schema ? json_deep_copy(schema)
                                    : json_pack("{s:s, s:{}}", "type", "object", "properties");
        tool->command.timeout_ms = timeout ? (uint64_t)json_integer_value(timeout) : 0;
        atomic_init(&tool->approval, approval);
        tool->command.argv = string_list(json_array_size(command));
        size_t n_env = sizeof(base_env) / sizeof(base_env[0]) + json_array_size(env);
        tool->command.env = string_list(n_env);
        int r = 0;
        if (!tool->name || !tool->description || !tool->input_schema || !tool->command.argv ||
            !tool->command.env) {
                r = err_sys(err, ENOMEM, "tool");
                goto fail;
        }
        tool->command.argv[0] =
                host_resolve_program(json_string_value(json_array_get(command, 0)), dir);
        if (!tool->command.argv[0]) {
                char what[800];
                r = bad(err, path, i, "command",
                        host_program_problem(json_string_value(json_array_get(command, 0)), dir,
                                             what, sizeof(what)));
                goto fail;
        }
        for (size_t k = 1; k < json_array_size(command); k++)
                if (!(tool->command.argv[k] =
                              strdup(json_string_value(json_array_get(command, k))))) {
                        r = err_sys(err, ENOMEM, "tool");
                        goto fail;
                }
        size_t e = 0;
        for (; e < sizeof(base_env) / sizeof(base_env[0]); e++)
                tool->command.env[e] = strdup(base_env[e]);
        for (size_t k = 0; k < json_array_size(env); k++) {
                const char *var = json_string_value(json_array_get(env, k));
                const char *val = var ? getenv(var) : NULL;
                if (!var || !*var || strchr(var, '=')) {
                        r = bad(err, path, i, "env", "must be an array of variable names");
                        goto fail;
                }
                if (!val) {
                        char what[300];
                        snprintf(what, sizeof(what), "%.*s is not set in codecell's environment",
                                 utf8_prefix(var, 200), var);
                        r = bad(err, path, i, "env", what);
                        goto fail;
                }
                if (asprintf(&tool->command.env[e++], "%s=%s", var, val) < 0) {
                        tool->command.env[e - 1] = NULL;
                        r = err_sys(err, ENOMEM, "tool");
                        goto fail;
                }
        }
        *ret = tool;
        return 0;
fail:
        tool_free(tool);
        return r;
}

void tools_free_list(struct tool **tools, size_t n)
{
        for (size_t k = 0; tools && k < n; k++)
                tool_free(tools[k]);
        free(tools);
}

int tools_from_json(const json_t *list, const char *path, const char *dir, uint64_t max_call_ms,
                    struct tool ***ret, size_t *ret_n, codecell_error *err)
{
        if (!json_is_array(list))
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "%s: tools: must be an array",
                               path);
        struct tool **tools = calloc(json_array_size(list) + 1, sizeof(*tools));
        if (!tools)
                return err_sys(err, ENOMEM, "tools");
        size_t n = 0;
        int r = 0;
        for (; n < json_array_size(list); n++) {
                r = tool_from_json(json_array_get(list, n), n, path, dir, max_call_ms, &tools[n],
                                   err);
                if (r < 0)
                        break;
                for (size_t k = 0; k < n && r == 0; k++)
                        if (strcmp(tools[k]->name, tools[n]->name) == 0)
                                r = bad(err, path, n, "name",
                                        "a tool of that name is defined above");
                if (r < 0) {
                        n++;
                        break;
                }
        }
        if (r < 0) {
                tools_free_list(tools, n);
                return r;
        }
        *ret = tools;
        *ret_n = n;
        return 0;
}

int codecell_cell_load_tools(codecell_cell *cell, const char *path, codecell_error *err)
{
        json_t *root = json_file_load(path, err);
        if (!root)
                return -EINVAL;
        int r = 0;
        struct tool **tools = NULL;
        size_t n = 0;
        struct mcp_servers servers = {0};
        char *copy = strdup(path);
        char *dir = copy ? dirname(copy) : NULL;
        static const char *const keys[] = {"$schema", "tools", "mcp_servers", "cells", NULL};
        const char *key;
        char problem[256];
        if (!json_is_object(root)) {
                r = err_set(err, CODECELL_ERR_INVALID, EINVAL, "%s: must be a JSON object", path);
                goto out;
        }
        /* The same file may configure cells for `codecell serve`; here only its tools count:
         * its host tools, and every tool of its MCP servers. "$schema" is let pass unnamed. */
        if ((key = json_unknown_key(root, keys))) {
                r = err_set(
                        err, CODECELL_ERR_INVALID, EINVAL, "%s: %s: %s", path, key,
                        json_unknown_key_problem("key", key, keys + 1, problem, sizeof(problem)));
                goto out;
        }
        if (!dir) {
                r = err_sys(err, ENOMEM, "tools");
                goto out;
        }
        /* Every tool is checked before any is added: a bad file changes nothing. */
        const json_t *list = json_object_get(root, "tools");
        json_t *none = list ? NULL : json_array();
        r = tools_from_json(list ? list : none, path, dir, TOOL_TIMEOUT_MAX_MS, &tools, &n, err);
        json_decref(none);
        if (r < 0)
                goto out;
        /* Cut to the cell's tool_call_ms at each call, it would not be what it says. */
        uint64_t cap = cell->config->limits[CODECELL_LIMIT_TOOL_CALL_MS];
        for (size_t k = 0; k < n; k++)
                if (tools[k]->command.timeout_ms > cap) {
                        char what[200];
                        snprintf(what, sizeof(what),
                                 "%llu is over the cell's tool_call_ms %llu: lower it or raise the "
                                 "cell's limit",
                                 (unsigned long long)tools[k]->command.timeout_ms,
                                 (unsigned long long)cap);
                        r = bad(err, path, k, "timeout_ms", what);
                        goto out;
                }
        if ((r = mcp_servers_load(json_object_get(root, "mcp_servers"), path, dir, &servers, err)) <
            0)
                goto out;
        for (size_t k = 0; k < n; k++)
                if (tool_table_find(&cell->tools, tools[k]->name)) {
                        r = bad(err, path, k, "name", "the cell has a tool of that name");
                        goto out;
                }
        for (size_t k = 0; k < n; k++) {
                struct tool *t = tools[k];
                tools[k] = NULL;
                if ((r = cell_add_tool(cell, t, err)) < 0)
                        goto out;
        }
        /* Each tool holds its server: they stop when the cell is freed. */
        for (size_t k = 0; k < servers.n && r == 0; k++)
                r = upstream_attach(cell, servers.list[k], "*", err);
out:
        mcp_servers_free(&servers);
        tools_free_list(tools, n);
        free(copy);
        json_decref(root);
        return r;
}
