/* Socket activation and readiness notification, the two pieces of libsystemd that a service
 * needs, written out: a dependency for two getenv calls and a datagram would not pay its way. */
#include "systemd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define SD_LISTEN_FDS_START 3

/* The [ADDR:]PORT text of a listening TCP socket, in the form --http takes. */
static int socket_address(int fd, char *buf, size_t size)
{
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        int listening = 0, type = 0;
        socklen_t olen = sizeof(int);
        if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
                return -errno;
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &olen) < 0 || !listening)
                return -ENOTSOCK;
        olen = sizeof(int);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &olen) < 0 || type != SOCK_STREAM)
                return -ENOTSOCK;
        char host[INET6_ADDRSTRLEN];
        if (ss.ss_family == AF_INET) {
                struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
                inet_ntop(AF_INET, &v4->sin_addr, host, sizeof(host));
                snprintf(buf, size, "%s:%u", host, ntohs(v4->sin_port));
        } else if (ss.ss_family == AF_INET6) {
                struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
                inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
                snprintf(buf, size, "[%s]:%u", host, ntohs(v6->sin6_port));
        } else {
                return -ENOTSOCK; /* a unix socket: the Host and Origin checks need an address */
        }
        return 0;
}

int systemd_env_take(struct systemd_env *ret)
{
        *ret = (struct systemd_env){.listen_fd = -1};
        const char *notify = getenv("NOTIFY_SOCKET");
        if (notify && strlen(notify) < sizeof(ret->notify))
                strcpy(ret->notify, notify);
        const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
        /* Meant for us only when LISTEN_PID is our pid: a parent's, inherited, is not. */
        bool ours = pid && fds && strtol(pid, NULL, 10) == (long)getpid();
        int r = 0;
        if (ours) {
                if (strcmp(fds, "1") != 0) {
                        r = -EINVAL;
                } else {
                        r = socket_address(SD_LISTEN_FDS_START, ret->address, sizeof(ret->address));
                        /* Passed without close-on-exec: host-tool commands must not hold it. */
                        if (r == 0 && fcntl(SD_LISTEN_FDS_START, F_SETFD, FD_CLOEXEC) == 0)
                                ret->listen_fd = SD_LISTEN_FDS_START;
                        else if (r == 0)
                                r = -errno;
                }
        }
        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_FDNAMES");
        unsetenv("NOTIFY_SOCKET");
        return r;
}

void systemd_notify(const struct systemd_env *env, const char *state)
{
        if (!env->notify[0])
                return;
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        size_t n = strlen(env->notify);
        if (n >= sizeof(sa.sun_path) || (env->notify[0] != '/' && env->notify[0] != '@'))
                return;
        memcpy(sa.sun_path, env->notify, n);
        if (sa.sun_path[0] == '@')
                sa.sun_path[0] = '\0'; /* an abstract socket */
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return;
        (void)sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
                     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
        close(fd);
}
