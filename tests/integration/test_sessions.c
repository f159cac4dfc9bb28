/* Sessions through the public API, in the language given as argv[1]: state that survives,
 * isolation, reset, idle park, lost state on limits, respawn, output per eval, caps, and
 * nothing left behind. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e.h"
#include "languages.h"

static char *eval(codecell_cell *cell, const char *session, const char *code)
{
        codecell_result *res = NULL;
        codecell_error err = {0};
        int rc = codecell_session_eval(cell, session, code, strlen(code), &res, &err);
        return result_text(rc, res, &err);
}

static void expect(codecell_cell *cell, const char *session, const char *code, const char *prefix)
{
        char *json = eval(cell, session, code);
        CHECK(starts_with(code, json, prefix));
        free(json);
}

static void expect_has(codecell_cell *cell, const char *session, const char *code, const char *part)
{
        char *json = eval(cell, session, code);
        if (!json || !strstr(json, part)) {
                fprintf(stderr, "[%s] %s\n  gave: %.400s\n  lacks: %s\n", session, code, json,
                        part);
                check_failures++;
        }
        free(json);
}

static codecell_cell *cell;

static int counter_tool(const char *args, char **ret_json, char **ret_error, void *userdata)
{
        (void)args, (void)ret_error;
        return asprintf(ret_json, "%d", ++*(int *)userdata) < 0 ? -1 : 0;
}

static void *increment(void *arg)
{
        (void)arg;
        for (int i = 0; i < 10; i++)
                expect(cell, "shared", L("$n += 1", "n += 1\nn"), "{\"status\":\"ok\"");
        return NULL;
}

/* Waits up to 30 s for the reaper to close the named session (NULL: every session). A busy
 * machine delays its turn; an idle one needs a fraction of that. */
static void wait_closed(codecell_cell *cell, const char *name)
{
        for (int i = 0; i < 300; i++) {
                char **names = codecell_session_list(cell);
                bool open = false;
                for (size_t k = 0; names && names[k]; k++) {
                        open |= !name || strcmp(names[k], name) == 0;
                        free(names[k]);
                }
                free(names);
                if (!open)
                        return;
                usleep(100000);
        }
}

/* Evals in one session while another thread closes it (as an MCP reset does): under
 * ThreadSanitizer (make tsan) a read of the session's kernel outside run_lock is a report. */
static int evals_done;

static void *eval_loop(void *arg)
{
        for (int i = 0; i < 20; i++)
                free(eval(arg, "race", "1"));
        __atomic_store_n(&evals_done, 1, __ATOMIC_RELEASE);
        return NULL;
}

/* Closes as often as it can: each close waits on the eval in progress, if any. */
static void *close_loop(void *arg)
{
        while (!__atomic_load_n(&evals_done, __ATOMIC_ACQUIRE))
                (void)codecell_session_close(arg, "race", NULL);
        return NULL;
}

static void *sleep_in_busy(void *arg)
{
        free(eval(arg, "q-busy", L("sleep 5; :kept", "import time\ntime.sleep(5)\n'kept'")));
        return NULL;
}

static bool listed(codecell_cell *c, const char *name)
{
        char **names = codecell_session_list(c);
        bool found = false;
        for (size_t k = 0; names && names[k]; k++) {
                found |= strcmp(names[k], name) == 0;
                free(names[k]);
        }
        free(names);
        return found;
}

/* A cell with no pool, subprocesses allowed or not, and one limit set. */
static codecell_cell *cold_cell(bool subprocesses, codecell_limit limit, uint64_t value)
{
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        if (!config)
                return NULL;
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        codecell_config_set_pool(config, 0, &err);
        codecell_config_set_subprocesses(config, subprocesses);
        codecell_config_set_limit(config, limit, value, &err);
        codecell_cell *made = codecell_cell_new(config, &err);
        codecell_config_free(config);
        return made;
}

/* ---- lost state is said: whatever ends or disturbs a kernel between evals ---------------- */

/* A way to disturb a session between evals: code whose thread does it a moment after the eval
 * has returned, and whether the state survives it (the prelude takes what reaches its main
 * thread) or the kernel dies (the engine finds it ended). "" for a way the language lacks. */
