#include "run_network.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress.h"
#include "error.h"
#include "result.h"

/* Closes, unanswered, the connections the guest opened while no execution was running (a
 * session's code between evals): they belong to no run, and are not served by the next. */
static void drop_waiting(int listen_fd)
{
        /* Non-blocking, so that a connection gone before its accept cannot hold the run. */
        int flags = fcntl(listen_fd, F_GETFL);
        if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return;
        struct pollfd p = {.fd = listen_fd, .events = POLLIN};
        for (int i = 0; i < 4096 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN); i++) {
                int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (c < 0)
                        break;
                close(c);
        }
}

struct egress *run_network_begin(const codecell_config *c, const struct egress_tls *tls,
                                 int proxy_fd, double deadline_ms, bool *ret_failed,
                                 codecell_error *err)
{
        *ret_failed = false;
        const struct egress_policy *policy = config_network_policy(c);
        if (!policy || proxy_fd < 0)
                return NULL;
        /* The sandbox keeps its listener for its next execution (a session's next eval): the
         * proxy gets a copy of its own, which it closes when the execution ends. */
        drop_waiting(proxy_fd);
        int fd = fcntl(proxy_fd, F_DUPFD_CLOEXEC, 3);
        struct egress *e = fd < 0 ? NULL : egress_start(policy, tls, fd, NULL, NULL, err);
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
