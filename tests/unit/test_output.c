/* Output kept as head and tail, excerpts for a reader with a budget, and the model's view of
 * a result (output.c, model_view.c). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "result.h"
#include "util.h"

static json_t *parse(const char *text)
{
        json_t *v = json_loads(text ? text : "", JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        CHECK(v != NULL);
        return v;
}

/* 200,000 lines, then an error: the head, the tail and a marker with the exact count. */
static void head_and_tail_of_many_lines(void)
{
        struct output_buffer b;
        output_init(&b, 1 << 20);
        char line[32];
        for (int i = 0; i < 200000; i++) {
                int n = snprintf(line, sizeof(line), "line %d\n", i);
                CHECK(output_append(&b, line, (size_t)n) == 0);
        }
        CHECK(b.truncated && b.lines == 200000);
        CHECK(output_finish(&b) == 0);
        CHECK(b.len <= (1u << 20) + 64);
        CHECK(strncmp(b.data, "line 0\nline 1\n", 14) == 0);
        CHECK(b.len > 12 && memcmp(b.data + b.len - 12, "line 199999\n", 12) == 0);
        /* Cut between lines: the head ends with a newline, the tail starts a line. */
        CHECK(b.data[b.head - 1] == '\n');
        CHECK(strncmp(b.data + b.len - b.tail, "line ", 5) == 0);
        /* The marker counts what is missing: every line not in the head or the tail. */
        unsigned long first_tail = strtoul(b.data + b.len - b.tail + 5, NULL, 10);
        unsigned long head_lines = 0;
        for (size_t i = 0; i < b.head; i++)
                head_lines += b.data[i] == '\n';
        char expected[96], count[32];
        unsigned long omitted = first_tail - head_lines;
        if (omitted >= 1000)
                snprintf(count, sizeof(count), "%lu,%03lu", omitted / 1000, omitted % 1000);
        else
                snprintf(count, sizeof(count), "%lu", omitted);
        snprintf(expected, sizeof(expected), "[… %s lines, ", count);
        CHECK(strstr(b.data, expected) != NULL);
        CHECK(strstr(b.data, " MB omitted …]\n") != NULL);

        /* A second cut, for the model: still the first and last lines, a new marker counting
         * everything left out of the original. */
        size_t n = 0;
        bool cut = false;
        char *small = output_excerpt(&b, 2000, &n, &cut);
        CHECK(cut && small && utf8_chars(small, n) <= 2000 + 64);
        CHECK(strncmp(small, "line 0\n", 7) == 0);
        CHECK(n > 12 && memcmp(small + n - 12, "line 199999\n", 12) == 0);
        CHECK(strstr(small, "[… 199,") != NULL); /* almost all of the 200,000 lines */
        char mb[48];
        snprintf(mb, sizeof(mb), " lines, %.1f MB omitted …]", (double)(b.total - n) / 1e6);
        CHECK(strstr(small, mb) != NULL); /* 2.29 MB less what was kept */
        free(small);
        output_free(&b);
}

/* Cut at any budget, in bytes or characters, never inside a character. */
static void never_inside_a_character(void)
{
        /* No newline to help: "é€😀" repeated. */
        char text[9 * 300 + 1] = "";
        for (int i = 0; i < 300; i++)
                strcat(text, "é€😀");
        size_t len = strlen(text);
        for (size_t budget = 1; budget < 40; budget++) {
                for (int unit = 0; unit < 2; unit++) {
                        size_t n, h, t;
                        bool cut;
                        char *e = excerpt_make(text, len, text, len, len, 0, budget,
                                               unit ? EXCERPT_CHARS : EXCERPT_BYTES, &n, &h, &t,
                                               &cut);
                        CHECK(e && cut && utf8_valid(e, n));
                        CHECK(unit ? utf8_chars(text, h) + utf8_chars(text + len - t, t) <= budget
                                   : h + t <= budget);
                        CHECK(strstr(e, " omitted …]") != NULL);
                        free(e);
                }
        }
        /* The buffer's own cap lands inside a character too. */
        struct output_buffer b;
        output_init(&b, 11);
        CHECK(output_append(&b, text, len) == 0);
        CHECK(output_finish(&b) == 0);
        CHECK(utf8_valid(b.data, b.len) && b.head + b.tail <= 11);
        output_free(&b);
}

