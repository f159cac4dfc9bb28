/* Parked sessions through the public API, in the language given as argv[1] (docs/sessions.md,
 * Parked sessions): parked by hand and by the idle timeout, restored by replaying the journal
 * (state, /work, random numbers; host tools not called again); a replay that diverges, one over
 * restore_ms, a journal over session_journal_bytes, a cell with a read-write mount, and a fork. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"
#include "languages.h"

static int calls;

static int counter_tool(const char *args, char **ret_json, char **ret_error, void *userdata)
{
        (void)args, (void)ret_error;
        return asprintf(ret_json, "%d", ++*(int *)userdata) < 0 ? -1 : 0;
}

static char *eval(codecell_cell *cell, const char *session, const char *code)
{
        codecell_result *res = NULL;
        codecell_error err = {0};
        int rc = codecell_session_eval(cell, session, code, strlen(code), &res, &err);
        return result_text(rc, res, &err);
}

/* The eval's JSON holds every one of parts (NULL-ended); says what came instead when not. */
static void expect_parts(codecell_cell *cell, const char *session, const char *code, ...)
{
        char *json = eval(cell, session, code);
        va_list ap;
        va_start(ap, code);
        for (const char *part; (part = va_arg(ap, const char *));)
                if (!json || !strstr(json, part)) {
                        fprintf(stderr, "[%s] %s\n  gave: %.900s\n  lacks: %s\n", session, code,
                                json, part);
                        check_failures++;
                }
        va_end(ap);
        free(json);
}

static char *value_of(codecell_cell *cell, const char *session, const char *code)
{
        codecell_result *res = NULL;
        codecell_error err = {0};
        if (codecell_session_eval(cell, session, code, strlen(code), &res, &err) < 0)
                return NULL;
        const char *v = codecell_result_status(res) == CODECELL_STATUS_OK
                                ? codecell_result_value(res)
                                : NULL;
        char *copy = v ? strdup(v) : NULL;
        codecell_result_free(res);
        return copy;
}

static codecell_cell *new_cell(uint64_t idle_ms, codecell_limit limit, uint64_t value,
                               const char *ro_dir, const char *rw_dir)
{
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        if (!config)
                return NULL;
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        codecell_config_set_pool(config, 0, &err);
        codecell_config_set_limit(config, CODECELL_LIMIT_TIMEOUT_MS, 10000, &err);
        codecell_config_set_limit(config, CODECELL_LIMIT_SESSION_IDLE_MS, idle_ms, &err);
        if (limit != CODECELL_LIMIT__COUNT)
                codecell_config_set_limit(config, limit, value, &err);
        if (ro_dir && codecell_config_add_mount(config, ro_dir, "/data", false, NULL, &err) < 0)
                fprintf(stderr, "mount: %s\n", err.message);
        if (rw_dir && codecell_config_add_mount(config, rw_dir, "/out", true, NULL, &err) < 0)
                fprintf(stderr, "mount: %s\n", err.message);
        codecell_cell *cell = codecell_cell_new(config, &err);
        codecell_config_free(config);
        if (!cell)
                fprintf(stderr, "cell: %s\n", err.message);
        else if (codecell_cell_add_tool(cell, "count", NULL, NULL, counter_tool, &calls, &err) < 0)
                fprintf(stderr, "tool: %s\n", err.message);
        return cell;
}

/* Waits (up to 60 s: a loaded machine) until no sandbox of this process is left. */
static bool wait_no_kernels(void)
{
        pid_t pids[16];
        for (int i = 0; i < 600; i++) {
                if (children(pids, 16) == 0)
                        return true;
                usleep(100000);
        }
        return false;
}

static void write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "we");
        CHECK(f != NULL);
        if (f) {
                fputs(text, f);
                fclose(f);
        }
}

/* State, /work, a failed eval's definitions and random numbers come back; the host tool is
 * not called again. */
