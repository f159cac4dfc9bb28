#include "tools.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json_file.h"
#include "upstream.h"
#include "util.h"

void tool_table_init(struct tool_table *t)
{
        *t = (struct tool_table){0};
        pthread_mutex_init(&t->lock, NULL);
        pthread_cond_init(&t->idle, NULL);
}

void tool_free(struct tool *tool)
{
        if (!tool)
                return;
        free(tool->name);
        free(tool->description);
        json_decref(tool->input_schema);
        for (char **p = tool->command.argv; p && *p; p++)
                free(*p);
        free(tool->command.argv);
        for (char **p = tool->command.env; p && *p; p++)
                free(*p);
        free(tool->command.env);
        upstream_unref(tool->upstream.server);
        free(tool->upstream.tool);
        free(tool->upstream.binding);
        json_decref(tool->upstream.output_schema);
        json_decref(tool->upstream.annotations);
        free(tool);
}

void tool_table_hold(struct tool_table *t)
{
        pthread_mutex_lock(&t->lock);
        t->holds++;
        pthread_mutex_unlock(&t->lock);
}

void tool_table_release(struct tool_table *t)
{
        pthread_mutex_lock(&t->lock);
        if (--t->holds == 0)
                pthread_cond_broadcast(&t->idle);
        pthread_mutex_unlock(&t->lock);
}

void tool_table_free(struct tool_table *t)
{
        pthread_mutex_lock(&t->lock);
        while (t->holds > 0)
                pthread_cond_wait(&t->idle, &t->lock);
        pthread_mutex_unlock(&t->lock);
        for (size_t i = 0; i < t->n; i++)
                tool_free(t->tools[i]);
        free(t->tools);
        json_decref(t->bindings);
        pthread_cond_destroy(&t->idle);
        pthread_mutex_destroy(&t->lock);
}

const char *tool_name_problem(const char *name)
{
        if (!name || !*name)
                return "must not be empty";
        if (strlen(name) > 64)
                return "must be at most 64 characters";
        if (!isalpha((unsigned char)name[0]))
                return "must start with a letter";
        for (const char *p = name; *p; p++)
                if (!isalnum((unsigned char)*p) && !strchr("_.-", *p))
                        return "may hold only letters, digits, '_', '.' and '-'";
        return NULL;
}

static const char *const schema_types[] = {"string", "integer", "number", "boolean",
                                           "array",  "object",  "null",   NULL};

/* What is wrong with one property's schema (at names it: "properties.city"), into buf, or
 * NULL. Only what a model is shown or what the host checks (json_schema_check.c) is looked at:
 * a type this check would let through as "any JSON" is refused, never shown. */
static const char *property_problem(const json_t *schema, const char *at, int depth, char *buf,
                                    size_t size)
{
        if (json_is_boolean(schema))
                return NULL;
        if (!json_is_object(schema))
                return snprintf(buf, size, "%s: must be a schema object", at), buf;
        if (depth > 32)
                return NULL;
        const json_t *type = json_object_get(schema, "type");
        size_t i;
        const json_t *t;
        if (type && !json_is_string(type) && !json_is_array(type))
                return snprintf(buf, size, "%s.type: must be a type name or a list of them", at),
                       buf;
        for (i = 0; type && i < (json_is_array(type) ? json_array_size(type) : 1); i++) {
                t = json_is_array(type) ? json_array_get(type, i) : type;
                const char *name = json_string_value(t);
                const char *guess = name ? json_closest_key(name, schema_types) : NULL;
                size_t k = 0;
                while (name && schema_types[k] && strcmp(name, schema_types[k]) != 0)
                        k++;
                if (!name || !schema_types[k]) {
                        char list[128];
                        snprintf(buf, size,
                                 "%s.type: \"%.*s\" is not a JSON Schema type (%s%s%sone of %s)",
                                 at, name ? utf8_prefix(name, 64) : 0, name ? name : "",
                                 guess ? "did you mean \"" : "", guess ? guess : "",
                                 guess ? "\"? " : "",
                                 json_key_list(schema_types, list, sizeof(list)));
                        utf8_trim_cut(buf);
                        return buf;
                }
        }
        const json_t *allowed = json_object_get(schema, "enum");
        if (allowed && !json_is_array(allowed))
                return snprintf(buf, size, "%s.enum: must be an array of values", at), buf;
        const json_t *items = json_object_get(schema, "items");
        char sub[256];
        if (items) {
                snprintf(sub, sizeof(sub), "%s.items", at);
                utf8_trim_cut(sub);
                const char *problem = property_problem(items, sub, depth + 1, buf, size);
                if (problem)
                        return problem;
        }
        const json_t *props = json_object_get(schema, "properties");
        if (props && !json_is_object(props))
                return snprintf(buf, size, "%s.properties: must be an object", at), buf;
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)props, key, value) {
                snprintf(sub, sizeof(sub), "%s.properties.%.*s", at, utf8_prefix(key, 64), key);
                utf8_trim_cut(sub);
                const char *problem = property_problem(value, sub, depth + 1, buf, size);
                if (problem)
                        return problem;
        }
        const json_t *required = json_object_get(schema, "required");
        if (required && !json_is_array(required))
                return snprintf(buf, size, "%s.required: must be an array of property names", at),
                       buf;
        json_array_foreach(required, i, value) {
                const char *name = json_string_value(value);
                if (!name)
                        return snprintf(buf, size, "%s.required[%zu]: must be a property name", at,
                                        i),
                               buf;
                if (props && !json_object_get(props, name)) {
                        snprintf(buf, size,
                                 "%s.required: \"%.*s\" is not one of the properties it defines",
                                 at, utf8_prefix(name, 64), name);
                        utf8_trim_cut(buf);
                        return buf;
                }
        }
        return NULL;
}

