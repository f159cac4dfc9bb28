/* bench/latency: how long a result takes, through the public API, beside the peers measured
 * in the same run: the bare interpreter spawned per run, and bubblewrap + interpreter.
 *
 *   latency [--lang ruby|python] [--seconds S] [--hits N] [--colds N]
 *
 * For two workloads (`1+1`, and reading a 1 MB CSV from a read-only mount) and both ways of
 * making sandboxes (forked from the cell's zygote, the default, and exec'ing a fresh
 * interpreter) it prints: pool-hit latency (median, p99; the pool refilled before each run),
 * latency of runs sent back to back with no pause (the pool given no time to refill), cold
 * latency (median), and throughput with 1 and 2 client threads for S seconds; then the memory
 * an idle cell holds (pools of 2 and 8) against one booted interpreter, and the targets worked
 * out from those figures. Cold starts of codecell, the bare interpreter and bubblewrap are
 * interleaved run by run. Every figure is "from the call to the parsed result". Medians and
 * ratios are what to quote: this machine is shared. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "codecell.h"

extern char **environ;

struct workload {
        const char *name;
        const char *code; /* the script, the same for every system */
        const char *data; /* host folder mounted read-only at /data, or NULL */
};

/* ---- the systems ------------------------------------------------------------------------ */

struct system {
        const char *name;
        /* One run from call to parsed result; false when it failed. */
        bool (*run)(struct system *sys, const struct workload *w);
        codecell_cell *cell;
};

static bool parsed_ok(const char *json, const char *key)
{
        json_t *v = json_loads(json, JSON_DECODE_ANY, NULL);
        bool ok = v && (!key || json_is_string(json_object_get(v, "status")));
        if (key && ok)
                ok = strcmp(json_string_value(json_object_get(v, "status")), "ok") == 0;
        json_decref(v);
        return ok;
}

static bool run_codecell(struct system *sys, const struct workload *w)
{
        codecell_result *res = NULL;
        codecell_error err;
        if (codecell_cell_run(sys->cell, w->code, strlen(w->code), &res, &err) < 0)
                return false;
        char *json = codecell_result_to_json(res, false);
        bool ok = json && parsed_ok(json, "status");
        free(json);
        codecell_result_free(res);
        return ok;
}

/* Spawns argv, reads its stdout, parses it as JSON. */
static bool spawn_and_parse(char *const argv[])
{
        int out[2];
        if (pipe2(out, O_CLOEXEC) < 0)
                return false;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        pid_t pid;
        int r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(out[1]);
        if (r != 0) {
                close(out[0]);
                return false;
        }
        char buf[4096];
        size_t len = 0;
        ssize_t n;
        while ((n = read(out[0], buf + len, sizeof(buf) - 1 - len)) > 0)
                len += (size_t)n;
        buf[len] = '\0';
        close(out[0]);
        int st;
        waitpid(pid, &st, 0);
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 && parsed_ok(buf, NULL);
}

/* The guest language, and how its bare interpreter is started: the same flags as codecell's
 * runtime, printing the value as JSON as the prelude does. */
static bool python;

static void peer_script(const struct workload *w, char *buf, size_t size)
{
        if (python)
                snprintf(buf, size, "import json\nprint(json.dumps(%s))", w->code);
        else
                snprintf(buf, size, "puts JSON.generate(begin; %s; end)", w->code);
}

/* Appends the interpreter's argv for script to argv at *i. */
static void interpreter_argv(char **argv, int *i, char *script)
{
        const char *ruby[] = {"/usr/bin/ruby", "--disable-gems", "-rjson", "-e"};
        const char *py[] = {"/usr/bin/python3", "-I", "-S", "-c"};
        for (int k = 0; k < 4; k++)
                argv[(*i)++] = (char *)(python ? py[k] : ruby[k]);
        argv[(*i)++] = script;
        argv[*i] = NULL;
}

