#include "egress_policy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error.h"
#include "json_file.h"
#include "util.h"

#define QUOTE_MAX 120

static const char *quote(const char *s, char buf[QUOTE_MAX])
{
        return egress_escape(s, strlen(s), buf, QUOTE_MAX);
}

static int invalid(codecell_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int invalid(codecell_error *err, const char *fmt, ...)
{
        char msg[sizeof(err->message)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return err_set(err, CODECELL_ERR_INVALID, EINVAL, "%s", msg);
}

static char *allowed_text(const struct egress_policy *p);

void egress_policy_free(struct egress_policy *p)
{
        if (!p)
                return;
        free(p->rules);
        for (size_t i = 0; i < p->n_methods; i++)
                free(p->methods[i]);
        free(p->methods);
        free(p->resolves);
        for (size_t i = 0; i < p->n_headers; i++) {
                for (size_t k = 0; k < p->headers[i].n; k++) {
                        free(p->headers[i].headers[k].name);
                        if (p->headers[i].headers[k].value) {
                                /* A secret does not outlive its policy in freed memory. */
                                explicit_bzero(p->headers[i].headers[k].value,
                                               strlen(p->headers[i].headers[k].value));
                                free(p->headers[i].headers[k].value);
                        }
                }
                free(p->headers[i].headers);
        }
        free(p->headers);
        free(p->allowed_text);
        free(p);
}

/* n elements of size each, copied; NULL for none (and for no memory: *bad then). */
static void *copy_array(const void *a, size_t n, size_t size, bool *bad)
{
        if (!n)
                return NULL;
        void *c = malloc(n * size);
        if (!c)
                *bad = true;
        else
                memcpy(c, a, n * size);
        return c;
}

struct egress_policy *egress_policy_copy(const struct egress_policy *p)
{
        struct egress_policy *c = calloc(1, sizeof(*c));
        if (!c)
                return NULL;
        bool bad = false;
        *c = *p;
        c->methods = NULL;
        c->headers = NULL;
        c->allowed_text = p->allowed_text ? strdup(p->allowed_text) : NULL;
        bad |= p->allowed_text && !c->allowed_text;
        c->n_methods = c->n_headers = 0;
        c->rules = copy_array(p->rules, p->n_rules, sizeof(*p->rules), &bad);
        c->resolves = copy_array(p->resolves, p->n_resolves, sizeof(*p->resolves), &bad);
        if (p->n_methods && !bad && (c->methods = calloc(p->n_methods, sizeof(char *))))
                for (; c->n_methods < p->n_methods; c->n_methods++)
                        bad |= !(c->methods[c->n_methods] = strdup(p->methods[c->n_methods]));
        bad |= p->n_methods && !c->methods;
        if (p->n_headers && !bad && (c->headers = calloc(p->n_headers, sizeof(*c->headers))))
                for (; !bad && c->n_headers < p->n_headers; c->n_headers++) {
                        const struct egress_host_headers *from = &p->headers[c->n_headers];
                        struct egress_host_headers *to = &c->headers[c->n_headers];
                        memcpy(to->host, from->host, sizeof(to->host));
                        to->headers = calloc(from->n ? from->n : 1, sizeof(*to->headers));
                        bad |= !to->headers;
                        for (; !bad && to->n < from->n; to->n++) {
                                to->headers[to->n].name = strdup(from->headers[to->n].name);
                                to->headers[to->n].value = strdup(from->headers[to->n].value);
                                bad |= !to->headers[to->n].name || !to->headers[to->n].value;
                        }
                }
        bad |= p->n_headers && !c->headers;
        if (bad) {
                egress_policy_free(c);
                return NULL;
        }
        return c;
}

static int parse_rule(const char *s, struct egress_rule *r, const char **ret_why)
{
        if (!*s) {
                *ret_why = "is empty";
                return -1;
        }
        if (strstr(s, "://")) {
                *ret_why = "has a scheme (write the host alone, with :port if need be)";
                return -1;
        }
        if (strchr(s, '/')) {
                *ret_why = "has a path (the allowlist names hosts and ports only)";
                return -1;
        }
        if (strchr(s, '@')) {
                *ret_why = "has userinfo (the allowlist names hosts and ports only)";
                return -1;
        }
        if (strcmp(s, "*") == 0 || strncmp(s, "*:", 2) == 0) {
                *ret_why = "is a bare \"*\" (name each host, or \"*.domain\" for its subdomains)";
                return -1;
        }
        const char *rest = s;
        r->wildcard = false;
        if (strncmp(s, "*.", 2) == 0) {
                r->wildcard = true;
                rest = s + 2;
        }
        if (strchr(rest, '*')) {
                *ret_why = "has '*' other than a leading \"*.\"";
                return -1;
        }
        if (egress_authority_parse(rest, strlen(rest), false, r->host, &r->kind, &r->port,
                                   ret_why) < 0)
                return -1;
        if (r->wildcard && r->kind != EGRESS_HOST_NAME) {
                *ret_why = "is a wildcard over an address (\"*.\" covers names only)";
                return -1;
        }
        return 0;
}

static int parse_allow(struct egress_policy *p, const json_t *allow, const char *path,
                       codecell_error *err)
{
        char q[QUOTE_MAX];
        if (!allow)
                return invalid(err, "%s.allow: required (a list of hosts, as \"api.github.com\")",
                               path);
        if (!json_is_array(allow) || json_array_size(allow) == 0)
                return invalid(err, "%s.allow: must be a non-empty list of hosts", path);
        p->rules = calloc(json_array_size(allow), sizeof(*p->rules));
        if (!p->rules)
                return err_sys(err, ENOMEM, "%s.allow", path);
        size_t i;
        json_t *v;
        json_array_foreach(allow, i, v) {
                if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
                        return invalid(err, "%s.allow[%zu]: must be a string", path, i);
                const char *s = json_string_value(v), *why = NULL;
                struct egress_rule *r = &p->rules[i];
                if (parse_rule(s, r, &why) < 0)
                        return invalid(err, "%s.allow[%zu]: \"%s\"%s%s", path, i, quote(s, q),
                                       strncmp(why, "is ", 3) == 0 || strncmp(why, "has ", 4) == 0
                                               ? " "
                                               : ": ",
                                       why);
                for (size_t k = 0; k < i; k++)
                        if (p->rules[k].wildcard == r->wildcard && p->rules[k].port == r->port &&
                            strcmp(p->rules[k].host, r->host) == 0)
                                return invalid(err, "%s.allow[%zu]: \"%s\" repeats allow[%zu]",
                                               path, i, quote(s, q), k);
                p->n_rules = i + 1;
        }
        return 0;
}

static bool is_tchar(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int parse_methods(struct egress_policy *p, const json_t *methods, const char *path,
                         codecell_error *err)
{
        char q[QUOTE_MAX];
        if (!json_is_array(methods) || json_array_size(methods) == 0)
                return invalid(err,
                               "%s.methods: must be a non-empty list of HTTP methods, as [\"GET\"]",
                               path);
        p->methods = calloc(json_array_size(methods), sizeof(char *));
        if (!p->methods)
                return err_sys(err, ENOMEM, "%s.methods", path);
        size_t i;
        json_t *v;
        json_array_foreach(methods, i, v) {
                if (!json_is_string(v))
                        return invalid(err, "%s.methods[%zu]: must be a string", path, i);
                const char *m = json_string_value(v);
                size_t n = json_string_length(v);
                bool ok = n > 0 && n <= 32 && strlen(m) == n;
                for (size_t k = 0; ok && k < n; k++)
                        ok = m[k] >= 'A' && m[k] <= 'Z';
                if (!ok)
                        return invalid(err,
                                       "%s.methods[%zu]: \"%s\" is not an HTTP method (capital "
                                       "letters, as \"GET\")",
                                       path, i, quote(m, q));
                if (strcmp(m, "CONNECT") == 0)
                        return invalid(err,
                                       "%s.methods[%zu]: CONNECT is how HTTPS goes; methods limits "
                                       "plain HTTP only",
                                       path, i);
                for (size_t k = 0; k < i; k++)
                        if (strcmp(p->methods[k], m) == 0)
                                return invalid(err, "%s.methods[%zu]: \"%s\" repeats methods[%zu]",
                                               path, i, m, k);
                if (!(p->methods[i] = strdup(m)))
                        return err_sys(err, ENOMEM, "%s.methods", path);
                p->n_methods = i + 1;
        }
        return 0;
}

static int parse_count(const json_t *v, const char *path, const char *key, uint64_t max,
                       uint64_t *ret, codecell_error *err)
{
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            (uint64_t)json_integer_value(v) > max)
                return invalid(err, "%s.%s: must be an integer from 1 to %llu", path, key,
                               (unsigned long long)max);
        *ret = (uint64_t)json_integer_value(v);
        return 0;
}

static int parse_resolve(struct egress_policy *p, const json_t *resolve, const char *path,
                         codecell_error *err)
{
        char q[QUOTE_MAX];
        if (!json_is_object(resolve))
                return invalid(err,
                               "%s.resolve: must be an object of names and addresses, as "
                               "{\"api.example.test\": \"127.0.0.1:8443\"}",
                               path);
        p->resolves = calloc(json_object_size(resolve) + 1, sizeof(*p->resolves));
        if (!p->resolves)
                return err_sys(err, ENOMEM, "%s.resolve", path);
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)resolve, key, v) {
                struct egress_resolve *r = &p->resolves[p->n_resolves];
                const char *why = NULL;
                if (egress_host_normalize(key, strlen(key), r->host, &why) != EGRESS_HOST_NAME)
                        return invalid(err, "%s.resolve: \"%s\" is not a host name%s%s", path,
                                       quote(key, q), why ? ": " : "", why ? why : "");
                for (size_t k = 0; k < p->n_resolves; k++)
                        if (strcmp(p->resolves[k].host, r->host) == 0)
                                return invalid(err, "%s.resolve: \"%s\" is named twice", path,
                                               quote(key, q));
                const char *s = json_is_string(v) ? json_string_value(v) : NULL;
                char addr[EGRESS_HOST_MAX];
                int kind = 0;
                if (!s ||
                    egress_authority_parse(s, strlen(s), false, addr, &kind, &r->port, &why) < 0 ||
                    kind == EGRESS_HOST_NAME)
                        return invalid(err,
                                       "%s.resolve.%s: must be an IP address with an optional "
                                       "port, as \"127.0.0.1:8443\" or \"[::1]:8443\"",
                                       path, quote(key, q));
                if (kind == EGRESS_HOST_IPV4) {
                        struct sockaddr_in *in = (struct sockaddr_in *)&r->addr;
                        in->sin_family = AF_INET;
                        (void)inet_pton(AF_INET, addr, &in->sin_addr);
                        r->addr_len = sizeof(*in);
                        snprintf(r->text, sizeof(r->text), "%s", addr);
                } else {
                        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&r->addr;
                        in6->sin6_family = AF_INET6;
                        (void)inet_pton(AF_INET6, addr, &in6->sin6_addr);
                        r->addr_len = sizeof(*in6);
                        snprintf(r->text, sizeof(r->text), "[%s]", addr);
                }
                if (r->port)
                        snprintf(r->text + strlen(r->text), sizeof(r->text) - strlen(r->text),
                                 ":%u", r->port);
                p->n_resolves++;
        }
        return 0;
}