struct disturbance {
        const char *what, *ruby, *python;
        bool kept;
        const char *noted; /* kept: the class said in "idle_interrupts", or NULL for none */
};

/* In a kept way the thread then writes /out/acted (Ruby: a second thread, once the first has
 * ended, since an exit reaches the main thread only as its thread ends). */
#define RB_ACT(act)                                                                                \
        "x = 6; t = Thread.new { sleep 0.3; " act " }; "                                           \
        "Thread.new { sleep 0.01 while t.alive?; File.write('/out/acted', '') }; 1"
#define PY_ACT(act)                                                                                \
        "import threading, time, os, signal, sys, _thread\nx = 6\n"                                \
        "def act():\n    time.sleep(0.3)\n    try:\n        " act "\n"                             \
        "    finally:\n        open('/out/acted', 'w').close()\n"                                  \
        "threading.Thread(target=act).start()\n1"

static const struct disturbance disturbances[] = {
        {"a raise into the main thread", RB_ACT("Thread.main.raise 'boom'"),
         PY_ACT("_thread.interrupt_main()"), true, NULL},
        {"SIGINT to itself", RB_ACT("Process.kill(:INT, $$)"),
         PY_ACT("os.kill(os.getpid(), signal.SIGINT)"), true, NULL},
        {"SIGTERM to itself (Ruby raises it in the main thread)", RB_ACT("Process.kill(:TERM, $$)"),
         "", true, "SignalException"},
        {"exit from a thread", RB_ACT("exit 3"), PY_ACT("sys.exit(3)"), true, NULL},
        {"Thread.main.kill", RB_ACT("Thread.main.kill"), "", true, "SystemExit"},
        {"SIGTERM to itself (Python dies of it)", "",
         PY_ACT("os.kill(os.getpid(), signal.SIGTERM)"), false, NULL},
        {"SIGKILL to itself", RB_ACT("Process.kill(:KILL, $$)"),
         PY_ACT("os.kill(os.getpid(), signal.SIGKILL)"), false, NULL},
        {"exit! / os._exit from a thread", RB_ACT("exit!(4)"), PY_ACT("os._exit(4)"), false, NULL},
};

/* The class each kept way's note names, by language. */
static const char *noted_class(const struct disturbance *d)
{
        if (d->noted)
                return d->noted;
        if (strstr(d->what, "raise"))
                return L("RuntimeError", "KeyboardInterrupt");
        if (strstr(d->what, "SIGINT"))
                return L("Interrupt", "KeyboardInterrupt");
        return L("SystemExit", NULL); /* Python's sys.exit ends its thread, nothing more */
}

/* True once path exists or, with pid > 0, that process is gone; waits up to 60 s, a loaded
 * machine's worst. */
static bool wait_for(const char *path, pid_t pid)
{
        for (int i = 0; i < 6000; i++) {
                if (path && access(path, F_OK) == 0)
                        return true;
                /* Gone, not a zombie: until its parent has reaped it, the kernel's end may not
                 * show on the control socket yet (the eval then finds it dying, which says the
                 * state was lost too, in other words). */
                char proc[64];
                snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
                if (pid > 0 && access(proc, F_OK) < 0)
                        return true;
                usleep(10000);
        }
        return false;
}

/* The one interpreter of the cell's sandboxes (the test keeps one session open), or 0. */
static pid_t the_guest(void)
{
        pid_t guests[4];
        return sandbox_processes(guests, 4, true) == 1 ? guests[0] : 0;
}

static void expect_lacks(const char *what, const char *json, const char *part)
{
        if (json && strstr(json, part)) {
                fprintf(stderr, "[%s] has %s: %.400s\n", what, part, json);
                check_failures++;
        }
}

