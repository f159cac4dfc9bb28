#include "result.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "frame.h"
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
        const char *cls = frame_string(json_object_get(o->result_frame, "error"), "class");
        if (cls && o->out_of_memory_class && strcmp(cls, o->out_of_memory_class) == 0 &&
            (o->memory_refused || o->memory_by_rlimit))
                return CODECELL_STATUS_MEMORY_LIMIT;
        return CODECELL_STATUS_ERROR;
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
        free(r->value_json);
        json_decref(r->error);
        json_decref(r->layers);
        json_decref(r->warnings);
        output_free(&r->out);
        output_free(&r->err);
        image_list_free(&r->images);
        display_free(&r->display);
        file_list_free(&r->files);
        json_decref(r->idle_interrupts);
        json_decref(r->network);
        free(r->state_lost);
        free(r->not_restorable);
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

/* ---- the value: JSON text kept as the guest wrote it --------------------------------------- */

static const char *skip_space(const char *p, const char *end)
{
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
                p++;
        return p;
}

static int hex4(const char *p, const char *end)
{
        if (end - p < 4)
                return -1;
        int v = 0;
        for (int i = 0; i < 4; i++) {
                char c = p[i];
                int d = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : -1;
                if (d < 0)
                        return -1;
                v = v * 16 + d;
        }
        return v;
}

/* p at the opening quote; returns the byte after the closing one, or NULL. */
static const char *scan_string(const char *p, const char *end)
{
        const char *run = ++p; /* a run of plain bytes, checked as UTF-8 at once */
        while (p < end) {
                unsigned char c = (unsigned char)*p;
                if (c == '"' || c == '\\') {
                        if (!utf8_valid(run, (size_t)(p - run)))
                                return NULL;
                        if (c == '"')
                                return p + 1;
                        if (++p >= end)
                                return NULL;
                        if (*p == 'u') {
                                int u = hex4(p + 1, end);
                                p += 5;
                                if (u >= 0xDC00 && u <= 0xDFFF)
                                        return NULL; /* a low surrogate alone */
                                if (u >= 0xD800 && u <= 0xDBFF) {
                                        if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
                                                return NULL;
                                        int low = hex4(p + 2, end);
                                        if (low < 0xDC00 || low > 0xDFFF)
                                                return NULL;
                                        p += 6;
                                } else if (u < 0) {
                                        return NULL;
                                }
                        } else if (strchr("\"\\/bfnrt", *p) && *p) {
                                p++;
                        } else {
                                return NULL;
                        }
                        run = p;
                } else if (c < 0x20) {
                        return NULL;
                } else {
                        p++;
                }
        }
        return NULL;
}

static const char *scan_digits(const char *p, const char *end)
{
        const char *start = p;
        while (p < end && *p >= '0' && *p <= '9')
                p++;
        return p > start ? p : NULL;
}

/* An integer may have any number of digits (JSON sets no limit, and the guest's big integers
 * are exact); a number with a fraction or an exponent must read as a finite double. */
static const char *scan_number(const char *p, const char *end)
{
        const char *start = p;
        if (*p == '-')
                p++;
        if (p < end && *p == '0')
                p++;
        else if (!(p = scan_digits(p, end)))
                return NULL;
        bool real = false;
        if (p < end && *p == '.') {
                if (!(p = scan_digits(p + 1, end)))
                        return NULL;
                real = true;
        }
        if (p < end && (*p == 'e' || *p == 'E')) {
                p++;
                if (p < end && (*p == '+' || *p == '-'))
                        p++;
                if (!(p = scan_digits(p, end)))
                        return NULL;
                real = true;
        }
        if (real) {
                /* strtod wants a terminated string: a copy, on the stack when short. */
                size_t n = (size_t)(p - start);
                char small[64];
                _cleanup_free_ char *big = n < sizeof(small) ? NULL : strndup(start, n);
                char *copy = big;
                if (n < sizeof(small)) {
                        memcpy(small, start, n);
                        small[n] = '\0';
                        copy = small;
                }
                if (!copy || isinf(strtod(copy, NULL)))
                        return NULL;
        }
        return p;
}

