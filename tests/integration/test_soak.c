/* 1,000 executions of every kind on one cell (in the language of argv[1]): afterwards the
 * engine has the same open fds, children, cgroups and mounts as before; the only fds that may
 * differ are the network namespaces a root engine keeps for recycling, at most 64, and they
 * are closed with the cell. */
#include <dirent.h>
#include <stdbool.h>

#include "e2e.h"
#include "languages.h"

/* This process's open fds: network namespaces (netns true) or all the others. */
static int count_fds(bool netns)
{
        int n = 0;
        DIR *d = opendir("/proc/self/fd");
        for (struct dirent *e; d && (e = readdir(d));) {
                if (e->d_name[0] == '.')
                        continue;
                char path[64], target[64] = "";
                snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
                ssize_t k = readlink(path, target, sizeof(target) - 1);
                n += (k > 4 && strncmp(target, "net:[", 5) == 0) == netns;
        }
        if (d)
                closedir(d);
        return n;
}

static int count_mounts(void)
{
        FILE *f = fopen("/proc/self/mountinfo", "re");
        int n = 0;
        for (int c; f && (c = fgetc(f)) != EOF;)
                n += c == '\n';
        if (f)
                fclose(f);
        return n;
}

static int echo(const char *args, char **ret_json, char **ret_error, void *userdata)
{
        (void)ret_error, (void)userdata;
        *ret_json = strdup(args);
        return 0;
}

int main(int argc, char **argv)
{
        pick_language(argc, argv);
        codecell_error err = {0};
        int fds_before_cell = count_fds(false) + count_fds(true);
        codecell_config *config = codecell_config_new(language, &err);
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        codecell_config_set_limit(config, CODECELL_LIMIT_TIMEOUT_MS, 100, &err);
        codecell_cell *cell = codecell_cell_new(config, &err);
        codecell_config_free(config);
        if (!cell || codecell_cell_add_tool(cell, "echo", NULL, NULL, echo, NULL, &err) < 0)
                return 1;
        CHECK(codecell_cell_warmup(cell, &err) == 0);
        /* Measured once the pool is full, so its standing sandboxes count on both sides. */
        int fds = count_fds(false), mounts = count_mounts();
        pid_t pids[64];
        size_t kids = children(pids, 64);

        const char *codes[] = {
                "1 + 1",
                L("raise 'x'", "raise Exception('x')"),
                L("SB.call('echo', n: 1)", "sb.call('echo', n=1)"),
                L("puts 'out'", "print('out')"),
                L("sleep 1", "import time\ntime.sleep(1)"), /* timeout */
                L("exit!(1)", "import os\nos._exit(1)"),    /* dies */
        };
        int counts[6] = {0};
        for (int i = 0; i < 1000; i++) {
                int kind = i % 50 == 49 ? 4 : i % 50 == 48 ? 5 : i % 4;
                char *json = run_code(cell, codes[kind]);
                counts[kind] += json != NULL;
                free(json);
                if (i % 100 == 0) {
                        codecell_result *res = NULL;
                        CHECK(codecell_session_eval(cell, "soak", "1", 1, &res, &err) == 0);
                        codecell_result_free(res);
                }
        }
        codecell_session_close_all(cell);
        CHECK(codecell_cell_warmup(cell, &err) == 0);
        CHECK(counts[0] + counts[1] + counts[2] + counts[3] + counts[4] + counts[5] == 1000);
        /* The pool refills on its own threads: on a loaded machine one may still be making a
         * sandbox when warmup returns (its fds open for a moment). A leak never settles. */
        for (int tries = 0; tries < 600 && (count_fds(false) != fds || children(pids, 64) != kids);
             tries++) {
                usleep(100 * 1000);
                CHECK(codecell_cell_warmup(cell, &err) == 0);
        }
        CHECK(count_fds(false) == fds);
        /* The stock of idle namespaces grows with the sandboxes alive at once, which a loaded
         * machine makes more of; its bound is netns.c's MAX_IDLE, and it closes with the cell
         * (checked below). */
        CHECK(count_fds(true) <= 64);
        CHECK(count_mounts() == mounts);
        CHECK(children(pids, 64) == kids);
        codecell_cell_free(cell);
        CHECK(children(pids, 64) == 0);
        CHECK(own_cgroups() == 0);
        CHECK(count_fds(false) + count_fds(true) == fds_before_cell);
        if (check_failures)
                fprintf(stderr, "fds %d (was %d), mounts %d (was %d)\n", count_fds(false), fds,
                        count_mounts(), mounts);
        CHECK_DONE();
}
