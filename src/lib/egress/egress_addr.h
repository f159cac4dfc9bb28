/* Which addresses a cell's connections may reach: what the resolver answered is checked here,
 * before the connect, and the connect goes to the address checked (no second lookup, so a name
 * that answers differently the second time reaches nothing new). Refused: every address that
 * is not a public unicast one, and every IPv6 form that carries a refused IPv4 address inside
 * (mapped, compatible, NAT64, 6to4, Teredo), since a host or a gateway on the way may
 * translate it back. Who includes it: the egress wing only. */
#ifndef CODECELL_EGRESS_ADDR_H
#define CODECELL_EGRESS_ADDR_H

#include <netinet/in.h>
#include <stdint.h>

/* What is wrong with the IPv4 address a (host byte order): "loopback", "private", … or NULL
 * when it is public. */
const char *egress_ipv4_refused(uint32_t a);
/* The same for an IPv6 address. */
const char *egress_ipv6_refused(const struct in6_addr *a);
/* The same for a socket address of either family; "not an IP address" for any other. */
const char *egress_sockaddr_refused(const struct sockaddr *sa);

#endif