/* "Bearer ${TOKEN}" with each ${NAME} taken from the engine's environment. */
static int expand_value(const char *s, const char *where, char **ret, codecell_error *err)
{
        size_t cap = strlen(s) + 1, len = 0;
        char *out = malloc(cap);
        if (!out)
                return err_sys(err, ENOMEM, "%s", where);
        for (const char *c = s; *c;) {
                const char *piece = c;
                size_t n = 1;
                char name[128];
                if (c[0] == '$' && c[1] == '{') {
                        const char *end = strchr(c + 2, '}');
                        size_t nl = end ? (size_t)(end - c - 2) : 0;
                        bool ok =
                                end && nl > 0 && nl < sizeof(name) && !(c[2] >= '0' && c[2] <= '9');
                        for (size_t k = 0; ok && k < nl; k++)
                                ok = c[2 + k] == '_' || (c[2 + k] >= 'A' && c[2 + k] <= 'Z') ||
                                     (c[2 + k] >= 'a' && c[2 + k] <= 'z') ||
                                     (c[2 + k] >= '0' && c[2 + k] <= '9');
                        if (!ok) {
                                free(out);
                                return invalid(err,
                                               "%s: \"${\" opens a variable name "
                                               "([A-Za-z_][A-Za-z0-9_]*) that \"}\" closes",
                                               where);
                        }
                        memcpy(name, c + 2, nl);
                        name[nl] = '\0';
                        piece = getenv(name);
                        if (!piece) {
                                free(out);
                                return invalid(err,
                                               "%s: ${%s} is not set in the engine's environment",
                                               where, name);
                        }
                        n = strlen(piece);
                        c = end + 1;
                } else {
                        c++;
                }
                if (len + n + 1 > cap) {
                        cap = (len + n + 1) * 2;
                        char *bigger = realloc(out, cap);
                        if (!bigger) {
                                explicit_bzero(out, len);
                                free(out);
                                return err_sys(err, ENOMEM, "%s", where);
                        }
                        out = bigger;
                }
                memcpy(out + len, piece, n);
                len += n;
        }
        out[len] = '\0';
        for (size_t k = 0; k < len; k++) {
                unsigned char ch = (unsigned char)out[k];
                if (ch == '\r' || ch == '\n' || ch == '\0' || (ch < 0x20 && ch != '\t') ||
                    ch == 0x7f) {
                        /* The message names the header, never the value: it may be a secret. */
                        explicit_bzero(out, len);
                        free(out);
                        return invalid(err,
                                       "%s: the value holds a line break or a control character",
                                       where);
                }
        }
        *ret = out;
        return 0;
}

