/* The request heads a network cell's proxy reads (src/lib/egress/egress_http.c): here, those
 * inside a tunnel whose TLS the engine terminates (terminate_tls), where the request names
 * only its path and its Host header must name the tunnel's host; and the head the server
 * then gets, with the operator's headers in place of the guest's. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "egress_http.h"

static int tunnel(const char *head, struct egress_request *r, const char **why)
{
        *why = NULL;
        return egress_tunnel_request_parse(head, strlen(head), "api.example.test", EGRESS_HOST_NAME,
                                           443, r, why);
}

#define TUNNEL_REFUSED(head, want)                                                                 \
        do {                                                                                       \
                struct egress_request _r;                                                          \
                const char *_why;                                                                  \
                int _rc = tunnel(head, &_r, &_why);                                                \
                CHECK(_rc == -400);                                                                \
                if (_rc != -400 || !_why || !strstr(_why, want)) {                                 \
                        fprintf(stderr, "%s:%d: %s\n  got %d %s\n  want %s\n", __FILE__, __LINE__, \
                                head, _rc, _why ? _why : "(none)", want);                          \
                        check_failures++;                                                          \
                }                                                                                  \
        } while (0)

int main(void)
{
        struct egress_request *r = malloc(sizeof(*r));
        const char *why = NULL;
        CHECK(r != NULL);

        /* A whole request: the tunnel's host, a path, the body's length. */
        const char *ok = "POST /v1/things?q=1 HTTP/1.1\r\nHost: API.example.test\r\n"
                         "Authorization: Bearer guest-made-up\r\nContent-Length: 3\r\n\r\nabc";
        CHECK(tunnel(ok, r, &why) == 1);
        CHECK(strcmp(r->host, "api.example.test") == 0 && r->port == 443 && !r->port_given);
        CHECK(r->content_length == 3 && r->head_len == strlen(ok) - 3);
        CHECK(r->path_len == strlen("/v1/things?q=1") &&
              memcmp(r->path, "/v1/things?q=1", 14) == 0);

        /* The rewrite: the guest's Authorization gone, the operator's in, one Host, closing. */
        struct egress_header h = {"Authorization", "Bearer the-operators-secret"};
        struct egress_host_headers extra = {"api.example.test", &h, 1};
        size_t len = 0;
        char *head = egress_request_rewrite(r, &extra, &len);
        CHECK(head != NULL);
        if (head) {
                const char *first = "POST /v1/things?q=1 HTTP/1.1\r\nHost: api.example.test\r\n";
                CHECK(strncmp(head, first, strlen(first)) == 0);
                CHECK(strstr(head, "guest-made-up") == NULL);
                CHECK(strstr(head, "Authorization: Bearer the-operators-secret\r\n") != NULL);
                CHECK(strstr(head, "Content-Length: 3\r\n") != NULL);
                const char *last = "\r\nConnection: close\r\n\r\n";
                CHECK(len > strlen(last) &&
                      memcmp(head + len - strlen(last), last, strlen(last)) == 0);
                free(head);
        }

        /* The port: 443 may be written out, another must match the tunnel's. */
        CHECK(tunnel("GET / HTTP/1.1\r\nHost: api.example.test:443\r\n\r\n", r, &why) == 1);
        const char *other = "GET / HTTP/1.1\r\nHost: api.example.test:8443\r\n\r\n";
        CHECK(egress_tunnel_request_parse(other, strlen(other), "api.example.test",
                                          EGRESS_HOST_NAME, 8443, r, &why) == 1);
        CHECK(r->port == 8443 && r->port_given);
        /* Not whole yet. */
        CHECK(tunnel("GET / HTTP/1.1\r\nHost: api.example.test\r\n", r, &why) == 0);

        /* What a request inside the tunnel may not be. */
        TUNNEL_REFUSED("GET / HTTP/1.1\r\n\r\n", "no Host header");
        TUNNEL_REFUSED("GET / HTTP/1.1\r\nHost: other.example.test\r\n\r\n",
                       "the Host header does not name the host");
        TUNNEL_REFUSED("GET / HTTP/1.1\r\nHost: api.example.test:8443\r\n\r\n",
                       "the Host header does not name the host and port");
        TUNNEL_REFUSED("GET / HTTP/1.1\r\nHost: api.example.test\r\nHost: evil.test\r\n\r\n",
                       "two Host headers");
        TUNNEL_REFUSED("GET / HTTP/1.1\r\nHost: api.example.test@evil.test\r\n\r\n",
                       "the Host header does not name");
        TUNNEL_REFUSED("GET http://evil.test/ HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
                       "the request URI is not a path");
        TUNNEL_REFUSED("CONNECT evil.test:443 HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
                       "CONNECT inside a tunnel");
        TUNNEL_REFUSED("GET /#frag HTTP/1.1\r\nHost: api.example.test\r\n\r\n", "fragment");
        /* The same strict framing as plain HTTP: no smuggled second request. */
        TUNNEL_REFUSED("POST / HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked"
                       "\r\n\r\n",
                       "Transfer-Encoding on a request");
        TUNNEL_REFUSED("POST / HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 1\r\n"
                       "Content-Length: 2\r\n\r\n",
                       "two Content-Length headers");
        TUNNEL_REFUSED("GET / HTTP/1.1\nHost: api.example.test\r\n\r\n", "without CR LF");
        TUNNEL_REFUSED("GET / HTTP/2.0\r\nHost: api.example.test\r\n\r\n", "only HTTP/1.0 and");

        /* A proxy request is still read as before: origin form refused there. */
        const char *plain = "GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n";
        CHECK(egress_request_parse(plain, strlen(plain), r, &why) == -400);
        free(r);
        CHECK_DONE();
}
