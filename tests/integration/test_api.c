/* The public C API end to end, the way an embedding program uses it: only codecell.h. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e.h"
#include "languages.h"

static codecell_result *run(codecell_cell *cell, const char *code)
{
        codecell_result *res = NULL;
        codecell_error err;
        if (codecell_cell_run(cell, code, strlen(code), &res, &err) < 0)
                fprintf(stderr, "run: %s\n", err.message);
        return res;
}

/* Progress reports seen by a run: how many, and the last line of the last one. */
struct progress_seen {
        int calls;
        uint64_t last_elapsed;
        bool increasing;
        char line[64];
};

static void on_progress(uint64_t elapsed_ms, const char *line, size_t len, void *userdata)
{
        struct progress_seen *p = userdata;
        p->increasing = p->calls == 0 || elapsed_ms > p->last_elapsed;
        p->last_elapsed = elapsed_ms;
        snprintf(p->line, sizeof(p->line), "%.*s", (int)len, line);
        p->calls++;
}

struct canceller {
        codecell_cancel *cancel;
        int after_ms;
};

static void *cancel_later(void *arg)
{
        struct canceller *c = arg;
        usleep((useconds_t)c->after_ms * 1000);
        codecell_cancel_trigger(c->cancel);
        return NULL;
}

struct shared_run {
        codecell_cell *cell;
        codecell_cancel *cancel;
        codecell_status status;
};

static void *run_until_cancelled(void *arg)
{
        struct shared_run *r = arg;
        codecell_error err = {0};
        codecell_run_options o = {.cancel = r->cancel};
        codecell_result *res = NULL;
        const char *code = L("sleep 20; 1", "import time\ntime.sleep(20)\n1");
        r->status = codecell_cell_run_with(r->cell, code, strlen(code), &o, &res, &err) == 0
                            ? codecell_result_status(res)
                            : CODECELL_STATUS_OK;
        codecell_result_free(res);
        return NULL;
}

/* One token given to two runs at once: its trigger ends both, whichever saw it first. */
static void shared_token(codecell_cell *cell)
{
        codecell_error err = {0};
        struct canceller c = {.cancel = codecell_cancel_new(&err), .after_ms = 300};
        struct shared_run runs[2] = {{cell, c.cancel, CODECELL_STATUS_OK},
                                     {cell, c.cancel, CODECELL_STATUS_OK}};
        pthread_t threads[2], trigger;
        for (int i = 0; i < 2; i++)
                CHECK(pthread_create(&threads[i], NULL, run_until_cancelled, &runs[i]) == 0);
        CHECK(pthread_create(&trigger, NULL, cancel_later, &c) == 0);
        for (int i = 0; i < 2; i++)
                pthread_join(threads[i], NULL);
        pthread_join(trigger, NULL);
        for (int i = 0; i < 2; i++)
                CHECK(runs[i].status == CODECELL_STATUS_SANDBOX_ERROR);
        codecell_cancel_free(c.cancel);
}

/* Cancellation and progress through codecell_run_options. */
static void run_options(codecell_cell *cell)
{
        codecell_error err = {0};
        struct progress_seen seen = {0};
        codecell_run_options o = {
                .progress = on_progress, .progress_interval_ms = 100, .userdata = &seen};
        codecell_result *res = NULL;
        const char *code = L("puts 'one'; sleep 0.3; puts 'two'; sleep 0.3; 7",
                             "import time\nprint('one')\ntime.sleep(0.3)\nprint('two')\n"
                             "time.sleep(0.3)\n7");
        CHECK(codecell_cell_run_with(cell, code, strlen(code), &o, &res, &err) == 0);
        CHECK(res && codecell_result_status(res) == CODECELL_STATUS_OK);
        CHECK(seen.calls >= 3 && seen.increasing);
        CHECK(strcmp(seen.line, "two") == 0);
        codecell_result_free(res);

        /* Cancelled from another thread while it sleeps: ended at once, said so. */
        struct canceller c = {.cancel = codecell_cancel_new(&err), .after_ms = 200};
        CHECK(c.cancel != NULL && !codecell_cancel_triggered(c.cancel));
        codecell_run_options oc = {.cancel = c.cancel};
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, cancel_later, &c) == 0);
        code = L("sleep 1.5; 1", "import time\ntime.sleep(1.5)\n1");
        res = NULL;
        CHECK(codecell_cell_run_with(cell, code, strlen(code), &oc, &res, &err) == 0);
        pthread_join(thread, NULL);
        CHECK(codecell_cancel_triggered(c.cancel));
        CHECK(res && codecell_result_status(res) == CODECELL_STATUS_SANDBOX_ERROR);
        char *json = res ? codecell_result_to_json(res, false) : NULL;
        CHECK(json && strstr(json, "\"cancelled\":true") &&
              strstr(json, "cancelled by the caller"));
        free(json);
        codecell_result_free(res);

        /* A token triggered before the run: the code is never handed over. */
        res = NULL;
        code = L("File.write('/work/x', '1'); 1", "open('/work/x', 'w').write('1')\n1");
        CHECK(codecell_cell_run_with(cell, code, strlen(code), &oc, &res, &err) == 0);
        CHECK(res && codecell_result_status(res) == CODECELL_STATUS_SANDBOX_ERROR);
        json = res ? codecell_result_to_json(res, false) : NULL;
        CHECK(json && strstr(json, "before it started"));
        free(json);
        codecell_result_free(res);
        /* Nor to a session, which goes on untouched. */
        code = L("x = 5", "x = 5");
        CHECK(codecell_session_eval(cell, "s", code, strlen(code), &res, &err) == 0);
        codecell_result_free(res);
        code = L("x = 6", "x = 6");
        CHECK(codecell_session_eval_with(cell, "s", code, strlen(code), &oc, &res, &err) == 0);
        CHECK(res && codecell_result_status(res) == CODECELL_STATUS_SANDBOX_ERROR);
        codecell_result_free(res);
        code = L("x", "x");
        CHECK(codecell_session_eval(cell, "s", code, strlen(code), &res, &err) == 0);
        json = res ? codecell_result_to_json(res, false) : NULL;
        CHECK(json && strstr(json, "\"status\":\"ok\",\"value\":5"));
        free(json);
        codecell_result_free(res);
        codecell_session_close_all(cell);
        codecell_cancel_free(c.cancel);
        codecell_cancel_trigger(NULL);
        codecell_cancel_free(NULL);
        shared_token(cell);
}

