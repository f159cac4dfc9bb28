#include "fd_passing.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

ssize_t fd_pass_send(int sock, const void *payload, size_t len, const int *fds, size_t n)
{
        struct iovec iov = {.iov_base = (void *)payload, .iov_len = len};
        union {
                char buf[CMSG_SPACE(sizeof(int) * FD_PASS_MAX)];
                struct cmsghdr align;
        } control;
        memset(&control, 0, sizeof(control));
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
        if (n > FD_PASS_MAX) {
                errno = EINVAL;
                return -1;
        }
        if (n) {
                msg.msg_control = control.buf;
                msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
                struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
        }
        ssize_t sent;
        while ((sent = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
                ;
        return sent;
}

size_t fd_pass_take(struct msghdr *msg, int *fds, size_t keep)
{
        for (size_t i = 0; i < keep; i++)
                fds[i] = -1;
        size_t got = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (got < keep)
                                fds[got++] = fd;
                        else
                                close(fd);
                }
        }
        return got;
}