static const char *const reserved_headers[] = {
        "host", "content-length", "transfer-encoding", "connection", "keep-alive",
        "te",   "trailer",        "upgrade",           "expect",     NULL,
};

static int parse_headers(struct egress_policy *p, const json_t *headers, const char *path,
                         codecell_error *err)
{
        char q[QUOTE_MAX], where[400];
        if (!json_is_object(headers))
                return invalid(
                        err,
                        "%s.headers: must be an object of hosts, each an object of headers, as "
                        "{\"api.example.test\": {\"Authorization\": \"Bearer ${TOKEN}\"}}",
                        path);
        p->headers = calloc(json_object_size(headers) + 1, sizeof(*p->headers));
        if (!p->headers)
                return err_sys(err, ENOMEM, "%s.headers", path);
        const char *host;
        json_t *set;
        json_object_foreach((json_t *)headers, host, set) {
                struct egress_host_headers *h = &p->headers[p->n_headers];
                const char *why = NULL;
                if (!egress_host_normalize(host, strlen(host), h->host, &why))
                        return invalid(err, "%s.headers: \"%s\" is not a host: %s", path,
                                       quote(host, q), why);
                for (size_t k = 0; k < p->n_headers; k++)
                        if (strcmp(p->headers[k].host, h->host) == 0)
                                return invalid(err, "%s.headers: \"%s\" is named twice", path,
                                               quote(host, q));
                p->n_headers++;
                if (!json_is_object(set) || json_object_size(set) == 0)
                        return invalid(err,
                                       "%s.headers.%s: must be a non-empty object of header names "
                                       "and values",
                                       path, quote(host, q));
                h->headers = calloc(json_object_size(set), sizeof(*h->headers));
                if (!h->headers)
                        return err_sys(err, ENOMEM, "%s.headers", path);
                const char *name;
                json_t *value;
                json_object_foreach(set, name, value) {
                        snprintf(where, sizeof(where), "%s.headers.%s.%s", path, h->host,
                                 quote(name, q));
                        utf8_trim_cut(where);
                        bool ok = *name && strlen(name) <= 64;
                        for (const char *c = name; ok && *c; c++)
                                ok = is_tchar(*c);
                        if (!ok)
                                return invalid(err, "%s: not a header name", where);
                        for (size_t k = 0; reserved_headers[k]; k++)
                                if (strcasecmp(name, reserved_headers[k]) == 0 ||
                                    strncasecmp(name, "proxy-", 6) == 0)
                                        return invalid(err, "%s: the proxy sets this header itself",
                                                       where);
                        for (size_t k = 0; k < h->n; k++)
                                if (strcasecmp(h->headers[k].name, name) == 0)
                                        return invalid(err, "%s: named twice", where);
                        if (!json_is_string(value) ||
                            strlen(json_string_value(value)) != json_string_length(value))
                                return invalid(err, "%s: must be a string", where);
                        struct egress_header *hd = &h->headers[h->n];
                        if (!(hd->name = strdup(name)))
                                return err_sys(err, ENOMEM, "%s", where);
                        h->n++;
                        if (expand_value(json_string_value(value), where, &hd->value, err) < 0)
                                return -1;
                }
        }
        return 0;
}

