/* A tool's arguments against its input schema, on the host before the call leaves (DESIGN §8):
 * the parts of JSON Schema that tools use to say what they take — type, enum, const, required,
 * properties, additionalProperties, items, and the bounds of numbers, strings and arrays.
 * Keywords not listed here (anyOf, $ref, format …) are not checked: the tool checks them. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_schema_check.h"
#include "util.h"

/* Deeper arguments are not checked further (the frame's own depth limit holds anyway). */
#define MAX_DEPTH 64

struct checker {
        char *buf;
        size_t size;
        char path[512];
};

static const char *fail(struct checker *c, const char *fmt, const char *arg)
{
        char what[300];
        snprintf(what, sizeof(what), fmt, arg);
        snprintf(c->buf, c->size, "%s%s%s", c->path, c->path[0] ? ": " : "", what);
        utf8_trim_cut(c->buf);
        return c->buf;
}

static bool type_matches(const char *type, const json_t *v)
{
        if (strcmp(type, "string") == 0)
                return json_is_string(v);
        if (strcmp(type, "integer") == 0)
                return json_is_integer(v) ||
                       (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
        if (strcmp(type, "number") == 0)
                return json_is_number(v);
        if (strcmp(type, "boolean") == 0)
                return json_is_boolean(v);
        if (strcmp(type, "array") == 0)
                return json_is_array(v);
        if (strcmp(type, "object") == 0)
                return json_is_object(v);
        if (strcmp(type, "null") == 0)
                return json_is_null(v);
        return true; /* a type this checker does not know: the tool decides */
}

static const char *article(const char *type)
{
        static const char *const words[][2] = {{"string", "a string"}, {"integer", "an integer"},
                                               {"number", "a number"}, {"boolean", "true or false"},
                                               {"array", "an array"},  {"object", "an object"},
                                               {"null", "null"}};
        for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++)
                if (strcmp(type, words[k][0]) == 0)
                        return words[k][1];
        return type;
}

/* "a string", or "a string or null" for a list of types. */
static const char *type_word(const json_t *type, char *words, size_t size)
{
        if (json_is_string(type))
                return article(json_string_value(type));
        words[0] = '\0';
        size_t i;
        const json_t *t;
        json_array_foreach(type, i, t)
                if (json_is_string(t))
                        snprintf(words + strlen(words), size - strlen(words), "%s%s",
                                 i ? " or " : "", article(json_string_value(t)));
        return words;
}

static const char *check(struct checker *c, const json_t *schema, const json_t *v, int depth);

/* Appends a key or an index to the path for the check of one child, and takes it off after. */
static const char *check_child(struct checker *c, const json_t *schema, const json_t *v,
                               const char *key, size_t index, int depth)
{
        size_t len = strlen(c->path);
        bool plain = key && (isalpha((unsigned char)key[0]) || key[0] == '_');
        for (const char *p = key; plain && *p; p++)
                plain = isalnum((unsigned char)*p) || *p == '_';
        if (!key)
                snprintf(c->path + len, sizeof(c->path) - len, "[%zu]", index);
        else if (plain)
                snprintf(c->path + len, sizeof(c->path) - len, "%s%s", len ? "." : "", key);
        else
                snprintf(c->path + len, sizeof(c->path) - len, "[\"%.*s\"]", utf8_prefix(key, 100),
                         key);
        utf8_trim_cut(c->path);
        const char *problem = check(c, schema, v, depth + 1);
        c->path[len] = '\0';
        return problem;
}

static const char *check_object(struct checker *c, const json_t *schema, const json_t *v, int depth)
{
        const json_t *props = json_object_get(schema, "properties");
        const json_t *extra = json_object_get(schema, "additionalProperties");
        size_t i;
        const json_t *name;
        json_array_foreach(json_object_get(schema, "required"), i, name) {
                const char *key = json_string_value(name);
                if (key && !json_object_get(v, key))
                        return fail(c, "the required \"%s\" is missing", key);
        }
        const char *key;
        const json_t *item;
        json_object_foreach((json_t *)v, key, item) {
                const json_t *sub = json_object_get(props, key);
                if (!sub && json_is_false(extra))
                        return fail(c, "unknown key \"%s\" (the schema allows no others)", key);
                if (!sub && json_is_object(extra))
                        sub = extra;
                const char *problem = sub ? check_child(c, sub, item, key, 0, depth) : NULL;
                if (problem)
                        return problem;
        }
        return NULL;
}

static const char *check(struct checker *c, const json_t *schema, const json_t *v, int depth)
{
        if (!json_is_object(schema) || depth > MAX_DEPTH)
                return NULL;
        const json_t *type = json_object_get(schema, "type");
        if (json_is_string(type) || json_is_array(type)) {
                bool ok = json_is_string(type) && type_matches(json_string_value(type), v);
                size_t i;
                const json_t *t;
                json_array_foreach(type, i, t)
                        ok |= json_is_string(t) && type_matches(json_string_value(t), v);
                char words[200];
                if (!ok)
                        return fail(c, "must be %s", type_word(type, words, sizeof(words)));
        }
        const json_t *allowed = json_object_get(schema, "enum");
        if (json_is_array(allowed)) {
                bool ok = false;
                size_t i;
                const json_t *a;
                json_array_foreach(allowed, i, a)
                        ok |= json_equal(a, v);
                if (!ok) {
                        char *list = json_dumps(allowed, JSON_COMPACT);
                        const char *problem =
                                fail(c, "must be one of %s", list ? list : "the enum");
                        free(list);
                        return problem;
                }
        }
        const json_t *constant = json_object_get(schema, "const");
        if (constant && !json_equal(constant, v)) {
                char *text = json_dumps(constant, JSON_COMPACT | JSON_ENCODE_ANY);
                const char *problem = fail(c, "must be %s", text ? text : "the const");
                free(text);
                return problem;
        }
        if (json_is_number(v)) {
                double x = json_number_value(v);
                const json_t *min = json_object_get(schema, "minimum");
                const json_t *max = json_object_get(schema, "maximum");
                char bound[64];
                if (json_is_number(min) && x < json_number_value(min)) {
                        snprintf(bound, sizeof(bound), "%g", json_number_value(min));
                        return fail(c, "must be at least %s", bound);
                }
                if (json_is_number(max) && x > json_number_value(max)) {
                        snprintf(bound, sizeof(bound), "%g", json_number_value(max));
                        return fail(c, "must be at most %s", bound);
                }
        }
        if (json_is_object(v))
                return check_object(c, schema, v, depth);
        if (json_is_array(v)) {
                const json_t *items = json_object_get(schema, "items");
                const json_t *min = json_object_get(schema, "minItems");
                char bound[32];
                if (json_is_integer(min) &&
                    (json_int_t)json_array_size(v) < json_integer_value(min)) {
                        snprintf(bound, sizeof(bound), "%lld", (long long)json_integer_value(min));
                        return fail(c, "must have at least %s items", bound);
                }
                size_t i;
                const json_t *item;
                json_array_foreach(v, i, item) {
                        const char *problem = json_is_object(items)
                                                      ? check_child(c, items, item, NULL, i, depth)
                                                      : NULL;
                        if (problem)
                                return problem;
                }
        }
        return NULL;
}

const char *json_schema_check(const json_t *schema, const json_t *value, char *buf, size_t size)
{
        struct checker c = {.buf = buf, .size = size};
        return check(&c, schema, value, 0);
}
