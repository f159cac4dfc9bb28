/* The result as a model reads it (codecell_result_to_model_json): what it acts on, within a
 * budget of characters shared fairly by the value, stdout, stderr and the error. */
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "result.h"
#include "util.h"

enum piece { VALUE, STDOUT, STDERR, ERROR, N_PIECES };

/* Each piece gets what it needs up to an equal share of what is left; the share of a small
 * piece goes to the others. */
static void share_budget(const size_t need[N_PIECES], size_t budget, size_t share[N_PIECES])
{
        bool done[N_PIECES] = {0};
        size_t left = budget;
        for (int round = 0; round < N_PIECES; round++) {
                /* The smallest need not yet served. */
                int k = -1;
                for (int i = 0; i < N_PIECES; i++)
                        if (!done[i] && (k < 0 || need[i] < need[k]))
                                k = i;
                size_t pending = 0;
                for (int i = 0; i < N_PIECES; i++)
                        pending += !done[i];
                size_t fair = left / pending;
                share[k] = need[k] < fair ? need[k] : fair;
                left -= share[k];
                done[k] = true;
        }
}

/* text cut to budget characters, as a JSON string (invalid UTF-8 replaced). */
static json_t *cut_string(const char *text, size_t len, size_t budget, bool *ret_cut)
{
        size_t n = 0, head, tail;
        uint64_t lines = 0;
        for (size_t i = 0; i < len; i++)
                lines += text[i] == '\n';
        _cleanup_free_ char *kept = excerpt_make(text, len, text, len, len, lines, budget,
                                                 EXCERPT_CHARS, &n, &head, &tail, ret_cut);
        if (!kept)
                return NULL;
        _cleanup_free_ char *clean = utf8_sanitize_keep_nul(kept, n, &n);
        return clean ? json_stringn(clean, n) : NULL;
}

static int set_output(json_t *obj, const char *key, const char *flag, const struct output_buffer *b,
                      size_t budget)
{
        if (b->len == 0 && !b->truncated)
                return 0;
        size_t n = 0;
        bool cut = false;
        _cleanup_free_ char *kept = output_excerpt(b, budget, &n, &cut);
        _cleanup_free_ char *clean = kept ? utf8_sanitize_keep_nul(kept, n, &n) : NULL;
        if (!clean || json_object_set_new(obj, key, json_stringn(clean, n)) < 0)
                return -1;
        return cut ? json_object_set_new(obj, flag, json_true()) : 0;
}

/* A backtrace over budget keeps its first and last frames, and says how many went between. */
static json_t *cut_backtrace(const json_t *frames, size_t budget)
{
        size_t n = json_array_size(frames), used = 0, first = 0, last = n;
        /* Alternately from the top and from the bottom, while they fit. */
        for (bool top = true; first < last; top = !top) {
                size_t i = top ? first : last - 1;
                const char *frame = json_string_value(json_array_get(frames, i));
                size_t cost = frame ? utf8_chars(frame, strlen(frame)) + 3 : 8;
                if (used + cost > budget)
                        break;
                used += cost;
                if (top)
                        first++;
                else
                        last--;
        }
        json_t *out = json_array();
        for (size_t i = 0; out && i < first; i++)
                json_array_append(out, json_array_get(frames, i));
        if (out && first < last) {
                char marker[64];
                snprintf(marker, sizeof(marker), "[… %zu frame%s omitted …]", last - first,
                         last - first == 1 ? "" : "s");
                json_array_append_new(out, json_string(marker));
        }
        for (size_t i = last; out && i < n; i++)
                json_array_append(out, json_array_get(frames, i));
        return out;
}

/* The error within budget: its message cut like output, its backtrace by frames. */
static json_t *cut_error(const json_t *error, size_t budget, bool *ret_cut)
{
        *ret_cut = false;
        if (json_is_string(error)) {
                const char *s = json_string_value(error);
                return cut_string(s, json_string_length(error), budget, ret_cut);
        }
        json_t *copy = json_copy((json_t *)error);
        const json_t *message = json_object_get(error, "message");
        const json_t *frames = json_object_get(error, "backtrace");
        size_t frames_budget = json_is_array(frames) ? budget / 3 : 0;
        if (copy && json_is_string(message)) {
                bool cut = false;
                json_t *m = cut_string(json_string_value(message), json_string_length(message),
                                       budget - frames_budget, &cut);
                json_object_set_new(copy, "message", m ? m : json_string(""));
                *ret_cut |= cut;
        }
        if (copy && json_is_array(frames)) {
                json_t *kept = cut_backtrace(frames, frames_budget);
                *ret_cut |= json_array_size(kept) != json_array_size(frames) ||
                            !json_equal(kept, (json_t *)frames);
                json_object_set_new(copy, "backtrace", kept ? kept : json_array());
        }
        return copy;
}