/* terminate_tls: a boolean, true only with headers, and those for names: a certificate is
 * made for each, and an address has no name a TLS client would check. */
static int parse_terminate_tls(struct egress_policy *p, const json_t *v, const char *path,
                               codecell_error *err)
{
        if (!json_is_boolean(v))
                return invalid(err, "%s.terminate_tls: must be true or false", path);
        p->terminate_tls = json_is_true(v);
        if (!p->terminate_tls)
                return 0;
        if (p->n_headers == 0)
                return invalid(err,
                               "%s.terminate_tls: there is nothing to terminate: it adds the "
                               "headers of \"headers\" to HTTPS requests, and there are none",
                               path);
        for (size_t i = 0; i < p->n_headers; i++) {
                char host[EGRESS_HOST_MAX];
                const char *why = NULL;
                if (egress_host_normalize(p->headers[i].host, strlen(p->headers[i].host), host,
                                          &why) != EGRESS_HOST_NAME)
                        return invalid(err,
                                       "%s.terminate_tls: headers.%s is an address, and TLS is "
                                       "terminated only for names; its headers go on plain HTTP",
                                       path, p->headers[i].host);
        }
        return 0;
}

/* Headers for a host the allowlist does not name would never be sent: an operator's mistake
 * (a typo, a wildcard that leaves out its own domain) that would otherwise show only as the
 * server's 401. */
