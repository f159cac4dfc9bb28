/* A cell's network policy: kept as the caller wrote it, an object. What it may hold is the
 * engine's proxy's to check; here only that it is one, so that every cell with a policy, and
 * only those, gets the network walls (proxy_listener.h). */
#include <errno.h>
#include <string.h>

#include "config.h"
#include "egress_policy.h"
#include "error.h"

const json_t *config_network(const codecell_config *c)
{
        return c->network;
}

const struct egress_policy *config_network_policy(const codecell_config *c)
{
        return c->network_policy;
}

int config_set_network_json(codecell_config *c, const json_t *policy, const char *where,
                            codecell_error *err)
{
        if (policy && !json_is_object(policy))
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "%s: must be an object",
                               where ? where : "network");
        struct egress_policy *parsed =
                policy ? egress_policy_parse(policy, where ? where : "network", err) : NULL;
        if (policy && !parsed)
                return -1;
        json_t *copy = policy ? json_deep_copy(policy) : NULL;
        if (policy && !copy) {
                egress_policy_free(parsed);
                return err_sys(err, ENOMEM, "network");
        }
        json_decref(c->network);
        egress_policy_free(c->network_policy);
        c->network = copy;
        c->network_policy = parsed;
        return 0;
}

int codecell_config_set_network(codecell_config *c, const char *json, codecell_error *err)
{
        if (!json)
                return config_set_network_json(c, NULL, NULL, err);
        json_error_t why;
        json_t *policy = json_loads(json, JSON_REJECT_DUPLICATES, &why);
        if (!policy)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                               "network: not JSON (%s at line %d, column %d)", why.text, why.line,
                               why.column);
        int r = config_set_network_json(c, policy, NULL, err);
        json_decref(policy);
        return r;
}