static void park_and_restore(codecell_cell *cell)
{
        calls = 0;
        expect_parts(cell, "a",
                     L("x = 41; File.write('/work/f', 'kept'); n = SB.call('count')",
                       "x = 41\nopen('/work/f', 'w').write('kept')\nn = sb.call('count')"),
                     "{\"status\":\"ok\"", NULL);
        char *drawn =
                value_of(cell, "a",
                         L("r = [rand(1_000_000), rand(1_000_000)]",
                           "import random\nr = [random.randrange(10**6) for _ in range(2)]\nr"));
        CHECK(drawn != NULL);
        expect_parts(cell, "a",
                     L("def later = 7\nraise 'boom'",
                       "def later():\n    return 7\nraise ValueError('boom')"),
                     "{\"status\":\"error\"", NULL);
        CHECK(calls == 1);
        codecell_error err = {0};
        CHECK(codecell_session_park(cell, "a", &err) == 0);
        pid_t pids[16];
        CHECK(children(pids, 16) == 0); /* parked: its kernel is gone */
        char **names = codecell_session_list(cell);
        CHECK(names && names[0] && strcmp(names[0], "a") == 0); /* and it is still there */
        for (size_t i = 0; names && names[i]; i++)
                free(names[i]);
        free(names);
        char want[200];
        snprintf(want, sizeof(want), "\"value\":[42,\"kept\",1,7,%s]", drawn ? drawn : "?");
        expect_parts(cell, "a",
                     L("[x + 1, File.read('/work/f'), n, later, r]",
                       "[x + 1, open('/work/f').read(), n, later(), r]"),
                     "{\"status\":\"ok\"", want, "\"restored\":{\"evals\":3,", NULL);
        CHECK(calls == 1); /* answered from the journal */
        /* The tool is live again, and a restored session parks and restores again. */
        expect_parts(cell, "a", L("n2 = SB.call('count')", "n2 = sb.call('count')\nn2"),
                     "\"value\":2", NULL);
        CHECK(codecell_session_park(cell, "a", &err) == 0);
        expect_parts(cell, "a", "[n, n2]", "\"value\":[1,2]", "\"restored\":{\"evals\":5,", NULL);
        CHECK(calls == 2);
        CHECK(codecell_session_close(cell, "a", &err) == 0);
        /* The seed is the session's: a fresh one draws other numbers (two draws of a million
         * each: equal by chance once in 10^12). */
        char *fresh = value_of(cell, "a",
                               L("[rand(1_000_000), rand(1_000_000)]",
                                 "import random\n[random.randrange(10**6) for _ in range(2)]"));
        CHECK(fresh && drawn && strcmp(fresh, drawn) != 0);
        free(fresh);
        free(drawn);
        CHECK(codecell_session_close(cell, "a", &err) == 0);
        /* Closed is closed: nothing comes back. */
        expect_parts(cell, "a", L("defined?(x).inspect", "'x' in globals()"),
                     L("\"value\":\"nil\"", "\"value\":false"), NULL);
        CHECK(codecell_session_close(cell, "a", &err) == 0);
        CHECK(codecell_session_park(cell, "nope", &err) < 0 && strstr(err.message, "no such"));
}

/* An eval cancelled before it started never ran: the journal does not keep it, so the restore
 * does not run it either. */
static void cancelled_is_not_journaled(codecell_cell *cell)
{
        codecell_error err = {0};
        expect_parts(cell, "c", L("$k = 1", "k = 1"), "{\"status\":\"ok\"", NULL);
        codecell_cancel *cancel = codecell_cancel_new(&err);
        CHECK(cancel != NULL);
        codecell_cancel_trigger(cancel);
        codecell_run_options o = {.cancel = cancel};
        codecell_result *res = NULL;
        const char *code = L("$k = 2", "k = 2");
        CHECK(codecell_session_eval_with(cell, "c", code, strlen(code), &o, &res, &err) == 0);
        CHECK(res && codecell_result_status(res) == CODECELL_STATUS_SANDBOX_ERROR);
        codecell_result_free(res);
        codecell_cancel_free(cancel);
        CHECK(codecell_session_park(cell, "c", &err) == 0);
        expect_parts(cell, "c", L("$k", "k"), "\"value\":1", "\"restored\":{\"evals\":1,", NULL);
        codecell_session_close_all(cell);
}