static bool run_bare(struct system *sys, const struct workload *w)
{
        (void)sys;
        char script[1024], code[1024];
        peer_script(w, script, sizeof(script));
        /* The bare interpreter reads the data where it is on the host. */
        const char *from = w->data ? w->data : "";
        char *p = strstr(w->code, "/data");
        snprintf(code, sizeof(code), "%s", script);
        if (p) {
                char tmp[1024];
                snprintf(tmp, sizeof(tmp), "%.*s%s%s", (int)(strstr(script, "/data") - script),
                         script, from, strstr(script, "/data") + 5);
                snprintf(code, sizeof(code), "%s", tmp);
        }
        char *argv[8];
        int i = 0;
        interpreter_argv(argv, &i, code);
        return spawn_and_parse(argv);
}

static bool run_bwrap(struct system *sys, const struct workload *w)
{
        (void)sys;
        char script[1024];
        peer_script(w, script, sizeof(script));
        char *argv[64];
        int i = 0;
        const char *fixed[] = {"bwrap",
                               "--unshare-all",
                               "--die-with-parent",
                               "--new-session",
                               "--cap-drop",
                               "ALL",
                               "--ro-bind",
                               "/usr",
                               "/usr",
                               "--symlink",
                               "usr/lib",
                               "/lib",
                               "--symlink",
                               "usr/lib64",
                               "/lib64",
                               "--symlink",
                               "usr/bin",
                               "/bin",
                               "--proc",
                               "/proc",
                               "--dev",
                               "/dev",
                               "--tmpfs",
                               "/tmp",
                               "--tmpfs",
                               "/work",
                               "--chdir",
                               "/work",
                               NULL};
        for (int k = 0; fixed[k]; k++)
                argv[i++] = (char *)fixed[k];
        if (w->data) {
                argv[i++] = "--ro-bind";
                argv[i++] = (char *)w->data;
                argv[i++] = "/data";
        }
        interpreter_argv(argv, &i, script);
        return spawn_and_parse(argv);
}

/* ---- measurements ----------------------------------------------------------------------- */

static double seconds = 10;
static int hits = 500, colds = 30;

struct latency {
        double median, p99;
        int failed;
};

static struct latency summarize(double *v, int runs, int failed)
{
        struct latency l = {.failed = failed};
        l.median = percentile(v, (size_t)runs, 0.5);
        l.p99 = percentile(v, (size_t)runs, 0.99);
        return l;
}

/* runs runs of w; with warm_each, the pool is full before each (pool hits), else they go one
 * after another with no pause for the pool to refill (back to back). */
static struct latency measure_runs(struct system *sys, const struct workload *w, int runs,
                                   bool warm_each)
{
        double *v = calloc((size_t)runs, sizeof(double));
        int failed = 0;
        codecell_error err;
        codecell_cell_warmup(sys->cell, &err);
        for (int i = 0; i < runs; i++) {
                if (warm_each)
                        codecell_cell_warmup(sys->cell, &err);
                double t0 = now_ms();
                if (!sys->run(sys, w))
                        failed++;
                v[i] = now_ms() - t0;
        }
        struct latency l = summarize(v, runs, failed);
        free(v);
        return l;
}

/* Cold starts of several systems, interleaved run by run so that the machine's noise falls on
 * every system alike: the overheads compared are a few milliseconds out of fifteen. */
static void measure_colds(struct system **sys, size_t n, const struct workload *w, int runs,
                          struct latency *ret)
{
        double *v[4];
        int failed[4] = {0};
        codecell_error err;
        for (size_t k = 0; k < n; k++)
                v[k] = calloc((size_t)runs, sizeof(double));
        for (int i = 0; i < runs; i++)
                for (size_t k = 0; k < n; k++) {
                        if (sys[k]->cell) /* earlier runs' sandboxes collected first */
                                codecell_cell_warmup(sys[k]->cell, &err);
                        double t0 = now_ms();
                        if (!sys[k]->run(sys[k], w))
                                failed[k]++;
                        v[k][i] = now_ms() - t0;
                }
        for (size_t k = 0; k < n; k++) {
                ret[k] = summarize(v[k], runs, failed[k]);
                free(v[k]);
        }
}