static bool error_says(const codecell_result *res, const char *part)
{
        char *json = res ? codecell_result_to_json(res, false) : NULL;
        bool found = json && strstr(json, part);
        if (!found)
                fprintf(stderr, "expected \"%s\" in %s\n", part, json ? json : "(no result)");
        free(json);
        return found;
}

/* A run's own wall clock (codecell_run_options.timeout_ms) narrows the cell's 2 s, for a run
 * and for a session's eval, and never widens it. */
static void run_timeout(codecell_cell *cell)
{
        codecell_error err = {0};
        codecell_result *res = NULL;
        const char *code = L("sleep 1; 1", "import time\ntime.sleep(1)\n1");
        codecell_run_options narrow = {.timeout_ms = 300};
        CHECK(codecell_cell_run_with(cell, code, strlen(code), &narrow, &res, &err) == 0);
        CHECK(res && codecell_result_status(res) == CODECELL_STATUS_TIMEOUT);
        CHECK(error_says(res, "timed out after 300 ms"));
        codecell_result_free(res);

        res = NULL;
        CHECK(codecell_session_eval_with(cell, "t", code, strlen(code), &narrow, &res, &err) == 0);
        CHECK(res && codecell_result_status(res) == CODECELL_STATUS_TIMEOUT);
        CHECK(error_says(res, "timed out after 300 ms"));
        codecell_result_free(res);
        codecell_session_close_all(cell);

        /* 60 s asked of a cell of 2 s: the cell's limit holds. */
        res = NULL;
        code = L("sleep 10", "import time\ntime.sleep(10)");
        codecell_run_options wide = {.timeout_ms = 60000};
        CHECK(codecell_cell_run_with(cell, code, strlen(code), &wide, &res, &err) == 0);
        CHECK(res && codecell_result_status(res) == CODECELL_STATUS_TIMEOUT);
        CHECK(error_says(res, "timed out after 2000 ms"));
        codecell_result_free(res);
}

/* Files given to a run (codecell_run_options.files) are in /work before the code, any bytes;
 * a bad entry refuses the run before it starts, naming the entry; a session's stay. */
