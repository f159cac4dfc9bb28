/* libFuzzer: the request head a guest sends a network cell's proxy (src/lib/egress/egress_http.c),
 * as a proxy request and as a request inside a terminated tunnel, and the head the proxy then
 * sends on. Any bytes parse without a fault to a whole head, "more
 * needed" or a refusal with its reason; a whole head's views lie inside the input, its host is
 * normalized (lowercase, printable ASCII) and its rewrite, for a plain-HTTP request, has no NUL
 * and ends its head with one blank line. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress_http.h"

static void inside(const char *p, size_t n, const char *buf, size_t len)
{
        if (n && (p < buf || p + n > buf + len))
                abort();
}

static int check(const char *buf, size_t size, bool tunnel)
{
        struct egress_request r;
        const char *why = NULL;
        int got = tunnel ? egress_tunnel_request_parse(buf, size, "api.example.test",
                                                       EGRESS_HOST_NAME, 443, &r, &why)
                         : egress_request_parse(buf, size, &r, &why);
        if (got < 0 && !why)
                abort(); /* every refusal says why */
        if (got != 1)
                return 0;
        if (r.head_len > size || r.n_headers > EGRESS_HEADERS_MAX)
                abort();
        inside(r.method, r.method_len, buf, size);
        if (!r.connect)
                inside(r.path, r.path_len, buf, size);
        for (size_t i = 0; i < r.n_headers; i++) {
                inside(r.headers[i].name, r.headers[i].name_len, buf, size);
                inside(r.headers[i].value, r.headers[i].value_len, buf, size);
        }
        size_t host_len = strnlen(r.host, EGRESS_HOST_MAX);
        if (host_len == 0 || host_len == EGRESS_HOST_MAX || r.port == 0 || r.port > 65535)
                abort();
        for (size_t i = 0; i < host_len; i++)
                if (r.host[i] <= ' ' || r.host[i] >= 0x7f || (r.host[i] >= 'A' && r.host[i] <= 'Z'))
                        abort();
        if (tunnel && (r.connect || strcmp(r.host, "api.example.test") != 0 || r.port != 443))
                abort(); /* a tunnel's request is for the tunnel's host only */
        if (r.connect)
                return 0;
        size_t len = 0;
        char *head = egress_request_rewrite(&r, NULL, &len);
        if (!head)
                return 0;
        if (memchr(head, '\0', len) || len < 4 || memcmp(head + len - 4, "\r\n\r\n", 4) != 0)
                abort();
        free(head);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        check((const char *)data, size, false);
        check((const char *)data, size, true);
        return 0;
}
