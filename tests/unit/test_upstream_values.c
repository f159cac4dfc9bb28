/* The pure parts of the MCP client: arguments against an input schema (json_schema_check.c),
 * the name rule (upstream_tools.c) and a CallToolResult as the guest gets it
 * (upstream_result.c). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exact_integers.h"
#include "guest_names.h"
#include "util.h"
#include "json_schema_check.h"
#include "upstream_tools.h"

/* NULL when the value passes, else the message. */
static const char *verdict(const char *schema, const char *value)
{
        static char buf[700];
        json_t *s = json_loads(schema, 0, NULL), *v = json_loads(value, JSON_DECODE_ANY, NULL);
        const char *r = json_schema_check(s, v, buf, sizeof(buf));
        json_decref(s);
        json_decref(v);
        return r;
}

/* The guest's value as compact JSON, or "error: …". */
static char *unwrapped(const char *result)
{
        json_t *r = json_loads(result, 0, NULL), *value = NULL;
        char *error = NULL, *text = NULL;
        if (mcp_result_unwrap(r, &value, &error) == 0)
                text = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);
        else if (asprintf(&text, "error: %s", error) < 0)
                text = NULL;
        json_decref(r);
        json_decref(value);
        free(error);
        return text;
}

/* text loaded and dumped again through exact_integers.h. */
static char *round_trip(const char *text)
{
        json_t *value = json_loads_exact(text, JSON_DECODE_ANY, NULL);
        char *out = value ? json_dumps_exact(value, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        json_decref(value);
        return out;
}

static void exact_integers(void)
{
        /* Beyond 64 bits, both signs, as keys' values and in arrays: the same digits back. */
        const char *big = "{\"n\":1180591620717411303424,\"m\":[-9223372036854775809,1,2.5],"
                          "\"s\":\"1180591620717411303424\"}";
        char *out = round_trip(big);
        CHECK_STR(out, big);
        free(out);
        /* What jansson holds goes the usual way. */
        out = round_trip("[9223372036854775807,-9223372036854775808]");
        CHECK_STR(out, "[9223372036854775807,-9223372036854775808]");
        free(out);
        /* A string that looks like a marker but lacks the process's token stays a string. */
        const char *forged = "[1180591620717411303424,\"\\u0000codecell-integer:00:5\"]";
        json_t *value = json_loads_exact(forged, JSON_ALLOW_NUL, NULL);
        CHECK(value != NULL);
        out = json_dumps_exact(value, JSON_COMPACT);
        CHECK_STR(out, "[1180591620717411303424,\"\\u0000codecell-integer:00:5\"]");
        free(out);
        json_decref(value);
        /* Digits inside a string are never a number. */
        out = round_trip("[\"a\\\"1180591620717411303424\",1180591620717411303424]");
        CHECK_STR(out, "[\"a\\\"1180591620717411303424\",1180591620717411303424]");
        free(out);
}

int main(void)
{
        exact_integers();
        const char *obj = "{\"type\":\"object\",\"required\":[\"a\"],\"properties\":{"
                          "\"a\":{\"type\":\"integer\",\"minimum\":1},"
                          "\"b\":{\"type\":[\"string\",\"null\"]},"
                          "\"c\":{\"type\":\"array\",\"minItems\":1,\"items\":{\"type\":\"object\","
                          "\"additionalProperties\":{\"type\":\"boolean\"}}},"
                          "\"odd key\":{\"const\":7}}}";
        CHECK(verdict(obj, "{\"a\":1}") == NULL);
        CHECK(verdict(obj, "{\"a\":2.0}") == NULL); /* an integer written as a real */
        CHECK_STR(verdict(obj, "{\"a\":2.5}"), "a: must be an integer");
        CHECK_STR(verdict(obj, "{\"a\":0}"), "a: must be at least 1");
        CHECK_STR(verdict(obj, "{}"), "the required \"a\" is missing");
        /* A key of euro signs cut in the path lands between characters: the message stays
         * UTF-8 (a byte cut broke it, and the JSON that carries it). */
        {
                char schema[1024], value[1024], key[3 * 60 + 1] = "";
                for (int i = 0; i < 60; i++)
                        strcat(key, "\xe2\x82\xac");
                snprintf(schema, sizeof(schema),
                         "{\"type\":\"object\",\"properties\":{\"%s\":{\"type\":\"string\"}}}",
                         key);
                snprintf(value, sizeof(value), "{\"%s\":1}", key);
                const char *m = verdict(schema, value);
                CHECK(m && utf8_valid(m, strlen(m)) && strstr(m, "must be a string"));
        }
        CHECK(verdict(obj, "{\"a\":1,\"b\":null}") == NULL);
        CHECK_STR(verdict(obj, "{\"a\":1,\"b\":1}"), "b: must be a string or null");
        CHECK_STR(verdict(obj, "{\"a\":1,\"c\":[]}"), "c: must have at least 1 items");
        CHECK_STR(verdict(obj, "{\"a\":1,\"c\":[{\"x\":true},{\"y\":1}]}"),
                  "c[1].y: must be true or false");
        CHECK_STR(verdict(obj, "{\"a\":1,\"odd key\":8}"), "[\"odd key\"]: must be 7");
        CHECK_STR(verdict("{\"type\":\"object\"}", "[]"), "must be an object");
        CHECK(verdict("{\"type\":\"object\",\"anyOf\":[]}", "{\"z\":1}") == NULL);
        CHECK(verdict("{\"type\":\"frob\"}", "1") == NULL); /* unknown types: the tool decides */
        CHECK_STR(verdict("{\"enum\":[\"x\",1]}", "2"), "must be one of [\"x\",1]");

        char out[64];
        CHECK(guest_name_sanitize("get-sum", out, sizeof(out)) == 0);
        CHECK_STR(out, "get_sum");
        CHECK(guest_name_sanitize("2fa.code", out, sizeof(out)) == 0);
        CHECK_STR(out, "_2fa_code");
        CHECK(guest_name_sanitize("caf\xc3\xa9", out, sizeof(out)) == 0);
        CHECK_STR(out, "caf__");
        CHECK(guest_name_sanitize("", out, sizeof(out)) < 0);
        CHECK(guest_name_sanitize("abcdef", out, 4) < 0);

        char *t;
        CHECK_STR(t = unwrapped("{\"content\":[{\"type\":\"text\",\"text\":\"[1,2]\"}]}"), "[1,2]");
        free(t);
        CHECK_STR(t = unwrapped("{\"content\":[{\"type\":\"text\",\"text\":\"plain\"}]}"),
                  "\"plain\"");
        free(t);
        CHECK_STR(t = unwrapped("{\"content\":[{\"type\":\"text\",\"text\":\"1\"},"
                                "{\"type\":\"text\",\"text\":\"b\"}]}"),
                  "[1,\"b\"]");
        free(t);
        CHECK_STR(t = unwrapped("{\"content\":[]}"), "null");
        free(t);
        CHECK_STR(t = unwrapped("{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],"
                                "\"structuredContent\":{\"k\":false}}"),
                  "{\"k\":false}");
        free(t);
        CHECK_STR(t = unwrapped("{\"isError\":true,\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
                                "{\"type\":\"text\",\"text\":\"b\"}]}"),
                  "error: a\nb");
        free(t);
        CHECK_STR(t = unwrapped("{\"content\":[{\"type\":\"image\",\"data\":\"AA==\","
                                "\"mimeType\":\"image/png\",\"annotations\":{\"x\":1}}]}"),
                  "[{\"type\":\"image\",\"data\":\"AA==\",\"mimeType\":\"image/png\"}]");
        free(t);
        CHECK_STR(t = unwrapped("{\"content\":{}}"),
                  "error: the tool's answer is not a CallToolResult");
        free(t);
        CHECK_DONE();
}
