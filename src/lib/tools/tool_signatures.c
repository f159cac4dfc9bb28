/* The signature of an MCP server's tool in the guest's own language, built from its inputSchema
 * and outputSchema, for the description the model reads and for SB.describe (docs/tools.md):
 *
 *     Memory.create_entities(entities: Array<{name: String, entityType: String}>) -> Hash
 *     memory.create_entities(entities: list[{name: str, entityType: str}]) -> dict
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_signatures.h"
#include "guest_names.h"
#include "util.h"

/* Nested objects deeper than this are written as Hash / dict. */
#define MAX_DEPTH 3

static void type_of(FILE *f, const struct tool_syntax *syn, const json_t *schema, int depth);

static void literal(FILE *f, const struct tool_syntax *syn, const json_t *v)
{
        if (json_is_true(v))
                fputs(syn->true_literal, f);
        else if (json_is_false(v))
                fputs(syn->false_literal, f);
        else if (json_is_null(v))
                fputs(syn->null, f);
        else {
                char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
                fputs(text ? text : "?", f);
                free(text);
        }
}

static void one_type(FILE *f, const struct tool_syntax *syn, const char *type, const json_t *schema,
                     int depth)
{
        if (strcmp(type, "array") == 0) {
                const json_t *items = json_object_get(schema, "items");
                if (!json_is_object(items) || json_object_size(items) == 0 ||
                    depth >= MAX_DEPTH * 2) {
                        fputs(syn->array, f);
                        return;
                }
                fputs(syn->list_open, f);
                type_of(f, syn, items, depth + 1);
                fputs(syn->list_close, f);
                return;
        }
        if (strcmp(type, "object") == 0) {
                const json_t *props = json_object_get(schema, "properties");
                if (!json_is_object(props) || json_object_size(props) == 0 || depth >= MAX_DEPTH) {
                        fputs(syn->object, f);
                        return;
                }
                fputs("{", f);
                const char *key;
                const json_t *prop;
                bool first = true;
                json_object_foreach((json_t *)props, key, prop) {
                        fprintf(f, "%s%s%s: ", first ? "" : ", ", key,
                                tool_schema_requires(schema, key) ? "" : "?");
                        first = false;
                        type_of(f, syn, prop, depth + 1);
                }
                fputs("}", f);
                return;
        }
        const struct {
                const char *json, *guest;
        } map[] = {{"string", syn->string},
                   {"integer", syn->integer},
                   {"number", syn->number},
                   {"boolean", syn->boolean},
                   {"null", syn->null}};
        for (size_t k = 0; k < sizeof(map) / sizeof(map[0]); k++)
                if (strcmp(type, map[k].json) == 0) {
                        fputs(map[k].guest, f);
                        return;
                }
        fputs(syn->any, f);
}

/* The guest's type for a schema: an enum's values, a union, a nested object or a list. */
static void type_of(FILE *f, const struct tool_syntax *syn, const json_t *schema, int depth)
{
        const json_t *values = json_object_get(schema, "enum");
        const json_t *type = json_object_get(schema, "type");
        const json_t *any = json_object_get(schema, "anyOf");
        if (!any)
                any = json_object_get(schema, "oneOf");
        size_t i;
        const json_t *v;
        if (json_is_array(values) && json_array_size(values) > 0) {
                json_array_foreach(values, i, v) {
                        if (i)
                                fputs(" | ", f);
                        literal(f, syn, v);
                }
        } else if (json_object_get(schema, "const")) {
                literal(f, syn, json_object_get(schema, "const"));
        } else if (json_is_string(type)) {
                one_type(f, syn, json_string_value(type), schema, depth);
        } else if (json_is_array(type) && json_array_size(type) > 0) {
                json_array_foreach(type, i, v) {
                        if (i)
                                fputs(" | ", f);
                        one_type(f, syn, json_is_string(v) ? json_string_value(v) : "", schema,
                                 depth);
                }
        } else if (json_is_array(any) && json_array_size(any) > 0 && depth < MAX_DEPTH) {
                json_array_foreach(any, i, v) {
                        if (i)
                                fputs(" | ", f);
                        type_of(f, syn, v, depth + 1);
                }
        } else if (json_is_object(json_object_get(schema, "properties"))) {
                one_type(f, syn, "object", schema, depth);
        } else {
                fputs(syn->any, f);
        }
}

