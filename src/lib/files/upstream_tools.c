/* The tools of an upstream MCP server as a cell's host tools, named SERVER.TOOL with the tool's
 * name sanitised (guest_name_sanitize), so that the same name works in SB.call and as a method
 * of the generated bindings. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell.h"
#include "error.h"
#include "guest_names.h"
#include "upstream_tools.h"
#include "util.h"

/* Upstream tool names are at most 128 characters (MCP); with the server's name and the dot. */
#define NAME_MAX_LEN 200

const char *upstream_collision(struct upstream *u, char *buf, size_t size)
{
        json_t *tools = upstream_tools(u);
        const char *problem = NULL;
        for (size_t i = 0; i < json_array_size(tools) && !problem; i++) {
                const char *a =
                        json_string_value(json_object_get(json_array_get(tools, i), "name"));
                char sa[NAME_MAX_LEN], sb[NAME_MAX_LEN];
                if (!a || guest_name_sanitize(a, sa, sizeof(sa)) < 0) {
                        snprintf(buf, size, "tools[%zu] of its tools/list has no usable name", i);
                        problem = buf;
                        break;
                }
                for (size_t k = 0; k < i && !problem; k++) {
                        const char *b = json_string_value(
                                json_object_get(json_array_get(tools, k), "name"));
                        if (b && guest_name_sanitize(b, sb, sizeof(sb)) == 0 &&
                            strcmp(sa, sb) == 0) {
                                snprintf(buf, size,
                                         "its tools \"%.*s\" and \"%.*s\" are both %s.%s "
                                         "once their names are sanitised",
                                         utf8_prefix(b, 100), b, utf8_prefix(a, 100), a,
                                         upstream_name(u), sa);
                                problem = buf;
                        }
                }
        }
        json_decref(tools);
        return problem;
}

static char *string_or_empty(const json_t *v)
{
        return strdup(json_is_string(v) ? json_string_value(v) : "");
}

/* A host tool for the tools/list entry `def` of u. NULL when out of memory or unnamed. */
static struct tool *tool_for(struct upstream *u, const json_t *def)
{
        const char *own = json_string_value(json_object_get(def, "name"));
        char binding[NAME_MAX_LEN], full[NAME_MAX_LEN + 40];
        if (!own || guest_name_sanitize(own, binding, sizeof(binding)) < 0)
                return NULL;
        snprintf(full, sizeof(full), "%s.%s", upstream_name(u), binding);
        struct tool *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        const json_t *schema = json_object_get(def, "inputSchema");
        const json_t *output = json_object_get(def, "outputSchema");
        const json_t *annotations = json_object_get(def, "annotations");
        t->name = strdup(full);
        t->description = string_or_empty(json_object_get(def, "description"));
        t->input_schema = json_is_object(schema) ? json_deep_copy(schema)
                                                 : json_pack("{s:s}", "type", "object");
        t->upstream.server = upstream_ref(u);
        t->upstream.tool = strdup(own);
        t->upstream.binding = strdup(binding);
        t->upstream.output_schema = json_is_object(output) ? json_deep_copy(output) : NULL;
        t->upstream.annotations = json_is_object(annotations) ? json_deep_copy(annotations) : NULL;
        atomic_init(&t->approval, upstream_approval(u));
        if (!t->name || !t->description || !t->input_schema || !t->upstream.tool ||
            !t->upstream.binding) {
                tool_free(t);
                return NULL;
        }
        return t;
}

int upstream_offers(struct upstream *u, const char *which, codecell_error *err)
{
        if (strcmp(which, "*") == 0)
                return 0;
        json_t *tools = upstream_tools(u);
        bool found = false;
        for (size_t i = 0; i < json_array_size(tools) && !found; i++) {
                const char *own =
                        json_string_value(json_object_get(json_array_get(tools, i), "name"));
                char binding[NAME_MAX_LEN];
                found = own && guest_name_sanitize(own, binding, sizeof(binding)) == 0 &&
                        strcmp(binding, which) == 0;
        }
        json_decref(tools);
        if (found)
                return 0;
        return err_set(err, CODECELL_ERR_INVALID, ENOENT,
                       "the MCP server \"%s\" has no tool \"%s\" (its tools/list, names "
                       "sanitised)",
                       upstream_name(u), which);
}

int upstream_attach(codecell_cell *cell, struct upstream *u, const char *which, codecell_error *err)
{
        int r = upstream_offers(u, which, err);
        if (r < 0)
                return r;
        json_t *tools = upstream_tools(u);
        bool all = strcmp(which, "*") == 0;
        for (size_t i = 0; i < json_array_size(tools) && r == 0; i++) {
                const json_t *def = json_array_get(tools, i);
                const char *own = json_string_value(json_object_get(def, "name"));
                char binding[NAME_MAX_LEN];
                if (!own || guest_name_sanitize(own, binding, sizeof(binding)) < 0)
                        continue;
                if (!all && strcmp(binding, which) != 0)
                        continue;
                struct tool *t = tool_for(u, def);
                if (!t)
                        r = err_sys(err, ENOMEM, "mcp tool");
                else if (!tool_table_find(&cell->tools, t->name))
                        r = cell_add_tool(cell, t, err);
                else
                        tool_free(t);
        }
        json_decref(tools);
        return r;
}

void upstream_attach_new(codecell_cell *cell, struct upstream *u, const json_t *tools)
{
        for (size_t i = 0; i < json_array_size(tools); i++) {
                struct tool *t = tool_for(u, json_array_get(tools, i));
                codecell_error e;
                if (t && tool_table_find(&cell->tools, t->name))
                        tool_free(t);
                else if (t)
                        (void)cell_add_tool(cell, t, &e); /* only out of memory can fail */
        }
}