static const char *scan_word(const char *p, const char *end, const char *word)
{
        size_t n = strlen(word);
        return (size_t)(end - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

bool json_text_valid(const char *text, size_t len)
{
        return json_text_check(text, len) == JSON_TEXT_OK;
}

enum json_text json_text_check(const char *text, size_t len)
{
        char open[JSON_MAX_DEPTH]; /* the containers we are in: '[' or '{' */
        size_t depth = 0;
        const char *p = text, *end = text + len;
value:
        p = skip_space(p, end);
        if (p >= end)
                return JSON_TEXT_INVALID;
        switch (*p) {
        case '[':
        case '{':
                if (depth == JSON_MAX_DEPTH)
                        return JSON_TEXT_TOO_DEEP;
                open[depth++] = *p;
                p = skip_space(p + 1, end);
                if (p < end && *p == (open[depth - 1] == '[' ? ']' : '}')) {
                        p++;
                        depth--;
                        goto after;
                }
                if (open[depth - 1] == '{')
                        goto key;
                goto value;
        case '"':
                p = scan_string(p, end);
                break;
        case 't':
                p = scan_word(p, end, "true");
                break;
        case 'f':
                p = scan_word(p, end, "false");
                break;
        case 'n':
                p = scan_word(p, end, "null");
                break;
        default:
                p = (*p == '-' || (*p >= '0' && *p <= '9')) ? scan_number(p, end) : NULL;
        }
        if (!p)
                return JSON_TEXT_INVALID;
after:
        p = skip_space(p, end);
        if (depth == 0)
                return p == end ? JSON_TEXT_OK : JSON_TEXT_INVALID;
        if (p >= end)
                return JSON_TEXT_INVALID;
        if (*p == ',') {
                p++;
                if (open[depth - 1] == '[')
                        goto value;
                goto key;
        }
        if (*p != (open[depth - 1] == '[' ? ']' : '}'))
                return JSON_TEXT_INVALID;
        p++;
        depth--;
        goto after;
key:
        p = skip_space(p, end);
        if (p >= end || *p != '"' || !(p = scan_string(p, end)))
                return JSON_TEXT_INVALID;
        p = skip_space(p, end);
        if (p >= end || *p != ':')
                return JSON_TEXT_INVALID;
        p++;
        goto value;
}

char *json_text_compact(const char *text, size_t len)
{
        char *out = malloc(len + 1), *at = out;
        if (!out)
                return NULL;
        bool in_string = false;
        for (size_t i = 0; i < len; i++) {
                char c = text[i];
                if (in_string) {
                        *at++ = c;
                        if (c == '\\' && i + 1 < len)
                                *at++ = text[++i];
                        else if (c == '"')
                                in_string = false;
                } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                        *at++ = c;
                        in_string = c == '"';
                }
        }
        *at = '\0';
        return out;
}

int result_set_value(codecell_result *r, const json_t *frame)
{
        const json_t *text = json_object_get(frame, "value_json");
        const json_t *value = json_object_get(frame, "value");
        char *kept = NULL;
        if (json_is_string(text)) {
                if (!json_text_valid(json_string_value(text), json_string_length(text)) ||
                    memchr(json_string_value(text), '\0', json_string_length(text)))
                        return -EBADMSG;
                /* The guest's text, without the whitespace JSON allows between tokens: a
                 * line break there would reach every line-framed stream the value is
                 * spliced into (MCP over stdio, an SSE event, `run --json`) and split its
                 * message, or start one of the guest's own. */
                kept = json_text_compact(json_string_value(text), json_string_length(text));
        } else if (text) {
                return -EBADMSG;
        } else if (value) {
                /* A hand-written frame: 17 digits read back as the same double. */
                kept = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
        } else {
                kept = strdup("null");
        }
        if (!kept)
                return -ENOMEM;
        free(r->value_json);
        r->value_json = kept;
        return 0;
}

const char *codecell_result_value(const codecell_result *r)
{
        return r->status == CODECELL_STATUS_OK ? (r->value_json ? r->value_json : "null") : NULL;
}

/* Output is bytes; JSON wants UTF-8. Invalid sequences become U+FFFD. */
static int set_output(json_t *obj, const char *key, const char *flag, const struct output_buffer *b)
{
        if (b->len == 0 && !b->truncated)
                return 0;
        size_t len = 0;
        const char *data = b->data ? b->data : "";
        /* An unfinished buffer that went over its cap ends where the cap fell, maybe inside a
         * character: that one goes. */
        size_t kept = b->truncated && !b->finished ? utf8_complete_len(data, b->len) : b->len;
        _cleanup_free_ char *clean = utf8_sanitize_keep_nul(data, kept, &len);
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
        /* Everything but "status" and "value", which are written first, by hand: the value is
         * the guest's own text (see value_json). */
        int bad = 0;
        if (r->error)
                bad |= json_object_set(obj, "error", r->error);
        if (r->has_exit_status)
                bad |= json_object_set_new(obj, "exit_status", json_integer(r->exit_status));
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
        bad |= result_set_images(obj, r);
        bad |= display_set_full(obj, &r->display);
        bad |= result_set_files(obj, r, true);
        bad |= result_set_network(obj, r);
        bad |= result_set_session_notes(obj, r);
        char *text = bad ? NULL : result_json_splice(r, codecell_result_value(r), obj, pretty);
        json_decref(obj);
        return text;
}

char *result_json_splice(const codecell_result *r, const char *value, const json_t *rest,
                         bool pretty)
{
        /* 15 significant digits for the engine's own figures: 0.1 prints as 0.1. */
        _cleanup_free_ char *members = json_dumps(rest, (pretty ? JSON_INDENT(2) : JSON_COMPACT) |
                                                                JSON_REAL_PRECISION(15));
        if (!members || members[0] != '{')
                return NULL;
        const char *body = members + 1; /* "}" for {}, else the members (after the indent) */
        while (*body == '\n' || *body == ' ')
                body++;
        bool empty = *body == '}';
        const char *open = pretty ? "{\n  " : "{";
        const char *sep = pretty ? ",\n  " : ",", *colon = pretty ? ": " : ":";
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return NULL;
        fprintf(f, "%s\"status\"%s\"%s\"", open, colon, codecell_status_name(r->status));
        if (value)
                fprintf(f, "%s\"value\"%s%s", sep, colon, value);
        if (empty)
                fputs(pretty ? "\n}" : "}", f);
        else
                fprintf(f, "%s%s", sep, body);
        bool failed = ferror(f);
        if (fclose(f) != 0 || failed) {
                free(text);
                return NULL;
        }
        return text;
}

int result_set_images(json_t *obj, const codecell_result *r)
{
        const struct image_list *l = &r->images;
        int bad = 0;
        if (l->n > 0) {
                json_t *list = json_array();
                for (size_t i = 0; list && i < l->n; i++)
                        bad |= json_array_append_new(list, json_pack("{s:s, s:I}", "mime_type",
                                                                     l->items[i].mime_type, "bytes",
                                                                     (json_int_t)l->items[i].len));
                bad |= json_object_set_new(obj, "images", list);
        }
        if (l->omitted > 0)
                bad |= json_object_set_new(obj, "images_omitted",
                                           json_pack("{s:I, s:s}", "count", (json_int_t)l->omitted,
                                                     "reason", l->why_omitted));
        return bad ? -1 : 0;
}

size_t codecell_result_image_count(const codecell_result *r)
{
        return r->images.n;
}

const void *codecell_result_image(const codecell_result *r, size_t i, size_t *ret_len,
                                  const char **ret_mime_type)
{
        if (i >= r->images.n)
                return NULL;
        if (ret_len)
                *ret_len = r->images.items[i].len;
        if (ret_mime_type)
                *ret_mime_type = r->images.items[i].mime_type;
        return r->images.items[i].data;
}

const void *codecell_result_display(const codecell_result *r, const char *kind, size_t *ret_len)
{
        const struct result_display *d = &r->display;
        const void *data = NULL;
        size_t len = 0;
        if (strcmp(kind, "markdown") == 0)
                data = d->markdown, len = d->markdown_len;
        else if (strcmp(kind, "html") == 0)
                data = d->html, len = d->html_len;
        else if (strcmp(kind, "svg") == 0)
                data = d->svg, len = d->svg_len;
        else if (strcmp(kind, "png") == 0)
                data = d->png, len = d->png_len;
        if (ret_len)
                *ret_len = data ? len : 0;
        return data;
}

const char *codecell_result_state_lost(const codecell_result *r)
{
        return r->state_lost;
}

int codecell_result_restored(const codecell_result *r, size_t *ret_evals, double *ret_ms)
{
        if (ret_evals)
                *ret_evals = r->restored > 0 ? r->restored_evals : 0;
        if (ret_ms)
                *ret_ms = r->restored > 0 ? r->restored_ms : 0;
        return r->restored;
}

double codecell_result_cpu_ms(const codecell_result *r)
{
        return r->cpu_ms;
}

int64_t codecell_result_memory_peak_bytes(const codecell_result *r)
{
        return r->memory_peak_bytes;
}

const char *codecell_result_error_class(const codecell_result *r)
{
        return json_string_value(json_object_get(r->error, "class"));
}

char *codecell_result_error_json(const codecell_result *r)
{
        /* 17 significant digits: a reader gets back the very doubles the guest sent. */
        return r->error ? json_dumps(r->error,
                                     JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17))
                        : NULL;
}

