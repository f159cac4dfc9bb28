/* The egress wing's names: a host as the guest or the operator wrote it, checked and put in one
 * form, so that the allowlist, the resolver and the TLS SNI check compare the same text. The
 * forms getaddrinfo or inet_aton would also take for an address ("127.1", "2130706433",
 * "0x7f.1", "017.0.0.1") are refused: a name must not pass the allowlist as a name and reach
 * the resolver as an address. Who includes it: the egress wing only. */
#ifndef CODECELL_EGRESS_HOST_H
#define CODECELL_EGRESS_HOST_H

#include <stdbool.h>
#include <stddef.h>

enum egress_host_kind {
        EGRESS_HOST_NAME = 1, /* a DNS name: [a-z0-9-] labels of 1-63, 253 at most in all */
        EGRESS_HOST_IPV4,     /* four decimal octets, no leading zeros */
        EGRESS_HOST_IPV6,     /* inet_pton's form, written back as inet_ntop's (no brackets) */
};

/* The largest normalized host, with its NUL. */
#define EGRESS_HOST_MAX 256

/* s[0..len) (an IPv6 literal without brackets) checked and normalized into out (lowercase,
 * one trailing dot of a name dropped). Its kind, or 0 with *ret_why (static text) when it is
 * none of them. */
int egress_host_normalize(const char *s, size_t len, char out[EGRESS_HOST_MAX],
                          const char **ret_why);

/* "host:port", "[v6]:port", "host" (ret_port 0 then, when the port may be left out): host
 * and port split and the host normalized as above; the port 1-65535. 0, or -1 with *ret_why. */
int egress_authority_parse(const char *s, size_t len, bool port_required, char out[EGRESS_HOST_MAX],
                           int *ret_kind, unsigned *ret_port, const char **ret_why);

/* A guest's bytes s[0..len) made safe for a log line or a refusal: printable ASCII kept but
 * '\\' and '"', everything else as \xNN; cut to fit size (with NUL) and marked "..." when
 * cut. Returns out. Only ASCII comes out, so no cut ever splits a character. */
const char *egress_escape(const char *s, size_t len, char *out, size_t size);

#endif
