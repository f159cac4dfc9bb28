/* The jails' recycled empty network namespaces (netns.h), for a root caller: taken when a jail
 * is made (jail.c), given back by whoever frees it (jail.c, or the reaper of jail_reaper.c). */
#include <pthread.h>

#include "jail.h"
#include "netns.h"

static pthread_once_t netns_once = PTHREAD_ONCE_INIT;
static struct netns_stock netns_stock;

/* A fork taken while another thread (the reaper) held the stock's lock must not leave it held
 * in the child: that child's first jail would wait for it forever. */
static void lock_stock(void)
{
        pthread_mutex_lock(&netns_stock.lock);
}
static void unlock_stock(void)
{
        pthread_mutex_unlock(&netns_stock.lock);
}

static void init_netns_stock(void)
{
        netns_stock_init(&netns_stock);
        (void)pthread_atfork(lock_stock, unlock_stock, unlock_stock);
}

int jail_netns_take(void)
{
        pthread_once(&netns_once, init_netns_stock);
        codecell_error ignored = {0};
        int fd = netns_stock_take(&netns_stock, &ignored);
        return fd >= 0 ? fd : -1;
}

void jail_netns_give_back(int fd)
{
        if (fd >= 0)
                netns_stock_give_back(&netns_stock, fd);
}