static void disturb(codecell_cell *c, const char *out, const struct disturbance *d)
{
        const char *code = L(d->ruby, d->python);
        if (!*code)
                return;
        char acted[300];
        snprintf(acted, sizeof(acted), "%s/acted", out);
        unlink(acted);
        expect(c, "d", L("1", "1"), "{\"status\":\"ok\""); /* a kernel up */
        pid_t guest = the_guest();
        expect(c, "d", code, "{\"status\":\"ok\",\"value\":1");
        if (!wait_for(d->kept ? acted : NULL, d->kept ? 0 : guest)) {
                fprintf(stderr, "[%s] never happened\n", d->what);
                check_failures++;
        }
        char *json = eval(c, "d", L("x", "x"));
        const char *cls = d->kept ? noted_class(d) : NULL;
        char want[96];
        snprintf(want, sizeof(want), "\"idle_interrupts\":[{\"class\":\"%s\"", cls ? cls : "");
        if (d->kept) {
                CHECK(starts_with(d->what, json ? json : "", "{\"status\":\"ok\",\"value\":6"));
                if (cls)
                        CHECK(json && strstr(json, want));
                else
                        expect_lacks(d->what, json, "idle_interrupts");
                expect_lacks(d->what, json, "state_lost");
        } else {
                /* The state is gone, and the result says so (and how, where init could tell:
                 * under ThreadSanitizer an exec'd sandbox's init reports no end it can read,
                 * and the words are "could not go on after its last eval"). */
                CHECK(starts_with(d->what, json ? json : "", "{\"status\":\"error\""));
                CHECK(json && strstr(json, "\"state_lost\":\"the session's kernel "));
                CHECK(json && strstr(json, " after its last eval"));
                CHECK(json && strstr(json, "this eval ran in a fresh session"));
        }
        free(json);
        /* Told once: the next eval is plain. */
        json = eval(c, "d", "1");
        CHECK(starts_with(d->what, json ? json : "", "{\"status\":\"ok\",\"value\":1"));
        expect_lacks(d->what, json, "idle_interrupts");
        expect_lacks(d->what, json, "state_lost");
        free(json);
}

/* Whether pid is stopped (SIGSTOP), by its /proc state. */
static bool is_stopped(pid_t pid)
{
        char path[64], stat[512] = "";
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (!f)
                return false;
        size_t n = fread(stat, 1, sizeof(stat) - 1, f);
        fclose(f);
        stat[n] = '\0';
        const char *end = strrchr(stat, ')');
        return end && end[1] == ' ' && end[2] == 'T';
}

/* A progress report comes while the engine waits for the result: the code was sent by then. */
static void kill_on_progress(uint64_t elapsed_ms, const char *last_line, size_t len, void *userdata)
{
        (void)elapsed_ms, (void)last_line, (void)len;
        pid_t *guest = userdata;
        if (*guest > 0)
                kill(*guest, SIGKILL);
        *guest = 0;
}

/* Session d's kernel killed after the eval found it alive but before it read the code (stopped, so
 * that it cannot read it, then killed once the code is on its way): none of the code ran, so it
 * runs on a fresh kernel, and the result says the state was lost. */
static void killed_as_the_code_goes(codecell_cell *c)
{
        codecell_error err = {0};
        expect(c, "d", L("w = 7", "w = 7"), "{\"status\":\"ok\"");
        pid_t guest = the_guest();
        CHECK(guest > 0);
        if (guest <= 0)
                return;
        kill(guest, SIGSTOP);
        for (int i = 0; i < 6000 && !is_stopped(guest); i++)
                usleep(10000);
        CHECK(is_stopped(guest));
        pid_t target = guest;
        codecell_run_options options = {
                .progress = kill_on_progress, .progress_interval_ms = 20, .userdata = &target};
        const char *code =
                L("defined?(w) ? 'kept' : 'fresh'", "'kept' if 'w' in globals() else 'fresh'");
        codecell_result *res = NULL;
        CHECK(codecell_session_eval_with(c, "d", code, strlen(code), &options, &res, &err) == 0);
        char *json = result_text(0, res, &err);
        CHECK(target == 0); /* the kill came while the code was on its way */
        CHECK(starts_with("killed as the code went", json ? json : "",
                          "{\"status\":\"ok\",\"value\":\"fresh\""));
        /* Why, where init could tell (under ThreadSanitizer an exec'd sandbox's init reports no
         * end it can read: "the session's kernel could not go on before it took …"): the kill
         * of this test. */
        if (!json || !strstr(json, " before it took this eval's code"))
                fprintf(stderr, "killed as the code went: %s\n", json ? json : "(no result)");
        CHECK(json && strstr(json, "\"state_lost\":\"the session's kernel "));
        CHECK(json && strstr(json, " before it took this eval's code"));
        CHECK(json && (!strstr(json, "killed by signal") || strstr(json, "killed by signal 9")));
        CHECK(json && strstr(json, "this eval ran in a fresh session"));
        free(json);
        expect(c, "d", L("w = 8; w", "w = 8\nw"), "{\"status\":\"ok\",\"value\":8,");
}

