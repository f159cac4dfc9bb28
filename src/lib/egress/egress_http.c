#include "egress_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool tchar(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool name_is(const struct egress_header_view *h, const char *name)
{
        return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

static int bad(const char **ret_why, const char *why)
{
        *ret_why = why;
        return -400;
}

static const char *find_crlfcrlf(const char *buf, size_t len)
{
        for (size_t i = 3; i < len; i++)
                if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
                    buf[i - 3] == '\r')
                        return buf + i + 1;
        return NULL;
}

static int parse_target(const char *t, size_t n, struct egress_request *r, bool tunnel,
                        const char **ret_why)
{
        const char *why = NULL;
        if (tunnel) {
                /* Inside a tunnel the request names its path only (origin form); its host is
                 * the tunnel's, which Host must repeat. */
                if (r->connect)
                        return bad(ret_why, "CONNECT inside a tunnel");
                if (n == 0 || t[0] != '/')
                        return bad(ret_why, "the request URI is not a path (/...)");
                if (memchr(t, '#', n))
                        return bad(ret_why, "the URI has a fragment (#...)");
                r->path = t;
                r->path_len = n;
                return 0;
        }
        if (r->connect) {
                if (egress_authority_parse(t, n, true, r->host, &r->kind, &r->port, &why) < 0) {
                        *ret_why = why;
                        return -400;
                }
                r->port_given = true;
                return 0;
        }
        if (n > 0 && t[0] == '/')
                return bad(ret_why,
                           "this is a proxy: send the absolute URI (GET http://host/path) or "
                           "CONNECT host:443 for HTTPS");
        if (n >= 8 && strncasecmp(t, "https://", 8) == 0)
                return bad(ret_why, "an https:// URI goes through CONNECT host:443");
        if (n < 7 || strncasecmp(t, "http://", 7) != 0)
                return bad(ret_why, "the request URI is not http://host/path");
        const char *a = t + 7, *end = t + n, *p = a;
        while (p < end && *p != '/' && *p != '?')
                p++;
        if (memchr(a, '@', (size_t)(p - a)))
                return bad(ret_why,
                           "the URI has userinfo (user@host), which the proxy does not pass on");
        if (memchr(t, '#', n))
                return bad(ret_why, "the URI has a fragment (#...)");
        if (egress_authority_parse(a, (size_t)(p - a), false, r->host, &r->kind, &r->port, &why) <
            0) {
                *ret_why = why;
                return -400;
        }
        r->port_given = r->port != 0;
        if (!r->port)
                r->port = 80;
        r->path = p;
        r->path_len = (size_t)(end - p);
        r->path_slash = p == end || *p == '?';
        return 0;
}

/* A head as egress_request_parse takes it, or as egress_tunnel_request_parse does (tunnel). */
static int parse_head(const char *buf, size_t len, struct egress_request *r, bool tunnel,
                      const char **ret_why)
{
        memset(r, 0, sizeof(*r));
        size_t scan = len < EGRESS_HEAD_MAX ? len : EGRESS_HEAD_MAX;
        const char *end = find_crlfcrlf(buf, scan);
        /* Every byte so far is checked as it comes, so a bad head is answered at once. */
        for (size_t i = 0; i < (end ? (size_t)(end - buf) : scan); i++) {
                if (buf[i] == '\0')
                        return bad(ret_why, "the request head holds a NUL byte");
                if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r'))
                        return bad(ret_why, "a line of the request head ends without CR LF");
                if (buf[i] == '\r' && i + 1 < scan && buf[i + 1] != '\n')
                        return bad(ret_why, "a bare CR in the request head");
        }
        if (!end) {
                if (len >= EGRESS_HEAD_MAX)
                        return bad(ret_why, "the request head is over 16 KiB");
                return 0;
        }
        r->head_len = (size_t)(end - buf);
        /* The head is not NUL-terminated (it is the guest's bytes as they came): searched by
         * length, never past end, where its last CR LF is. */
        const char *line = buf, *eol = memmem(buf, (size_t)(end - buf), "\r\n", 2);
        const char *sp1 = memchr(line, ' ', (size_t)(eol - line));
        const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
        if (!sp1 || !sp2 || sp1 == line || sp2 == sp1 + 1)
                return bad(ret_why, "the request line is not METHOD URI HTTP/1.1");
        for (const char *c = line; c < sp1; c++)
                if (!tchar(*c))
                        return bad(ret_why, "the method is not a token");
        for (const char *c = sp1 + 1; c < sp2; c++)
                if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
                        return bad(ret_why,
                                   "the request URI holds a space, a control or a non-ASCII byte");
        if (eol - sp2 - 1 != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
            (sp2[8] != '0' && sp2[8] != '1'))
                return bad(ret_why, "only HTTP/1.0 and HTTP/1.1 are spoken here");
        r->minor = sp2[8] - '0';
        r->method = line;
        r->method_len = (size_t)(sp1 - line);
        r->connect = r->method_len == 7 && memcmp(line, "CONNECT", 7) == 0;
        int rc = parse_target(sp1 + 1, (size_t)(sp2 - sp1 - 1), r, tunnel, ret_why);
        if (rc < 0)
                return rc;
        bool have_length = false;
        for (line = eol + 2; line < end - 2; line = eol + 2) {
                eol = memmem(line, (size_t)(end - line), "\r\n", 2);
                if (*line == ' ' || *line == '\t')
                        return bad(ret_why, "a folded header line (obs-fold)");
                const char *colon = memchr(line, ':', (size_t)(eol - line));
                if (!colon || colon == line)
                        return bad(ret_why, "a header line without a name and ':'");
                for (const char *c = line; c < colon; c++)
                        if (!tchar(*c))
                                return bad(ret_why, "a header name that is not a token");
                if (r->n_headers == EGRESS_HEADERS_MAX)
                        return bad(ret_why, "over 100 headers");
                const char *v = colon + 1, *ve = eol;
                while (v < ve && (*v == ' ' || *v == '\t'))
                        v++;
                while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                        ve--;
                for (const char *c = v; c < ve; c++)
                        if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f)
                                return bad(ret_why, "a control character in a header value");
                struct egress_header_view *h = &r->headers[r->n_headers++];
                *h = (struct egress_header_view){line, v, (size_t)(colon - line), (size_t)(ve - v)};
                if (r->connect)
                        continue;
                if (name_is(h, "transfer-encoding"))
                        return bad(ret_why, "Transfer-Encoding on a request: send the body with "
                                            "Content-Length");
                if (name_is(h, "content-length")) {
                        if (have_length)
                                return bad(ret_why, "two Content-Length headers");
                        have_length = true;
                        if (h->value_len == 0 || h->value_len > 15)
                                return bad(ret_why, "Content-Length is not a number");
                        for (size_t k = 0; k < h->value_len; k++) {
                                if (h->value[k] < '0' || h->value[k] > '9')
                                        return bad(ret_why, "Content-Length is not a number");
                                r->content_length =
                                        r->content_length * 10 + (uint64_t)(h->value[k] - '0');
                        }
                }
        }
        return 1;
}