/* The head is the first half of the cap, which can fall inside a character: the head gives
 * it up, whatever the cap and however the text was written (one write or many). */
static void head_ends_between_characters(void)
{
        char euros[3 * 1000 + 1] = "";
        for (int i = 0; i < 1000; i++)
                strcat(euros, "\xe2\x82\xac");
        for (size_t cap = 8; cap < 40; cap++) {
                for (size_t piece = 1; piece <= 7; piece += 3) {
                        struct output_buffer b;
                        output_init(&b, cap);
                        for (size_t at = 0; at < sizeof(euros) - 1; at += piece) {
                                size_t n = sizeof(euros) - 1 - at;
                                CHECK(output_append(&b, euros + at, n < piece ? n : piece) == 0);
                        }
                        CHECK(output_finish(&b) == 0);
                        CHECK(b.truncated && b.head % 3 == 0 && b.tail % 3 == 0);
                        CHECK(utf8_valid(b.data, b.len));
                        output_free(&b);
                }
        }
}

/* One write far over the cap still leaves a head. */
static void one_big_write(void)
{
        static char big[100000];
        memset(big, 'a', sizeof(big));
        big[sizeof(big) - 1] = 'z';
        struct output_buffer b;
        output_init(&b, 1024);
        CHECK(output_append(&b, big, sizeof(big)) == 0);
        CHECK(output_finish(&b) == 0);
        CHECK(b.head == 512 && b.tail == 512 && b.data[0] == 'a' && b.data[b.len - 1] == 'z');
        CHECK(strstr(b.data, "\n[… 99.0 kB omitted …]\n") == b.data + 512);
        output_free(&b);
}

static void fits_whole(void)
{
        struct output_buffer b;
        output_init(&b, 100);
        CHECK(output_append(&b, "a\nb\n", 4) == 0);
        CHECK(output_finish(&b) == 0);
        size_t n;
        bool cut = true;
        char *e = output_excerpt(&b, 4, &n, &cut);
        CHECK(!cut && e && n == 4 && memcmp(e, "a\nb\n", 4) == 0);
        free(e);
        output_free(&b);
}