/* A cell without a pool whose entries have 20 s each, with out (when not NULL) read-write at
 * /out; NULL after a failed CHECK. */
static codecell_cell *cell_of_entries(codecell_start start, const char *out)
{
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        codecell_config_set_pool(config, 0, &err);
        CHECK(codecell_config_set_start(config, start, &err) == 0);
        codecell_config_set_limit(config, CODECELL_LIMIT_TIMEOUT_MS, 20000, &err);
        if (out)
                CHECK(codecell_config_add_mount(config, out, "/out", true, NULL, &err) == 0);
        codecell_cell *c = codecell_cell_new(config, &err);
        codecell_config_free(config);
        CHECK(c != NULL);
        return c;
}

/* Every way in one start mode; then a kernel killed from outside, and one that a limit ended. */
static void lost_state_is_said(codecell_start start)
{
        char out[] = "/tmp/codecell-sessions-XXXXXX";
        CHECK(mkdtemp(out) != NULL);
        chmod(out, 0777);
        codecell_error err = {0};
        codecell_cell *c = cell_of_entries(start, out);
        if (!c)
                return;
        for (size_t i = 0; i < sizeof(disturbances) / sizeof(disturbances[0]); i++)
                disturb(c, out, &disturbances[i]);

        /* Killed from outside between evals. */
        expect(c, "d", L("z = 5", "z = 5"), "{\"status\":\"ok\"");
        pid_t guest = the_guest();
        CHECK(guest > 0);
        kill(guest, SIGKILL);
        CHECK(wait_for(NULL, guest));
        char *json = eval(
                c, "d",
                L("defined?(z) ? 'kept' : 'fresh'", "'kept' if 'z' in globals() else 'fresh'"));
        CHECK(starts_with("killed from outside", json ? json : "",
                          "{\"status\":\"ok\",\"value\":\"fresh\""));
        CHECK(json && strstr(json, "\"state_lost\":\"the session's kernel "));
        CHECK(json && strstr(json, " after its last eval"));
        free(json);
        codecell_result *res = NULL;
        CHECK(codecell_session_eval(c, "d", "1", 1, &res, &err) == 0);
        CHECK(res && codecell_result_state_lost(res) == NULL);
        codecell_result_free(res);

        killed_as_the_code_goes(c);

        /* An eval that ends the session says so in the same field as in its error. */
        res = NULL;
        const char *lose = L("exit!(3)", "import os\nos._exit(3)");
        CHECK(codecell_session_eval(c, "d", lose, strlen(lose), &res, &err) == 0);
        const char *said = res ? codecell_result_state_lost(res) : NULL;
        CHECK(said && strstr(said, "this eval ended the session: the session's state"));
        CHECK(said && strstr(said, "the next eval starts a fresh session"));
        codecell_result_free(res);
        codecell_cell_free(c);
        char acted[300];
        snprintf(acted, sizeof(acted), "%s/acted", out);
        unlink(acted);
        rmdir(out);
}

/* The code's first output is the moment it runs: interrupted then, once, as a person's
 * Ctrl-C. */
struct interrupter {
        codecell_cancel *cancel;
        bool sent;
};

static void interrupt_on_output(int stream, const char *data, size_t len, void *userdata)
{
        (void)stream, (void)data;
        struct interrupter *i = userdata;
        if (len > 0 && !i->sent) {
                i->sent = true;
                codecell_cancel_interrupt(i->cancel);
        }
}

/* codecell_cancel_interrupt: the code raises Interrupt or KeyboardInterrupt, which it may
 * rescue, and the session keeps its state, in both start modes. The entry's limit (20 s) is
 * far below its sleep: only the interrupt can end it with that error. Python's sleeps are
 * short ones in a loop: a SIGINT that comes between print() and a long time.sleep() is
 * taken only when the sleep returns (Python checks for signals between bytecodes, and the
 * call into C is not one), as in Python itself. */
