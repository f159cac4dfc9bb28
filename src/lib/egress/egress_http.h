/* The request head a guest sends the proxy (RFC 9112), read strictly: CRLF line ends only, no
 * folded lines, no NUL, one Content-Length at most and no Transfer-Encoding on a plain-HTTP
 * request, so that the proxy and the server agree on where the request ends and a second
 * request cannot ride in the first one's body past the method and header checks. Then the
 * head the server gets: origin form, Host from the URI, the proxy's own headers gone, the
 * operator's headers in, "Connection: close". Who includes it: the egress wing only. */
#ifndef CODECELL_EGRESS_HTTP_H
#define CODECELL_EGRESS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress_host.h"
#include "egress_policy.h"

#define EGRESS_HEAD_MAX 16384
#define EGRESS_HEADERS_MAX 100

struct egress_header_view {
        const char *name, *value;
        size_t name_len, value_len;
};

struct egress_request {
        const char *method;
        size_t method_len;
        bool connect;
        char host[EGRESS_HOST_MAX]; /* normalized */
        int kind;                   /* enum egress_host_kind */
        unsigned port;
        bool port_given;
        const char *path; /* origin form of a plain-HTTP request ("/" when the URI has none) */
        size_t path_len;
        bool path_slash; /* the URI had only a query: "/" goes before it */
        int minor;       /* HTTP/1.minor */
        struct egress_header_view headers[EGRESS_HEADERS_MAX];
        size_t n_headers;
        uint64_t content_length;
        size_t head_len; /* bytes of buf the head took, its blank line included */
};

/* buf[0..len): what the guest sent so far. 1 when r holds a whole head; 0 when more is needed;
 * or an HTTP status (400, 405 is not decided here) as a negative number with *ret_why. r's
 * views point into buf. */
int egress_request_parse(const char *buf, size_t len, struct egress_request *r,
                         const char **ret_why);

/* A request inside a terminated tunnel to host:port (normalized; kind its egress_host_kind):
 * the same strict reading, but the URI is a path ("GET /x HTTP/1.1") and a Host header must
 * name the tunnel's host (and its port, unless 443). r's host and port are then the tunnel's,
 * so that egress_request_rewrite writes the same head as for plain HTTP. */
int egress_tunnel_request_parse(const char *buf, size_t len, const char *host, int kind,
                                unsigned port, struct egress_request *r, const char **ret_why);

/* The head to send the server for a plain-HTTP request, malloc'd (*ret_len bytes); headers the
 * operator's for this host, or NULL. */
char *egress_request_rewrite(const struct egress_request *r,
                             const struct egress_host_headers *headers, size_t *ret_len);

#endif
