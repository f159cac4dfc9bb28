#include "run_files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "util.h"

json_t *run_files_schema(void)
{
        return json_pack(
                "{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s, s:s}}, s:[s], s:b}}",
                "type", "array", "description",
                "Files written into /work before the code starts, for the code to read "
                "(\"sales.csv\" is /work/sales.csv; folders are made). Give each as text, or "
                "binary data as base64. In a session they stay in its /work.",
                "items", "type", "object", "properties", "name", "type", "string", "description",
                "a path relative to /work, such as \"data/sales.csv\"", "text", "type", "string",
                "description", "the file's content, as text (UTF-8)", "base64", "type", "string",
                "description", "the file's content, base64-encoded (instead of text)", "required",
                "name", "additionalProperties", 0);
}

void run_files_free(struct run_files *f)
{
        for (size_t i = 0; i < f->n; i++)
                free(f->bytes[i]);
        free(f->bytes);
        free(f->list);
        *f = (struct run_files){0};
}

/* One entry into f's slot i; false with why. */
static bool read_entry(const json_t *entry, size_t i, struct run_files *f, char *why, size_t n)
{
        const json_t *name = json_object_get(entry, "name");
        const json_t *text = json_object_get(entry, "text");
        const json_t *b64 = json_object_get(entry, "base64");
        if (!json_is_object(entry) || !json_is_string(name)) {
                snprintf(why, n,
                         "files[%zu] must be an object with a \"name\" (a path relative to "
                         "/work) and its content as \"text\" or \"base64\".",
                         i);
                return false;
        }
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)entry, key, value) {
                if (strcmp(key, "name") && strcmp(key, "text") && strcmp(key, "base64")) {
                        snprintf(why, n,
                                 "files[%zu]: unknown key \"%.*s\" (an entry holds \"name\" and "
                                 "\"text\" or \"base64\").",
                                 i, utf8_prefix(key, 64), key);
                        return false;
                }
        }
        if (!text == !b64 || (text && !json_is_string(text)) || (b64 && !json_is_string(b64))) {
                snprintf(why, n,
                         "files[%zu] (\"%.*s\") must give its content as exactly one of "
                         "\"text\" (a string) or \"base64\" (a string of base64).",
                         i, utf8_prefix(json_string_value(name), 200), json_string_value(name));
                return false;
        }
        f->list[i].name = json_string_value(name);
        if (text) {
                f->list[i].data = json_string_value(text);
                f->list[i].len = json_string_length(text);
                return true;
        }
        size_t len = 0;
        if (base64_decode(json_string_value(b64), json_string_length(b64), &f->bytes[i], &len) <
            0) {
                snprintf(why, n,
                         "files[%zu] (\"%.*s\"): \"base64\" is not base64 (the standard "
                         "alphabet, padded with '=', no spaces or line breaks).",
                         i, utf8_prefix(json_string_value(name), 200), json_string_value(name));
                return false;
        }
        f->list[i].data = f->bytes[i];
        f->list[i].len = len;
        return true;
}

bool run_files_read(const json_t *files, struct run_files *f, char *why, size_t n)
{
        *f = (struct run_files){0};
        if (!files)
                return true;
        if (!json_is_array(files)) {
                snprintf(why, n,
                         "\"files\" must be a list of {\"name\": …, \"text\": …} (or \"base64\") "
                         "entries.");
                return false;
        }
        size_t count = json_array_size(files);
        f->list = calloc(count + 1, sizeof(*f->list));
        f->bytes = calloc(count + 1, sizeof(*f->bytes));
        if (!f->list || !f->bytes) {
                snprintf(why, n, "The files could not be read: out of memory.");
                return false;
        }
        f->n = count;
        for (size_t i = 0; i < count; i++)
                if (!read_entry(json_array_get(files, i), i, f, why, n))
                        return false;
        return true;
}