/* The idle timeout parks a session instead of ending it. */
static void idle_parks(codecell_cell *cell)
{
        expect_parts(
                cell, "idle",
                L("y = 5; File.write('/work/g', 'w')", "y = 5\nopen('/work/g', 'w').write('w')"),
                "{\"status\":\"ok\"", NULL);
        CHECK(wait_no_kernels());
        expect_parts(cell, "idle", L("[y, File.read('/work/g')]", "[y, open('/work/g').read()]"),
                     "\"value\":[5,\"w\"]", "\"restored\":{\"evals\":1,", NULL);
        codecell_session_close_all(cell);
}

/* A replay whose tool call differs from the journal's stops there, says so, and the eval runs
 * in a fresh session; the tool is not called by the replay. */
static void divergence(const char *dir)
{
        char path[600];
        snprintf(path, sizeof(path), "%s/v", dir);
        write_file(path, "one");
        codecell_cell *cell = new_cell(300000, CODECELL_LIMIT__COUNT, 0, dir, NULL);
        CHECK(cell != NULL);
        if (!cell)
                return;
        calls = 0;
        expect_parts(cell, "d", L("z = 1", "z = 1"), "{\"status\":\"ok\"", NULL);
        expect_parts(cell, "d",
                     L("k = SB.call('count', v: File.read('/data/v'))",
                       "k = sb.call('count', v=open('/data/v').read())\nk"),
                     "\"value\":1", NULL);
        codecell_error err = {0};
        CHECK(codecell_session_park(cell, "d", &err) == 0);
        write_file(path, "two"); /* what the code reads changed while it was parked */
        expect_parts(cell, "d", L("defined?(z).inspect", "'z' in globals()"),
                     L("\"value\":\"nil\"", "\"value\":false"), "\"restored\":false",
                     "eval 2 of 2 went another way", "other arguments", "fresh session", NULL);
        CHECK(calls == 1);
        codecell_cell_free(cell);
}

/* A replay over restore_ms stops, and the eval runs in a fresh session. */
static void over_restore_ms(void)
{
        codecell_cell *cell = new_cell(300000, CODECELL_LIMIT_RESTORE_MS, 1500, NULL, NULL);
        CHECK(cell != NULL);
        if (!cell)
                return;
        const char *nap = L("sleep 1; w = 1", "import time\ntime.sleep(1)\nw = 1");
        expect_parts(cell, "slow", nap, "{\"status\":\"ok\"", NULL);
        expect_parts(cell, "slow", nap, "{\"status\":\"ok\"", NULL);
        codecell_error err = {0};
        CHECK(codecell_session_park(cell, "slow", &err) == 0);
        expect_parts(cell, "slow", "2", "\"value\":2", "\"restored\":false", "restore_ms (1500 ms)",
                     NULL);
        codecell_cell_free(cell);
}

/* A journal over session_journal_bytes: said once, and the session cannot be parked. */
static void over_journal(void)
{
        codecell_cell *cell =
                new_cell(300000, CODECELL_LIMIT_SESSION_JOURNAL_BYTES, 4096, NULL, NULL);
        CHECK(cell != NULL);
        if (!cell)
                return;
        expect_parts(cell, "big", "1", "{\"status\":\"ok\"", NULL);
        char code[6000];
        snprintf(code, sizeof(code), "s = '%0*d'", 5000, 0);
        expect_parts(cell, "big", code, "\"not_restorable\":", "session_journal_bytes (4096", NULL);
        char *json = eval(cell, "big", "1");
        CHECK(json && !strstr(json, "not_restorable")); /* said once */
        free(json);
        codecell_error err = {0};
        CHECK(codecell_session_park(cell, "big", &err) < 0 && err.errno_value == EPERM &&
              strstr(err.message, "session_journal_bytes"));
        expect_parts(cell, "big", L("s.size", "len(s)"), "\"value\":5000", NULL); /* still in use */
        codecell_cell_free(cell);
}

/* Python's hash seed is the interpreter's from its start (the cell runs it with -I, which
 * ignores PYTHONHASHSEED): the kernels of a forked cell (the default) share their zygote's, so
 * a session restored there hashes its strings as before. */
