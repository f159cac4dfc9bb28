/* Host tools with C handlers, through the public API and a real sandbox: answers, failures, a
 * handler that hangs (the wall clock still ends the run), bad JSON, large answers, many calls,
 * calls at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"
#include "languages.h"

static int echo(const char *args, char **ret_json, char **ret_error, void *userdata)
{
        (void)ret_error;
        (*(int *)userdata)++;
        return asprintf(ret_json, "{\"got\":%s}", args) < 0 ? -1 : 0;
}

static int fail(const char *args, char **ret_json, char **ret_error, void *userdata)
{
        (void)args, (void)ret_json, (void)userdata;
        *ret_error = strdup("no such repository");
        return -1;
}

static int fail_silently(const char *args, char **ret_json, char **ret_error, void *userdata)
{
        (void)args, (void)ret_json, (void)ret_error, (void)userdata;
        return -1;
}

/* 200 ms, then the arguments back: calls that run at once take the time of one. */
static int nap(const char *args, char **ret_json, char **ret_error, void *userdata)
{
        (void)ret_error, (void)userdata;
        usleep(200 * 1000);
        return asprintf(ret_json, "{\"got\":%s}", args) < 0 ? -1 : 0;
}

static int hang(const char *args, char **ret_json, char **ret_error, void *userdata)
{
        (void)args, (void)ret_error, (void)userdata;
        sleep(3);
        *ret_json = strdup("null");
        return 0;
}

static int bad_json(const char *args, char **ret_json, char **ret_error, void *userdata)
{
        (void)args, (void)ret_error, (void)userdata;
        *ret_json = strdup("[1, 2");
        return 0;
}

static int big(const char *args, char **ret_json, char **ret_error, void *userdata)
{
        (void)args, (void)ret_error, (void)userdata;
        size_t n = 2 * 1024 * 1024;
        char *s = malloc(n + 3);
        s[0] = '"';
        memset(s + 1, 'x', n);
        s[n + 1] = '"';
        s[n + 2] = '\0';
        *ret_json = s;
        return 0;
}

static codecell_cell *new_cell(uint64_t timeout_ms)
{
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        codecell_config_set_limit(config, CODECELL_LIMIT_TIMEOUT_MS, timeout_ms, &err);
        codecell_cell *cell = codecell_cell_new(config, &err);
        if (!cell)
                fprintf(stderr, "cell: %s\n", err.message);
        codecell_config_free(config);
        return cell;
}

static void expect(codecell_cell *cell, const char *code, const char *prefix)
{
        char *json = run_code(cell, code);
        CHECK(starts_with(code, json, prefix));
        free(json);
}

