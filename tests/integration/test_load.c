/* Load: RUNS executions from CALLERS threads at once on one cell (argv: language [runs
 * [callers]], default 10,000 from 8). Every run must come back with its own value (each
 * caller's code returns a number no other run returns), none may be lost, and the engine's
 * memory must be flat: what it holds after the first tenth of the runs is what it holds at
 * the end, give or take a little allocator slack. `make soak` runs the full size; CTest a
 * shortened one. */
#include <pthread.h>

#include "e2e.h"
#include "languages.h"

/* Allocator arenas and caches settle in the first runs; past that, growth is a leak. */
#define RSS_SLACK_KB (8 * 1024)

static codecell_cell *cell;
static size_t runs_per_caller;
static size_t warm_after; /* runs done when the first measure is taken */
static long rss_warm_kb;
static size_t done_runs, wrong;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static long rss_kb(void)
{
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        long kb = -1;
        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
                        break;
        if (f)
                fclose(f);
        return kb;
}

static void *caller(void *arg)
{
        size_t id = (size_t)arg;
        for (size_t i = 0; i < runs_per_caller; i++) {
                unsigned long long expect = (unsigned long long)id * 1000000ULL + i;
                char code[64], want[96];
                snprintf(code, sizeof(code), "%llu", expect);
                snprintf(want, sizeof(want), "{\"status\":\"ok\",\"value\":%llu,", expect);
                char *json = run_code(cell, code);
                bool right = json && strncmp(json, want, strlen(want)) == 0;
                if (!right)
                        fprintf(stderr, "caller %zu run %zu: %s\n", id, i, json ? json : "(none)");
                free(json);
                pthread_mutex_lock(&lock);
                wrong += !right;
                if (++done_runs == warm_after)
                        rss_warm_kb = rss_kb();
                pthread_mutex_unlock(&lock);
        }
        return NULL;
}

int main(int argc, char **argv)
{
        pick_language(argc, argv);
        size_t runs = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000;
        size_t callers = argc > 3 ? strtoul(argv[3], NULL, 10) : 8;
        runs_per_caller = runs / callers;
        warm_after = runs_per_caller * callers / 10;
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        cell = codecell_cell_new(config, &err);
        codecell_config_free(config);
        CHECK(cell != NULL);
        CHECK(codecell_cell_warmup(cell, &err) == 0);
        pthread_t threads[64];
        CHECK(callers >= 1 && callers <= 64);
        for (size_t t = 0; t < callers; t++)
                CHECK(pthread_create(&threads[t], NULL, caller, (void *)t) == 0);
        for (size_t t = 0; t < callers; t++)
                pthread_join(threads[t], NULL);
        long rss_end_kb = rss_kb();
        printf("%zu runs from %zu callers: %zu wrong or lost; engine RSS %ld kB after %zu runs, "
               "%ld kB at the end\n",
               done_runs, callers, wrong, rss_warm_kb, warm_after, rss_end_kb);
        CHECK(done_runs == runs_per_caller * callers);
        CHECK(wrong == 0);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        /* AddressSanitizer keeps freed memory in quarantine, so RSS grows by design; its leak
         * checker stands in for this check at exit. ThreadSanitizer's own state grows with the
         * history it keeps. */
        printf("(RSS not checked: built with a sanitizer)\n");
#else
        CHECK(rss_warm_kb > 0 && rss_end_kb - rss_warm_kb < RSS_SLACK_KB);
#endif
        codecell_cell_free(cell);
        CHECK_DONE();
}