void tool_binding_name(FILE *f, const struct tool_syntax *syn, const struct tool *tool)
{
        const char *dot = strchr(tool->name, '.');
        size_t server_len = dot ? (size_t)(dot - tool->name) : strlen(tool->name);
        if (syn->server_module) {
                char server[40], module[40];
                /* Cut on a character boundary: the module's name is built from it. */
                size_t cut = utf8_cut(tool->name, server_len, sizeof(server) - 1);
                snprintf(server, sizeof(server), "%.*s", (int)cut, tool->name);
                guest_module_name(server, module, sizeof(module));
                fputs(module, f);
        } else {
                fprintf(f, "%.*s", (int)server_len, tool->name);
        }
        fprintf(f, ".%s", tool->upstream.binding);
        for (const char *const *word = syn->reserved; word && *word; word++)
                if (strcmp(tool->upstream.binding, *word) == 0)
                        fputc('_', f);
}

static void hints(FILE *f, const struct tool *tool)
{
        const json_t *a = tool->upstream.annotations;
        if (json_is_true(json_object_get(a, "readOnlyHint")))
                fputs(" (read-only)", f);
        else if (json_is_true(json_object_get(a, "destructiveHint")))
                fputs(" (destructive)", f);
}

void tool_signature_describe(FILE *f, const struct tool_syntax *syn, const struct tool *tool)
{
        const json_t *schema = tool->input_schema;
        const json_t *props = json_object_get(schema, "properties");
        fprintf(f, "\n\n### %s", tool->name);
        hints(f, tool);
        if (*tool->description)
                fprintf(f, "\n\n%s", tool->description);
        fputs("\n\n    ", f);
        tool_binding_name(f, syn, tool);
        fputs("(", f);
        const char *key;
        const json_t *prop;
        bool first = true;
        /* Required keywords first, as a reader looks for them. */
        for (int pass = 0; pass < 2; pass++)
                json_object_foreach((json_t *)props, key, prop) {
                        bool req = tool_schema_requires(schema, key);
                        if (req != (pass == 0))
                                continue;
                        fprintf(f, "%s%s: ", first ? "" : ", ", key);
                        first = false;
                        /* An optional union may need parentheses: ("a" | "b")?. */
                        char *type = NULL;
                        size_t len = 0;
                        FILE *t = open_memstream(&type, &len);
                        if (t) {
                                type_of(t, syn, prop, 1);
                                fclose(t);
                        }
                        bool wrap =
                                !req && syn->optional_wraps_union && type && strstr(type, " | ");
                        fprintf(f, "%s%s%s", wrap ? "(" : "", type ? type : "?", wrap ? ")" : "");
                        free(type);
                        if (!req)
                                fputs(syn->optional, f);
                }
        fputs(")", f);
        if (tool->upstream.output_schema) {
                fputs(" -> ", f);
                type_of(f, syn, tool->upstream.output_schema, 0);
        }
        json_object_foreach((json_t *)props, key, prop) {
                const char *desc = json_string_value(json_object_get(prop, "description"));
                if (desc && *desc) {
                        fprintf(f, "\n    # %s: ", key);
                        /* A comment stays one line. */
                        for (const char *p = desc; *p; p++)
                                fputc(*p == '\n' ? ' ' : *p, f);
                }
        }
}

void tool_summary_line(FILE *f, const struct tool_syntax *syn, const struct tool *tool)
{
        fputs("\n- `", f);
        if (tool->upstream.server)
                tool_binding_name(f, syn, tool);
        else
                fprintf(f, syn->call, tool->name), fputs(")", f);
        fputs("`", f);
        hints(f, tool);
        size_t len = strcspn(tool->description, "\n");
        if (len > 100)
                len = 100;
        /* Not inside a UTF-8 character. */
        while (len > 0 && len < strlen(tool->description) &&
               ((unsigned char)tool->description[len] & 0xC0) == 0x80)
                len--;
        if (len)
                fprintf(f, " — %.*s%s", (int)len, tool->description,
                        tool->description[len] && tool->description[len] != '\n' ? "…" : "");
}

void tool_signatures_intro(FILE *f, const struct tool_syntax *syn)
{
        fprintf(f, "\n\n%s", syn->bindings_intro);
}

void tool_signatures_many(FILE *f, const struct tool_syntax *syn, size_t n)
{
        fprintf(f,
                "\n\nThere are %zu tools: their names and summaries follow. Read a tool's full "
                "signature\nat run time with `%s(\"NAME\")` (a string) before you call it.",
                n, syn->describe);
}
