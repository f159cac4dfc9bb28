/* The warm pool's threads, seen from inside (linked against the static library, on a real cell's
 * plan): several sandboxes started at the same time, never more standing by or being started
 * than the pool's size, sessions' kernels asked for at once all served, and nothing left when
 * the pool stops while its threads are in the middle of starts. For forked and exec'd cells. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cell.h"
#include "e2e.h"
#include "languages.h"
#include "pool.h"
#include "standby.h"
#include "util.h"

static size_t open_fds(void)
{
        size_t n = 0;
        DIR *d = opendir("/proc/self/fd");
        while (d && readdir(d))
                n++;
        if (d)
                closedir(d);
        return n;
}

struct spawner {
        struct pool *pool;
        struct standby *kernel;
        int rc;
};

static void *spawn(void *arg)
{
        struct spawner *s = arg;
        codecell_error err = {0};
        s->rc = pool_spawn(s->pool, &s->kernel, &err);
        return NULL;
}

/* A cell without a pool of its own: the pools under test are the only ones starting sandboxes. */
static codecell_cell *new_cell(codecell_start start)
{
        codecell_error err = {0};
        codecell_config *config = codecell_config_new(language, &err);
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        CHECK(codecell_config_set_start(config, start, &err) == 0);
        CHECK(codecell_config_set_pool(config, 0, &err) == 0);
        codecell_cell *cell = codecell_cell_new(config, &err);
        if (!cell)
                fprintf(stderr, "cell: %s\n", err.message);
        codecell_config_free(config);
        return cell;
}

static void check_pool_threads(codecell_start start)
{
        codecell_error err = {0};
        pid_t pids[64];
        codecell_cell *cell = new_cell(start);
        if (!cell)
                return;
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);

        /* Four at once on a machine with two CPUs or more. Two threads' starts overlap unless
         * one of them is kept off the CPU for a whole warmup; each round is a fresh chance. */
        size_t peak = 0;
        for (int round = 0; round < 5 && peak < 2; round++) {
                struct pool *pool = NULL;
                CHECK(pool_start(&cell->plan, 4, &pool, &err) == 0);
                CHECK(pool_warmup(pool, &err) == 0);
                CHECK(pool_ready_count(pool) == 4);
                /* Not one sandbox beyond the pool's size. */
                CHECK(children(pids, 64) == 4);
                peak = pool_peak_starting(pool);
                CHECK(peak <= 4);
                pool_stop(pool);
                CHECK(children(pids, 64) == 0);
        }
        if (cpus >= 2)
                CHECK(peak >= 2);
        else
                printf("skip (one CPU, one thread): sandboxes started at the same time\n");

        /* Sessions' kernels asked for at once, by threads that end before the kernels do. */
        struct pool *pool = NULL;
        CHECK(pool_start(&cell->plan, 2, &pool, &err) == 0);
        struct spawner spawners[3];
        pthread_t threads[3];
        for (int i = 0; i < 3; i++) {
                spawners[i] = (struct spawner){.pool = pool};
                pthread_create(&threads[i], NULL, spawn, &spawners[i]);
        }
        for (int i = 0; i < 3; i++)
                pthread_join(threads[i], NULL);
        CHECK(pool_warmup(pool, &err) == 0);
        for (int i = 0; i < 3; i++)
                CHECK(spawners[i].rc == 0 && standby_alive(spawners[i].kernel));
        CHECK(children(pids, 64) == 5);
        for (int i = 0; i < 3; i++)
                standby_free(spawners[i].kernel);
        pool_stop(pool);
        CHECK(children(pids, 64) == 0);

        /* Stopped while several starts are under way: each thread finishes its own and ends
         * it; no process, cgroup or descriptor is left. (The same once more first, so that
         * what the cell keeps for later sandboxes, its stock of namespaces, is counted in.) */
        size_t fds = 0;
        for (int i = 0; i < 2; i++) {
                if (i == 1)
                        fds = open_fds();
                CHECK(pool_start(&cell->plan, 4, &pool, &err) == 0);
                double deadline = now_ms() + 30000;
                while (pool_peak_starting(pool) < (cpus >= 2 ? 2u : 1u) && now_ms() < deadline)
                        usleep(100);
                pool_stop(pool);
                CHECK(children(pids, 64) == 0);
        }
        CHECK(open_fds() == fds);
        CHECK(own_cgroups() == 0);
        codecell_cell_free(cell);
}

int main(int argc, char **argv)
{
        pick_language(argc, argv);
        check_pool_threads(CODECELL_START_FORK);
        check_pool_threads(CODECELL_START_EXEC);
        CHECK_DONE();
}
