/* Jails whose answer is in hand but whose end is still to be collected: reaping the keeper
 * (the kernel tears its copy of the caller's address space down first, half a millisecond or
 * more), then removing the cgroup and giving the network namespace back. A jail goes here only
 * when its jailed process has been killed and could not have touched the host meanwhile (no
 * read-write path, no network): the caller gets its value without waiting for the teardown, as
 * a cell's run hands its sandbox to disposal.c. One thread per process, started on first use. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "jail.h"

struct leftover {
        struct leftover *next;
        pid_t keeper;
        bool has_cgroup;
        struct cgroup cgroup;
        int netns_fd;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t added = PTHREAD_COND_INITIALIZER;
static struct leftover *pending;
/* The one being collected, kept where LeakSanitizer looks (a global) rather than only on the
 * reaper's stack: a process that exits while its reaper waits for a keeper still holds it. */
static struct leftover *in_hand;
static bool started;

/* A fork (a web server's workers, forked after a jail ran) copies the list but not the
 * thread: the child starts afresh, with a lock no thread of the parent holds. */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void before_fork(void)
{
        pthread_mutex_lock(&lock);
}

static void after_fork_parent(void)
{
        pthread_mutex_unlock(&lock);
}

static void release(struct leftover *l)
{
        if (l->netns_fd >= 0)
                close(l->netns_fd);
        free(l);
}

static void after_fork_child(void)
{
        pthread_mutex_init(&lock, NULL);
        pthread_cond_init(&added, NULL);
        /* The parent's to collect: the child lets go of its copies (the nodes and the network
         * namespaces' descriptors), which nothing of the child would ever free. */
        if (in_hand) {
                release(in_hand);
                in_hand = NULL;
        }
        while (pending) {
                struct leftover *l = pending;
                pending = l->next;
                release(l);
        }
        started = false;
}

static void register_atfork(void)
{
        (void)pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* Frees nothing: the node stays whole until the reaper drops it under the lock, so that a fork
 * meanwhile finds either the node with its descriptor or no descriptor at all. */
static void collect(struct leftover *l)
{
        (void)wait_child(l->keeper, NULL);
        if (l->has_cgroup)
                l->cgroup.backend->destroy(&l->cgroup);
        int netns_fd = l->netns_fd;
        l->netns_fd = -1;
        jail_netns_give_back(netns_fd);
}

static void *reap(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&lock);
        for (;;) {
                while (!pending)
                        pthread_cond_wait(&added, &lock);
                struct leftover *l = pending;
                pending = l->next;
                in_hand = l;
                pthread_mutex_unlock(&lock);
                collect(l);
                pthread_mutex_lock(&lock);
                in_hand = NULL;
                free(l);
        }
        return NULL;
}

bool jail_thread_start(void *(*fn)(void *))
{
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* Signals belong to the caller's threads, not to this one. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        bool ok = pthread_create(&t, &attr, fn, NULL) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
        return ok;
}

bool jail_reaper_add(struct codecell_jail *j, pid_t keeper)
{
        struct leftover *l = malloc(sizeof(*l));
        if (!l)
                return false;
        *l = (struct leftover){.keeper = keeper,
                               .has_cgroup = j->has_cgroup,
                               .cgroup = j->cgroup,
                               .netns_fd = j->netns_fd};
        pthread_once(&atfork_once, register_atfork);
        pthread_mutex_lock(&lock);
        if (!started)
                started = jail_thread_start(reap);
        if (!started) {
                pthread_mutex_unlock(&lock);
                free(l);
                return false;
        }
        l->next = pending;
        pending = l;
        pthread_cond_signal(&added);
        pthread_mutex_unlock(&lock);
        /* The jail no longer owns them. */
        j->has_cgroup = false;
        j->netns_fd = -1;
        return true;
}
