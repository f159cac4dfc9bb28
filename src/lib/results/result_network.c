/* The connections a run made through its cell's egress proxy, in its JSON and in what the
 * model reads (docs/results.md, "Network"). */
#include <stdio.h>
#include <string.h>

#include "result.h"
#include "util.h"

void result_take_network(codecell_result *r, json_t *connections)
{
        json_decref(r->network);
        r->network = connections && json_array_size(connections) > 0 ? connections : NULL;
        if (!r->network)
                json_decref(connections);
}

char *codecell_result_network_json(const codecell_result *r)
{
        return r->network ? json_dumps(r->network, JSON_COMPACT) : NULL;
}

int result_set_network(json_t *obj, const codecell_result *r)
{
        if (!r->network)
                return 0;
        return json_object_set(obj, "network", r->network);
}

/* "2 of 3 connections refused: example.org:443 (network access to example.org:443 is not
 * allowed for this cell; allowed: api.github.com), …": only when something was refused, since
 * that is what the model has to act on. At most three are named; each reason is the proxy's
 * own words, cut on a character. */
int result_set_network_summary(json_t *obj, const codecell_result *r)
{
        size_t n = r->network ? json_array_size(r->network) : 0, refused = 0;
        for (size_t i = 0; i < n; i++)
                refused += json_object_get(json_array_get(r->network, i), "refused") != NULL;
        if (refused == 0)
                return 0;
        char text[320];
        size_t len = (size_t)snprintf(text, sizeof(text), "%zu of %zu connection%s refused",
                                      refused, n, n == 1 ? "" : "s");
        size_t named = 0;
        for (size_t i = 0; i < n && named < 3 && len < sizeof(text); i++) {
                const json_t *c = json_array_get(r->network, i);
                const char *why = json_string_value(json_object_get(c, "refused"));
                if (!why)
                        continue;
                const char *host = json_string_value(json_object_get(c, "host"));
                json_int_t port = json_integer_value(json_object_get(c, "port"));
                len += (size_t)snprintf(text + len, sizeof(text) - len, "%s %s:%lld (%s)",
                                        named ? ";" : ":", host ? host : "?", (long long)port, why);
                named++;
        }
        if (named < refused && len < sizeof(text))
                snprintf(text + len, sizeof(text) - len, "; and %zu more", refused - named);
        utf8_trim_cut(text);
        return json_object_set_new(obj, "network_refused", json_string(text));
}