const char *tool_schema_problem(const json_t *schema, char *buf, size_t size)
{
        if (!json_is_object(schema))
                return "must be a JSON object";
        const json_t *type = json_object_get(schema, "type");
        if (type && !(json_is_string(type) && strcmp(json_string_value(type), "object") == 0))
                return "must have \"type\": \"object\" (the arguments are keywords)";
        const json_t *props = json_object_get(schema, "properties");
        if (props && !json_is_object(props))
                return "\"properties\" must be an object";
        const json_t *required = json_object_get(schema, "required");
        size_t i;
        const json_t *value;
        json_array_foreach(required, i, value)
                if (json_is_string(value) && !json_object_get(props, json_string_value(value))) {
                        snprintf(buf, size,
                                 "\"required\" names \"%.*s\", which \"properties\" does not "
                                 "define",
                                 utf8_prefix(json_string_value(value), 64),
                                 json_string_value(value));
                        utf8_trim_cut(buf);
                        return buf;
                }
        const char *problem = property_problem(schema, "", 0, buf, size);
        /* The top level's own path is the key the caller names ("input_schema"). */
        if (problem && problem[0] == '.')
                memmove(buf, buf + 1, strlen(buf));
        return problem;
}

/* The bindings the guest makes for MCP tools ({"memory": {"create_entities":
 * "memory.create_entities"}}), sent with each exec. Replaced, never changed, so a reader's
 * reference stays valid. Under t->lock. */
static int add_binding(struct tool_table *t, const struct tool *tool, codecell_error *err)
{
        const char *dot = strchr(tool->name, '.');
        json_t *next = t->bindings ? json_deep_copy(t->bindings) : json_object();
        char server[80];
        /* Cut on a character boundary: the name becomes a JSON key. */
        size_t server_len = utf8_cut(tool->name, (size_t)(dot - tool->name), sizeof(server) - 1);
        snprintf(server, sizeof(server), "%.*s", (int)server_len, tool->name);
        json_t *of_server = next ? json_object_get(next, server) : NULL;
        if (next && !of_server)
                json_object_set_new(next, server, of_server = json_object());
        if (!next || !of_server ||
            json_object_set_new(of_server, tool->upstream.binding, json_string(tool->name)) < 0) {
                json_decref(next);
                return err_sys(err, ENOMEM, "tool");
        }
        json_decref(t->bindings);
        t->bindings = next;
        return 0;
}

int tool_table_add(struct tool_table *t, struct tool *tool, codecell_error *err)
{
        pthread_mutex_lock(&t->lock);
        int r = 0;
        for (size_t i = 0; i < t->n; i++)
                if (strcmp(t->tools[i]->name, tool->name) == 0) {
                        r = err_set(err, CODECELL_ERR_INVALID, EEXIST,
                                    "tool \"%s\": a tool of that name exists already", tool->name);
                        goto out;
                }
        struct tool **grown = realloc(t->tools, (t->n + 1) * sizeof(*grown));
        if (!grown) {
                r = err_sys(err, ENOMEM, "tool");
                goto out;
        }
        t->tools = grown;
        if (tool->upstream.server && (r = add_binding(t, tool, err)) < 0)
                goto out;
        t->tools[t->n++] = tool;
        tool = NULL;
out:
        pthread_mutex_unlock(&t->lock);
        tool_free(tool);
        return r;
}

const char *tool_approval_from_json(const json_t *value, bool *ret)
{
        const char *v = json_string_value(value);
        *ret = v && strcmp(v, "always") == 0;
        if (!value || (v && (*ret || strcmp(v, "never") == 0)))
                return NULL;
        return "must be \"always\" (each call waits for a person to allow it) or \"never\"";
}

bool tool_table_require_approval(struct tool_table *t, const char *name)
{
        /* Found under the lock, marked without it: the tool lives as long as the table. */
        struct tool *tool = (struct tool *)tool_table_find(t, name);
        if (tool)
                atomic_store(&tool->approval, true);
        return tool != NULL;
}

const struct tool *tool_table_find(struct tool_table *t, const char *name)
{
        const struct tool *found = NULL;
        pthread_mutex_lock(&t->lock);
        for (size_t i = 0; i < t->n && !found; i++)
                if (strcmp(t->tools[i]->name, name) == 0)
                        found = t->tools[i];
        pthread_mutex_unlock(&t->lock);
        return found;
}

/* ---- the description's Tools section ----------------------------------------------------- */

/* The guest language's type for a property schema, e.g. "String" or "int". */
bool tool_schema_requires(const json_t *schema, const char *key)
{
        size_t i;
        const json_t *v;
        json_array_foreach(json_object_get(schema, "required"), i, v)
                if (json_is_string(v) && strcmp(json_string_value(v), key) == 0)
                        return true;
        return false;
}

json_t *tool_table_bindings(struct tool_table *t)
{
        pthread_mutex_lock(&t->lock);
        json_t *b = json_incref(t->bindings);
        pthread_mutex_unlock(&t->lock);
        return b;
}