static int check_headers_allowed(const struct egress_policy *p, const char *path,
                                 codecell_error *err)
{
        for (size_t i = 0; i < p->n_headers; i++) {
                const char *host = p->headers[i].host;
                bool allowed = false;
                for (size_t k = 0; k < p->n_rules && !allowed; k++)
                        allowed = egress_policy_allows(p, host,
                                                       p->rules[k].port ? p->rules[k].port : 443) ||
                                  egress_policy_allows(p, host, 80);
                if (!allowed)
                        return invalid(err,
                                       "%s.headers.%s: %s is not in allow, so its headers would "
                                       "never be sent",
                                       path, host, host);
        }
        return 0;
}

struct egress_policy *egress_policy_parse(const json_t *network, const char *path,
                                          codecell_error *err)
{
        static const char *const known[] = {"allow",   "methods", "bytes",         "connections",
                                            "resolve", "headers", "terminate_tls", NULL};
        char problem[300];
        if (!json_is_object(network)) {
                invalid(err, "%s: must be an object, as {\"allow\": [\"api.github.com\"]}", path);
                return NULL;
        }
        const char *unknown = json_unknown_key(network, known);
        if (unknown) {
                invalid(err, "%s.%s: %s", path, unknown,
                        json_unknown_key_problem("key", unknown, known, problem, sizeof(problem)));
                return NULL;
        }
        struct egress_policy *p = calloc(1, sizeof(*p));
        if (!p) {
                err_sys(err, ENOMEM, "%s", path);
                return NULL;
        }
        p->bytes = EGRESS_DEFAULT_BYTES;
        p->connections = EGRESS_DEFAULT_CONNECTIONS;
        uint64_t n;
        const json_t *v;
        if (parse_allow(p, json_object_get(network, "allow"), path, err) < 0)
                goto fail;
        if ((v = json_object_get(network, "methods")) && parse_methods(p, v, path, err) < 0)
                goto fail;
        if ((v = json_object_get(network, "bytes"))) {
                if (parse_count(v, path, "bytes", (uint64_t)1 << 50, &n, err) < 0)
                        goto fail;
                p->bytes = n;
        }
        if ((v = json_object_get(network, "connections"))) {
                if (parse_count(v, path, "connections", EGRESS_MAX_CONNECTIONS, &n, err) < 0)
                        goto fail;
                p->connections = (unsigned)n;
        }
        if ((v = json_object_get(network, "resolve")) && parse_resolve(p, v, path, err) < 0)
                goto fail;
        if ((v = json_object_get(network, "headers")) && parse_headers(p, v, path, err) < 0)
                goto fail;
        if ((v = json_object_get(network, "terminate_tls")) &&
            parse_terminate_tls(p, v, path, err) < 0)
                goto fail;
        if (check_headers_allowed(p, path, err) < 0)
                goto fail;
        if (!(p->allowed_text = allowed_text(p))) {
                err_sys(err, ENOMEM, "%s", path);
                goto fail;
        }
        return p;
fail:
        egress_policy_free(p);
        return NULL;
}

