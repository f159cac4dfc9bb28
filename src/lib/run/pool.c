#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "deadline.h"
#include "error.h"
#include "util.h"

/* After this many failed starts in a row (on any of the threads), warmup gives up and the
 * threads slow down: one start at a time, one a second. */
#define MAX_FAILURES_IN_ROW 3
#define RETRY_DELAY_MS 1000
/* A pool hit's run takes 0.3-0.5 ms: a replacement started later competes with it for neither
 * the CPU nor the kernel's namespace locks. 5 ms (and 0) measured worse: docs/performance.md. */
#define REFILL_DELAY_MS 1
/* Threads that start sandboxes at once, at most: a start waits mostly on the kernel and on the
 * interpreter's boot, but beyond the CPUs more threads only compete with the runs. */
#define MAX_THREADS 4

/* A sandbox someone needs now, started on one of the pool's threads so that it outlives the
 * thread that asked (a session's kernel must not die with a short-lived caller thread). */
struct spawn_request {
        struct spawn_request *next;
        struct standby *result;
        codecell_error err;
        int status;
        bool done;
};

struct pool {
        struct cell_plan *plan;
        struct spawn_request *requests;
        pthread_mutex_t lock;
        pthread_cond_t changed; /* a sandbox was added or taken, a start ended, or the pool stops */
        struct standby **ready;
        /* n_ready + n_starting never exceeds size: the pool holds no more than it was given. */
        size_t n_ready, n_starting, size;
        size_t peak_starting;
        bool stopping;
        pthread_t threads[MAX_THREADS];
        size_t n_threads;
        unsigned failures_in_row;
        double retry_at; /* now_ms() clock: once failing, no start before this */
        codecell_error last_error;
};

/* Starts a session's kernel (lock held, released meanwhile). */
static void serve(struct pool *pool, struct spawn_request *req)
{
        pool->requests = req->next;
        pthread_mutex_unlock(&pool->lock);
        req->status = standby_start(pool->plan, true, &req->result, &req->err);
        pthread_mutex_lock(&pool->lock);
        req->done = true;
        pthread_cond_broadcast(&pool->changed);
}

/* Whether this thread should start a sandbox for the pool now (lock held); waits when not. */
static bool should_start(struct pool *pool)
{
        bool failing = pool->failures_in_row >= MAX_FAILURES_IN_ROW;
        if (pool->n_ready + pool->n_starting >= pool->size || (failing && pool->n_starting > 0)) {
                pthread_cond_wait(&pool->changed, &pool->lock);
                /* A run just took a sandbox: while others still stand by, let that run finish
                 * before starting a replacement. The next take (a client sending runs back to
                 * back) or any other change ends the pause at once. */
                if (pool->n_ready > 0 && pool->n_ready + pool->n_starting < pool->size &&
                    !pool->stopping && !pool->requests)
                        (void)cond_wait_until(&pool->changed, &pool->lock,
                                              now_ms() + REFILL_DELAY_MS);
                return false;
        }
        if (failing && now_ms() < pool->retry_at) {
                (void)cond_wait_until(&pool->changed, &pool->lock, pool->retry_at);
                return false;
        }
        return true;
}

/* One of the threads that start sandboxes for the pool, each running this loop. The exec'd
 * sandboxes' parent-death signal is tied to the thread that cloned them, so it must outlive
 * them: it ends only in pool_stop. */
static void *fill(void *arg)
{
        struct pool *pool = arg;
        pthread_mutex_lock(&pool->lock);
        while (!pool->stopping) {
                if (pool->requests) {
                        serve(pool, pool->requests);
                        continue;
                }
                if (!should_start(pool))
                        continue;
                if (++pool->n_starting > pool->peak_starting)
                        pool->peak_starting = pool->n_starting;
                pthread_mutex_unlock(&pool->lock);
                struct standby *s = NULL;
                codecell_error err = {0};
                int r = standby_start(pool->plan, false, &s, &err);
                pthread_mutex_lock(&pool->lock);
                pool->n_starting--;
                pthread_cond_broadcast(&pool->changed);
                if (r < 0) {
                        pool->last_error = err;
                        if (++pool->failures_in_row >= MAX_FAILURES_IN_ROW)
                                pool->retry_at = now_ms() + RETRY_DELAY_MS;
                        continue;
                }
                pool->failures_in_row = 0;
                if (pool->stopping) {
                        standby_free(s);
                        break;
                }
                pool->ready[pool->n_ready++] = s;
        }
        /* Nobody waits forever on a cell being freed (pool_spawn queues nothing once stopping
         * is set, so the first thread out answers every request left). */
        for (struct spawn_request *req = pool->requests; req; req = req->next) {
                req->status = err_set(&req->err, CODECELL_ERR_SYSTEM, ESHUTDOWN,
                                      "the cell is being freed");
                req->done = true;
        }
        pool->requests = NULL;
        pthread_cond_broadcast(&pool->changed);
        pthread_mutex_unlock(&pool->lock);
        return NULL;
}

