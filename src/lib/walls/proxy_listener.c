#include "proxy_listener.h"

#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd_passing.h"

/* No listener queue beyond this: the proxy accepts as fast as it can, and a guest that opens
 * more at once waits (its connect blocks; it is never refused on our account). */
#define BACKLOG 128

static int loopback_up(void)
{
        /* Any socket serves for the interface ioctls; a datagram one asks nothing of TCP. */
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return -errno;
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        memcpy(ifr.ifr_name, "lo", 3);
        int r = ioctl(s, SIOCGIFFLAGS, &ifr);
        if (r == 0) {
                ifr.ifr_flags |= IFF_UP;
                r = ioctl(s, SIOCSIFFLAGS, &ifr);
        }
        int e = errno;
        close(s);
        return r < 0 ? -e : 0;
}

int proxy_listener_make(void)
{
        int r = loopback_up();
        if (r < 0)
                return r;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* Neither SO_REUSEADDR nor SO_REUSEPORT: a second bind of the port, by anyone, fails. */
        struct sockaddr_in at = {.sin_family = AF_INET,
                                 .sin_port = htons(CODECELL_PROXY_PORT),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (bind(fd, (struct sockaddr *)&at, sizeof(at)) < 0 || listen(fd, BACKLOG) < 0) {
                int e = errno;
                close(fd);
                return -e;
        }
        return fd;
}

int proxy_listener_send(int sock, int fd)
{
        char byte = 'L';
        ssize_t n = fd_pass_send(sock, &byte, 1, &fd, 1);
        return n == 1 ? 0 : n < 0 ? -errno : -EIO;
}

int proxy_listener_check(int fd)
{
        int v = 0;
        socklen_t len = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) < 0 || v != AF_INET)
                return 0;
        len = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) < 0 || v != 1)
                return 0;
        struct sockaddr_in at;
        len = sizeof(at);
        return getsockname(fd, (struct sockaddr *)&at, &len) == 0 && len == sizeof(at) &&
               at.sin_port == htons(CODECELL_PROXY_PORT) &&
               at.sin_addr.s_addr == htonl(INADDR_LOOPBACK);
}

int proxy_listener_receive(int sock)
{
        char byte = 0;
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        union {
                char buf[CMSG_SPACE(sizeof(int) * 4)];
                struct cmsghdr align;
        } control;
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control.buf,
                             .msg_controllen = sizeof(control.buf)};
        ssize_t n;
        while ((n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
                ;
        if (n < 0)
                return -errno;
        int fd;
        (void)fd_pass_take(&msg, &fd, 1);
        if (n == 1 && byte == 'L' && fd >= 0 && !(msg.msg_flags & MSG_CTRUNC) &&
            proxy_listener_check(fd))
                return fd;
        if (fd >= 0)
                close(fd);
        return -EPROTO;
}