static bool port_matches(const struct egress_rule *r, unsigned port)
{
        return r->port ? r->port == port : port == 80 || port == 443;
}

bool egress_policy_allows(const struct egress_policy *p, const char *host, unsigned port)
{
        size_t hl = strlen(host);
        for (size_t i = 0; i < p->n_rules; i++) {
                const struct egress_rule *r = &p->rules[i];
                if (!port_matches(r, port))
                        continue;
                if (!r->wildcard) {
                        if (strcmp(r->host, host) == 0)
                                return true;
                        continue;
                }
                size_t dl = strlen(r->host);
                if (hl > dl + 1 && host[hl - dl - 1] == '.' && strcmp(host + hl - dl, r->host) == 0)
                        return true;
        }
        return false;
}

static void rule_text(const struct egress_rule *r, char *buf, size_t size)
{
        if (r->kind == EGRESS_HOST_IPV6)
                snprintf(buf, size, "[%s]", r->host);
        else
                snprintf(buf, size, "%s%s", r->wildcard ? "*." : "", r->host);
        if (r->port)
                snprintf(buf + strlen(buf), size - strlen(buf), ":%u", r->port);
}

const char *egress_policy_allowed_text(const struct egress_policy *p)
{
        return p->allowed_text;
}

static char *allowed_text(const struct egress_policy *p)
{
        size_t cap = p->n_rules * (EGRESS_HOST_MAX + 16) + 1;
        char *out = malloc(cap), one[EGRESS_HOST_MAX + 16];
        if (!out)
                return NULL;
        out[0] = '\0';
        size_t len = 0;
        for (size_t i = 0; i < p->n_rules; i++) {
                rule_text(&p->rules[i], one, sizeof(one));
                len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? ", " : "", one);
        }
        return out;
}

