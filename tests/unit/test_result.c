/* The host's decision of a status from what it observed, and the JSON rendering. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "result.h"

static codecell_status classify(struct run_outcome o)
{
        return outcome_classify(&o);
}

/* What a front end reads of a result through the public header (src/mcp/call_log.c). */
static void accessors(void)
{
        codecell_result *r = result_new();
        CHECK(codecell_result_memory_peak_bytes(r) == -1);
        CHECK(codecell_result_cpu_ms(r) == 0);
        CHECK(codecell_result_error_class(r) == NULL);
        CHECK(codecell_result_error_json(r) == NULL);
        r->cpu_ms = 2.5;
        r->memory_peak_bytes = 7065600;
        CHECK(codecell_result_cpu_ms(r) == 2.5);
        CHECK(codecell_result_memory_peak_bytes(r) == 7065600);
        /* The guest's error, numbers exact and a NUL kept. */
        r->status = CODECELL_STATUS_ERROR;
        r->error = json_pack("{s:s, s:s%, s:f}", "class", "ArgumentError", "message", "a\0b", 3,
                             "x", 0.1);
        CHECK_STR(codecell_result_error_class(r), "ArgumentError");
        char *text = codecell_result_error_json(r);
        CHECK_STR(text, "{\"class\":\"ArgumentError\",\"message\":\"a\\u0000b\","
                        "\"x\":0.10000000000000001}");
        free(text);
        /* A limit's or the sandbox's: a sentence, without a class. */
        json_decref(r->error);
        r->status = CODECELL_STATUS_TIMEOUT;
        r->error = json_string("execution timed out");
        CHECK(codecell_result_error_class(r) == NULL);
        text = codecell_result_error_json(r);
        CHECK_STR(text, "\"execution timed out\"");
        free(text);
        codecell_result_free(r);
}

