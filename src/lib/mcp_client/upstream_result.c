/* What the guest gets from an upstream tool's CallToolResult (docs/tools.md, "Results"):
 * the value a programmer expects, not MCP's envelope. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exact_integers.h"
#include "upstream.h"

/* A text as the guest gets it: the JSON value it holds, or the string itself. */
static json_t *text_value(const char *text)
{
        json_t *parsed = json_loads_exact(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        return parsed ? parsed : json_string(text);
}

/* The tool's own words for its failure: its text items, one per line. */
static char *error_text(const json_t *content)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return NULL;
        size_t i;
        const json_t *item;
        bool any = false;
        json_array_foreach(content, i, item) {
                const char *t = json_string_value(json_object_get(item, "text"));
                if (t) {
                        fprintf(f, "%s%s", any ? "\n" : "", t);
                        any = true;
                }
        }
        if (!any)
                fputs("the tool reported an error (and no text)", f);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

int mcp_result_unwrap(const json_t *result, json_t **ret_value, char **ret_error)
{
        *ret_value = NULL;
        *ret_error = NULL;
        const json_t *content = json_object_get(result, "content");
        if (!json_is_object(result) || (content && !json_is_array(content))) {
                *ret_error = strdup("the tool's answer is not a CallToolResult");
                return -1;
        }
        if (json_is_true(json_object_get(result, "isError"))) {
                *ret_error = error_text(content);
                if (!*ret_error)
                        *ret_error = strdup("the tool reported an error");
                return -1;
        }
        const json_t *structured = json_object_get(result, "structuredContent");
        if (structured) {
                *ret_value = json_incref((json_t *)structured);
                return 0;
        }
        size_t n = json_array_size(content), texts = 0, i;
        const json_t *item;
        json_array_foreach(content, i, item) {
                const char *type = json_string_value(json_object_get(item, "type"));
                if (type && strcmp(type, "text") == 0 &&
                    json_is_string(json_object_get(item, "text")))
                        texts++;
        }
        if (n == 0) {
                *ret_value = json_null();
        } else if (texts == n && n == 1) {
                *ret_value = text_value(
                        json_string_value(json_object_get(json_array_get(content, 0), "text")));
        } else if (texts == n) {
                *ret_value = json_array();
                json_array_foreach(content, i, item)
                        json_array_append_new(*ret_value, text_value(json_string_value(
                                                                  json_object_get(item, "text"))));
        } else {
                /* Images, audio, resources: the content items as MCP defines them, without
                 * their annotations and _meta. */
                *ret_value = json_array();
                json_array_foreach(content, i, item) {
                        json_t *copy = json_is_object(item) ? json_copy((json_t *)item) : NULL;
                        if (!copy)
                                continue;
                        json_object_del(copy, "annotations");
                        json_object_del(copy, "_meta");
                        json_array_append_new(*ret_value, copy);
                }
        }
        if (!*ret_value) {
                *ret_error = strdup("out of memory");
                return -1;
        }
        return 0;
}
