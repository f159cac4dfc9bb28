/* Descriptors passed over a UNIX stream socket (SCM_RIGHTS): the engine's orders to a zygote
 * and its replies, and a network cell's listener from the sandbox's init or zygote. Compiled
 * into the engine and into the zygote's fork server (src/zygote/zygote.c). */
#ifndef CODECELL_FD_PASSING_H
#define CODECELL_FD_PASSING_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* The most descriptors one message carries here (a zygote order's, with its cgroup). */
#define FD_PASS_MAX 5

/* sendmsg of payload[0..len) with fds[0..n) (n may be 0, at most FD_PASS_MAX), MSG_NOSIGNAL,
 * retried on EINTR: sendmsg's result (the bytes sent, or -1 with errno). */
ssize_t fd_pass_send(int sock, const void *payload, size_t len, const int *fds, size_t n);
/* The descriptors a received msg carried, in order: the first `keep` go into fds (the rest of
 * fds[0..keep) -1), every other one is closed. Returns how many were kept. */
size_t fd_pass_take(struct msghdr *msg, int *fds, size_t keep);

#endif
