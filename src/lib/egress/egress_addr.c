#include "egress_addr.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

struct v4_range {
        uint32_t base;
        int bits;
        const char *why;
};

#define V4(a, b, c, d)                                                                             \
        (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d))

/* RFC 6890's special-purpose registry and the cloud metadata addresses (which fall in
 * link-local and CGNAT already; named so that a change of the table cannot drop them). */
static const struct v4_range v4_refused[] = {
        {V4(169, 254, 169, 254), 32, "cloud metadata"},
        {V4(100, 100, 100, 200), 32, "cloud metadata"},
        {V4(0, 0, 0, 0), 8, "unspecified (0/8)"},
        {V4(10, 0, 0, 0), 8, "private"},
        {V4(100, 64, 0, 0), 10, "carrier-grade NAT"},
        {V4(127, 0, 0, 0), 8, "loopback"},
        {V4(169, 254, 0, 0), 16, "link-local"},
        {V4(172, 16, 0, 0), 12, "private"},
        {V4(192, 0, 0, 0), 24, "IETF protocol assignments"},
        {V4(192, 0, 2, 0), 24, "documentation"},
        {V4(192, 88, 99, 0), 24, "6to4 relay anycast"},
        {V4(192, 168, 0, 0), 16, "private"},
        {V4(198, 18, 0, 0), 15, "benchmarking"},
        {V4(198, 51, 100, 0), 24, "documentation"},
        {V4(203, 0, 113, 0), 24, "documentation"},
        {V4(224, 0, 0, 0), 4, "multicast"},
        {V4(255, 255, 255, 255), 32, "broadcast"},
        {V4(240, 0, 0, 0), 4, "reserved (240/4)"},
};

const char *egress_ipv4_refused(uint32_t a)
{
        for (size_t i = 0; i < sizeof(v4_refused) / sizeof(v4_refused[0]); i++) {
                uint32_t mask =
                        v4_refused[i].bits == 0 ? 0 : ~(uint32_t)0 << (32 - v4_refused[i].bits);
                if ((a & mask) == v4_refused[i].base)
                        return v4_refused[i].why;
        }
        return NULL;
}

static uint32_t be32_at(const uint8_t *p)
{
        return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static bool prefix_is(const uint8_t *a, const uint8_t *prefix, int bits)
{
        int bytes = bits / 8, rest = bits % 8;
        if (memcmp(a, prefix, (size_t)bytes) != 0)
                return false;
        if (rest == 0)
                return true;
        uint8_t mask = (uint8_t)(0xff << (8 - rest));
        return (a[bytes] & mask) == (prefix[bytes] & mask);
}

struct v6_range {
        uint8_t prefix[16];
        int bits;
        const char *why;
};

static const struct v6_range v6_refused[] = {
        {{0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02}, 128, "cloud metadata"},
        {{0x01, 0x00}, 64, "discard-only (100::/64)"},
        {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, "local-use NAT64"},
        {{0x20, 0x01, 0x00, 0x02, 0x00, 0x00}, 48, "benchmarking"},
        {{0x20, 0x01, 0x00, 0x10}, 28, "ORCHID"},
        {{0x20, 0x01, 0x00, 0x20}, 28, "ORCHIDv2"},
        {{0x20, 0x01, 0x0d, 0xb8}, 32, "documentation"},
        {{0x3f, 0xff}, 20, "documentation"},
        {{0xfc}, 7, "unique-local"},
        {{0xfe, 0x80}, 10, "link-local"},
        {{0xfe, 0xc0}, 10, "site-local"},
        {{0xff}, 8, "multicast"},
};

const char *egress_ipv6_refused(const struct in6_addr *addr)
{
        const uint8_t *a = addr->s6_addr;
        static const uint8_t zero[16];
        static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
        static const uint8_t translated[12] = {[8] = 0xff, [9] = 0xff};
        static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};
        static const uint8_t sixto4[2] = {0x20, 0x02};
        static const uint8_t teredo[4] = {0x20, 0x01, 0x00, 0x00};

        if (memcmp(a, zero, 15) == 0 && a[15] <= 1)
                return a[15] ? "loopback" : "unspecified";
        /* The forms that carry an IPv4 address are checked as that address. */
        if (memcmp(a, mapped, 12) == 0)
                return egress_ipv4_refused(be32_at(a + 12));
        if (memcmp(a, translated, 12) == 0) /* ::ffff:0:a.b.c.d, SIIT's IPv4-translated */
                return egress_ipv4_refused(be32_at(a + 12));
        if (memcmp(a, zero, 12) == 0) /* ::a.b.c.d, the deprecated IPv4-compatible form */
                return egress_ipv4_refused(be32_at(a + 12)) ?: "IPv4-compatible (deprecated)";
        if (memcmp(a, nat64, 12) == 0)
                return egress_ipv4_refused(be32_at(a + 12));
        if (memcmp(a, sixto4, 2) == 0)
                return egress_ipv4_refused(be32_at(a + 2));
        if (memcmp(a, teredo, 4) == 0) {
                /* Teredo: the server's IPv4 address in bits 32-63, the client's, inverted, in
                 * 96-127; either can lead to a refused address. */
                const char *why = egress_ipv4_refused(be32_at(a + 4));
                return why ? why : egress_ipv4_refused(~be32_at(a + 12));
        }
        for (size_t i = 0; i < sizeof(v6_refused) / sizeof(v6_refused[0]); i++)
                if (prefix_is(a, v6_refused[i].prefix, v6_refused[i].bits))
                        return v6_refused[i].why;
        return NULL;
}

const char *egress_sockaddr_refused(const struct sockaddr *sa)
{
        if (sa->sa_family == AF_INET)
                return egress_ipv4_refused(
                        ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
        if (sa->sa_family == AF_INET6)
                return egress_ipv6_refused(&((const struct sockaddr_in6 *)sa)->sin6_addr);
        return "not an IP address";
}