int main(int argc, char **argv)
{
        pick_language(argc, argv);
        codecell_error err = {0};
        int echo_calls = 0;
        /* Time enough for 500 calls on a loaded machine under a sanitizer; the hanging
         * handler has a cell of its own with a short wall clock. */
        codecell_cell *cell = new_cell(60000);
        codecell_cell *hang_cell = new_cell(1000);
        if (!cell || !hang_cell)
                return 1;
        CHECK(codecell_cell_add_tool(cell, "echo", "Echoes.",
                                     "{\"type\":\"object\",\"properties\":"
                                     "{\"q\":{\"type\":\"string\"}},\"required\":[\"q\"]}",
                                     echo, &echo_calls, &err) == 0);
        CHECK(codecell_cell_add_tool(cell, "fail", NULL, NULL, fail, NULL, &err) == 0);
        CHECK(codecell_cell_add_tool(cell, "fail.silently", NULL, NULL, fail_silently, NULL,
                                     &err) == 0);
        CHECK(codecell_cell_add_tool(hang_cell, "hang", NULL, NULL, hang, NULL, &err) == 0);
        CHECK(codecell_cell_add_tool(hang_cell, "echo", NULL, NULL, echo, &echo_calls, &err) == 0);
        CHECK(codecell_cell_add_tool(cell, "bad_json", NULL, NULL, bad_json, NULL, &err) == 0);
        CHECK(codecell_cell_add_tool(cell, "big", NULL, NULL, big, NULL, &err) == 0);
        CHECK(codecell_cell_add_tool(cell, "nap", NULL, NULL, nap, NULL, &err) == 0);
        /* Registration errors. */
        CHECK(codecell_cell_add_tool(cell, "echo", NULL, NULL, echo, NULL, &err) < 0 &&
              strstr(err.message, "exists already"));
        CHECK(codecell_cell_add_tool(cell, "9lives", NULL, NULL, echo, NULL, &err) < 0 &&
              strstr(err.message, "must start with a letter"));
        CHECK(codecell_cell_add_tool(cell, "x", NULL, "{nope", echo, NULL, &err) < 0 &&
              strstr(err.message, "not valid JSON"));
        CHECK(codecell_cell_add_tool(cell, "x", NULL, "[]", echo, NULL, &err) < 0 &&
              strstr(err.message, "must be a JSON object"));
        CHECK(codecell_cell_add_tool(cell, "x", NULL, NULL, NULL, NULL, &err) < 0);
        CHECK(strstr(codecell_cell_description(cell),
                     L("    SB.call(\"echo\", q: String)\n", "    sb.call(\"echo\", q=str)\n")));

        expect(cell,
               L("SB.call('echo', q: 'hi', n: [1, {'a' => nil}])",
                 "sb.call('echo', q='hi', n=[1, {'a': None}])"),
               "{\"status\":\"ok\",\"value\":{\"got\":{\"q\":\"hi\",\"n\":[1,{\"a\":null}]}},");
        expect(cell,
               L("begin; SB.call('fail'); rescue SB::ToolError => e; e.message; end",
                 "try:\n    sb.call('fail')\nexcept sb.ToolError as e:\n    m = str(e)\nm"),
               "{\"status\":\"ok\",\"value\":\"no such repository\",");
        expect(cell,
               L("begin; SB.call('fail.silently'); rescue SB::ToolError => e; e.message; end",
                 "try:\n    sb.call('fail.silently')\nexcept sb.ToolError as e:\n    m = "
                 "str(e)\nm"),
               "{\"status\":\"ok\",\"value\":\"tool \\\"fail.silently\\\" failed\",");
        expect(cell,
               L("begin; SB.call('bad_json'); rescue SB::ToolError => e; e.message; end",
                 "try:\n    sb.call('bad_json')\nexcept sb.ToolError as e:\n    m = str(e)\nm"),
               "{\"status\":\"ok\",\"value\":\"tool \\\"bad_json\\\" returned invalid JSON");
        expect(cell,
               L("begin; SB.call('big'); rescue SB::ToolError => e; e.message; end",
                 "try:\n    sb.call('big')\nexcept sb.ToolError as e:\n    m = str(e)\nm"),
               "{\"status\":\"ok\",\"value\":\"tool \\\"big\\\": an answer of 2097154 bytes is "
               "over");
        /* Arguments the handler's input_schema refuses never reach it. */
        echo_calls = 0;
        expect(cell,
               L("begin; SB.call('echo', q: 3); rescue SB::ToolError => e; e.message; end",
                 "try:\n    sb.call('echo', q=3)\nexcept sb.ToolError as e:\n    m = str(e)\nm"),
               "{\"status\":\"ok\",\"value\":\"tool \\\"echo\\\": arguments: q: must be a "
               "string\",");
        expect(cell,
               L("begin; SB.call('echo'); rescue SB::ToolError => e; e.message; end",
                 "try:\n    sb.call('echo')\nexcept sb.ToolError as e:\n    m = str(e)\nm"),
               "{\"status\":\"ok\",\"value\":\"tool \\\"echo\\\": arguments: the required "
               "\\\"q\\\" is missing\",");
        CHECK(echo_calls == 0);
        echo_calls = 0;
        expect(cell,
               L("500.times { |i| SB.call('echo', q: i.to_s) }; :done",
                 "for i in range(500): sb.call('echo', q=str(i))\n'done'"),
               "{\"status\":\"ok\",\"value\":\"done\",");
        CHECK(echo_calls == 500);
        /* Eight calls at once (the default tool_concurrency): about 200 ms, where one after the
         * other they take 1.6 s; each answer goes to its own call. */
        expect(cell,
               L("c = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }; t = c.()\n"
                 "r = SB.parallel { |p| 8.times { |i| p.call('nap', i: i) } }\n"
                 "[r.map { |x| x['got']['i'] } == (0...8).to_a, c.() - t < 1.2]",
                 "import asyncio, time\nt = time.monotonic()\n"
                 "r = await asyncio.gather(*[sb.acall('nap', i=i) for i in range(8)])\n"
                 "[[x['got']['i'] for x in r] == list(range(8)), time.monotonic() - t < 1.2]"),
               "{\"status\":\"ok\",\"value\":[true,true],");
        /* A hanging handler: the execution still ends at its wall clock, and the next run works. */
        expect(hang_cell, L("SB.call('hang')", "sb.call('hang')"), "{\"status\":\"timeout\",");
        expect(hang_cell, L("SB.call('echo', q: 'after')", "sb.call('echo', q='after')"),
               "{\"status\":\"ok\",\"value\":{\"got\":{\"q\":\"after\"}},");
        codecell_cell_free(cell);
        codecell_cell_free(hang_cell);
        sleep(3); /* let the abandoned handler finish before the process ends (for leak checkers) */
        CHECK_DONE();
}
