#include "egress_host.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

static bool all_digits(const char *s, size_t n)
{
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (s[i] < '0' || s[i] > '9')
                        return false;
        return true;
}

/* Four decimal octets 0-255, each without a leading zero ("0" itself is one). */
static bool canonical_ipv4(const char *s, size_t len)
{
        size_t i = 0;
        for (int part = 0; part < 4; part++) {
                size_t start = i;
                while (i < len && s[i] >= '0' && s[i] <= '9' && i - start < 4)
                        i++;
                size_t n = i - start;
                if (n == 0 || n > 3 || (n > 1 && s[start] == '0'))
                        return false;
                unsigned v = 0;
                for (size_t k = start; k < i; k++)
                        v = v * 10 + (unsigned)(s[k] - '0');
                if (v > 255)
                        return false;
                if (part < 3) {
                        if (i >= len || s[i] != '.')
                                return false;
                        i++;
                }
        }
        return i == len;
}

int egress_host_normalize(const char *s, size_t len, char out[EGRESS_HOST_MAX],
                          const char **ret_why)
{
        const char *why = NULL;
        if (len == 0) {
                *ret_why = "empty host";
                return 0;
        }
        if (memchr(s, ':', len)) {
                char tmp[64];
                struct in6_addr a6;
                if (len >= sizeof(tmp)) {
                        *ret_why = "not an IPv6 address";
                        return 0;
                }
                memcpy(tmp, s, len);
                tmp[len] = '\0';
                /* inet_pton takes only the RFC 4291 text forms: no zone ("%eth0"), no brackets. */
                if (inet_pton(AF_INET6, tmp, &a6) != 1 ||
                    !inet_ntop(AF_INET6, &a6, out, EGRESS_HOST_MAX)) {
                        *ret_why = "not an IPv6 address";
                        return 0;
                }
                return EGRESS_HOST_IPV6;
        }
        if (s[len - 1] == '.')
                len--; /* the root's dot: "example.org." is "example.org" */
        if (len == 0 || len > 253) {
                *ret_why = len ? "name longer than 253 characters" : "empty host";
                return 0;
        }
        size_t label = 0, last_start = 0;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (c >= 'A' && c <= 'Z')
                        c = (char)(c - 'A' + 'a');
                out[i] = c;
                if (c == '.') {
                        if (label == 0)
                                why = "empty label";
                        else if (s[i - 1] == '-')
                                why = "label ends with '-'";
                        label = 0;
                        last_start = i + 1;
                        continue;
                }
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
                        why = "character outside a-z, 0-9, '-' and '.' (write an IDN in punycode)";
                        break;
                }
                if (c == '-' && label == 0)
                        why = "label starts with '-'";
                if (++label > 63)
                        why = "label longer than 63 characters";
        }
        if (!why && label == 0)
                why = "empty label";
        if (!why && s[len - 1] == '-')
                why = "label ends with '-'";
        if (why) {
                *ret_why = why;
                return 0;
        }
        out[len] = '\0';
        /* A name whose last label is all digits, or reads as hex, is how resolvers spell an
         * address: only the canonical dotted quad is taken, as an address. */
        const char *last = out + last_start;
        size_t last_len = len - last_start;
        if (all_digits(last, last_len) || (last_len >= 2 && last[0] == '0' && last[1] == 'x')) {
                if (canonical_ipv4(out, len))
                        return EGRESS_HOST_IPV4;
                *ret_why = "not a canonical IPv4 address (write four decimal octets, as 127.0.0.1)";
                return 0;
        }
        return EGRESS_HOST_NAME;
}

int egress_authority_parse(const char *s, size_t len, bool port_required, char out[EGRESS_HOST_MAX],
                           int *ret_kind, unsigned *ret_port, const char **ret_why)
{
        const char *host = s, *port = NULL;
        size_t host_len = len, port_len = 0;
        if (len > 0 && s[0] == '[') {
                const char *close = memchr(s, ']', len);
                if (!close) {
                        *ret_why = "'[' without ']'";
                        return -1;
                }
                host = s + 1;
                host_len = (size_t)(close - host);
                size_t rest = len - (size_t)(close + 1 - s);
                if (rest > 0) {
                        if (close[1] != ':') {
                                *ret_why = "text after ']'";
                                return -1;
                        }
                        port = close + 2;
                        port_len = rest - 1;
                }
                if (host_len == 0 || !memchr(host, ':', host_len)) {
                        *ret_why = "brackets hold an IPv6 address only";
                        return -1;
                }
        } else {
                const char *colon = memchr(s, ':', len);
                if (colon) {
                        if (memchr(colon + 1, ':', len - (size_t)(colon + 1 - s))) {
                                *ret_why = "an IPv6 address goes in brackets, as [2001:db8::1]:443";
                                return -1;
                        }
                        host_len = (size_t)(colon - s);
                        port = colon + 1;
                        port_len = len - host_len - 1;
                }
        }
        unsigned p = 0;
        if (port) {
                if (!all_digits(port, port_len) || port_len > 5) {
                        *ret_why = "port is not a number 1-65535";
                        return -1;
                }
                for (size_t i = 0; i < port_len; i++)
                        p = p * 10 + (unsigned)(port[i] - '0');
                if (p < 1 || p > 65535) {
                        *ret_why = "port outside 1-65535";
                        return -1;
                }
        } else if (port_required) {
                *ret_why = "no port";
                return -1;
        }
        int kind = egress_host_normalize(host, host_len, out, ret_why);
        if (!kind)
                return -1;
        if (s[0] != '[' && kind == EGRESS_HOST_IPV6) {
                *ret_why = "an IPv6 address goes in brackets";
                return -1;
        }
        *ret_kind = kind;
        *ret_port = p;
        return 0;
}

const char *egress_escape(const char *s, size_t len, char *out, size_t size)
{
        static const char hex[] = "0123456789abcdef";
        size_t o = 0;
        if (size == 0)
                return out;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                char piece[5];
                size_t n;
                if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') {
                        piece[0] = (char)c;
                        n = 1;
                } else {
                        piece[0] = '\\';
                        piece[1] = 'x';
                        piece[2] = hex[c >> 4];
                        piece[3] = hex[c & 15];
                        n = 4;
                }
                if (o + n + 1 > size || (i + 1 < len && o + n + 4 > size)) { /* "...", NUL */
                        if (size >= 4) {
                                memcpy(out + (o < size - 4 ? o : size - 4), "...", 3);
                                o = (o < size - 4 ? o : size - 4) + 3;
                        }
                        break;
                }
                memcpy(out + o, piece, n);
                o += n;
        }
        out[o < size ? o : size - 1] = '\0';
        return out;
}
