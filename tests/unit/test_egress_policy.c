/* A cell's "network" object (issue 31): every refusal at load names its JSON path, the
 * allowlist matches what it says and nothing more, hosts are normalized and the address forms
 * a resolver would also take are refused, secrets are expanded and never shown. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "egress_host.h"
#include "egress_policy.h"

static struct egress_policy *parse(const char *text, codecell_error *err)
{
        json_error_t jerr;
        json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
        if (!j) {
                fprintf(stderr, "bad test JSON: %s: %s\n", text, jerr.text);
                exit(2);
        }
        memset(err, 0, sizeof(*err));
        struct egress_policy *p = egress_policy_parse(j, "cells[0].network", err);
        json_decref(j);
        return p;
}

/* text is refused with a message that starts with want. */
#define REFUSED(text, want)                                                                        \
        do {                                                                                       \
                codecell_error _e;                                                                 \
                struct egress_policy *_p = parse(text, &_e);                                       \
                CHECK(_p == NULL);                                                                 \
                if (_p)                                                                            \
                        egress_policy_free(_p);                                                    \
                else if (strncmp(_e.message, want, strlen(want)) != 0) {                           \
                        fprintf(stderr, "%s:%d: %s\n  got  %s\n  want %s...\n", __FILE__,          \
                                __LINE__, text, _e.message, want);                                 \
                        check_failures++;                                                          \
                }                                                                                  \
        } while (0)

static const char *norm(const char *s, char out[EGRESS_HOST_MAX], int *kind)
{
        const char *why = NULL;
        *kind = egress_host_normalize(s, strlen(s), out, &why);
        return *kind ? out : why;
}

