/* libFuzzer: what an MCP server's answer can hold, on arbitrary bytes — a CallToolResult
 * unwrapped for the guest (upstream_result.c), and arguments checked against a tool's input
 * schema (json_schema_check.c): {"schema": …, "value": …}. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "json_schema_check.h"
#include "upstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        json_t *doc = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
        if (!doc)
                return 0;
        json_t *value = NULL;
        char *error = NULL;
        if (mcp_result_unwrap(doc, &value, &error) == 0) {
                char *text = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);
                free(text);
        }
        json_decref(value);
        free(error);
        char buf[700];
        (void)json_schema_check(json_object_get(doc, "schema"), json_object_get(doc, "value"), buf,
                                sizeof(buf));
        json_decref(doc);
        return 0;
}
