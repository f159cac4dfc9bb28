#include "run_network.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "egress.h"
#include "error.h"
#include "result.h"

struct egress *run_network_begin(const codecell_config *c, int proxy_fd, double deadline_ms,
                                 bool *ret_failed, codecell_error *err)
{
        *ret_failed = false;
        const struct egress_policy *policy = config_network_policy(c);
        if (!policy || proxy_fd < 0)
                return NULL;
        /* The sandbox keeps its listener for its next execution (a session's next eval): the
         * proxy gets a copy of its own, which it closes when the execution ends. */
        int fd = fcntl(proxy_fd, F_DUPFD_CLOEXEC, 3);
        struct egress *e = fd < 0 ? NULL : egress_start(policy, fd, NULL, NULL, err);
        if (fd < 0)
                err_sys(err, errno, "network: the proxy's listener");
        if (!e) {
                *ret_failed = true;
                return NULL;
        }
        egress_run_begin(e, deadline_ms);
        return e;
}

void run_network_end(struct egress *e, codecell_result *res)
{
        if (!e)
                return;
        result_take_network(res, egress_run_end(e));
        egress_stop(e);
}
