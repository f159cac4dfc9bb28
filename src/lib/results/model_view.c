/* The result as a model reads it (codecell_result_to_model_json): what it acts on, within a
 * budget of characters shared fairly by the value, stdout, stderr and the error. */
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "result.h"
#include "util.h"

enum piece { VALUE, STDOUT, STDERR, ERROR, DISPLAY, N_PIECES };

/* The rich text handed back beside the JSON (codecell_result_to_model_parts), or NULL. */
struct apart {
        char *markdown, *html;
};

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

/* What the display piece needs: the characters of its text forms (SVG and PNG are images). */
static size_t display_need(const struct result_display *d)
{
        return (d->markdown ? utf8_chars(d->markdown, d->markdown_len) : 0) +
               (d->html ? utf8_chars(d->html, d->html_len) : 0) + json_chars(d->json);
}

/* One text form within what is left of the display's share: into the JSON, or apart. */
static int display_text(json_t *shown, const char *kind, const char *text, size_t len, size_t *left,
                        bool *cut, char **apart)
{
        if (!text)
                return 0;
        bool was_cut = false;
        json_t *s = cut_string(text, len, *left, &was_cut);
        if (!s)
                return -1;
        size_t chars = utf8_chars(json_string_value(s), json_string_length(s));
        *left -= chars < *left ? chars : *left;
        *cut |= was_cut;
        if (!apart)
                return json_object_set_new(shown, kind, s);
        *apart = strndup(json_string_value(s), json_string_length(s));
        json_decref(s);
        return *apart ? json_object_set_new(shown, kind,
                                            json_pack("{s:I}", "chars", (json_int_t)chars))
                      : -1;
}

/* "display" within budget characters: markdown first (what a model reads best), then HTML, then
 * the value's own JSON (whole or not at all: cut JSON is no JSON); SVG and PNG as their sizes.
 * "display_truncated" when something was cut or left out for the budget. */
static int set_display(json_t *obj, const struct result_display *d, size_t budget,
                       struct apart *apart)
{
        int bad = 0;
        if (display_any(d)) {
                json_t *shown = json_object();
                size_t left = budget;
                bool cut = false;
                bad |= !shown;
                bad |= display_text(shown, "markdown", d->markdown, d->markdown_len, &left, &cut,
                                    apart ? &apart->markdown : NULL);
                bad |= display_text(shown, "html", d->html, d->html_len, &left, &cut,
                                    apart ? &apart->html : NULL);
                size_t json_need = json_chars(d->json);
                if (d->json && json_need <= left)
                        bad |= json_object_set(shown, "json", d->json);
                cut |= d->json && json_need > left;
                if (d->svg)
                        bad |= json_object_set_new(
                                shown, "svg", json_pack("{s:I}", "bytes", (json_int_t)d->svg_len));
                if (d->png)
                        bad |= json_object_set_new(
                                shown, "png", json_pack("{s:I}", "bytes", (json_int_t)d->png_len));
                bad |= json_object_set_new(obj, "display", shown);
                if (cut)
                        bad |= json_object_set_new(obj, "display_truncated", json_true());
        }
        if (d->notes && json_array_size(d->notes) > 0)
                bad |= json_object_set(obj, "display_notes", d->notes);
        return bad ? -1 : 0;
}

static char *model_json(const codecell_result *r, size_t max_chars, bool details,
                        struct apart *apart)
{
        const char *value = codecell_result_value(r);
        size_t need[N_PIECES] =
                {
                        [VALUE] = value ? utf8_chars(value, strlen(value)) : 0,
                        [STDOUT] = utf8_chars(r->out.data ? r->out.data : "", r->out.len),
                        [STDERR] = utf8_chars(r->err.data ? r->err.data : "", r->err.len),
                        [ERROR] = json_chars(r->error),
                        [DISPLAY] = display_need(&r->display),
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
        bad |= set_display(obj, &r->display, share[DISPLAY], apart);
        /* Their content reaches the model beside this text (MCP resources), not inside it. */
        bad |= result_set_files(obj, r, false);
        bad |= result_set_network_summary(obj, r);
        bad |= result_set_session_notes(obj, r);
        if (details) {
                bad |= result_set_network(obj, r);
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

static void apart_free(struct apart *a)
{
        if (!a)
                return;
        free(a->markdown);
        free(a->html);
        *a = (struct apart){0};
}

static size_t chars_of(const char *s)
{
        return s ? utf8_chars(s, strlen(s)) : 0;
}

static char *model_view(const codecell_result *r, size_t max_chars, bool details,
                        struct apart *apart)
{
        /* The budget counts the pieces; JSON's escapes (a newline is two characters) and keys
         * come on top. Over the budget, once more with the pieces' budget scaled down by as
         * much as it went over. */
        size_t budget = max_chars;
        char *text = model_json(r, budget, false, apart);
        /* A few passes: at a small budget the markers and keys are much of the text, and one
         * scaling is not enough. The text handed back apart counts too. */
        for (int pass = 0; text && pass < 4; pass++) {
                size_t chars = utf8_chars(text, strlen(text));
                if (apart)
                        chars += chars_of(apart->markdown) + chars_of(apart->html);
                if (chars <= max_chars)
                        break;
                free(text);
                apart_free(apart);
                size_t scaled = (size_t)((double)budget * max_chars / (double)chars);
                budget = scaled > 64 ? scaled - 64 : scaled / 2;
                text = model_json(r, budget, false, apart);
        }
        free(text);
        apart_free(apart);
        text = model_json(r, budget, details, apart);
        if (!text)
                apart_free(apart);
        return text;
}

char *codecell_result_to_model_json(const codecell_result *r, size_t max_chars, bool details)
{
        return model_view(r, max_chars, details, NULL);
}

char *codecell_result_to_model_parts(const codecell_result *r, size_t max_chars, bool details,
                                     char **ret_markdown, char **ret_html)
{
        struct apart a = {0};
        char *text = model_view(r, max_chars, details, &a);
        *ret_markdown = a.markdown;
        *ret_html = a.html;
        return text;
}
