/* This host's own addresses (egress_local.c): every address of every interface here is local,
 * IPv4-mapped forms are asked as IPv4, and an address of no interface is not (in the test's own
 * network namespace, whatever it holds). */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>

#include "check.h"
#include "egress_local.h"

static const char *local6(const char *s)
{
        struct sockaddr_in6 sa = {.sin6_family = AF_INET6};
        if (inet_pton(AF_INET6, s, &sa.sin6_addr) != 1)
                return "BAD TEST ADDRESS";
        return egress_address_local((struct sockaddr *)&sa);
}

static const char *local4(const char *s)
{
        struct sockaddr_in sa = {.sin_family = AF_INET};
        if (inet_pton(AF_INET, s, &sa.sin_addr) != 1)
                return "BAD TEST ADDRESS";
        return egress_address_local((struct sockaddr *)&sa);
}

int main(void)
{
        CHECK_STR(local4("127.0.0.1"), "this host's own address");
        CHECK_STR(local4("127.3.4.5"), "this host's own address"); /* all of 127/8 is local */
        CHECK_STR(local6("::ffff:127.0.0.1"), "this host's own address");

        /* Each interface address of this host, as getifaddrs sees it, public or not. An
         * IPv6 link-local one needs its scope to be routed: those are refused by range anyway. */
        struct ifaddrs *ifs = NULL;
        CHECK(getifaddrs(&ifs) == 0);
        int seen = 0;
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
                if (!i->ifa_addr)
                        continue;
                if (i->ifa_addr->sa_family == AF_INET6 &&
                    IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
                        continue;
                if (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)
                        continue;
                const char *why = egress_address_local(i->ifa_addr);
                if (!why || strcmp(why, "this host's own address") != 0) {
                        char a[INET6_ADDRSTRLEN] = "?";
                        const void *p =
                                i->ifa_addr->sa_family == AF_INET
                                        ? (const void *)&((struct sockaddr_in *)i->ifa_addr)
                                                  ->sin_addr
                                        : (const void *)&((struct sockaddr_in6 *)i->ifa_addr)
                                                  ->sin6_addr;
                        inet_ntop(i->ifa_addr->sa_family, p, a, sizeof(a));
                        fprintf(stderr, "%s of %s: %s\n", a, i->ifa_name, why ? why : "not local");
                        check_failures++;
                }
                seen++;
        }
        freeifaddrs(ifs);
        CHECK(seen > 0);

        /* Documentation addresses: on no interface of a test host. */
        CHECK(local4("192.0.2.1") == NULL);
        CHECK(local6("2001:db8::1") == NULL);
        CHECK(local6("::ffff:192.0.2.1") == NULL);

        struct sockaddr unix_sa = {.sa_family = AF_UNIX};
        CHECK(egress_address_local(&unix_sa) != NULL);
        CHECK_DONE();
}