/* min(size, online CPUs, MAX_THREADS), at least one: a pool of 0 still starts sessions' kernels. */
static size_t threads_for(size_t size)
{
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        size_t n = size < MAX_THREADS ? size : MAX_THREADS;
        if (cpus > 0 && (size_t)cpus < n)
                n = (size_t)cpus;
        return n ? n : 1;
}

static void destroy(struct pool *pool)
{
        pthread_mutex_destroy(&pool->lock);
        pthread_cond_destroy(&pool->changed);
        free(pool->ready);
        free(pool);
}

int pool_start(struct cell_plan *plan, size_t size, struct pool **ret, codecell_error *err)
{
        struct pool *pool = calloc(1, sizeof(*pool));
        if (!pool || !(pool->ready = calloc(size ? size : 1, sizeof(*pool->ready)))) {
                free(pool);
                return err_sys(err, ENOMEM, "pool");
        }
        pool->plan = plan;
        pool->size = size;
        pthread_mutex_init(&pool->lock, NULL);
        cond_init_monotonic(&pool->changed);
        size_t wanted = threads_for(size);
        int r = 0;
        /* Fewer threads than wanted still serve (more slowly); none cannot. */
        while (pool->n_threads < wanted &&
               (r = pthread_create(&pool->threads[pool->n_threads], NULL, fill, pool)) == 0)
                pool->n_threads++;
        if (pool->n_threads == 0) {
                destroy(pool);
                return err_sys(err, r, "pool: start its thread");
        }
        *ret = pool;
        return 0;
}

struct standby *pool_take(struct pool *pool)
{
        struct standby *found = NULL;
        for (;;) {
                pthread_mutex_lock(&pool->lock);
                struct standby *s = pool->n_ready > 0 ? pool->ready[--pool->n_ready] : NULL;
                pthread_cond_broadcast(&pool->changed); /* a thread replaces it */
                pthread_mutex_unlock(&pool->lock);
                if (!s || standby_alive(s)) {
                        found = s;
                        break;
                }
                /* It died while waiting: end it and try the next, unseen by the caller. */
                standby_free(s);
        }
        return found;
}

int pool_warmup(struct pool *pool, codecell_error *err)
{
        int r = 0;
        pthread_mutex_lock(&pool->lock);
        while (pool->n_ready < pool->size) {
                if (pool->failures_in_row >= MAX_FAILURES_IN_ROW) {
                        r = err_set(err, CODECELL_ERR_SYSTEM, pool->last_error.errno_value,
                                    "warmup: %s", pool->last_error.message);
                        break;
                }
                pthread_cond_wait(&pool->changed, &pool->lock);
        }
        pthread_mutex_unlock(&pool->lock);
        return r;
}

int pool_spawn(struct pool *pool, struct standby **ret, codecell_error *err)
{
        struct spawn_request req = {0};
        pthread_mutex_lock(&pool->lock);
        if (pool->stopping) {
                pthread_mutex_unlock(&pool->lock);
                return err_set(err, CODECELL_ERR_SYSTEM, ESHUTDOWN, "the cell is being freed");
        }
        struct spawn_request **tail = &pool->requests;
        while (*tail)
                tail = &(*tail)->next;
        *tail = &req;
        pthread_cond_broadcast(&pool->changed);
        while (!req.done)
                pthread_cond_wait(&pool->changed, &pool->lock);
        pthread_mutex_unlock(&pool->lock);
        if (req.status < 0) {
                if (err)
                        *err = req.err;
                return req.status;
        }
        *ret = req.result;
        return 0;
}

void pool_stop(struct pool *pool)
{
        if (!pool)
                return;
        pthread_mutex_lock(&pool->lock);
        pool->stopping = true;
        pthread_cond_broadcast(&pool->changed);
        pthread_mutex_unlock(&pool->lock);
        for (size_t i = 0; i < pool->n_threads; i++)
                pthread_join(pool->threads[i], NULL);
        for (size_t i = 0; i < pool->n_ready; i++)
                standby_free(pool->ready[i]);
        destroy(pool);
}

size_t pool_ready_count(struct pool *pool)
{
        if (!pool)
                return 0;
        pthread_mutex_lock(&pool->lock);
        size_t n = pool->n_ready;
        pthread_mutex_unlock(&pool->lock);
        return n;
}

size_t pool_peak_starting(struct pool *pool)
{
        pthread_mutex_lock(&pool->lock);
        size_t n = pool->peak_starting;
        pthread_mutex_unlock(&pool->lock);
        return n;
}