int main(void)
{
        json_t *ok = json_pack("{s:s, s:b, s:i}", "t", "result", "ok", 1, "value", 2);
        json_t *raised = json_pack("{s:s, s:b, s:{s:s, s:s}}", "t", "result", "ok", 0, "error",
                                   "class", "ArgumentError", "message", "bad");
        json_t *oom = json_pack("{s:s, s:b, s:{s:s, s:s}}", "t", "result", "ok", 0, "error",
                                "class", "NoMemoryError", "message", "failed to allocate memory");
        const char *oom_class = "NoMemoryError";

        CHECK(classify((struct run_outcome){.result_frame = ok}) == CODECELL_STATUS_OK);
        CHECK(classify((struct run_outcome){.result_frame = raised}) == CODECELL_STATUS_ERROR);
        /* Kernel facts win over the guest's words. */
        CHECK(classify((struct run_outcome){.result_frame = ok, .timed_out = true}) ==
              CODECELL_STATUS_TIMEOUT);
        CHECK(classify((struct run_outcome){.timed_out = true, .oom_killed = true}) ==
              CODECELL_STATUS_TIMEOUT);
        CHECK(classify((struct run_outcome){.oom_killed = true}) == CODECELL_STATUS_MEMORY_LIMIT);
        CHECK(classify((struct run_outcome){.cpu_exhausted = true}) ==
              CODECELL_STATUS_FUEL_EXHAUSTED);
        CHECK(classify((struct run_outcome){0}) == CODECELL_STATUS_SANDBOX_ERROR);
        CHECK(classify((struct run_outcome){.result_frame = ok, .protocol_error = "x"}) ==
              CODECELL_STATUS_SANDBOX_ERROR);
        /* The interpreter's OOM error is memory_limit only when the kernel confirms it. */
        CHECK(classify((struct run_outcome){.result_frame = oom,
                                            .out_of_memory_class = oom_class}) ==
              CODECELL_STATUS_ERROR);
        CHECK(classify((struct run_outcome){.result_frame = oom,
                                            .out_of_memory_class = oom_class,
                                            .memory_refused = true}) ==
              CODECELL_STATUS_MEMORY_LIMIT);
        CHECK(classify((struct run_outcome){.result_frame = oom,
                                            .out_of_memory_class = oom_class,
                                            .memory_by_rlimit = true}) ==
              CODECELL_STATUS_MEMORY_LIMIT);

        CHECK_STR(codecell_status_name(CODECELL_STATUS_FUEL_EXHAUSTED), "fuel_exhausted");
        CHECK_STR(codecell_status_name((codecell_status)99), "unknown");

        /* Rendering: caps, truncation flags, invalid UTF-8 replaced, 15 significant digits. */
        codecell_result *r = result_new();
        r->status = CODECELL_STATUS_OK;
        r->value_json = strdup("0.1");
        r->duration_ms = 1.5;
        output_init(&r->out, 4);
        CHECK(output_append(&r->out, "a\xff", 2) == 0);
        CHECK(output_append(&r->out, "cdef", 4) == 0);
        CHECK(r->out.truncated && r->out.total == 6);
        CHECK(output_finish(&r->out) == 0);
        char *text = codecell_result_to_json(r, false);
        CHECK_STR(text, "{\"status\":\"ok\",\"value\":0.1,\"stdout\":\"a\xef\xbf\xbd"
                        "\\n[… 2 bytes omitted …]\\nef\","
                        "\"stdout_truncated\":true,\"duration_ms\":1.5,\"cpu_ms\":0.0}");
        free(text);
        codecell_result_free(r);

        /* The guest's value text: exactly one JSON value, numbers of any length. */
        static const char *const valid[] = {
                "0",
                "-0.0",
                "1180591620717411303424",
                "1.7976931348623157e+308",
                "5e-324",
                "0.30000000000000004",
                " [1, {\"a\": [true, false, null]}] ",
                "\"\\ud83d\\ude00\"",
                "\"h\xc3\xa9 \\u0000 \\n\"",
                "{}",
                "[]",
                "[[]]",
                "{\"a\":{}}",
        };
        static const char *const invalid[] = {
                "",         " ",           "1 2",
                "[1,]",     "{\"a\"}",     "{\"a\":1,}",
                "01",       "1.",          ".5",
                "1e",       "-",           "1e400",
                "-1e999",   "\"\\udcff\"", "\"\\ud800x\"",
                "\"\xff\"", "\"a\nb\"",    "\"\\x\"",
                "[1",       "{",           "nul",
                "truex",    "NaN",         "Infinity",
                "[1]]",     "\"abc",       "1, \"status\": \"ok\"",
        };
        for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
                CHECK(json_text_valid(valid[i], strlen(valid[i])));
        for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
                CHECK(!json_text_valid(invalid[i], strlen(invalid[i])));
        /* JSON_MAX_DEPTH (200) levels pass; one more is too deep, told apart from invalid. */
        char deep[402];
        memset(deep, '[', 200);
        memset(deep + 200, ']', 200);
        CHECK(json_text_check(deep, 400) == JSON_TEXT_OK);
        memset(deep, '[', 201);
        memset(deep + 201, ']', 201);
        CHECK(json_text_check(deep, 402) == JSON_TEXT_TOO_DEEP);
        CHECK(!json_text_valid(deep, 402));
        CHECK(json_text_check(deep, 401) == JSON_TEXT_TOO_DEEP); /* found before the end */
        CHECK(json_text_check("[1,]", 4) == JSON_TEXT_INVALID);

        /* Whitespace between tokens goes, whitespace in strings stays: no line break is left
         * to split a line-framed stream the value is spliced into. */
        static const char *const spaced[][2] = {
                {"[\n{\"a\" :\r\n 1}\t,\n2 ]", "[{\"a\":1},2]"},
                {"\" a \\\" b \\n\"", "\" a \\\" b \\n\""},
                {" {\"k \\\\\" : [ \"\\\\\" , true ] } ", "{\"k \\\\\":[\"\\\\\",true]}"},
        };
        for (size_t i = 0; i < sizeof(spaced) / sizeof(spaced[0]); i++) {
                CHECK(json_text_valid(spaced[i][0], strlen(spaced[i][0])));
                char *compact = json_text_compact(spaced[i][0], strlen(spaced[i][0]));
                CHECK_STR(compact, spaced[i][1]);
                free(compact);
        }
        r = result_new();
        json_t *spaced_frame = json_pack("{s:s}", "value_json", "[\n{\"jsonrpc\":\"2.0\"}\n]");
        CHECK(result_set_value(r, spaced_frame) == 0);
        CHECK_STR(r->value_json, "[{\"jsonrpc\":\"2.0\"}]");
        json_decref(spaced_frame);
        codecell_result_free(r);

        /* The value is written as the guest gave it; an exit status is recorded. */
        r = result_new();
        r->status = CODECELL_STATUS_OK;
        json_t *frame = json_pack("{s:s}", "value_json", "[1180591620717411303424,0.1,-0.0]");
        CHECK(result_set_value(r, frame) == 0);
        r->has_exit_status = true;
        text = codecell_result_to_json(r, false);
        CHECK_STR(text, "{\"status\":\"ok\",\"value\":[1180591620717411303424,0.1,-0.0],"
                        "\"exit_status\":0,\"duration_ms\":0.0,\"cpu_ms\":0.0}");
        free(text);
        text = codecell_result_to_json(r, true);
        CHECK_STR(text, "{\n  \"status\": \"ok\",\n  \"value\": [1180591620717411303424,0.1,-0.0],"
                        "\n  \"exit_status\": 0,\n  \"duration_ms\": 0.0,\n  \"cpu_ms\": 0.0\n}");
        free(text);
        json_decref(frame);
        frame = json_pack("{s:s}", "value_json", "1, \"status\": \"error\"");
        CHECK(result_set_value(r, frame) == -EBADMSG);
        json_decref(frame);
        codecell_result_free(r);
        json_decref(ok);
        json_decref(raised);
        json_decref(oom);
        accessors();
        CHECK_DONE();
}
