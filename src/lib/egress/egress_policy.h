/* A cell's "network" object: which hosts and ports its guest may reach through the engine's
 * proxy, with what, and how much per run. Parsed and validated whole when the cell is loaded,
 * every error naming its JSON path; afterwards read-only, so any number of proxies (one per
 * sandbox) share one. Secrets of "headers" are read from the engine's environment at load and
 * never leave this struct except into a request to their host: to_json names the headers,
 * not their values. Who includes it: the egress wing, and whoever makes cells (run, files). */
#ifndef CODECELL_EGRESS_POLICY_H
#define CODECELL_EGRESS_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "codecell.h"
#include "egress_host.h"

#define EGRESS_DEFAULT_BYTES (64ull << 20)
#define EGRESS_DEFAULT_CONNECTIONS 32u
#define EGRESS_MAX_CONNECTIONS 1024u

struct egress_rule {
        char host[EGRESS_HOST_MAX]; /* normalized; the domain of a wildcard, without "*." */
        int kind;                   /* enum egress_host_kind */
        bool wildcard;              /* "*.domain": its subdomains, not the domain itself */
        unsigned port;              /* 0: 80 and 443 */
};

/* An operator's address for a name: connect there, with no lookup and no address check. */
struct egress_resolve {
        char host[EGRESS_HOST_MAX];
        struct sockaddr_storage addr; /* its port 0 when the entry names none */
        socklen_t addr_len;
        unsigned port; /* 0: the port the guest asked for */
        char text[EGRESS_HOST_MAX + 8];
};

struct egress_header {
        char *name;
        char *value; /* expanded: the secret itself */
};

struct egress_host_headers {
        char host[EGRESS_HOST_MAX];
        struct egress_header *headers;
        size_t n;
};

struct egress_policy {
        struct egress_rule *rules;
        size_t n_rules;
        char **methods; /* NULL: every method */
        size_t n_methods;
        uint64_t bytes;       /* per run, each direction */
        unsigned connections; /* per run */
        struct egress_resolve *resolves;
        size_t n_resolves;
        struct egress_host_headers *headers;
        size_t n_headers;
        /* The hosts of headers are reached over HTTPS through the engine's own TLS
         * (egress_tls.h), which adds their headers; otherwise headers go on plain HTTP only. */
        bool terminate_tls;
        /* The allowlist as refusals and the description show it, made once at parse. */
        char *allowed_text;
};

/* network: the cell's "network" object; path: its JSON path for errors ("cells[0].network").
 * NULL with err (CODECELL_ERR_INVALID) on anything wrong: unknown keys, bad patterns, an unset
 * ${NAME}. */
struct egress_policy *egress_policy_parse(const json_t *network, const char *path,
                                          codecell_error *err);
void egress_policy_free(struct egress_policy *p);
/* A copy of p, its secrets with it (not read from the environment again, which may have
 * changed since); NULL when out of memory. */
struct egress_policy *egress_policy_copy(const struct egress_policy *p);

/* Whether host (normalized by egress_host_normalize) at port is in the allowlist. */
bool egress_policy_allows(const struct egress_policy *p, const char *host, unsigned port);
/* The allowlist as the model reads it, "api.github.com, *.wikipedia.org:443" (the policy's). */
const char *egress_policy_allowed_text(const struct egress_policy *p);
/* The policy normalized, as the description or `describe --json` may show it: header names,
 * never their values. */
json_t *egress_policy_to_json(const struct egress_policy *p);

/* For the proxy. The resolve entry of host, or NULL. */
const struct egress_resolve *egress_policy_resolve(const struct egress_policy *p, const char *host);
/* Whether the allowlist names this exact address at this port ("10.0.0.5:8080"): then it is
 * reached even when it is private. Only there, at that port: a name that resolves to it is
 * still refused, or one allowed literal would open the address to every allowed name. A
 * resolve entry's address is reached through its own name only (egress_policy_resolve). */
bool egress_policy_names_address(const struct egress_policy *p, const struct sockaddr *sa,
                                 unsigned port);
/* Whether plain HTTP may use method (case-sensitive, as HTTP's are). */
bool egress_policy_method_allowed(const struct egress_policy *p, const char *method, size_t len);
/* The headers the proxy adds to requests to host (plain HTTP, and HTTPS when terminate_tls),
 * or NULL. */
const struct egress_host_headers *egress_policy_headers(const struct egress_policy *p,
                                                        const char *host);

#endif