static void hash_seed(void)
{
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        codecell_config_set_pool(config, 0, &err);
        codecell_config_set_start(config, CODECELL_START_FORK, &err);
        codecell_cell *cell = codecell_cell_new(config, &err);
        codecell_config_free(config);
        CHECK(cell != NULL);
        if (!cell)
                return;
        char *before = value_of(cell, "h", "h = hash('abc')\nh");
        CHECK(codecell_session_park(cell, "h", &err) == 0);
        char *after = value_of(cell, "h", "h");
        CHECK(before && after && strcmp(before, after) == 0);
        free(before);
        free(after);
        codecell_cell_free(cell);
}

/* A fork replays its source's journal (host tools not called again) and then goes its own
 * way; the source is untouched. */
static void fork_session(codecell_cell *cell)
{
        calls = 0;
        codecell_error err = {0};
        expect_parts(cell, "src",
                     L("m = SB.call('count'); v = [m]", "m = sb.call('count')\nv = [m]"),
                     "{\"status\":\"ok\"", NULL);
        CHECK(codecell_session_fork(cell, "src", "what-if", &err) == 0);
        expect_parts(cell, "what-if", L("v << 2; v", "v.append(2)\nv"), "\"value\":[1,2]",
                     "\"restored\":{\"evals\":1,", NULL);
        expect_parts(cell, "src", "v", "\"value\":[1]", NULL);
        CHECK(calls == 1);
        CHECK(codecell_session_fork(cell, "src", "what-if", &err) < 0 && err.errno_value == EEXIST);
        CHECK(codecell_session_fork(cell, "nope", "x", &err) < 0 && err.errno_value == ENOENT);
        CHECK(codecell_session_fork(cell, "src", "no spaces", &err) < 0 &&
              err.errno_value == EINVAL);
        codecell_session_close_all(cell);
}

/* A cell with a read-write mount keeps no journal: a replay would write twice. */
static void read_write_mount(const char *dir)
{
        codecell_cell *cell = new_cell(300000, CODECELL_LIMIT__COUNT, 0, NULL, dir);
        CHECK(cell != NULL);
        if (!cell)
                return;
        expect_parts(cell, "rw", "1", "{\"status\":\"ok\"", NULL);
        codecell_error err = {0};
        CHECK(codecell_session_park(cell, "rw", &err) < 0 && err.errno_value == EPERM &&
              strstr(err.message, "read-write mounts"));
        codecell_cell_free(cell);
}

/* A network cell keeps no journal either: a replay would send its requests again. */
static void network_cell(void)
{
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        CHECK(config != NULL);
        if (!config)
                return;
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        codecell_config_set_pool(config, 0, &err);
        CHECK(codecell_config_set_network(config, "{\"allow\": [\"example.test\"]}", &err) == 0);
        codecell_cell *cell = codecell_cell_new(config, &err);
        codecell_config_free(config);
        CHECK(cell != NULL);
        if (!cell)
                return;
        expect_parts(cell, "net", "1", "{\"status\":\"ok\"", NULL);
        CHECK(codecell_session_park(cell, "net", &err) < 0 && err.errno_value == EPERM &&
              strstr(err.message, "reaches the network"));
        codecell_cell_free(cell);
}

int main(int argc, char **argv)
{
        pick_language(argc, argv);
        char ro[] = "/tmp/codecell-restore-ro-XXXXXX", rw[] = "/tmp/codecell-restore-rw-XXXXXX";
        CHECK(mkdtemp(ro) && mkdtemp(rw));
        codecell_cell *cell = new_cell(1500, CODECELL_LIMIT__COUNT, 0, NULL, NULL);
        CHECK(cell != NULL);
        if (!cell)
                return 1;
        park_and_restore(cell);
        fork_session(cell);
        cancelled_is_not_journaled(cell);
        idle_parks(cell);
        codecell_cell_free(cell);
        divergence(ro);
        over_restore_ms();
        over_journal();
        read_write_mount(rw);
        network_cell();
        if (is_python)
                hash_seed();
        pid_t pids[16];
        CHECK(children(pids, 16) == 0);
        char path[600];
        snprintf(path, sizeof(path), "%s/v", ro);
        unlink(path);
        rmdir(ro);
        rmdir(rw);
        CHECK_DONE();
}
