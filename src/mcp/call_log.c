#include "call_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "oplog.h"

/* Output as a JSON string: the guest's bytes need not be UTF-8. */
static json_t *output_text(const char *data, size_t len)
{
        json_t *s = json_stringn(data, len);
        return s ? s : json_sprintf("(%zu bytes, not UTF-8)", len);
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

/* The result's error (an object or a string), read back from the text the header gives. */
static void add_error(json_t *line, const codecell_result *r)
{
        _cleanup_free_ char *text = codecell_result_error_json(r);
        if (text)
                json_object_set_new(line, "error",
                                    json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL));
}

/* What the code and its results hold, for --log-content only. Built from the result's pieces,
 * not from its whole JSON: a result at the frame cap is not copied twice more. */
static void add_content(json_t *line, const json_t *code, const codecell_result *r)
{
        json_object_set(line, "code", (json_t *)code);
        const char *value = codecell_result_value(r);
        if (value)
                add_value(line, value);
        size_t out_len = 0, err_len = 0;
        const char *out = codecell_result_stdout(r, &out_len);
        const char *err = codecell_result_stderr(r, &err_len);
        if (out_len)
                json_object_set_new(line, "stdout", output_text(out, out_len));
        if (err_len)
                json_object_set_new(line, "stderr", output_text(err, err_len));
        add_error(line, r);
}

/* The error's class as the log holds it without --log-content. The guest names it (Python's
 * type() takes any text, a Ruby constant any length): only a name, at most 128 visible ASCII
 * characters, goes in; anything else would be the guest's content, or a flood of it. */
static const char *class_name(const codecell_result *r)
{
        const char *cls = codecell_result_error_class(r);
        if (!cls)
                return NULL;
        size_t n = 0;
        while (n <= 128 && cls[n] > ' ' && cls[n] < 0x7f)
                n++;
        return n > 0 && n <= 128 && cls[n] == '\0' ? cls : "(not a class name)";
}

/* What the run handed back: stdout, stderr and the value's JSON. */
static size_t bytes_out(const codecell_result *r)
{
        size_t out = 0, err = 0;
        (void)codecell_result_stdout(r, &out);
        (void)codecell_result_stderr(r, &err);
        const char *value = codecell_result_value(r);
        return out + err + (value ? strlen(value) : 0);
}

void call_log(const char *client, const char *cell, const char *session, const json_t *code,
              const codecell_result *res, const json_t *network, double duration_ms)
{
        /* A sandbox that failed is the operator's business (a host that changed, a limit set
         * too low for the interpreter to start); the code's own errors are the model's. */
        codecell_status status = codecell_result_status(res);
        enum oplog_level level =
                status == CODECELL_STATUS_SANDBOX_ERROR ? OPLOG_WARNING : OPLOG_INFO;
        if (!oplog_enabled(level))
                return;
        char who[32];
        snprintf(who, sizeof(who), "%.*s", (int)strcspn(client, "-"), client);
        int64_t memory_peak = codecell_result_memory_peak_bytes(res);
        json_t *line = json_pack(
                "{s:s, s:s, s:s?, s:s, s:f, s:f, s:I, s:I, s:I, s:s?}", "client", who, "cell", cell,
                "session", session, "status", codecell_status_name(status), "duration_ms",
                duration_ms, "cpu_ms", codecell_result_cpu_ms(res), "memory_peak_bytes",
                (json_int_t)memory_peak, "bytes_in", (json_int_t)json_string_length(code),
                "bytes_out", (json_int_t)bytes_out(res), "error_class", class_name(res));
        if (line && memory_peak < 0)
                json_object_set_new(line, "memory_peak_bytes", json_null());
        /* Every connection through the cell's proxy and every refusal, by host: the operator's
         * record of what left the machine (the hosts are the proxy's, checked names). */
        if (line && network)
                json_object_set(line, "network", (json_t *)network);
        if (line && oplog_content())
                add_content(line, code, res);
        oplog_event(level, "call", line);
}
