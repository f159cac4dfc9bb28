/* A name looked up by getaddrinfo in a thread of its own, so that the connection waiting for
 * it can give up at the run's end or deadline: getaddrinfo cannot be interrupted, and a thread
 * stuck in it (a resolver that does not answer) is left to finish alone. The lookup is shared
 * by the two threads and freed by the last of them to let go; the waiting one hears of the end
 * through an eventfd it polls beside its other fds. Who includes it: the egress wing only. */
#ifndef CODECELL_EGRESS_LOOKUP_H
#define CODECELL_EGRESS_LOOKUP_H

#include <netdb.h>

struct egress_lookup;

/* Starts looking host up (TCP addresses of either family). NULL with errno on failure. */
struct egress_lookup *egress_lookup_start(const char *host);
/* Readable once the answer is in. */
int egress_lookup_fd(const struct egress_lookup *l);
/* Once the fd was readable: getaddrinfo's answer (0 or an EAI_ code), and on 0 its list in *ret
 * (the caller's, for freeaddrinfo). */
int egress_lookup_take(struct egress_lookup *l, struct addrinfo **ret);
/* The caller's reference let go, whether the answer came or not. */
void egress_lookup_drop(struct egress_lookup *l);

#endif