static void run_files(codecell_cell *cell)
{
        static const unsigned char bytes[] = {0, 1, 0xff, 0xfe, '\n', 0};
        const codecell_file files[] = {{"in/a.csv", "x,y\n1,2\n", 8},
                                       {"bin", bytes, sizeof(bytes)},
                                       {"empty", NULL, 0},
                                       {NULL, NULL, 0}};
        codecell_run_options o = {.files = files};
        codecell_error err = {0};
        codecell_result *res = NULL;
        const char *code =
                L("[File.read('in/a.csv'), File.binread('bin').bytes, File.size('empty')]",
                  "(open('in/a.csv').read(), list(open('bin', 'rb').read()), "
                  "__import__('os').path.getsize('empty'))");
        CHECK(codecell_cell_run_with(cell, code, strlen(code), &o, &res, &err) == 0);
        char *json = res ? codecell_result_to_json(res, false) : NULL;
        CHECK(json && strstr(json, "\"value\":[\"x,y\\n1,2\\n\",[0,1,255,254,10,0],0]"));
        free(json);
        codecell_result_free(res);

        const char *bad[][2] = {{"../up", "\"..\" part"},
                                {"/abs", "is absolute"},
                                {"a//b", "empty part"},
                                {"", "is empty"},
                                {"a\x01", "\"a\\x01\" holds a control character"},
                                {"\xc3(", "\"\\xc3(\" is not valid UTF-8"}};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                const codecell_file one[] = {{"ok", "1", 1}, {bad[i][0], "x", 1}, {NULL, NULL, 0}};
                codecell_run_options ob = {.files = one};
                res = NULL;
                CHECK(codecell_cell_run_with(cell, code, strlen(code), &ob, &res, &err) < 0 &&
                      !res);
                CHECK(err.kind == CODECELL_ERR_INVALID && strstr(err.message, "files[1].name") &&
                      strstr(err.message, bad[i][1]));
        }
        const codecell_file no_data[] = {{"a", NULL, 3}, {NULL, NULL, 0}};
        codecell_run_options on = {.files = no_data};
        CHECK(codecell_cell_run_with(cell, code, strlen(code), &on, &res, &err) < 0 &&
              strstr(err.message, "files[0]: len without data"));

        const codecell_file note[] = {{"note", "kept", 4}, {NULL, NULL, 0}};
        codecell_run_options os = {.files = note};
        code = L("1", "1");
        CHECK(codecell_session_eval_with(cell, "files", code, strlen(code), &os, &res, &err) == 0);
        codecell_result_free(res);
        code = L("File.read('note')", "open('note').read()");
        CHECK(codecell_session_eval(cell, "files", code, strlen(code), &res, &err) == 0);
        json = res ? codecell_result_to_json(res, false) : NULL;
        CHECK(json && strstr(json, "\"value\":\"kept\""));
        free(json);
        codecell_result_free(res);
        CHECK(codecell_session_close(cell, "files", &err) == 0);
}

/* A limit over the engine's own hard limit is refused when the cell is made, by name, in both
 * ways of making sandboxes: no sandbox could set it. At the hard limit, runs work. */
static void test_limits_over_the_engines(void)
{
        struct rlimit files;
        CHECK(getrlimit(RLIMIT_NOFILE, &files) == 0);
        if (files.rlim_max == RLIM_INFINITY || files.rlim_max > 1000000)
                return;
        for (int start = CODECELL_START_FORK; start <= CODECELL_START_EXEC; start++) {
                for (int over = 1; over >= 0; over--) {
                        codecell_error err = {0};
                        codecell_config *config = codecell_config_new(language, &err);
                        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
                        CHECK(codecell_config_set_start(config, (codecell_start)start, &err) == 0);
                        CHECK(codecell_config_set_limit(config, CODECELL_LIMIT_OPEN_FILES,
                                                        files.rlim_max + (rlim_t)over, &err) == 0);
                        codecell_cell *cell = codecell_cell_new(config, &err);
                        codecell_config_free(config);
                        if (over) {
                                CHECK(!cell && err.kind == CODECELL_ERR_INVALID &&
                                      strstr(err.message, "limit open_files") &&
                                      strstr(err.message, "hard limit") &&
                                      strstr(err.message, "ulimit -Hn"));
                                codecell_cell_free(cell);
                                continue;
                        }
                        CHECK(cell != NULL);
                        if (!cell)
                                continue;
                        char *json = run_code(cell, L("1 + 1", "1 + 1"));
                        CHECK(json && strstr(json, "\"status\":\"ok\",\"value\":2"));
                        free(json);
                        codecell_cell_free(cell);
                }
        }
}

/* The output folder's files through codecell_result_file: name order, types from the bytes
 * (the PNG named .txt is a picture, named by codecell_result_image_name), a FIFO left out. */