struct worker {
        struct system *sys;
        const struct workload *w;
        double until;
        long runs, failed;
};

static void *hammer(void *arg)
{
        struct worker *k = arg;
        while (now_ms() < k->until) {
                if (k->sys->run(k->sys, k->w))
                        k->runs++;
                else
                        k->failed++;
        }
        return NULL;
}

static double throughput(struct system *sys, const struct workload *w, int threads, long *failed)
{
        pthread_t t[8];
        struct worker k[8];
        double start = now_ms();
        for (int i = 0; i < threads; i++) {
                k[i] = (struct worker){.sys = sys, .w = w, .until = start + seconds * 1000};
                pthread_create(&t[i], NULL, hammer, &k[i]);
        }
        long runs = 0;
        for (int i = 0; i < threads; i++) {
                pthread_join(t[i], NULL);
                runs += k[i].runs;
                *failed += k[i].failed;
        }
        return (double)runs / ((now_ms() - start) / 1000.0);
}

static codecell_cell *cell_for(const struct workload *w, size_t pool, codecell_start start)
{
        codecell_error err;
        codecell_config *c = codecell_config_new(python ? "python" : "ruby", &err);
        codecell_config_set_policy(c, CODECELL_POLICY_IGNORE);
        codecell_config_set_pool(c, pool, &err);
        codecell_config_set_start(c, start, &err);
        if (w->data && codecell_config_add_mount(c, w->data, "/data", false, NULL, &err) < 0) {
                fprintf(stderr, "latency: %s\n", err.message);
                exit(2);
        }
        codecell_cell *cell = codecell_cell_new(c, &err);
        codecell_config_free(c);
        if (!cell) {
                fprintf(stderr, "latency: %s\n", err.message);
                exit(2);
        }
        return cell;
}

static void make_csv(char *dir)
{
        if (!mkdtemp(dir)) {
                perror("mkdtemp");
                exit(2);
        }
        chmod(dir, 0755);
        char path[256];
        snprintf(path, sizeof(path), "%s/big.csv", dir);
        FILE *f = fopen(path, "w");
        fputs("date,region,product,units,unit_price\n", f);
        for (long size = 0; size < 1024 * 1024;)
                size += fprintf(f, "2026-%02ld-%02ld,region%ld,product%ld,%ld,%ld.99\n",
                                size % 12 + 1, size % 28 + 1, size % 7, size % 13, size % 40,
                                size % 20);
        fclose(f);
        chmod(path, 0644);
}

/* The number after key in a /proc file of pid ("Pss:" in smaps_rollup), 0 when absent. */
static long proc_value(pid_t pid, const char *file, const char *key)
{
        char path[96], line[256];
        long value = 0;
        size_t len = strlen(key);
        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
        FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, key, len) == 0) {
                        value = atol(line + len);
                        break;
                }
        if (f)
                fclose(f);
        return value;
}

static long tree_pss_kb(pid_t pid);

/* The PSS of the processes listed in a /proc children file, and of all below them. */
static long children_pss_kb(const char *children)
{
        long total = 0;
        FILE *f = fopen(children, "re");
        int child;
        while (f && fscanf(f, "%d", &child) == 1)
                total += tree_pss_kb(child);
        if (f)
                fclose(f);
        return total;
}

/* Proportional set size (kB) of pid and every process below it: shared pages counted once. */
static long tree_pss_kb(pid_t pid)
{
        char children[96];
        snprintf(children, sizeof(children), "/proc/%d/task/%d/children", (int)pid, (int)pid);
        return proc_value(pid, "smaps_rollup", "Pss:") + children_pss_kb(children);
}

