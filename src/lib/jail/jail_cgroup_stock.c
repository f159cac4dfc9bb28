/* The jails' cgroups made ahead: making one (a directory per controller, its limits written) is
 * a third of a millisecond or more of the caller's time before the fork, so a thread of its own
 * keeps one spare, made with the limits of the jail that last asked, and a jail with the same
 * limits takes it. A spare is always new, never a used cgroup emptied: a cgroup's counters
 * (its memory peak, its OOM kills, its refused allocations) cannot all be reset, and none may
 * carry over from one jail into the next. Whoever takes a spare owns it (jail.c frees it, or
 * the reaper of jail_reaper.c); a spare no jail took is removed at exit, or, after a SIGKILL,
 * by the next engine's sweep (it is named after this process). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "jail.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t asked = PTHREAD_COND_INITIALIZER;
static const struct cgroup_place *place; /* where the spares go; set once */
static bool started;
static bool have_spare;
static struct cgroup spare;
static struct cgroup_limits spare_limits;
static bool closing; /* at exit: nothing more is stocked */
static bool wanted;  /* a spare with want_limits, to be made */
static struct cgroup_limits want_limits;

static bool same_limits(const struct cgroup_limits *a, const struct cgroup_limits *b)
{
        return a->memory_bytes == b->memory_bytes && a->pids == b->pids &&
               a->cpu_accounting == b->cpu_accounting;
}

/* Makes the spare the last jail asked for, replacing one made for other limits. */
static void *stock(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&lock);
        for (;;) {
                while (!wanted)
                        pthread_cond_wait(&asked, &lock);
                wanted = false;
                struct cgroup_limits limits = want_limits;
                struct cgroup old;
                bool drop = have_spare && !same_limits(&spare_limits, &limits);
                if (drop) {
                        old = spare;
                        have_spare = false;
                }
                bool make = !have_spare;
                pthread_mutex_unlock(&lock);
                if (drop)
                        old.backend->destroy(&old);
                struct cgroup made;
                bool ok = false;
                if (make) {
                        char name[64];
                        codecell_error ignored = {0};
                        cgroup_unique_name(name, sizeof(name));
                        ok = place->backend->create(place, name, &limits, &made, &ignored) == 0;
                }
                pthread_mutex_lock(&lock);
                if (ok && closing) {
                        made.backend->destroy(&made);
                } else if (ok) {
                        spare = made;
                        spare_limits = limits;
                        have_spare = true;
                }
        }
        return NULL;
}

/* A fork's child (a web server's worker, a jail's own processes) has no stock thread, and the
 * parent's spare is the parent's: it starts with none, whatever the state it copied. */
static void after_fork_child(void)
{
        pthread_mutex_init(&lock, NULL);
        pthread_cond_init(&asked, NULL);
        started = have_spare = wanted = false;
}

/* At exit: the spare no jail took. */
static void remove_spare(void)
{
        pthread_mutex_lock(&lock);
        closing = true;
        if (have_spare) {
                have_spare = false;
                spare.backend->destroy(&spare);
        }
        pthread_mutex_unlock(&lock);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void register_handlers(void)
{
        (void)pthread_atfork(NULL, NULL, after_fork_child);
        (void)atexit(remove_spare);
}

bool jail_cgroup_stock_take(const struct cgroup_place *where, const struct cgroup_limits *limits,
                            struct cgroup *ret)
{
        pthread_once(&once, register_handlers);
        pthread_mutex_lock(&lock);
        place = where;
        bool taken = have_spare && same_limits(&spare_limits, limits);
        if (taken) {
                *ret = spare;
                have_spare = false;
        }
        /* The next jail's, made while this one runs. */
        want_limits = *limits;
        wanted = true;
        if (!started)
                started = jail_thread_start(stock);
        pthread_cond_signal(&asked);
        pthread_mutex_unlock(&lock);
        return taken;
}