json_t *egress_policy_to_json(const struct egress_policy *p)
{
        char one[EGRESS_HOST_MAX + 16];
        json_t *o = json_object(), *allow = json_array();
        json_object_set_new(o, "allow", allow);
        for (size_t i = 0; i < p->n_rules; i++) {
                rule_text(&p->rules[i], one, sizeof(one));
                json_array_append_new(allow, json_string(one));
        }
        if (p->methods) {
                json_t *m = json_array();
                for (size_t i = 0; i < p->n_methods; i++)
                        json_array_append_new(m, json_string(p->methods[i]));
                json_object_set_new(o, "methods", m);
        }
        json_object_set_new(o, "bytes", json_integer((json_int_t)p->bytes));
        json_object_set_new(o, "connections", json_integer(p->connections));
        if (p->n_resolves) {
                json_t *r = json_object();
                for (size_t i = 0; i < p->n_resolves; i++)
                        json_object_set_new(r, p->resolves[i].host,
                                            json_string(p->resolves[i].text));
                json_object_set_new(o, "resolve", r);
        }
        if (p->n_headers) {
                json_t *h = json_object();
                for (size_t i = 0; i < p->n_headers; i++) {
                        json_t *names = json_array();
                        for (size_t k = 0; k < p->headers[i].n; k++)
                                json_array_append_new(names,
                                                      json_string(p->headers[i].headers[k].name));
                        json_object_set_new(h, p->headers[i].host, names);
                }
                json_object_set_new(o, "headers", h);
        }
        if (p->terminate_tls)
                json_object_set_new(o, "terminate_tls", json_true());
        return o;
}

const struct egress_resolve *egress_policy_resolve(const struct egress_policy *p, const char *host)
{
        for (size_t i = 0; i < p->n_resolves; i++)
                if (strcmp(p->resolves[i].host, host) == 0)
                        return &p->resolves[i];
        return NULL;
}

static bool same_address(const struct sockaddr *a, const struct sockaddr *b)
{
        if (a->sa_family != b->sa_family)
                return false;
        if (a->sa_family == AF_INET)
                return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
                       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
        if (a->sa_family == AF_INET6)
                return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                              &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
        return false;
}

bool egress_policy_names_address(const struct egress_policy *p, const struct sockaddr *sa,
                                 unsigned port)
{
        for (size_t i = 0; i < p->n_rules; i++) {
                const struct egress_rule *r = &p->rules[i];
                struct sockaddr_storage ss = {0};
                if (r->kind == EGRESS_HOST_IPV4) {
                        ss.ss_family = AF_INET;
                        (void)inet_pton(AF_INET, r->host, &((struct sockaddr_in *)&ss)->sin_addr);
                } else if (r->kind == EGRESS_HOST_IPV6) {
                        ss.ss_family = AF_INET6;
                        (void)inet_pton(AF_INET6, r->host,
                                        &((struct sockaddr_in6 *)&ss)->sin6_addr);
                } else {
                        continue;
                }
                if (port_matches(r, port) && same_address((const struct sockaddr *)&ss, sa))
                        return true;
        }
        return false;
}

bool egress_policy_method_allowed(const struct egress_policy *p, const char *method, size_t len)
{
        if (!p->methods)
                return true;
        for (size_t i = 0; i < p->n_methods; i++)
                if (strlen(p->methods[i]) == len && memcmp(p->methods[i], method, len) == 0)
                        return true;
        return false;
}

const struct egress_host_headers *egress_policy_headers(const struct egress_policy *p,
                                                        const char *host)
{
        for (size_t i = 0; i < p->n_headers; i++)
                if (strcmp(p->headers[i].host, host) == 0)
                        return &p->headers[i];
        return NULL;
}