int result_set_session_notes(json_t *obj, const codecell_result *r)
{
        int bad = 0;
        if (r->idle_interrupts && json_array_size(r->idle_interrupts) > 0)
                bad |= json_object_set(obj, "idle_interrupts", r->idle_interrupts);
        if (r->state_lost)
                bad |= json_object_set_new(obj, "state_lost", json_string(r->state_lost));
        if (r->restored > 0)
                bad |= json_object_set_new(obj, "restored",
                                           json_pack("{s:I, s:I}", "evals",
                                                     (json_int_t)r->restored_evals, "ms",
                                                     (json_int_t)(r->restored_ms + 0.5)));
        else if (r->restored < 0)
                bad |= json_object_set_new(obj, "restored", json_false());
        if (r->not_restorable)
                bad |= json_object_set_new(obj, "not_restorable", json_string(r->not_restorable));
        return bad ? -ENOMEM : 0;
}

/* A string of the guest's, valid UTF-8 and at most RESULT_INTERRUPT_CHARS bytes, or NULL. */
static json_t *guest_text(const json_t *value)
{
        const char *s = json_string_value(value);
        if (!s)
                return NULL;
        size_t len = json_string_length(value);
        _cleanup_free_ char *clean =
                utf8_sanitize(s, utf8_cut(s, len, RESULT_INTERRUPT_CHARS), &len);
        return clean ? json_stringn(clean, len) : NULL;
}

void result_take_idle_interrupts(codecell_result *r, const json_t *frame)
{
        const json_t *said = json_object_get(frame, "idle_interrupts");
        size_t i;
        const json_t *item;
        json_array_foreach(said, i, item) {
                if (i == RESULT_MAX_INTERRUPTS)
                        break;
                json_t *cls = guest_text(json_object_get(item, "class"));
                json_t *message = guest_text(json_object_get(item, "message"));
                if (!cls || !message) {
                        json_decref(cls);
                        json_decref(message);
                        continue;
                }
                /* "o" takes both references, even when it fails. */
                json_t *entry = json_pack("{s:o, s:o}", "class", cls, "message", message);
                if (!entry)
                        continue;
                if (!r->idle_interrupts)
                        r->idle_interrupts = json_array();
                if (json_array_append_new(r->idle_interrupts, entry) < 0)
                        return;
        }
}
