#include "egress_lookup.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "egress_host.h"

struct egress_lookup {
        pthread_mutex_t lock;
        int refs;             /* guarded by lock: the waiter's and the thread's */
        int fd;               /* eventfd, written once the answer is in */
        int rc;               /* guarded by lock, set once with res */
        struct addrinfo *res; /* guarded by lock */
        char host[EGRESS_HOST_MAX];
};

static void unref(struct egress_lookup *l)
{
        pthread_mutex_lock(&l->lock);
        int left = --l->refs;
        pthread_mutex_unlock(&l->lock);
        if (left)
                return;
        if (l->res)
                freeaddrinfo(l->res);
        close(l->fd);
        pthread_mutex_destroy(&l->lock);
        free(l);
}

static void *lookup_thread(void *arg)
{
        struct egress_lookup *l = arg;
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC};
        struct addrinfo *res = NULL;
        int rc = getaddrinfo(l->host, NULL, &hints, &res);
        pthread_mutex_lock(&l->lock);
        l->rc = rc;
        l->res = rc == 0 ? res : NULL;
        pthread_mutex_unlock(&l->lock);
        (void)eventfd_write(l->fd, 1);
        unref(l);
        return NULL;
}

struct egress_lookup *egress_lookup_start(const char *host)
{
        struct egress_lookup *l = calloc(1, sizeof(*l));
        if (!l)
                return NULL;
        snprintf(l->host, sizeof(l->host), "%s", host);
        l->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (l->fd < 0) {
                free(l);
                return NULL;
        }
        pthread_mutex_init(&l->lock, NULL);
        l->refs = 2;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_t t;
        int r = pthread_create(&t, &attr, lookup_thread, l);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                close(l->fd);
                pthread_mutex_destroy(&l->lock);
                free(l);
                errno = r;
                return NULL;
        }
        return l;
}

int egress_lookup_fd(const struct egress_lookup *l)
{
        return l->fd;
}

int egress_lookup_take(struct egress_lookup *l, struct addrinfo **ret)
{
        pthread_mutex_lock(&l->lock);
        int rc = l->rc;
        *ret = l->res;
        l->res = NULL;
        pthread_mutex_unlock(&l->lock);
        return rc;
}

void egress_lookup_drop(struct egress_lookup *l)
{
        if (l)
                unref(l);
}