int main(void)
{
        char out[EGRESS_HOST_MAX];
        int kind;
        /* Names: case folded, one root dot dropped, labels and lengths checked. */
        CHECK_STR(norm("API.GitHub.com.", out, &kind), "api.github.com");
        CHECK(kind == EGRESS_HOST_NAME);
        CHECK(!egress_host_normalize("a..b", 4, out, &(const char *){0}));
        CHECK(!egress_host_normalize("a.b..", 5, out, &(const char *){0}));
        CHECK(!egress_host_normalize(".a", 2, out, &(const char *){0}));
        CHECK(!egress_host_normalize("-a.b", 4, out, &(const char *){0}));
        CHECK(!egress_host_normalize("a-.b", 4, out, &(const char *){0}));
        CHECK(!egress_host_normalize("a_b.c", 5, out, &(const char *){0}));
        CHECK(!egress_host_normalize("caf\xc3\xa9.fr", 8, out, &(const char *){0}));
        CHECK_STR(norm("xn--caf-dma.fr", out, &kind), "xn--caf-dma.fr");
        char label[80];
        memset(label, 'a', 64);
        label[64] = '\0';
        CHECK(!egress_host_normalize(label, 64, out, &(const char *){0}));
        CHECK(egress_host_normalize(label, 63, out, &(const char *){0}) == EGRESS_HOST_NAME);
        char longname[300] = "";
        while (strlen(longname) < 250)
                strcat(longname, "abcdefghi.");
        strcat(longname, "comx"); /* 254 */
        CHECK(!egress_host_normalize(longname, strlen(longname), out, &(const char *){0}));
        longname[253] = '\0';
        if (longname[252] == '.')
                longname[252] = 'x';
        CHECK(egress_host_normalize(longname, 253, out, &(const char *){0}) == EGRESS_HOST_NAME);
        /* Addresses: the canonical forms only; what inet_aton would also read is refused. */
        CHECK_STR(norm("127.0.0.1", out, &kind), "127.0.0.1");
        CHECK(kind == EGRESS_HOST_IPV4);
        const char *sly[] = {"127.1",     "2130706433", "0x7f.1",      "0x7f000001",
                             "017.0.0.1", "127.0.0.01", "127.0.0.256", "1.2.3.4.5",
                             "1.2.3",     "0177.0.0.1", "127.0.0.0x1", NULL};
        for (int i = 0; sly[i]; i++) {
                const char *why = NULL;
                if (egress_host_normalize(sly[i], strlen(sly[i]), out, &why)) {
                        fprintf(stderr, "%s taken as a host\n", sly[i]);
                        check_failures++;
                }
        }
        CHECK_STR(norm("2001:DB8::0:1", out, &kind), "2001:db8::1");
        CHECK(kind == EGRESS_HOST_IPV6);
        CHECK_STR(norm("::FFFF:127.0.0.1", out, &kind), "::ffff:127.0.0.1");
        CHECK(!egress_host_normalize("fe80::1%eth0", 12, out, &(const char *){0}));
        CHECK(!egress_host_normalize("1:2:3:4:5:6:7:8:9", 17, out, &(const char *){0}));
        unsigned port;
        const char *why;
        CHECK(egress_authority_parse("[::1]:443", 9, true, out, &kind, &port, &why) == 0 &&
              port == 443);
        CHECK(egress_authority_parse("::1:443", 7, true, out, &kind, &port, &why) < 0);
        CHECK(egress_authority_parse("a.b:0", 5, true, out, &kind, &port, &why) < 0);
        CHECK(egress_authority_parse("a.b:65536", 9, true, out, &kind, &port, &why) < 0);
        CHECK(egress_authority_parse("a.b:65535", 9, true, out, &kind, &port, &why) == 0 &&
              port == 65535);
        CHECK(egress_authority_parse("a.b", 3, true, out, &kind, &port, &why) < 0);
        CHECK(egress_authority_parse("a.b:+80", 7, true, out, &kind, &port, &why) < 0);
        CHECK(egress_authority_parse("[a.b]:80", 8, true, out, &kind, &port, &why) < 0);

        /* Escaping: printable ASCII only out, cut with a mark. */
        char esc[16];
        CHECK_STR(egress_escape("a\r\n\"\xff", 5, esc, sizeof(esc)), "a\\x0d\\x0a...");
        CHECK_STR(egress_escape("abc", 3, esc, sizeof(esc)), "abc");

        /* Every refusal at load, with its path. */
        const char *P = "cells[0].network";
        (void)P;
        REFUSED("[]", "cells[0].network: must be an object");
        REFUSED("{}", "cells[0].network.allow: required");
        REFUSED("{\"allow\": []}", "cells[0].network.allow: must be a non-empty list");
        REFUSED("{\"allow\": \"a.b\"}", "cells[0].network.allow: must be a non-empty list");
        REFUSED("{\"allow\": [1]}", "cells[0].network.allow[0]: must be a string");
        REFUSED("{\"allow\": [\"a.b\", \"https://x\"]}",
                "cells[0].network.allow[1]: \"https://x\" has a scheme");
        REFUSED("{\"allow\": [\"a.b/x\"]}", "cells[0].network.allow[0]: \"a.b/x\" has a path");
        REFUSED("{\"allow\": [\"u@a.b\"]}", "cells[0].network.allow[0]: \"u@a.b\" has userinfo");
        REFUSED("{\"allow\": [\"*\"]}", "cells[0].network.allow[0]: \"*\" is a bare \"*\"");
        REFUSED("{\"allow\": [\"*:443\"]}", "cells[0].network.allow[0]: \"*:443\" is a bare \"*\"");
        REFUSED("{\"allow\": [\"a.*.b\"]}",
                "cells[0].network.allow[0]: \"a.*.b\" has '*' other than");
        REFUSED("{\"allow\": [\"*a.b\"]}",
                "cells[0].network.allow[0]: \"*a.b\" has '*' other than");
        REFUSED("{\"allow\": [\"*.*.b\"]}",
                "cells[0].network.allow[0]: \"*.*.b\" has '*' other than");
        REFUSED("{\"allow\": [\"*.1.2.3.4\"]}",
                "cells[0].network.allow[0]: \"*.1.2.3.4\" is a wildcard over an address");
        REFUSED("{\"allow\": [\"a..b\"]}", "cells[0].network.allow[0]: \"a..b\": empty label");
        REFUSED("{\"allow\": [\"\"]}", "cells[0].network.allow[0]: \"\" is empty");
        REFUSED("{\"allow\": "
                "[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b\"]}",
                "cells[0].network.allow[0]: \"aaaa");
        REFUSED("{\"allow\": [\"a_b.c\"]}",
                "cells[0].network.allow[0]: \"a_b.c\": character outside");
        REFUSED("{\"allow\": [\"a.b:0\"]}",
                "cells[0].network.allow[0]: \"a.b:0\": port outside 1-65535");
        REFUSED("{\"allow\": [\"a.b:70000\"]}", "cells[0].network.allow[0]: \"a.b:70000\": port");
        REFUSED("{\"allow\": [\"a.b:\"]}",
                "cells[0].network.allow[0]: \"a.b:\": port is not a number");
        REFUSED("{\"allow\": [\"127.1\"]}",
                "cells[0].network.allow[0]: \"127.1\": not a canonical IPv4");
        REFUSED("{\"allow\": [\"::1\"]}",
                "cells[0].network.allow[0]: \"::1\": an IPv6 address goes in brackets");
        REFUSED("{\"allow\": [\"[::1\"]}", "cells[0].network.allow[0]: \"[::1\": '[' without ']'");
        REFUSED("{\"allow\": [\"a.b\", \"A.B.\"]}",
                "cells[0].network.allow[1]: \"A.B.\" repeats allow[0]");
        REFUSED("{\"allow\": [\"a.b\"], \"alow\": 1}", "cells[0].network.alow: unknown key");
        REFUSED("{\"allow\": [\"a.b\"], \"methods\": []}",
                "cells[0].network.methods: must be a non-empty list");
        REFUSED("{\"allow\": [\"a.b\"], \"methods\": [\"get\"]}",
                "cells[0].network.methods[0]: \"get\" is not an HTTP method");
        REFUSED("{\"allow\": [\"a.b\"], \"methods\": [\"GET\", \"GET\"]}",
                "cells[0].network.methods[1]: \"GET\" repeats");
        REFUSED("{\"allow\": [\"a.b\"], \"methods\": [\"CONNECT\"]}",
                "cells[0].network.methods[0]: CONNECT");
        REFUSED("{\"allow\": [\"a.b\"], \"bytes\": 0}",
                "cells[0].network.bytes: must be an integer from 1");
        REFUSED("{\"allow\": [\"a.b\"], \"bytes\": \"1\"}",
                "cells[0].network.bytes: must be an integer");
        REFUSED("{\"allow\": [\"a.b\"], \"connections\": 1025}",
                "cells[0].network.connections: must be an integer from 1 to 1024");
        REFUSED("{\"allow\": [\"a.b\"], \"resolve\": []}",
                "cells[0].network.resolve: must be an object");
        REFUSED("{\"allow\": [\"a.b\"], \"resolve\": {\"a.b\": \"c.d\"}}",
                "cells[0].network.resolve.a.b: must be an IP address");
        REFUSED("{\"allow\": [\"a.b\"], \"resolve\": {\"a.b\": \"127.0.0.1:0\"}}",
                "cells[0].network.resolve.a.b: must be an IP address");
        REFUSED("{\"allow\": [\"a.b\"], \"resolve\": {\"1.2.3.4\": \"127.0.0.1\"}}",
                "cells[0].network.resolve: \"1.2.3.4\" is not a host name");
        REFUSED("{\"allow\": [\"a.b\"], \"resolve\": {\"a.b\": \"127.0.0.1\", \"A.B\": "
                "\"127.0.0.2\"}}",
                "cells[0].network.resolve: \"A.B\" is named twice");
        REFUSED("{\"allow\": [\"a.b\"], \"headers\": []}",
                "cells[0].network.headers: must be an object");
        REFUSED("{\"allow\": [\"a.b\"], \"headers\": {\"a.b\": {}}}",
                "cells[0].network.headers.a.b: must be a non-empty object");
        REFUSED("{\"allow\": [\"a.b\"], \"headers\": {\"a.b\": {\"X Y\": \"1\"}}}",
                "cells[0].network.headers.a.b.X Y: not a header name");
        REFUSED("{\"allow\": [\"a.b\"], \"headers\": {\"a.b\": {\"Host\": \"1\"}}}",
                "cells[0].network.headers.a.b.Host: the proxy sets");
        REFUSED("{\"allow\": [\"a.b\"], \"headers\": {\"a.b\": {\"Proxy-Authorization\": \"1\"}}}",
                "cells[0].network.headers.a.b.Proxy-Authorization: the proxy sets");
        REFUSED("{\"allow\": [\"a.b\"], \"headers\": {\"a.b\": {\"X\": 1}}}",
                "cells[0].network.headers.a.b.X: must be a string");
        REFUSED("{\"allow\": [\"a.b\"], \"headers\": {\"a.b\": {\"X\": \"a\\r\\nEvil: 1\"}}}",
                "cells[0].network.headers.a.b.X: the value holds a line break");
        unsetenv("EGRESS_TEST_UNSET");
        REFUSED("{\"allow\": [\"a.b\"], \"headers\": {\"a.b\": {\"X\": \"${EGRESS_TEST_UNSET}\"}}}",
                "cells[0].network.headers.a.b.X: ${EGRESS_TEST_UNSET} is not set in the engine's "
                "environment");
        REFUSED("{\"allow\": [\"a.b\"], \"headers\": {\"a.b\": {\"X\": \"${1A}\"}}}",
                "cells[0].network.headers.a.b.X: \"${\" opens");
        REFUSED("{\"allow\": [\"a.b\"], \"headers\": {\"a.b\": {\"X\": \"${OPEN\"}}}",
                "cells[0].network.headers.a.b.X: \"${\" opens");
        /* Headers for a host the allowlist does not name (a wildcard leaves out its domain). */
        REFUSED("{\"allow\": [\"*.a.b\"], \"headers\": {\"a.b\": {\"X\": \"1\"}}}",
                "cells[0].network.headers.a.b: a.b is not in allow, so its headers would never "
                "be sent");
        /* terminate_tls: a boolean, with headers, for names only. */
        REFUSED("{\"allow\": [\"a.b\"], \"terminate_tls\": 1}",
                "cells[0].network.terminate_tls: must be true or false");
        REFUSED("{\"allow\": [\"a.b\"], \"terminate_tls\": true}",
                "cells[0].network.terminate_tls: there is nothing to terminate");
        REFUSED("{\"allow\": [\"10.0.0.5\"], \"headers\": {\"10.0.0.5\": {\"X\": \"1\"}}, "
                "\"terminate_tls\": true}",
                "cells[0].network.terminate_tls: headers.10.0.0.5 is an address");
        codecell_error terr;
        struct egress_policy *tp = parse("{\"allow\": [\"a.b\"], \"headers\": {\"a.b\": {\"X\": "
                                         "\"1\"}}, \"terminate_tls\": true}",
                                         &terr);
        CHECK(tp && tp->terminate_tls);
        if (tp) {
                json_t *j = egress_policy_to_json(tp);
                CHECK(json_is_true(json_object_get(j, "terminate_tls")));
                json_decref(j);
                struct egress_policy *copy = egress_policy_copy(tp);
                CHECK(copy && copy->terminate_tls);
                egress_policy_free(copy);
                egress_policy_free(tp);
        }
        tp = parse("{\"allow\": [\"a.b\"], \"terminate_tls\": false}", &terr);
        CHECK(tp && !tp->terminate_tls);
        egress_policy_free(tp);
        setenv("EGRESS_TEST_CRLF", "x\r\nEvil: 1", 1);
        codecell_error err;
        struct egress_policy *p = parse(
                "{\"allow\": [\"a.b\"], \"headers\": {\"a.b\": {\"X\": \"${EGRESS_TEST_CRLF}\"}}}",
                &err);
        CHECK(!p && strstr(err.message, "line break") && !strstr(err.message, "Evil"));

        /* A policy that loads: matching, text, JSON. */
        setenv("EGRESS_TEST_TOKEN", "s3cret-value", 1);
        p = parse("{\"allow\": [\"API.github.com\", \"*.wikipedia.org:443\", \"10.0.0.5:8080\", "
                  "\"[2001:db8::1]\"],"
                  " \"methods\": [\"GET\", \"HEAD\"], \"bytes\": 1000, \"connections\": 3,"
                  " \"resolve\": {\"api.example.test\": \"127.0.0.1:8443\", \"v6.example.test\": "
                  "\"[::1]\"},"
                  " \"headers\": {\"api.github.com\": {\"Authorization\": \"Bearer "
                  "${EGRESS_TEST_TOKEN}!\"}}}",
                  &err);
        CHECK(p != NULL);
        if (!p) {
                fprintf(stderr, "%s\n", err.message);
                CHECK_DONE();
        }
        CHECK(egress_policy_allows(p, "api.github.com", 443));
        CHECK(egress_policy_allows(p, "api.github.com", 80));
        CHECK(!egress_policy_allows(p, "api.github.com", 8080));
        CHECK(!egress_policy_allows(p, "x.api.github.com", 443));
        CHECK(!egress_policy_allows(p, "github.com", 443));
        CHECK(egress_policy_allows(p, "en.wikipedia.org", 443));
        CHECK(egress_policy_allows(p, "a.b.wikipedia.org", 443));
        CHECK(!egress_policy_allows(p, "en.wikipedia.org", 80));
        CHECK(!egress_policy_allows(p, "wikipedia.org", 443)); /* subdomains only */
        CHECK(!egress_policy_allows(p, "evilwikipedia.org", 443));
        CHECK(!egress_policy_allows(p, "wikipedia.org.evil.com", 443));
        CHECK(egress_policy_allows(p, "10.0.0.5", 8080));
        CHECK(!egress_policy_allows(p, "10.0.0.5", 80));
        CHECK(egress_policy_allows(p, "2001:db8::1", 443));
        CHECK(p->bytes == 1000 && p->connections == 3);
        CHECK(egress_policy_method_allowed(p, "GET", 3));
        CHECK(!egress_policy_method_allowed(p, "get", 3));
        CHECK(!egress_policy_method_allowed(p, "POST", 4));
        CHECK(!egress_policy_method_allowed(p, "GE", 2));
        const struct egress_host_headers *h = egress_policy_headers(p, "api.github.com");
        CHECK(h && h->n == 1 && strcmp(h->headers[0].value, "Bearer s3cret-value!") == 0);
        CHECK(egress_policy_resolve(p, "api.example.test") &&
              egress_policy_resolve(p, "api.example.test")->port == 8443);
        CHECK(!egress_policy_resolve(p, "api.github.com"));
        const char *text = egress_policy_allowed_text(p);
        CHECK_STR(text, "api.github.com, *.wikipedia.org:443, 10.0.0.5:8080, [2001:db8::1]");
        json_t *j = egress_policy_to_json(p);
        char *dump = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        CHECK_STR(dump, "{\"allow\":[\"api.github.com\",\"*.wikipedia.org:443\",\"10.0.0.5:8080\","
                        "\"[2001:db8::1]\"],"
                        "\"bytes\":1000,\"connections\":3,\"headers\":{\"api.github.com\":["
                        "\"Authorization\"]},"
                        "\"methods\":[\"GET\",\"HEAD\"],\"resolve\":{\"api.example.test\":\"127.0."
                        "0.1:8443\","
                        "\"v6.example.test\":\"[::1]\"}}");
        CHECK(!strstr(dump, "s3cret"));
        free(dump);
        json_decref(j);
        egress_policy_free(p);

        /* Defaults. */
        p = parse("{\"allow\": [\"a.b\"]}", &err);
        CHECK(p && p->bytes == 64ull << 20 && p->connections == 32 && !p->methods);
        CHECK(p && egress_policy_method_allowed(p, "PATCH", 5));
        egress_policy_free(p);
        CHECK_DONE();
}