int egress_request_parse(const char *buf, size_t len, struct egress_request *r,
                         const char **ret_why)
{
        return parse_head(buf, len, r, false, ret_why);
}

int egress_tunnel_request_parse(const char *buf, size_t len, const char *host, int kind,
                                unsigned port, struct egress_request *r, const char **ret_why)
{
        int rc = parse_head(buf, len, r, true, ret_why);
        if (rc != 1)
                return rc;
        const struct egress_header_view *named = NULL;
        for (size_t i = 0; i < r->n_headers; i++) {
                if (!name_is(&r->headers[i], "host"))
                        continue;
                if (named)
                        return bad(ret_why, "two Host headers");
                named = &r->headers[i];
        }
        if (!named)
                return bad(ret_why, "no Host header");
        char h[EGRESS_HOST_MAX];
        int h_kind = 0;
        unsigned h_port = 0;
        const char *why = NULL;
        if (egress_authority_parse(named->value, named->value_len, false, h, &h_kind, &h_port,
                                   &why) < 0 ||
            strcmp(h, host) != 0 || (h_port ? h_port != port : port != 443))
                return bad(ret_why, "the Host header does not name the host and port of the "
                                    "tunnel (CONNECT) it came in");
        snprintf(r->host, sizeof(r->host), "%s", host);
        r->kind = kind;
        r->port = port;
        r->port_given = port != 443;
        return 1;
}

/* The headers a proxy must not pass on: its own, the connection's (the proxy closes it), and
 * Host, which the URI decides. */
static bool dropped(const struct egress_header_view *h)
{
        static const char *const names[] = {"host",    "connection", "keep-alive",       "te",
                                            "trailer", "upgrade",    "proxy-connection", NULL};
        if (h->name_len >= 6 && strncasecmp(h->name, "proxy-", 6) == 0)
                return true;
        for (size_t i = 0; names[i]; i++)
                if (name_is(h, names[i]))
                        return true;
        return false;
}

char *egress_request_rewrite(const struct egress_request *r,
                             const struct egress_host_headers *extra, size_t *ret_len)
{
        size_t cap = r->head_len + 512 + EGRESS_HOST_MAX;
        if (extra)
                for (size_t i = 0; i < extra->n; i++)
                        cap += strlen(extra->headers[i].name) + strlen(extra->headers[i].value) + 4;
        char *out = malloc(cap);
        if (!out)
                return NULL;
        size_t n = 0;
        n += (size_t)snprintf(out + n, cap - n, "%.*s %s%.*s HTTP/1.%d\r\nHost: %s%s%s",
                              (int)r->method_len, r->method, r->path_slash ? "/" : "",
                              (int)r->path_len, r->path, r->minor,
                              r->kind == EGRESS_HOST_IPV6 ? "[" : "", r->host,
                              r->kind == EGRESS_HOST_IPV6 ? "]" : "");
        if (r->port_given)
                n += (size_t)snprintf(out + n, cap - n, ":%u", r->port);
        n += (size_t)snprintf(out + n, cap - n, "\r\n");
        for (size_t i = 0; i < r->n_headers; i++) {
                const struct egress_header_view *h = &r->headers[i];
                bool replaced = false;
                for (size_t k = 0; extra && k < extra->n && !replaced; k++)
                        replaced = name_is(h, extra->headers[k].name);
                if (replaced || dropped(h))
                        continue;
                n += (size_t)snprintf(out + n, cap - n, "%.*s: %.*s\r\n", (int)h->name_len, h->name,
                                      (int)h->value_len, h->value);
        }
        for (size_t k = 0; extra && k < extra->n; k++)
                n += (size_t)snprintf(out + n, cap - n, "%s: %s\r\n", extra->headers[k].name,
                                      extra->headers[k].value);
        n += (size_t)snprintf(out + n, cap - n, "Connection: close\r\n\r\n");
        *ret_len = n;
        return out;
}
