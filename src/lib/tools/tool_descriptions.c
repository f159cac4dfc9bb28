/* The "## Tools" section of a cell's description and SB.describe's entry for one tool: each
 * tool's name, description and arguments in the guest's language, and an MCP server's tools by
 * their signatures (tool_signatures.c). Above the table and the signatures, which it reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_signatures.h"
#include "tools.h"

static void type_name(FILE *f, const struct tool_syntax *syn, const json_t *schema)
{
        const json_t *enumeration = json_object_get(schema, "enum");
        if (json_is_array(enumeration)) {
                size_t i;
                const json_t *v;
                json_array_foreach(enumeration, i, v) {
                        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
                        fprintf(f, "%s%s", i ? " | " : "", text ? text : "?");
                        free(text);
                }
                return;
        }
        const json_t *type = json_object_get(schema, "type");
        const json_t *types[8];
        size_t n = 0;
        if (json_is_string(type))
                types[n++] = type;
        else if (json_is_array(type))
                for (size_t i = 0; i < json_array_size(type) && n < 8; i++)
                        types[n++] = json_array_get(type, i);
        const struct {
                const char *json, *guest;
        } map[] = {
                {"string", syn->string},   {"integer", syn->integer}, {"number", syn->number},
                {"boolean", syn->boolean}, {"array", syn->array},     {"object", syn->object},
                {"null", syn->null},
        };
        if (n == 0) {
                fputs("any JSON", f);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                const char *name = json_string_value(types[i]);
                const char *guest = "any JSON";
                for (size_t k = 0; name && k < sizeof(map) / sizeof(map[0]); k++)
                        if (strcmp(name, map[k].json) == 0)
                                guest = map[k].guest;
                fprintf(f, "%s%s", i ? " | " : "", guest);
        }
}

static void describe_tool(FILE *f, const struct tool_syntax *syn, const struct tool *tool)
{
        const json_t *props = json_object_get(tool->input_schema, "properties");
        fprintf(f, "\n\n### %s", tool->name);
        if (*tool->description)
                fprintf(f, "\n\n%s", tool->description);
        fputs("\n\n    ", f);
        fprintf(f, syn->call, tool->name);
        const char *key;
        const json_t *prop;
        json_object_foreach((json_t *)props, key, prop) {
                fprintf(f, syn->keyword, key);
                bool optional = !tool_schema_requires(tool->input_schema, key);
                if (optional && json_object_get(prop, "enum"))
                        fputs("(", f);
                type_name(f, syn, prop);
                if (optional && json_object_get(prop, "enum"))
                        fputs(")", f);
                if (optional)
                        fputs("?", f);
        }
        fputs(")", f);
        bool any = false;
        json_object_foreach((json_t *)props, key, prop) {
                fprintf(f, "%s- `%s` (", any ? "\n" : "\n\n", key);
                any = true;
                type_name(f, syn, prop);
                fprintf(f, ", %s)",
                        tool_schema_requires(tool->input_schema, key) ? "required" : "optional");
                const char *desc = json_string_value(json_object_get(prop, "description"));
                if (desc && *desc)
                        fprintf(f, " — %s", desc);
        }
}

static void describe_one(FILE *f, const struct tool_syntax *syn, const struct tool *tool)
{
        if (tool->upstream.server)
                tool_signature_describe(f, syn, tool);
        else
                describe_tool(f, syn, tool);
        /* The model plans for a call that may be refused: it should not retry a decline. */
        if (atomic_load(&tool->approval))
                fputs("\n\nNeeds approval: each call waits until a person allows it. A call "
                      "that is declined or not answered in time raises the tool error and the "
                      "tool does not run; do not retry it unasked.",
                      f);
}

void tools_describe(struct tool_table *t, const struct tool_syntax *syn, uint64_t concurrency,
                    FILE *f)
{
        pthread_mutex_lock(&t->lock);
        if (t->n > 0) {
                fprintf(f, "\n\n## Tools\n\n%s", syn->intro);
                /* The model writes one script for many calls: it should know that they need
                 * not wait for each other, and how to say so. */
                if (concurrency > 1 && syn->concurrent) {
                        fputs("\n\n", f);
                        fprintf(f, syn->concurrent, (unsigned long long)concurrency);
                }
                bool upstream = false;
                for (size_t i = 0; i < t->n; i++)
                        upstream |= t->tools[i]->upstream.server != NULL;
                if (upstream)
                        tool_signatures_intro(f, syn);
                /* Many tools: names and one line each, and SB.describe for the rest, so that
                 * the description stays small. */
                if (t->n > TOOLS_DESCRIBED_IN_FULL) {
                        tool_signatures_many(f, syn, t->n);
                        fputs("\n", f);
                }
                for (size_t i = 0; i < t->n; i++) {
                        if (t->n > TOOLS_DESCRIBED_IN_FULL)
                                tool_summary_line(f, syn, t->tools[i]);
                        else
                                describe_one(f, syn, t->tools[i]);
                }
        }
        pthread_mutex_unlock(&t->lock);
}

char *tool_describe_text(struct tool_table *t, const struct tool_syntax *syn, const char *name)
{
        const struct tool *tool = tool_table_find(t, name);
        if (!tool)
                return NULL;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return NULL;
        describe_one(f, syn, tool);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        /* Without the blank lines that separate entries in the description. */
        size_t lead = strspn(text, "\n");
        memmove(text, text + lead, len - lead + 1);
        return text;
}