/* What this process's children (the cells' sandboxes and zygotes) hold, in kB of PSS. */
static long sandboxes_pss_kb(void)
{
        long total = 0;
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;
        while (d && (e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                char children[128];
                snprintf(children, sizeof(children), "/proc/self/task/%s/children", e->d_name);
                total += children_pss_kb(children);
        }
        if (d)
                closedir(d);
        return total;
}

/* The memory a booted interpreter holds: RSS of `interpreter -e` waiting on stdin, after
 * loading what the prelude loads (json). */
static long booted_interpreter_rss_kb(void)
{
        int in[2];
        if (pipe(in) < 0)
                return 0;
        pid_t pid = fork();
        if (pid == 0) {
                dup2(in[0], 0);
                close(in[1]);
                if (python)
                        execl("/usr/bin/python3", "python3", "-I", "-S", "-c",
                              "import json, sys; sys.stdin.read()", (char *)NULL);
                else
                        execl("/usr/bin/ruby", "ruby", "--disable-gems", "-rjson", "-e",
                              "STDIN.read", (char *)NULL);
                _exit(127);
        }
        close(in[0]);
        usleep(500000);
        long rss = proc_value(pid, "status", "VmRSS:");
        close(in[1]);
        waitpid(pid, NULL, 0);
        return rss;
}

/* An idle cell of each kind with a full pool of size: PSS of its processes, in kB. */
static long idle_cell_kb(codecell_start start, size_t size)
{
        struct workload w = {"idle", "1", NULL};
        codecell_cell *cell = cell_for(&w, size, start);
        codecell_error err;
        codecell_cell_warmup(cell, &err);
        usleep(300000); /* what the pool's thread was doing settles */
        long kb = sandboxes_pss_kb();
        codecell_cell_free(cell);
        return kb;
}

static void row(const char *workload, const char *system, double p50, double p99, double t1,
                double t2, long failed)
{
        char a[16] = "-", b[16] = "-", c[16] = "-", d[16] = "-";
        if (p50 > 0)
                snprintf(a, sizeof(a), "%.2f", p50);
        if (p99 > 0)
                snprintf(b, sizeof(b), "%.2f", p99);
        if (t1 > 0)
                snprintf(c, sizeof(c), "%.0f", t1);
        if (t2 > 0)
                snprintf(d, sizeof(d), "%.0f", t2);
        printf("%-10s %-20s %9s %9s %10s %10s%s\n", workload, system, a, b, c, d,
               failed ? "  (some runs failed!)" : "");
        fflush(stdout);
}

int main(int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--lang") == 0 && i + 1 < argc)
                        python = strcmp(argv[++i], "python") == 0;
                else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
                        seconds = atof(argv[++i]);
                else if (strcmp(argv[i], "--hits") == 0 && i + 1 < argc)
                        hits = atoi(argv[++i]);
                else if (strcmp(argv[i], "--colds") == 0 && i + 1 < argc)
                        colds = atoi(argv[++i]);
                else {
                        fprintf(stderr, "usage: latency [--lang ruby|python] [--seconds S] [--hits "
                                        "N] [--colds N]\n");
                        return 2;
                }
        }
        char dir[] = "/tmp/codecell-bench-XXXXXX";
        make_csv(dir);
        struct workload workloads[] = {
                {"1+1", "1+1", NULL},
                {"csv-1MB",
                 python ? "open(\"/data/big.csv\").read().count(\"\\n\")"
                        : "File.read(\"/data/big.csv\").count(\"\\n\")",
                 dir},
        };
        bool have_bwrap = system("command -v bwrap >/dev/null 2>&1") == 0;
        printf("%s: latency and throughput in one run, uid %d; ms from the call to the parsed "
               "result\n",
               python ? "python" : "ruby", (int)getuid());
        printf("%-10s %-20s %9s %9s %10s %10s\n", "workload", "system", "p50 ms", "p99 ms",
               "runs/s x1", "runs/s x2");
        for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++) {
                const struct workload *w = &workloads[i];
                struct system forked = {"codecell pool, fork", run_codecell,
                                        cell_for(w, 2, CODECELL_START_FORK)};
                struct system execd = {"codecell pool, exec", run_codecell,
                                       cell_for(w, 2, CODECELL_START_EXEC)};
                struct system cold_fork = {"codecell cold, fork", run_codecell,
                                           cell_for(w, 0, CODECELL_START_FORK)};
                struct system cold_exec = {"codecell cold, exec", run_codecell,
                                           cell_for(w, 0, CODECELL_START_EXEC)};
                struct system bare = {python ? "bare python3 -I -S" : "bare ruby", run_bare, NULL};
                struct system bwrap = {python ? "bwrap + python3" : "bwrap + ruby", run_bwrap,
                                       NULL};
                codecell_error err;
                struct system *pools[] = {&forked, &execd};
                double pool_t2[2] = {0}, back[2] = {0};
                struct latency hit[2];
                for (size_t k = 0; k < 2; k++) {
                        if (codecell_cell_warmup(pools[k]->cell, &err) < 0) {
                                fprintf(stderr, "latency: warmup: %s\n", err.message);
                                return 2;
                        }
                        long failed = 0;
                        hit[k] = measure_runs(pools[k], w, hits, true);
                        struct latency b2b = measure_runs(pools[k], w, hits, false);
                        back[k] = b2b.median;
                        double t1 = throughput(pools[k], w, 1, &failed);
                        pool_t2[k] = throughput(pools[k], w, 2, &failed);
                        row(w->name, pools[k]->name, hit[k].median, hit[k].p99, t1, pool_t2[k],
                            failed + hit[k].failed);
                        char name[64];
                        snprintf(name, sizeof(name), "  back to back, %s", k ? "exec" : "fork");
                        row(w->name, name, b2b.median, b2b.p99, 0, 0, b2b.failed);
                }
                struct system *colds_of[] = {&cold_fork, &cold_exec, &bare, &bwrap};
                struct latency c[4];
                measure_colds(colds_of, have_bwrap ? 4 : 3, w, colds, c);
                row(w->name, cold_fork.name, c[0].median, c[0].p99, 0, 0, c[0].failed);
                row(w->name, cold_exec.name, c[1].median, c[1].p99, 0, 0, c[1].failed);
                long failed = 0;
                double bare_t1 = throughput(&bare, w, 1, &failed);
                double bare_t2 = throughput(&bare, w, 2, &failed);
                row(w->name, bare.name, c[2].median, c[2].p99, bare_t1, bare_t2,
                    failed + c[2].failed);
                if (have_bwrap) {
                        failed = 0;
                        double t1 = throughput(&bwrap, w, 1, &failed);
                        double t2 = throughput(&bwrap, w, 2, &failed);
                        row(w->name, bwrap.name, c[3].median, c[3].p99, t1, t2,
                            failed + c[3].failed);
                }
                printf("  %s: forked pool x2 %.0f/s = %.2fx bare (target >= 4x: %s); exec pool "
                       "%.2fx bare\n",
                       w->name, pool_t2[0], pool_t2[0] / bare_t2,
                       pool_t2[0] >= 4 * bare_t2 ? "met" : "NOT met", pool_t2[1] / bare_t2);
                printf("  %s: back to back p50 fork %.2f ms, exec %.2f ms (target <= 0.5 ms: "
                       "%s)\n",
                       w->name, back[0], back[1], back[0] <= 0.5 ? "met" : "NOT met");
                fflush(stdout);
                for (size_t k = 0; k < 2; k++)
                        codecell_cell_free(pools[k]->cell);
                codecell_cell_free(cold_fork.cell);
                codecell_cell_free(cold_exec.cell);
        }
        long one = booted_interpreter_rss_kb();
        printf("idle cell, PSS of its processes: one booted interpreter %ld kB (RSS)\n", one);
        for (int k = 0; k < 2; k++) {
                codecell_start start = k ? CODECELL_START_EXEC : CODECELL_START_FORK;
                long p2 = idle_cell_kb(start, 2), p8 = idle_cell_kb(start, 8);
                printf("  %s: pool 2 %ld kB (%.2fx), pool 8 %ld kB (%.2fx)%s\n",
                       k ? "exec" : "fork", p2, (double)p2 / (double)one, p8,
                       (double)p8 / (double)one,
                       k ? ""
                         : (p8 <= one * 11 / 10 ? "  (target <= 1.1x: met)"
                                                : "  (target <= 1.1x: NOT met)"));
        }
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        return system(cmd) == 0 ? 0 : 1;
}