static void interrupt_keeps_the_session(codecell_start start)
{
        codecell_error err = {0};
        codecell_cell *c = cell_of_entries(start, NULL);
        if (!c)
                return;
        expect(c, "i", "x = 41", "{\"status\":\"ok\"");
        const char *codes[] = {
                L("puts 'go'; sleep 60",
                  "print('go')\nimport time\nfor _ in range(600):\n    time.sleep(0.1)"),
                L("begin; puts 'go'; sleep 60; rescue Interrupt; x += 1; end",
                  "try:\n    print('go')\n    import time\n    for _ in range(600):\n"
                  "        time.sleep(0.1)\n"
                  "except KeyboardInterrupt:\n    x += 1\nx"),
        };
        const char *wants[] = {
                L("{\"status\":\"error\",\"error\":{\"class\":\"Interrupt\"",
                  "{\"status\":\"error\",\"error\":{\"class\":\"KeyboardInterrupt\""),
                "{\"status\":\"ok\",\"value\":42",
        };
        for (size_t i = 0; i < 2; i++) {
                codecell_cancel *cancel = codecell_cancel_new(&err);
                struct interrupter at = {.cancel = cancel};
                codecell_run_options o = {
                        .cancel = cancel, .output = interrupt_on_output, .userdata = &at};
                codecell_result *res = NULL;
                int rc = codecell_session_eval_with(c, "i", codes[i], strlen(codes[i]), &o, &res,
                                                    &err);
                char *json = result_text(rc, res, &err);
                CHECK(starts_with(codes[i], json ? json : "", wants[i]));
                CHECK(!codecell_cancel_triggered(cancel));
                free(json);
                codecell_cancel_free(cancel);
        }
        expect(c, "i", "x + 1", "{\"status\":\"ok\",\"value\":43");
        codecell_cell_free(c);
}