/* The model's view: lean, within the budget, the error whole, pieces marked when cut. */
static void model_view(void)
{
        codecell_result *r = result_new();
        r->status = CODECELL_STATUS_ERROR;
        r->error = json_pack("{s:s, s:s, s:[s]}", "class", "ValueError", "message", "the end",
                             "backtrace", "sandbox:2");
        r->layers = json_pack("[s]", "seccomp");
        r->warnings = json_pack("[s]", "cgroup: not writable");
        r->duration_ms = 3;
        output_init(&r->out, 1 << 20);
        output_init(&r->err, 1 << 20);
        char line[32];
        for (int i = 0; i < 200000; i++) {
                int n = snprintf(line, sizeof(line), "line %d\n", i);
                CHECK(output_append(&r->out, line, (size_t)n) == 0);
        }
        CHECK(output_finish(&r->out) == 0 && output_finish(&r->err) == 0);
        char *lean = codecell_result_to_model_json(r, 20000, false);
        /* Within the budget, JSON's escapes (a newline is "\\n") included. */
        CHECK(lean && utf8_chars(lean, strlen(lean)) <= 20000);
        json_t *v = parse(lean);
        CHECK_STR(json_string_value(json_object_get(v, "status")), "error");
        CHECK_STR(json_string_value(json_object_get(json_object_get(v, "error"), "message")),
                  "the end");
        CHECK(json_is_true(json_object_get(v, "stdout_truncated")));
        const char *out = json_string_value(json_object_get(v, "stdout"));
        CHECK(out && strstr(out, "line 199999\n") && strstr(out, " omitted …]"));
        CHECK(!json_object_get(v, "stderr") && !json_object_get(v, "duration_ms") &&
              !json_object_get(v, "sandbox") && !json_object_get(v, "warnings"));
        json_decref(v);
        free(lean);
        char *detailed = codecell_result_to_model_json(r, 20000, true);
        v = parse(detailed);
        CHECK(json_object_get(v, "duration_ms") && json_object_get(v, "sandbox") &&
              !json_object_get(v, "warnings"));
        json_decref(v);
        free(detailed);
        codecell_result_free(r);

        /* A value over the budget comes back as the start and end of its JSON text. */
        r = result_new();
        r->status = CODECELL_STATUS_OK;
        size_t big = 100000;
        r->value_json = malloc(big + 3);
        r->value_json[0] = '"';
        memset(r->value_json + 1, 'x', big);
        strcpy(r->value_json + 1 + big, "\"");
        output_init(&r->out, 100);
        output_init(&r->err, 100);
        lean = codecell_result_to_model_json(r, 1000, false);
        v = parse(lean);
        CHECK(json_is_true(json_object_get(v, "value_truncated")));
        const char *value = json_string_value(json_object_get(v, "value"));
        CHECK(value && value[0] == '"' && strstr(value, "[… 99.") && strlen(value) < 1200);
        json_decref(v);
        free(lean);
        /* A small value is the guest's JSON, exactly. */
        free(r->value_json);
        r->value_json = strdup("1180591620717411303424");
        lean = codecell_result_to_model_json(r, 1000, false);
        CHECK_STR(lean, "{\"status\":\"ok\",\"value\":1180591620717411303424}");
        free(lean);
        codecell_result_free(r);

        /* A huge error keeps its class, the start and end of its message, and its outermost
         * and innermost frames. */
        r = result_new();
        r->status = CODECELL_STATUS_ERROR;
        json_t *frames = json_array();
        for (int i = 0; i < 5000; i++) {
                snprintf(line, sizeof(line), "sandbox:%d:in f", i);
                json_array_append_new(frames, json_string(line));
        }
        char *message = malloc(50001);
        memset(message, 'm', 50000);
        message[50000] = '\0';
        r->error = json_pack("{s:s, s:s, s:o}", "class", "SystemStackError", "message", message,
                             "backtrace", frames);
        free(message);
        output_init(&r->out, 100);
        output_init(&r->err, 100);
        lean = codecell_result_to_model_json(r, 3000, false);
        CHECK(lean && utf8_chars(lean, strlen(lean)) <= 3000);
        v = parse(lean);
        json_t *e = json_object_get(v, "error");
        CHECK(json_is_true(json_object_get(v, "error_truncated")));
        CHECK_STR(json_string_value(json_object_get(e, "class")), "SystemStackError");
        json_t *kept = json_object_get(e, "backtrace");
        CHECK_STR(json_string_value(json_array_get(kept, 0)), "sandbox:0:in f");
        CHECK_STR(json_string_value(json_array_get(kept, json_array_size(kept) - 1)),
                  "sandbox:4999:in f");
        char *kept_text = json_dumps(kept, 0);
        CHECK(kept_text && strstr(kept_text, "frames omitted …]") != NULL);
        free(kept_text);
        json_decref(v);
        free(lean);
        codecell_result_free(r);
}

/* Bytes that are not UTF-8 (stray continuation bytes) each reach the model as one U+FFFD, and
 * NULs as \u0000: they count as characters, so that such output is cut to the budget too. */
