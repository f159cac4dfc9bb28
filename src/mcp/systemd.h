/* The two systemd protocols `codecell serve` speaks, without libsystemd: socket activation
 * (sd_listen_fds(3): LISTEN_FDS, LISTEN_PID) and readiness (sd_notify(3): NOTIFY_SOCKET). */
#ifndef CODECELL_MCP_SYSTEMD_H
#define CODECELL_MCP_SYSTEMD_H

#include <stddef.h>

struct systemd_env {
        int listen_fd;    /* the socket passed to this process, or -1 */
        char notify[108]; /* NOTIFY_SOCKET ("" when unset): a path, or "@name" (abstract) */
        char address[80]; /* listen_fd's address as [ADDR:]PORT text ("127.0.0.1:8080") */
};

/* Takes what the service manager passed and removes it from the environment, so that host-tool
 * commands started later neither see nor use it; call before any thread starts (unsetenv).
 * 0, or -EINVAL when LISTEN_FDS names other than one socket, -ENOTSOCK when fd 3 is not a
 * listening TCP socket; ret is filled either way (listen_fd -1 on error). */
int systemd_env_take(struct systemd_env *ret);

/* Sends one state ("READY=1", "STOPPING=1", "STATUS=…") to NOTIFY_SOCKET; nothing when unset.
 * A failure is ignored on purpose: the service manager's timeout reports it. */
void systemd_notify(const struct systemd_env *env, const char *state);

#endif
