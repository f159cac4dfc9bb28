/* The addresses a cell may not reach (issue 31): every range, each at both ends, the metadata
 * addresses, and every IPv6 form that carries a refused IPv4 address; public ones pass. */
#include <arpa/inet.h>
#include <string.h>

#include "check.h"
#include "egress_addr.h"

static const char *v4(const char *s)
{
        struct in_addr a;
        if (inet_pton(AF_INET, s, &a) != 1)
                return "BAD TEST ADDRESS";
        return egress_ipv4_refused(ntohl(a.s_addr));
}

static const char *v6(const char *s)
{
        struct sockaddr_in6 sa = {.sin6_family = AF_INET6};
        if (inet_pton(AF_INET6, s, &sa.sin6_addr) != 1)
                return "BAD TEST ADDRESS";
        return egress_sockaddr_refused((struct sockaddr *)&sa);
}

#define REFUSED4(s)                                                                                \
        do {                                                                                       \
                if (!v4(s)) {                                                                      \
                        fprintf(stderr, "%s:%d: %s passed\n", __FILE__, __LINE__, s);              \
                        check_failures++;                                                          \
                }                                                                                  \
        } while (0)
#define PUBLIC4(s)                                                                                 \
        do {                                                                                       \
                const char *_w = v4(s);                                                            \
                if (_w) {                                                                          \
                        fprintf(stderr, "%s:%d: %s refused: %s\n", __FILE__, __LINE__, s, _w);     \
                        check_failures++;                                                          \
                }                                                                                  \
        } while (0)
#define REFUSED6(s)                                                                                \
        do {                                                                                       \
                if (!v6(s)) {                                                                      \
                        fprintf(stderr, "%s:%d: %s passed\n", __FILE__, __LINE__, s);              \
                        check_failures++;                                                          \
                }                                                                                  \
        } while (0)
#define PUBLIC6(s)                                                                                 \
        do {                                                                                       \
                const char *_w = v6(s);                                                            \
                if (_w) {                                                                          \
                        fprintf(stderr, "%s:%d: %s refused: %s\n", __FILE__, __LINE__, s, _w);     \
                        check_failures++;                                                          \
                }                                                                                  \
        } while (0)

int main(void)
{
        /* Each range at its first and last address, and its neighbours outside. */
        const char *ranges[][2] = {
                {"0.0.0.0", "0.255.255.255"},       {"10.0.0.0", "10.255.255.255"},
                {"100.64.0.0", "100.127.255.255"},  {"127.0.0.0", "127.255.255.255"},
                {"169.254.0.0", "169.254.255.255"}, {"172.16.0.0", "172.31.255.255"},
                {"192.0.0.0", "192.0.0.255"},       {"192.0.2.0", "192.0.2.255"},
                {"192.88.99.0", "192.88.99.255"},   {"192.168.0.0", "192.168.255.255"},
                {"198.18.0.0", "198.19.255.255"},   {"198.51.100.0", "198.51.100.255"},
                {"203.0.113.0", "203.0.113.255"},   {"224.0.0.0", "239.255.255.255"},
                {"240.0.0.0", "255.255.255.255"},
        };
        for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
                REFUSED4(ranges[i][0]);
                REFUSED4(ranges[i][1]);
        }
        const char *outside[] = {"1.0.0.0",
                                 "9.255.255.255",
                                 "11.0.0.0",
                                 "100.63.255.255",
                                 "100.128.0.0",
                                 "126.255.255.255",
                                 "128.0.0.0",
                                 "169.253.255.255",
                                 "169.255.0.0",
                                 "172.15.255.255",
                                 "172.32.0.0",
                                 "192.0.1.0",
                                 "192.0.3.0",
                                 "192.167.255.255",
                                 "192.169.0.0",
                                 "198.17.255.255",
                                 "198.20.0.0",
                                 "198.51.99.255",
                                 "203.0.112.255",
                                 "223.255.255.255",
                                 "8.8.8.8",
                                 "93.184.216.34",
                                 NULL};
        for (int i = 0; outside[i]; i++)
                PUBLIC4(outside[i]);
        CHECK_STR(v4("169.254.169.254"), "cloud metadata");
        CHECK_STR(v4("100.100.100.200"), "cloud metadata");
        CHECK_STR(v4("127.0.0.1"), "loopback");
        CHECK_STR(v4("10.0.0.5"), "private");
        CHECK_STR(v4("255.255.255.255"), "broadcast");

        /* IPv6 of its own. */
        REFUSED6("::");
        REFUSED6("::1");
        REFUSED6("fe80::1");
        REFUSED6("febf:ffff::1");
        REFUSED6("fec0::1");
        REFUSED6("feff::1");
        REFUSED6("fc00::1");
        REFUSED6("fdff:ffff::1");
        REFUSED6("fd00:ec2::254");
        CHECK_STR(v6("fd00:ec2::254"), "cloud metadata");
        REFUSED6("ff02::1");
        REFUSED6("ff0e::1");
        REFUSED6("2001:db8::1");
        REFUSED6("2001:db8:ffff::1");
        REFUSED6("3fff::1");
        REFUSED6("2001:2::1");
        REFUSED6("100::1");
        REFUSED6("64:ff9b:1::1");
        PUBLIC6("2606:4700::1111");
        PUBLIC6("2001:4860:4860::8888");
        PUBLIC6("fb00::1");
        PUBLIC6("2001:db9::1");

        /* IPv4 inside IPv6: refused when the IPv4 address is. */
        REFUSED6("::ffff:127.0.0.1");
        REFUSED6("::ffff:10.0.0.5");
        REFUSED6("::ffff:169.254.169.254");
        REFUSED6("::ffff:0:127.0.0.1"); /* IPv4-translated */
        REFUSED6("::127.0.0.1");        /* IPv4-compatible */
        REFUSED6("::8.8.8.8");          /* deprecated form: refused whatever it holds */
        REFUSED6("64:ff9b::127.0.0.1");
        REFUSED6("64:ff9b::a9fe:a9fe");        /* 169.254.169.254 */
        REFUSED6("2002:7f00:1::1");            /* 6to4 of 127.0.0.1 */
        REFUSED6("2002:c0a8:101::1");          /* 6to4 of 192.168.1.1 */
        REFUSED6("2001:0:7f00:1::1");          /* Teredo, server 127.0.0.1 */
        REFUSED6("2001:0:808:808::80ff:fffe"); /* Teredo, client ~0x80fffffe = 127.0.0.1 */
        PUBLIC6("::ffff:8.8.8.8");
        PUBLIC6("64:ff9b::808:808");
        PUBLIC6("2002:808:808::1");
        PUBLIC6("2001:0:808:808::f7f7:f7f7"); /* Teredo, client 8.8.8.8 */

        struct sockaddr_un_like {
                unsigned short family;
        } unix_sa = {AF_UNIX};
        CHECK(egress_sockaddr_refused((struct sockaddr *)&unix_sa) != NULL);
        CHECK_DONE();
}
