#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "error.h"

/* After this many failed starts in a row, warmup gives up and the thread slows down. */
#define MAX_FAILURES_IN_ROW 3
#define RETRY_DELAY_MS 1000
#define REFILL_DELAY_MS 5

/* A sandbox someone needs now, started on the pool's thread so that it outlives the thread
 * that asked (a session's kernel must not die with a short-lived caller thread). */
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
        pthread_cond_t changed; /* a sandbox was added or taken, or the pool stops */
        struct standby **ready;
        size_t n_ready, size;
        bool stopping;
        pthread_t thread;
        unsigned failures_in_row;
        codecell_error last_error;
};

static void wait_ms(struct pool *pool, int ms)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += ms / 1000;
        ts.tv_nsec += (long)(ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        (void)pthread_cond_timedwait(&pool->changed, &pool->lock, &ts);
}

/* The one thread that starts sandboxes for the pool. The sandboxes' parent-death signal is
 * tied to it, so it must outlive them: it ends only in pool_stop. */
static void *fill(void *arg)
{
        struct pool *pool = arg;
        pthread_mutex_lock(&pool->lock);
        while (!pool->stopping) {
                struct spawn_request *req = pool->requests;
                if (req) {
                        pool->requests = req->next;
                        pthread_mutex_unlock(&pool->lock);
                        req->status = standby_start(pool->plan, true, &req->result, &req->err);
                        pthread_mutex_lock(&pool->lock);
                        req->done = true;
                        pthread_cond_broadcast(&pool->changed);
                        continue;
                }
                if (pool->n_ready >= pool->size) {
                        pthread_cond_wait(&pool->changed, &pool->lock);
                        /* A run just took a sandbox: while others still stand by, let that run
                         * finish before starting a replacement, which would compete with it for
                         * the CPU and the kernel's namespace locks. */
                        if (pool->n_ready > 0 && pool->n_ready < pool->size && !pool->stopping &&
                            !pool->requests)
                                wait_ms(pool, REFILL_DELAY_MS);
                        continue;
                }
                pthread_mutex_unlock(&pool->lock);
                struct standby *s = NULL;
                codecell_error err = {0};
                int r = standby_start(pool->plan, false, &s, &err);
                pthread_mutex_lock(&pool->lock);
                if (r < 0) {
                        pool->failures_in_row++;
                        pool->last_error = err;
                        pthread_cond_broadcast(&pool->changed);
                        if (pool->failures_in_row >= MAX_FAILURES_IN_ROW && !pool->stopping)
                                wait_ms(pool, RETRY_DELAY_MS);
                        continue;
                }
                pool->failures_in_row = 0;
                if (pool->stopping) {
                        standby_free(s);
                        break;
                }
                pool->ready[pool->n_ready++] = s;
                pthread_cond_broadcast(&pool->changed);
        }
        /* Nobody waits forever on a cell being freed. */
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
        pthread_cond_init(&pool->changed, NULL);
        int r = pthread_create(&pool->thread, NULL, fill, pool);
        if (r != 0) {
                free(pool->ready);
                free(pool);
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
                pthread_cond_broadcast(&pool->changed); /* the thread replaces it */
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
        pthread_join(pool->thread, NULL);
        for (size_t i = 0; i < pool->n_ready; i++)
                standby_free(pool->ready[i]);
        pthread_mutex_destroy(&pool->lock);
        pthread_cond_destroy(&pool->changed);
        free(pool->ready);
        free(pool);
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