static void invalid_bytes_count_as_characters(void)
{
        const unsigned char strays[] = {0x80, 0xbf, 0x00};
        for (size_t k = 0; k < sizeof(strays); k++) {
                codecell_result *r = result_new();
                r->status = CODECELL_STATUS_OK;
                output_init(&r->out, 1 << 20);
                output_init(&r->err, 1 << 20);
                char junk[4096];
                memset(junk, strays[k], sizeof(junk));
                for (int i = 0; i < 100; i++)
                        CHECK(output_append(&r->out, junk, sizeof(junk)) == 0);
                CHECK(output_finish(&r->out) == 0 && output_finish(&r->err) == 0);
                CHECK(utf8_chars(junk, sizeof(junk)) == sizeof(junk));
                char *lean = codecell_result_to_model_json(r, 1000, false);
                CHECK(lean && utf8_chars(lean, strlen(lean)) <= 1000);
                json_t *v = parse(lean);
                CHECK(json_is_true(json_object_get(v, "stdout_truncated")));
                json_decref(v);
                free(lean);
                codecell_result_free(r);
        }
        /* At the smallest model_chars, every piece over its share and cut: still within. */
        codecell_result *r = result_new();
        r->status = CODECELL_STATUS_ERROR;
        output_init(&r->out, 1 << 20);
        output_init(&r->err, 1 << 20);
        char big[8192];
        memset(big, 0x80, sizeof(big));
        for (int i = 0; i < 40; i++)
                CHECK(output_append(&r->out, big, sizeof(big)) == 0 &&
                      output_append(&r->err, "\xe2\x82", 2) == 0);
        CHECK(output_finish(&r->out) == 0 && output_finish(&r->err) == 0);
        char *message = malloc(200001);
        for (int i = 0; i < 100000; i++)
                memcpy(message + 2 * i, "\xc3\xa9", 2);
        message[200000] = '\0';
        r->error = json_pack("{s:s, s:s, s:[s]}", "class", "ValueError", "message", message,
                             "backtrace", "sandbox:1");
        free(message);
        char *lean = codecell_result_to_model_json(r, 400, false);
        CHECK(lean && utf8_chars(lean, strlen(lean)) <= 400);
        json_decref(parse(lean));
        free(lean);
        codecell_result_free(r);

        /* Over the cap, the head and the tail of such output keep their bytes: a cut backs
         * off at most to the start of a character, not through the whole run. */
        struct output_buffer b;
        output_init(&b, 100);
        char junk[1000];
        memset(junk, 0x80, sizeof(junk));
        CHECK(output_append(&b, junk, sizeof(junk)) == 0 && output_finish(&b) == 0);
        CHECK(b.truncated && b.head >= 40 && b.tail >= 40);
        output_free(&b);
}

/* NUL is valid UTF-8: stdout, stderr and the error's message keep it, in the result and in the
 * model's view, as JSON's \u0000; an invalid byte beside it still becomes U+FFFD. */
static void nul_bytes_pass_through(void)
{
        codecell_result *r = result_new();
        r->status = CODECELL_STATUS_ERROR;
        output_init(&r->out, 1 << 20);
        output_init(&r->err, 4);
        CHECK(output_append(&r->out, "a\0b\xff", 4) == 0 && output_finish(&r->out) == 0);
        CHECK(output_append(&r->err, "c\0d\0e\0f\0", 8) == 0 && output_finish(&r->err) == 0);
        r->error = json_pack("{s:s, s:s%, s:[]}", "class", "E", "message", "m\0n", (size_t)3,
                             "backtrace");
        char *texts[] = {codecell_result_to_json(r, false),
                         codecell_result_to_model_json(r, 1000, false)};
        for (int i = 0; i < 2; i++) {
                json_t *v = parse(texts[i]);
                const json_t *out = json_object_get(v, "stdout");
                CHECK(json_string_length(out) == 6 &&
                      memcmp(json_string_value(out), "a\0b\xef\xbf\xbd", 6) == 0);
                const char *err = json_string_value(json_object_get(v, "stderr"));
                CHECK(err && strncmp(err, "c\0", 2) == 0 && err[2] != '\0' &&
                      json_string_length(json_object_get(v, "stderr")) > 4);
                const json_t *m = json_object_get(json_object_get(v, "error"), "message");
                CHECK(json_string_length(m) == 3 && memcmp(json_string_value(m), "m\0n", 3) == 0);
                json_decref(v);
                free(texts[i]);
        }
        codecell_result_free(r);
}

int main(void)
{
        head_and_tail_of_many_lines();
        never_inside_a_character();
        head_ends_between_characters();
        fits_whole();
        one_big_write();
        model_view();
        invalid_bytes_count_as_characters();
        nul_bytes_pass_through();
        CHECK_DONE();
}
