#include "call_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result.h"
#include "oplog.h"

/* Output as a JSON string: the guest's bytes need not be UTF-8. */
static json_t *output_text(const struct output_buffer *b)
{
        json_t *s = json_stringn(b->data ? b->data : "", b->len);
        return s ? s : json_sprintf("(%zu bytes, not UTF-8)", b->len);
}

/* The value as JSON, or, when jansson cannot hold it (an integer beyond 64 bits), its exact text
 * as "value_json": never left out. */
static void add_value(json_t *line, const char *text)
{
        json_t *value = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (value)
                json_object_set_new(line, "value", value);
        else
                json_object_set_new(line, "value_json", json_string(text));
}

/* What the code and its results hold, for --log-content only. Built from the result's own
 * fields, not from its JSON: a result at the frame cap is not copied twice more. */
static void add_content(json_t *line, const json_t *code, const codecell_result *r)
{
        json_object_set(line, "code", (json_t *)code);
        if (r->value_json)
                add_value(line, r->value_json);
        if (r->out.len)
                json_object_set_new(line, "stdout", output_text(&r->out));
        if (r->err.len)
                json_object_set_new(line, "stderr", output_text(&r->err));
        if (r->error)
                json_object_set(line, "error", r->error);
}

/* The error's class as the log holds it without --log-content. The guest names it (Python's
 * type() takes any text, a Ruby constant any length): only a name, at most 128 visible ASCII
 * characters, goes in; anything else would be the guest's content, or a flood of it. */
static const char *class_name(const json_t *error)
{
        const char *cls = json_string_value(json_object_get(error, "class"));
        if (!cls)
                return NULL;
        size_t n = 0;
        while (n <= 128 && cls[n] > ' ' && cls[n] < 0x7f)
                n++;
        return n > 0 && n <= 128 && cls[n] == '\0' ? cls : "(not a class name)";
}

void call_log(const char *client, const char *cell, const char *session, const json_t *code,
              const codecell_result *res, double duration_ms)
{
        /* A sandbox that failed is the operator's business (a host that changed, a limit set
         * too low for the interpreter to start); the code's own errors are the model's. */
        enum oplog_level level =
                res->status == CODECELL_STATUS_SANDBOX_ERROR ? OPLOG_WARNING : OPLOG_INFO;
        if (!oplog_enabled(level))
                return;
        char who[32];
        snprintf(who, sizeof(who), "%.*s", (int)strcspn(client, "-"), client);
        size_t value_len = res->value_json ? strlen(res->value_json) : 0;
        json_t *line =
                json_pack("{s:s, s:s, s:s?, s:s, s:f, s:f, s:I, s:I, s:I, s:s?}", "client", who,
                          "cell", cell, "session", session, "status",
                          codecell_status_name(res->status), "duration_ms", duration_ms, "cpu_ms",
                          res->cpu_ms, "memory_peak_bytes", (json_int_t)res->memory_peak_bytes,
                          "bytes_in", (json_int_t)json_string_length(code), "bytes_out",
                          (json_int_t)(res->out.len + res->err.len + value_len), "error_class",
                          class_name(res->error));
        if (line && res->memory_peak_bytes < 0)
                json_object_set_new(line, "memory_peak_bytes", json_null());
        if (line && oplog_content())
                add_content(line, code, res);
        oplog_event(level, "call", line);
}
