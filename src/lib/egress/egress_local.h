/* Whether an address is this host's own (the kernel routes it to a local socket: an address of
 * any of its interfaces, in the network namespace of the caller). A public-looking address of
 * the host is as good as loopback to a guest: every service listening on the host's wildcard
 * address answers there, and a firewall on the way in does not see traffic that never leaves.
 * Who includes it: the egress wing only. */
#ifndef CODECELL_EGRESS_LOCAL_H
#define CODECELL_EGRESS_LOCAL_H

#include <sys/socket.h>

/* "this host's own address" when sa (AF_INET or AF_INET6; an IPv4-mapped IPv6 address is asked
 * as the IPv4 address it carries) is local, "cannot ask the routing table: ..." when the kernel
 * could not say (refused too: it fails closed), NULL when it is not local. */
const char *egress_address_local(const struct sockaddr *sa);

#endif
