#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "util.h"

/* More idle namespaces than this means a burst is over: the rest are let go. */
#define MAX_IDLE 64

void netns_stock_init(struct netns_stock *st)
{
        *st = (struct netns_stock){.n = 0};
        pthread_mutex_init(&st->lock, NULL);
}

/* The calling thread's own namespace (/proc/self would name the main thread's), or < 0. */
static int open_this_threads(codecell_error *err)
{
        int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        return fd >= 0 ? fd : err_sys(err, errno, "network namespace: open this thread's");
}

int netns_enter(int fd, int *ret_home, codecell_error *err)
{
        int home = open_this_threads(err);
        if (home < 0)
                return home;
        if (setns(fd, CLONE_NEWNET) < 0) {
                int e = errno;
                close(home);
                return err_sys(err, e, "network namespace: enter");
        }
        *ret_home = home;
        return 0;
}

int netns_leave(int home, codecell_error *err)
{
        int r = setns(home, CLONE_NEWNET) < 0 ? -errno : 0;
        close(home);
        /* Failing here would leave this thread's later sockets in an empty namespace, where
         * they reach nothing: an error for the caller, not a hole. */
        return r < 0 ? err_sys(err, -r, "network namespace: return to the engine's") : 0;
}

static int make_one(codecell_error *err)
{
        int home = open_this_threads(err);
        if (home < 0)
                return home;
        /* unshare moves only this thread, which moves straight back. */
        if (unshare(CLONE_NEWNET) < 0) {
                int e = errno;
                close(home);
                return err_sys(err, e, "network namespace: create");
        }
        int fd = open_this_threads(err);
        if (netns_leave(home, err) < 0) {
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        return fd;
}

int netns_stock_take(struct netns_stock *st, codecell_error *err)
{
        pthread_mutex_lock(&st->lock);
        int fd = st->n > 0 ? st->idle[--st->n] : -1;
        pthread_mutex_unlock(&st->lock);
        return fd >= 0 ? fd : make_one(err);
}

/* True when no socket is left in the namespace: /proc/net/unix holds its header line only.
 * The guest can create no other kind of socket (seccomp) and change nothing else in it (no
 * capability there); every process of its sandbox is gone, but a socket whose fd was in flight
 * in a message to itself lives until the kernel's garbage collector runs. */
static bool is_empty(int fd)
{
        int home = -1;
        if (netns_enter(fd, &home, NULL) < 0)
                return false;
        char text[256];
        ssize_t n = read_file("/proc/thread-self/net/unix", text, sizeof(text));
        bool left = netns_leave(home, NULL) < 0;
        if (left || n <= 0)
                return false;
        char *newline = memchr(text, '\n', (size_t)n);
        return newline && newline + 1 == text + n;
}

void netns_stock_give_back(struct netns_stock *st, int fd)
{
        if (fd < 0)
                return;
        if (!is_empty(fd)) {
                close(fd);
                return;
        }
        pthread_mutex_lock(&st->lock);
        if (st->n == st->cap && st->cap < MAX_IDLE) {
                size_t cap = st->cap ? st->cap * 2 : 4;
                int *idle = realloc(st->idle, cap * sizeof(*idle));
                if (idle) {
                        st->idle = idle;
                        st->cap = cap;
                }
        }
        if (st->n < st->cap) {
                st->idle[st->n++] = fd;
                fd = -1;
        }
        pthread_mutex_unlock(&st->lock);
        if (fd >= 0)
                close(fd);
}

void netns_stock_free(struct netns_stock *st)
{
        for (size_t i = 0; i < st->n; i++)
                close(st->idle[i]);
        free(st->idle);
        pthread_mutex_destroy(&st->lock);
        *st = (struct netns_stock){.n = 0};
}
