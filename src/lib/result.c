#include "result.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "util.h"

static const char *const status_names[] = {
        [CODECELL_STATUS_OK] = "ok",
        [CODECELL_STATUS_ERROR] = "error",
        [CODECELL_STATUS_TIMEOUT] = "timeout",
        [CODECELL_STATUS_FUEL_EXHAUSTED] = "fuel_exhausted",
        [CODECELL_STATUS_MEMORY_LIMIT] = "memory_limit",
        [CODECELL_STATUS_SANDBOX_ERROR] = "sandbox_error",
};

const char *codecell_status_name(codecell_status status)
{
        if ((unsigned)status >= sizeof(status_names) / sizeof(status_names[0]))
                return "unknown";
        return status_names[status];
}

codecell_status outcome_classify(const struct run_outcome *o)
{
        if (o->cancelled)
                return CODECELL_STATUS_SANDBOX_ERROR;
        if (o->timed_out)
                return CODECELL_STATUS_TIMEOUT;
        if (o->oom_killed)
                return CODECELL_STATUS_MEMORY_LIMIT;
        if (o->cpu_exhausted)
                return CODECELL_STATUS_FUEL_EXHAUSTED;
        if (o->protocol_error || !o->result_frame)
                return CODECELL_STATUS_SANDBOX_ERROR;
        if (json_is_true(json_object_get(o->result_frame, "ok")))
                return CODECELL_STATUS_OK;
        /* The interpreter's own out-of-memory error counts as memory_limit only when the
         * kernel confirms the limit was reached (or RLIMIT_AS, which makes allocations fail
         * without telling anyone, was the limit). A guest raising it by hand gets "error". */
        const char *cls = json_string_value(
                json_object_get(json_object_get(o->result_frame, "error"), "class"));
        if (cls && o->out_of_memory_class && strcmp(cls, o->out_of_memory_class) == 0 &&
            (o->memory_refused || o->memory_by_rlimit))
                return CODECELL_STATUS_MEMORY_LIMIT;
        return CODECELL_STATUS_ERROR;
}

void output_init(struct output_buffer *b, size_t cap)
{
        *b = (struct output_buffer){.cap = cap};
}

int output_append(struct output_buffer *b, const char *data, size_t n)
{
        size_t room = b->cap - b->len;
        if (n > room) {
                b->truncated = true;
                n = room;
        }
        if (n == 0)
                return 0;
        char *grown = realloc(b->data, b->len + n);
        if (!grown)
                return -ENOMEM;
        memcpy(grown + b->len, data, n);
        b->data = grown;
        b->len += n;
        return 0;
}

codecell_result *result_new(void)
{
        codecell_result *r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        r->status = CODECELL_STATUS_SANDBOX_ERROR;
        r->memory_peak_bytes = -1;
        return r;
}

void codecell_result_free(codecell_result *r)
{
        if (!r)
                return;
        json_decref(r->value);
        json_decref(r->error);
        json_decref(r->layers);
        json_decref(r->warnings);
        free(r->out.data);
        free(r->err.data);
        free(r);
}

codecell_status codecell_result_status(const codecell_result *r)
{
        return r->status;
}

const char *codecell_result_stdout(const codecell_result *r, size_t *ret_len)
{
        if (ret_len)
                *ret_len = r->out.len;
        return r->out.data ? r->out.data : "";
}

const char *codecell_result_stderr(const codecell_result *r, size_t *ret_len)
{
        if (ret_len)
                *ret_len = r->err.len;
        return r->err.data ? r->err.data : "";
}

/* Output is bytes; JSON wants UTF-8. Invalid sequences become U+FFFD. */
static int set_output(json_t *obj, const char *key, const char *flag, const struct output_buffer *b)
{
        if (b->len == 0 && !b->truncated)
                return 0;
        size_t len = 0;
        const char *data = b->data ? b->data : "";
        /* Capped output ends where the cap fell, maybe inside a character: that one goes. */
        size_t kept = b->truncated ? utf8_complete_len(data, b->len) : b->len;
        _cleanup_free_ char *clean = utf8_sanitize(data, kept, &len);
        if (!clean || json_object_set_new(obj, key, json_stringn(clean, len)) < 0)
                return -ENOMEM;
        if (b->truncated && json_object_set_new(obj, flag, json_true()) < 0)
                return -ENOMEM;
        return 0;
}

char *codecell_result_to_json(const codecell_result *r, bool pretty)
{
        json_t *obj = json_object();
        if (!obj)
                return NULL;
        char *text = NULL;
        int bad = json_object_set_new(obj, "status", json_string(codecell_status_name(r->status)));
        if (r->status == CODECELL_STATUS_OK)
                bad |= json_object_set(obj, "value", r->value ? r->value : json_null());
        if (r->error)
                bad |= json_object_set(obj, "error", r->error);
        bad |= set_output(obj, "stdout", "stdout_truncated", &r->out);
        bad |= set_output(obj, "stderr", "stderr_truncated", &r->err);
        bad |= json_object_set_new(obj, "duration_ms",
                                   json_real((double)(long)(r->duration_ms * 100) / 100));
        bad |= json_object_set_new(obj, "cpu_ms", json_real((double)(long)(r->cpu_ms * 100) / 100));
        if (r->memory_peak_bytes >= 0)
                bad |= json_object_set_new(obj, "memory_peak_bytes",
                                           json_integer(r->memory_peak_bytes));
        if (r->layers)
                bad |= json_object_set(obj, "sandbox", r->layers);
        if (r->warnings && json_array_size(r->warnings) > 0)
                bad |= json_object_set(obj, "warnings", r->warnings);
        if (r->cancelled)
                bad |= json_object_set_new(obj, "cancelled", json_true());
        if (!bad)
                /* 15 significant digits: 0.1 prints as 0.1, not as 0.10000000000000001. */
                text = json_dumps(obj, (pretty ? JSON_INDENT(2) : JSON_COMPACT) |
                                               JSON_REAL_PRECISION(15));
        json_decref(obj);
        return text;
}