int main(int argc, char **argv)
{
        char **names = NULL;
        pick_language(argc, argv);
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        codecell_config_set_pool(config, 0, &err);
        codecell_config_set_limit(config, CODECELL_LIMIT_TIMEOUT_MS, 1000, &err);
        codecell_config_set_limit(config, CODECELL_LIMIT_SESSIONS, 3, &err);
        codecell_config_set_limit(config, CODECELL_LIMIT_SESSION_IDLE_MS, 1500, &err);
        cell = codecell_cell_new(config, &err);
        codecell_config_free(config);
        if (!cell)
                return 1;
        const char *ok = "{\"status\":\"ok\"";
        /* Lost state is said, in both start modes. */
        lost_state_is_said(CODECELL_START_EXEC);
        lost_state_is_said(CODECELL_START_FORK);
        interrupt_keeps_the_session(CODECELL_START_EXEC);
        interrupt_keeps_the_session(CODECELL_START_FORK);
        int calls = 0;
        CHECK(codecell_cell_add_tool(cell, "count", NULL, NULL, counter_tool, &calls, &err) == 0);

        /* Host tools reach sessions, and what they return stays in the session's state. */
        expect(cell, "t", L("first = SB.call('count')", "first = sb.call('count')"), ok);
        expect(cell, "t", L("[first, SB.call('count')]", "[first, sb.call('count')]"),
               "{\"status\":\"ok\",\"value\":[1,2]");
        CHECK(codecell_session_close(cell, "t", &err) == 0);

        /* State survives: locals, definitions, libraries, constants, files in /work. */
        expect(cell, "a",
               L("require 'set'; x = 41; LIMIT = 7; def double(y) = y * 2; "
                 "File.write('/work/f', 'kept'); s = Set[1]",
                 "import fractions\nx = 41\nLIMIT = 7\ndef double(y):\n    return y * 2\n"
                 "open('/work/f', 'w').write('kept')"),
               ok);
        expect(cell, "a",
               L("[x + 1, double(21), LIMIT, File.read('/work/f'), Set[2].size]",
                 "[x + 1, double(21), LIMIT, open('/work/f').read(), "
                 "fractions.Fraction(1, 2).denominator]"),
               L("{\"status\":\"ok\",\"value\":[42,42,7,\"kept\",1]",
                 "{\"status\":\"ok\",\"value\":[42,42,7,\"kept\",2]"));

        /* Sessions are isolated: variables, files, processes. */
        expect(cell, "b",
               L("[defined?(x), File.exist?('/work/f'), "
                 "Dir.children('/proc').grep(/\\A\\d+\\z/).size <= 3]",
                 "import os\n['x' in globals(), os.path.exists('/work/f'), "
                 "len([p for p in os.listdir('/proc') if p.isdigit()]) <= 3]"),
               L("{\"status\":\"ok\",\"value\":[null,false,true]",
                 "{\"status\":\"ok\",\"value\":[false,false,true]"));

        /* Each eval's output is its own: 20 in a row. */
        for (int i = 0; i < 20; i++) {
                char code[64], want[96];
                snprintf(code, sizeof(code), L("puts %d; %d", "print(%d)\n%d"), i, i);
                snprintf(want, sizeof(want), "{\"status\":\"ok\",\"value\":%d,\"stdout\":\"%d\\n\"",
                         i, i);
                expect(cell, "a", code, want);
        }

        /* The cap on sessions, and bad names. */
        expect(cell, "c", "1", ok);
        codecell_result *res = NULL;
        CHECK(codecell_session_eval(cell, "d", "1", 1, &res, &err) < 0 && res == NULL);
        CHECK(strstr(err.message, "3 sessions are open") != NULL);
        CHECK(codecell_session_eval(cell, "no spaces", "1", 1, &res, &err) < 0);
        CHECK(strstr(err.message, "may hold only") != NULL);
        CHECK(codecell_session_eval(cell, "", "1", 1, &res, &err) < 0);
        CHECK(codecell_session_close(cell, "nope", &err) < 0 && strstr(err.message, "no such"));
        CHECK(codecell_session_close(cell, "c", &err) == 0);

        /* A timeout ends the session and says its state was lost. */
        expect_has(cell, "b", L("y = 1", "y = 1"), ok);
        expect_has(cell, "b", L("sleep 5", "import time\ntime.sleep(5)"), "state");
        expect(cell, "b", L("defined?(y)", "'y' in globals()"),
               L("{\"status\":\"ok\",\"value\":null", "{\"status\":\"ok\",\"value\":false"));

        /* A kernel that dies while running code reports it; the next eval gets a fresh one. */
        expect_has(cell, "b", L("exit!(3)", "import os\nos._exit(3)"), "was lost");
        expect(cell, "b", "1 + 1", "{\"status\":\"ok\",\"value\":2");

        /* A kernel killed from outside between evals: the code runs on a fresh kernel. */
        expect(cell, "b", L("z = 5", "z = 5"), ok);
        kill_guests();
        usleep(200000);
        expect(cell, "b",
               L("defined?(z) ? 'kept' : 'fresh'", "'kept' if 'z' in globals() else 'fresh'"),
               "{\"status\":\"ok\",\"value\":\"fresh\"");

        /* One session shared by threads: evals run one at a time, none lost. */
        expect(cell, "shared", L("$n = 0", "n = 0"), ok);
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
                pthread_create(&t[i], NULL, increment, NULL);
        for (int i = 0; i < 2; i++)
                pthread_join(t[i], NULL);
        expect(cell, "shared", L("$n", "n"), "{\"status\":\"ok\",\"value\":20");

        /* Reset (close) discards the state. Set just before, so that the idle reaper (1.5 s
         * here) cannot have closed it first on a busy machine. */
        expect(cell, "a", L("x = 1", "x = 1"), ok);
        CHECK(codecell_session_close(cell, "a", &err) == 0);
        expect(cell, "a", L("defined?(x)", "'x' in globals()"),
               L("{\"status\":\"ok\",\"value\":null", "{\"status\":\"ok\",\"value\":false"));

        /* Idle sessions are parked without waiting for a call: their kernels end, they stay
         * listed, and the next eval restores them (test_session_restore.c). */
        pid_t pids[16];
        CHECK(children(pids, 16) > 0);
        /* The reaper's turn may come late on a loaded machine: wait for it. */
        for (int i = 0; i < 600 && children(pids, 16) > 0; i++)
                usleep(100000);
        CHECK(children(pids, 16) == 0);
        names = codecell_session_list(cell);
        CHECK(names && names[0] != NULL);
        for (size_t i = 0; names && names[i]; i++)
                free(names[i]);
        free(names);
        codecell_session_close_all(cell);

        /* Nothing left after close. */
        expect(cell, "e", "1", ok);
        codecell_session_close_all(cell);
        CHECK(children(pids, 16) == 0);
        CHECK(own_cgroups() == 0);
        expect(cell, "f", "1", ok);
        codecell_cell_free(cell); /* closes "f" */
        CHECK(children(pids, 16) == 0);
        CHECK(own_cgroups() == 0);
        /* A session whose code left a thread computing is closed once that thread has spent
         * an eval's CPU budget (1 s here) while idle, long before its idle timeout. */
        cell = cold_cell(false, CODECELL_LIMIT_CPU_MS, 1000);
        CHECK(cell != NULL);
        expect(cell, "spin",
               L("Thread.new { loop {} }; :left",
                 "import threading\n"
                 "def spin():\n    while True:\n        pass\n"
                 "threading.Thread(target=spin, daemon=True).start()\n'left'"),
               "{\"status\":\"ok\",\"value\":\"left\"");
        expect(cell, "calm", "1", ok);
        /* Within 3 s on an idle machine; a loaded one gives the spinning thread its CPU
         * second later, so wait as long as the idle timeout would never allow. */
        wait_closed(cell, "spin");
        names = codecell_session_list(cell);
        CHECK(names && names[0] && strcmp(names[0], "calm") == 0 && names[1] == NULL);
        for (size_t i = 0; names && names[i]; i++)
                free(names[i]);
        free(names);
        codecell_cell_free(cell);
        CHECK(children(pids, 16) == 0);
        /* The same with a child process left computing, in a cell that allows subprocesses:
         * the idle check counts every process of the session, not the interpreter's clock. */
        cell = cold_cell(true, CODECELL_LIMIT_CPU_MS, 1000);
        CHECK(cell != NULL);
        expect(cell, "child",
               L("Process.detach(fork { loop {} }); :left",
                 "import subprocess, sys\n"
                 "subprocess.Popen([sys.executable, '-c', 'while True: pass'])\n'left'"),
               "{\"status\":\"ok\",\"value\":\"left\"");
        wait_closed(cell, "child");
        names = codecell_session_list(cell);
        CHECK(names && names[0] == NULL);
        free(names);
        codecell_cell_free(cell);
        CHECK(children(pids, 16) == 0);

        /* Issue 14: evals and closes of one session at once; the idle session of a prefix
         * closed to make room, least recently used first, a busy one never. */
        cell = cold_cell(false, CODECELL_LIMIT_TIMEOUT_MS, 20000);
        CHECK(cell != NULL);
        pthread_t evals, closes;
        pthread_create(&evals, NULL, eval_loop, cell);
        pthread_create(&closes, NULL, close_loop, cell);
        pthread_join(evals, NULL);
        pthread_join(closes, NULL);
        (void)codecell_session_close(cell, "race", NULL);

        expect(cell, "p-old", "1", ok);
        expect(cell, "p-new", "1", ok);
        expect(cell, "other", "1", ok);
        char *victim = NULL;
        CHECK(codecell_session_close_idle(cell, "p-", &victim, &err) == 0);
        CHECK(victim && strcmp(victim, "p-old") == 0);
        free(victim);
        CHECK(!listed(cell, "p-old") && listed(cell, "p-new") && listed(cell, "other"));
        pthread_t busy;
        pthread_create(&busy, NULL, sleep_in_busy, cell);
        for (int i = 0; i < 300 && !listed(cell, "q-busy"); i++)
                usleep(10000);
        /* Listed means an eval holds it until its code ends, seconds from now. */
        CHECK(codecell_session_close_idle(cell, "q-", NULL, &err) == -ENOENT);
        pthread_join(busy, NULL);
        CHECK(codecell_session_close_idle(cell, "q-", NULL, &err) == 0);
        codecell_cell_free(cell);
        CHECK(children(pids, 16) == 0);
        CHECK_DONE();
}
