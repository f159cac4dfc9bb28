/* Network namespaces for sandboxes, recycled when the engine runs as root.
 *
 * Every sandbox has a network namespace of its own, empty, with its loopback down: the guest
 * can reach nothing. Making one costs half a millisecond of the cold path plus the kernel's
 * deferred clean-up work (sysctl tables, RCU), the largest single cost of the set-up under
 * churn. A root engine keeps the namespaces of ended sandboxes and gives each to the next
 * sandbox once it has checked that nothing is left in it (see netns_stock_give_back). A
 * namespace is never shared by two live sandboxes, and it belongs to the initial user
 * namespace, where the guest holds no capability: it cannot bring the loopback up, add a
 * route or set a sysctl. Without root the sandbox could not enter a namespace it does not own
 * from inside its new user namespace, so it gets a new one (CLONE_NEWNET) every time. */
#ifndef CODECELL_NETNS_H
#define CODECELL_NETNS_H

#include <pthread.h>
#include <stddef.h>

#include "codecell.h"

struct netns_stock {
        pthread_mutex_t lock;
        int *idle; /* fds of empty namespaces no sandbox uses */
        size_t n, cap;
};

void netns_stock_init(struct netns_stock *st);
/* An fd of an empty namespace no live sandbox uses, recycled or new; < 0 with err. */
int netns_stock_take(struct netns_stock *st, codecell_error *err);
/* Takes fd back once its sandbox has ended. Kept for the next sandbox only when it is as
 * empty as a new one; otherwise closed (the kernel then destroys it). */
void netns_stock_give_back(struct netns_stock *st, int fd);
/* Closes every idle namespace. */
void netns_stock_free(struct netns_stock *st);

/* Moves the calling thread into the namespace fd (its later children are born there);
 * ret_home is the one to come back to with netns_leave. */
int netns_enter(int fd, int *ret_home, codecell_error *err);
/* Back home; closes home. */
int netns_leave(int home, codecell_error *err);

#endif