static void test_output_files(void)
{
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        CHECK(config != NULL);
        CHECK(codecell_config_set_output_folder(config, "/work/out", &err) == 0);
        CHECK(codecell_config_set_output_folder(config, "/etc", &err) < 0 &&
              strstr(err.message, "output folder /etc: the code cannot write there"));
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        codecell_cell *cell = codecell_cell_new(config, &err);
        codecell_config_free(config);
        CHECK(cell != NULL);
        if (!cell)
                return;
        codecell_result *res = run(
                cell,
                L("Dir.mkdir('/work/out'); File.write('/work/out/b.csv', \"x,y\\n\"); "
                  "File.binwrite('/work/out/a.bin', \"\\0\\1\\2\"); "
                  "File.binwrite('/work/out/p.txt', \"\\x89PNG\\r\\n\\x1a\\n\" + 'x' * 8); "
                  "File.mkfifo('/work/out/f'); 1",
                  "import os\nos.mkdir('/work/out')\nopen('/work/out/b.csv', 'w').write('x,y\\n')\n"
                  "open('/work/out/a.bin', 'wb').write(b'\\0\\1\\2')\n"
                  "open('/work/out/p.txt', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + b'x' * 8)\n"
                  "os.mkfifo('/work/out/f')\n1"));
        CHECK(res && codecell_result_status(res) == CODECELL_STATUS_OK);
        CHECK(res && codecell_result_file_count(res) == 2);
        const char *name = NULL, *mime = NULL;
        size_t len = 0;
        const unsigned char *data = res ? codecell_result_file(res, 0, &name, &mime, &len) : NULL;
        CHECK(data && strcmp(name, "a.bin") == 0 && len == 3 && data[2] == 2 &&
              strcmp(mime, "application/octet-stream") == 0);
        data = res ? codecell_result_file(res, 1, &name, &mime, &len) : NULL;
        CHECK(data && strcmp(name, "b.csv") == 0 && len == 4 && memcmp(data, "x,y\n", 4) == 0 &&
              strcmp(mime, "text/csv") == 0);
        CHECK(res && codecell_result_file(res, 2, &name, &mime, &len) == NULL);
        CHECK(res && codecell_result_image_count(res) == 1 &&
              strcmp(codecell_result_image_name(res, 0), "p.txt") == 0 &&
              codecell_result_image_name(res, 1) == NULL);
        char *json = res ? codecell_result_to_json(res, false) : NULL;
        CHECK(json && strstr(json, "\"files_omitted\":{\"count\":1,\"files\":[{\"name\":\"f\","
                                   "\"reason\":\"a FIFO (not read)\"}]}"));
        free(json);
        codecell_result_free(res);
        codecell_cell_free(cell);
}

int main(int argc, char **argv)
{
        pick_language(argc, argv);
        test_limits_over_the_engines();
        test_output_files();
        char dir[] = "/tmp/codecell-api-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        chmod(dir, 0755);
        char path[sizeof(dir) + 16];
        snprintf(path, sizeof(path), "%s/n.txt", dir);
        FILE *f = fopen(path, "w");
        fputs("41\n", f);
        fclose(f);

        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        CHECK(config != NULL);
        CHECK(codecell_config_add_mount(config, dir, "/data", false, "a number", &err) == 0);
        CHECK(codecell_config_set_limit(config, CODECELL_LIMIT_TIMEOUT_MS, 2000, &err) == 0);
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        codecell_cell *cell = codecell_cell_new(config, &err);
        codecell_config_free(config); /* the cell keeps its own copy */
        CHECK(cell != NULL);
        if (!cell) {
                fprintf(stderr, "cell: %s\n", err.message);
                return 1;
        }

        codecell_result *res = run(cell, L("puts 'side'; File.read('/data/n.txt').to_i + 1",
                                           "print('side')\nint(open('/data/n.txt').read()) + 1"));
        if (res && codecell_result_status(res) != CODECELL_STATUS_OK) {
                char *text = codecell_result_to_json(res, false);
                fprintf(stderr, "unexpected result: %s\n", text);
                free(text);
        }
        CHECK(res && codecell_result_status(res) == CODECELL_STATUS_OK);
        size_t n = 0;
        CHECK(res && strncmp(codecell_result_stdout(res, &n), "side\n", 5) == 0 && n == 5);
        char *json = res ? codecell_result_to_json(res, false) : NULL;
        CHECK(json &&
              strstr(json, "\"status\":\"ok\",\"value\":42,\"stdout\":\"side\\n\"") == json + 1);
        free(json);
        codecell_result_free(res);

        res = run(cell, L("sleep 10", "import time\ntime.sleep(10)"));
        CHECK(res && codecell_result_status(res) == CODECELL_STATUS_TIMEOUT);
        CHECK(strcmp(codecell_status_name(codecell_result_status(res)), "timeout") == 0);
        codecell_result_free(res);

        /* Refused input: no result, a clear error. */
        res = NULL;
        CHECK(codecell_cell_run(cell, "'\xff'", 3, &res, &err) < 0 && res == NULL);
        CHECK(err.kind == CODECELL_ERR_INVALID && strstr(err.message, "UTF-8"));

        run_options(cell);
        run_timeout(cell);
        run_files(cell);

        const char *desc = codecell_cell_description(cell);
        CHECK(strstr(desc,
                     "## Read-only folders (readable, never writable)\n- `/data` — a number"));

        codecell_layer_report layers[16];
        int count = codecell_host_check(layers, 16);
        CHECK(count > 5);
        codecell_cell_free(cell);
        codecell_cell_free(NULL);
        codecell_result_free(NULL);
        unlink(path);
        rmdir(dir);
        CHECK_DONE();
}
