#include "disposal.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "error.h"

struct disposal {
        pthread_mutex_t lock;
        pthread_cond_t changed; /* something was added or collected, or stop */
        struct standby **items;
        size_t n, cap;
        size_t busy; /* taken off the list, being collected */
        bool stopping;
        pthread_t thread;
};

static void *collect(void *arg)
{
        struct disposal *d = arg;
        pthread_mutex_lock(&d->lock);
        for (;;) {
                if (d->n == 0) {
                        if (d->stopping)
                                break;
                        pthread_cond_wait(&d->changed, &d->lock);
                        continue;
                }
                struct standby *s = d->items[--d->n];
                d->busy++;
                pthread_mutex_unlock(&d->lock);
                standby_free(s);
                pthread_mutex_lock(&d->lock);
                d->busy--;
                pthread_cond_broadcast(&d->changed);
        }
        pthread_mutex_unlock(&d->lock);
        return NULL;
}

int disposal_start(struct disposal **ret, codecell_error *err)
{
        struct disposal *d = calloc(1, sizeof(*d));
        if (!d)
                return err_sys(err, ENOMEM, "disposal");
        pthread_mutex_init(&d->lock, NULL);
        pthread_cond_init(&d->changed, NULL);
        int r = pthread_create(&d->thread, NULL, collect, d);
        if (r != 0) {
                pthread_mutex_destroy(&d->lock);
                pthread_cond_destroy(&d->changed);
                free(d);
                return err_sys(err, r, "disposal: start its thread");
        }
        *ret = d;
        return 0;
}

void disposal_add(struct disposal *d, struct standby *s)
{
        pthread_mutex_lock(&d->lock);
        if (d->n == d->cap) {
                size_t cap = d->cap ? d->cap * 2 : 16;
                struct standby **items = realloc(d->items, cap * sizeof(*items));
                if (!items) {
                        /* Out of memory: collect it here, as if nothing were deferred. */
                        pthread_mutex_unlock(&d->lock);
                        standby_free(s);
                        return;
                }
                d->items = items;
                d->cap = cap;
        }
        d->items[d->n++] = s;
        pthread_cond_broadcast(&d->changed);
        pthread_mutex_unlock(&d->lock);
}

void disposal_flush(struct disposal *d)
{
        pthread_mutex_lock(&d->lock);
        while (d->n > 0 || d->busy > 0)
                pthread_cond_wait(&d->changed, &d->lock);
        pthread_mutex_unlock(&d->lock);
}

void disposal_stop(struct disposal *d)
{
        if (!d)
                return;
        pthread_mutex_lock(&d->lock);
        d->stopping = true;
        pthread_cond_broadcast(&d->changed);
        pthread_mutex_unlock(&d->lock);
        pthread_join(d->thread, NULL);
        pthread_mutex_destroy(&d->lock);
        pthread_cond_destroy(&d->changed);
        free(d->items);
        free(d);
}
