/* What the C end-to-end tests share: checks, a result as JSON text, and what the kernel says
 * is left of the sandboxes (this process's children, its cgroups). */
#ifndef CODECELL_TEST_E2E_H
#define CODECELL_TEST_E2E_H

#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "codecell.h"

/* The JSON of one run or eval (caller frees), or NULL when the call was refused. */
static inline char *result_text(int rc, codecell_result *res, const codecell_error *err)
{
        if (rc < 0) {
                fprintf(stderr, "refused: %s\n", err->message);
                return NULL;
        }
        char *json = codecell_result_to_json(res, false);
        codecell_result_free(res);
        return json;
}

static inline char *run_code(codecell_cell *cell, const char *code)
{
        codecell_result *res = NULL;
        codecell_error err = {0};
        int rc = codecell_cell_run(cell, code, strlen(code), &res, &err);
        return result_text(rc, res, &err);
}

/* True when json starts with prefix; says what came instead when not. */
static inline bool starts_with(const char *what, const char *json, const char *prefix)
{
        bool ok = json && strncmp(json, prefix, strlen(prefix)) == 0;
        if (!ok)
                fprintf(stderr, "%s\n  gave:     %.400s\n  expected: %s…\n", what, json, prefix);
        return ok;
}

/* Splits "1 2 3" (a /proc children file) into pids. */
static inline size_t read_pids(const char *path, pid_t *pids, size_t max)
{
        char text[4096];
        FILE *f = fopen(path, "re");
        if (!f)
                return 0;
        size_t k = fread(text, 1, sizeof(text) - 1, f);
        text[k] = '\0';
        fclose(f);
        size_t n = 0;
        for (char *save = NULL, *t = strtok_r(text, " \n", &save); t && n < max;
             t = strtok_r(NULL, " \n", &save))
                pids[n++] = atoi(t);
        return n;
}

/* True when pid's command name is name. */
static inline bool comm_is(pid_t pid, const char *name)
{
        char path[64], comm[32] = "";
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return false;
        bool same = fgets(comm, sizeof(comm), f) && strcmp(strtok(comm, "\n") ?: "", name) == 0;
        fclose(f);
        return same;
}

/* A forked cell's zygote among this process's children's children (zygote.h), or 0. */
static inline pid_t zygote_under(pid_t child)
{
        pid_t zygote;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", child, child);
        return read_pids(path, &zygote, 1) == 1 && comm_is(zygote, "codecell-zygote") ? zygote : 0;
}

/* The sandboxes' inits: children of this process, of whichever thread started them -- or, for
 * a child that holds a cell's zygote (a forked cell, zygote.h), the zygote's children named
 * codecell-init (its other children are those sandboxes' interpreters). With guests, the
 * interpreters instead. */
static inline size_t sandbox_processes(pid_t *pids, size_t max, bool guests)
{
        pid_t mine[64];
        size_t n_mine = 0;
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;
        while (d && (e = readdir(d))) {
                char path[300];
                snprintf(path, sizeof(path), "/proc/self/task/%s/children", e->d_name);
                n_mine += read_pids(path, mine + n_mine, 64 - n_mine);
        }
        if (d)
                closedir(d);
        size_t n = 0;
        for (size_t i = 0; i < n_mine && n < max; i++) {
                pid_t zygote = zygote_under(mine[i]), found[128];
                char path[64];
                if (!zygote && !guests) {
                        pids[n++] = mine[i];
                        continue;
                }
                if (!zygote) {
                        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", mine[i], mine[i]);
                        n += read_pids(path, pids + n, max - n);
                        continue;
                }
                snprintf(path, sizeof(path), "/proc/%d/task/%d/children", zygote, zygote);
                size_t k = read_pids(path, found, 128);
                for (size_t j = 0; j < k && n < max; j++)
                        if (comm_is(found[j], "codecell-init") != guests)
                                pids[n++] = found[j];
        }
        return n;
}

static inline size_t children(pid_t *pids, size_t max)
{
        return sandbox_processes(pids, max, false);
}

/* Kills the interpreters of every sandbox, leaving their inits. */
static inline void kill_guests(void)
{
        pid_t guests[64];
        size_t n = sandbox_processes(guests, 64, true);
        for (size_t i = 0; i < n; i++)
                kill(guests[i], SIGKILL);
}

/* cgroups this process made (codecell-<pid>-<n>) that still exist. */
static inline int own_cgroups(void)
{
        char cmd[300];
        snprintf(cmd, sizeof(cmd),
                 "find /sys/fs/cgroup -maxdepth 6 -name 'codecell-%d-*' 2>/dev/null | wc -l",
                 (int)getpid());
        FILE *p = popen(cmd, "r");
        int k = -1;
        if (p && fscanf(p, "%d", &k) != 1)
                k = -1;
        if (p)
                pclose(p);
        return k;
}

#endif
