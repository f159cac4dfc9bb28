/* The warm pool's behaviour through the public API: one execution per sandbox, nothing shared
 * between runs, replacement after death, many threads at once, and nothing left after free. */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e.h"
#include "languages.h"

static bool run_gives(codecell_cell *cell, const char *code, const char *expected_prefix)
{
        char *json = run_code(cell, code);
        bool ok = starts_with(code, json, expected_prefix);
        free(json);
        return ok;
}

struct worker {
        codecell_cell *cell;
        int id, ok;
};

static void *work(void *arg)
{
        struct worker *w = arg;
        for (int i = 0; i < 12; i++) {
                char code[64], expected[64];
                int n = w->id * 1000 + i;
                snprintf(code, sizeof(code), "%d * 2", n);
                snprintf(expected, sizeof(expected), "{\"status\":\"ok\",\"value\":%d,", n * 2);
                w->ok += run_gives(w->cell, code, expected);
        }
        return NULL;
}

/* rw_dir: a host folder mounted read-write at /out, or NULL. */
/* The inode of process pid's network namespace, or 0. */
static unsigned long netns_of(pid_t pid)
{
        char path[64];
        struct stat st;
        snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
        return stat(path, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

static codecell_cell *new_cell(size_t pool, const char *rw_dir)
{
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        if (rw_dir)
                CHECK(codecell_config_add_mount(config, rw_dir, "/out", true, NULL, &err) == 0);
        CHECK(codecell_config_set_pool(config, pool, &err) == 0);
        CHECK(codecell_config_set_limit(config, CODECELL_LIMIT_TIMEOUT_MS, 2500, &err) == 0);
        codecell_cell *cell = codecell_cell_new(config, &err);
        if (!cell)
                fprintf(stderr, "cell: %s\n", err.message);
        codecell_config_free(config);
        return cell;
}

int main(int argc, char **argv)
{
        pick_language(argc, argv);
        codecell_error err = {0};
        pid_t before[64], after[64];
        codecell_config *config = codecell_config_new(language, &err);
        CHECK(codecell_config_set_pool(config, 65, &err) < 0 && strstr(err.message, "maximum 64"));
        codecell_config_free(config);

        codecell_cell *cell = new_cell(2, NULL);
        if (!cell)
                return 1;
        CHECK(codecell_cell_warmup(cell, &err) == 0);
        size_t n_before = children(before, 64);
        CHECK(n_before == 2);
        /* Each sandbox in a network namespace of its own, live ones never sharing one. */
        CHECK(netns_of(before[0]) != 0 && netns_of(before[0]) != netns_of(before[1]));
        CHECK(netns_of(before[0]) != netns_of(getpid()) &&
              netns_of(before[1]) != netns_of(getpid()));

        /* One execution per sandbox: the one used is replaced by a new one. */
        CHECK(run_gives(cell,
                        L("$g = 1; File.write('/tmp/m', 'x'); File.write('/work/m', 'x'); 1",
                          "import builtins\nbuiltins.g = 1\nopen('/tmp/m', 'w').write('x')\n"
                          "open('/work/m', 'w').write('x')\n1"),
                        "{\"status\":\"ok\",\"value\":1,"));
        CHECK(codecell_cell_warmup(cell, &err) == 0);
        size_t n_after = children(after, 64);
        CHECK(n_after == 2);
        size_t same = 0;
        for (size_t i = 0; i < n_before; i++)
                for (size_t j = 0; j < n_after; j++)
                        same += before[i] == after[j];
        CHECK(same == 1);

        /* Nothing shared between consecutive runs. */
        CHECK(run_gives(cell,
                        L("[defined?($g), File.exist?('/tmp/m'), File.exist?('/work/m')]",
                          "import os, builtins\n[getattr(builtins, 'g', None), "
                          "os.path.exists('/tmp/m'), os.path.exists('/work/m')]"),
                        "{\"status\":\"ok\",\"value\":[null,false,false],"));

        /* The wall clock starts at exec, not at the sandbox's birth. */
        CHECK(codecell_cell_warmup(cell, &err) == 0);
        sleep(3);
        CHECK(run_gives(cell, L("sleep 0.5; :awake", "import time\ntime.sleep(0.5)\n'awake'"),
                        "{\"status\":\"ok\",\"value\":\"awake\","));

        /* Sandboxes that died while standing by are replaced without the caller noticing. */
        CHECK(codecell_cell_warmup(cell, &err) == 0);
        kill_guests();
        usleep(200000);
        CHECK(run_gives(cell, "6 * 7", "{\"status\":\"ok\",\"value\":42,"));
        CHECK(codecell_cell_warmup(cell, &err) == 0);
        CHECK(run_gives(cell, "7 * 7", "{\"status\":\"ok\",\"value\":49,"));

        /* Many threads on one cell: every run its own answer. */
        pthread_t threads[4];
        struct worker workers[4];
        for (int i = 0; i < 4; i++) {
                workers[i] = (struct worker){.cell = cell, .id = i + 1};
                pthread_create(&threads[i], NULL, work, &workers[i]);
        }
        for (int i = 0; i < 4; i++) {
                pthread_join(threads[i], NULL);
                CHECK(workers[i].ok == 12);
        }

        /* Nothing left once the cell is freed. */
        codecell_cell_free(cell);
        CHECK(children(after, 64) == 0);
        CHECK(own_cgroups() == 0);

        /* pool 0: every run cold, nothing standing by between runs. */
        cell = new_cell(0, NULL);
        CHECK(cell && codecell_cell_warmup(cell, &err) == 0);
        CHECK(run_gives(cell, "1 + 1", "{\"status\":\"ok\",\"value\":2,"));
        /* The run's sandbox, killed once its result was in hand, is collected in the
         * background; warmup waits for that too. */
        CHECK(codecell_cell_warmup(cell, &err) == 0);
        CHECK(children(after, 64) == 0);

        /* A network namespace serves a later sandbox (when the engine is root) only with
         * nothing left in it. These sockets outlive their sandbox: b's own fd (and the bound
         * socket's) is in flight in b's queue until the kernel's garbage collector finds the
         * cycle. */
        CHECK(run_gives(cell,
                        L("require 'socket'\n"
                          "l = Socket.new(:UNIX, :STREAM)\n"
                          "l.bind(Socket.pack_sockaddr_un(\"\\0codecell-leftover\"))\n"
                          "a, b = UNIXSocket.pair\n"
                          "a.sendmsg('x', 0, nil, Socket::AncillaryData.unix_rights(b, l))\n"
                          "true",
                          "import socket\n"
                          "l = socket.socket(socket.AF_UNIX)\n"
                          "l.bind('\\0codecell-leftover')\n"
                          "a, b = socket.socketpair()\n"
                          "socket.send_fds(a, [b'x'], [b.fileno(), l.fileno()])\n"
                          "True"),
                        "{\"status\":\"ok\",\"value\":true,"));
        CHECK(codecell_cell_warmup(cell, &err) == 0);
        /* The guest cannot read /proc/net (its counters are the host's): a namespace still
         * holding the leftover socket would refuse its name (EADDRINUSE). */
        for (int i = 0; i < 3; i++)
                CHECK(run_gives(cell,
                                L("require 'socket'\n"
                                  "Socket.new(:UNIX, :STREAM).bind("
                                  "Socket.pack_sockaddr_un(\"\\0codecell-leftover\")); 1",
                                  "import socket\n"
                                  "socket.socket(socket.AF_UNIX).bind('\\0codecell-leftover')\n1"),
                                "{\"status\":\"ok\",\"value\":1,"));
        codecell_cell_free(cell);

        /* A cell that may write to the host collects its sandbox before the result is
         * returned: no write of the run can land after the caller has its answer. */
        char dir[] = "/tmp/codecell-pool-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        chmod(dir, 0777);
        cell = new_cell(0, dir);
        CHECK(cell && codecell_cell_warmup(cell, &err) == 0);
        CHECK(run_gives(cell, "1 + 1", "{\"status\":\"ok\",\"value\":2,"));
        CHECK(children(after, 64) == 0);
        codecell_cell_free(cell);
        rmdir(dir);

        CHECK_DONE();
}