static size_t json_chars(const json_t *v)
{
        _cleanup_free_ char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        return text ? utf8_chars(text, strlen(text)) : 0;
}

static char *model_json(const codecell_result *r, size_t max_chars, bool details)
{
        const char *value = codecell_result_value(r);
        size_t need[N_PIECES] =
                {
                        [VALUE] = value ? utf8_chars(value, strlen(value)) : 0,
                        [STDOUT] = utf8_chars(r->out.data ? r->out.data : "", r->out.len),
                        [STDERR] = utf8_chars(r->err.data ? r->err.data : "", r->err.len),
                        [ERROR] = json_chars(r->error),
                },
               share[N_PIECES];
        share_budget(need, max_chars, share);

        json_t *obj = json_object();
        if (!obj)
                return NULL;
        int bad = 0;
        _cleanup_free_ char *value_text = NULL;
        if (value && need[VALUE] > share[VALUE]) {
                bool cut = false;
                json_t *s = cut_string(value, strlen(value), share[VALUE], &cut);
                value_text = s ? json_dumps(s, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
                json_decref(s);
                bad |= !value_text;
                value = value_text;
        }
        if (r->error) {
                bool cut = false;
                json_t *e = need[ERROR] > share[ERROR] ? cut_error(r->error, share[ERROR], &cut)
                                                       : json_incref(r->error);
                bad |= json_object_set_new(obj, "error", e);
                if (cut)
                        bad |= json_object_set_new(obj, "error_truncated", json_true());
        }
        if (r->has_exit_status)
                bad |= json_object_set_new(obj, "exit_status", json_integer(r->exit_status));
        bad |= set_output(obj, "stdout", "stdout_truncated", &r->out, share[STDOUT]);
        bad |= set_output(obj, "stderr", "stderr_truncated", &r->err, share[STDERR]);
        if (value_text)
                bad |= json_object_set_new(obj, "value_truncated", json_true());
        if (r->cancelled)
                bad |= json_object_set_new(obj, "cancelled", json_true());
        bad |= result_set_images(obj, r);
        /* Their content reaches the model beside this text (MCP resources), not inside it. */
        bad |= result_set_files(obj, r, false);
        bad |= result_set_session_notes(obj, r);
        if (details) {
                bad |= json_object_set_new(obj, "duration_ms",
                                           json_real((double)(long)(r->duration_ms * 100) / 100));
                bad |= json_object_set_new(obj, "cpu_ms",
                                           json_real((double)(long)(r->cpu_ms * 100) / 100));
                if (r->memory_peak_bytes >= 0)
                        bad |= json_object_set_new(obj, "memory_peak_bytes",
                                                   json_integer(r->memory_peak_bytes));
                if (r->layers)
                        bad |= json_object_set(obj, "sandbox", r->layers);
        }
        char *text = bad ? NULL : result_json_splice(r, value, obj, false);
        json_decref(obj);
        return text;
}

char *codecell_result_to_model_json(const codecell_result *r, size_t max_chars, bool details)
{
        /* The budget counts the pieces; JSON's escapes (a newline is two characters) and keys
         * come on top. Over the budget, once more with the pieces' budget scaled down by as
         * much as it went over. */
        size_t budget = max_chars;
        char *text = model_json(r, budget, false);
        /* A few passes: at a small budget the markers and keys are much of the text, and one
         * scaling is not enough. */
        for (int pass = 0; text && pass < 4; pass++) {
                size_t chars = utf8_chars(text, strlen(text));
                if (chars <= max_chars)
                        break;
                free(text);
                size_t scaled = (size_t)((double)budget * max_chars / (double)chars);
                budget = scaled > 64 ? scaled - 64 : scaled / 2;
                text = model_json(r, budget, false);
        }
        free(text);
        return model_json(r, budget, details);
}
