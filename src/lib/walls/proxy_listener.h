/* The one way out of a network cell's sandbox (docs/security.md, "Network cells"): its network
 * namespace has only its loopback, up, and on 127.0.0.1:CODECELL_PROXY_PORT one listening TCP
 * socket that trusted code makes before any guest code runs (an exec'd sandbox's init, a
 * forked one's zygote) and hands to the engine, which alone holds it from then on: no process
 * of the sandbox can accept on it, close it or bind its port again (no SO_REUSEPORT). The
 * engine's proxy serves its connections.
 *
 * Floor: walls, and compiled into the zygote's fork server as well: the C library and the
 * kernel's headers only, no allocation (it runs between clone and exec). */
#ifndef CODECELL_PROXY_LISTENER_H
#define CODECELL_PROXY_LISTENER_H

/* The port, fixed: the guest's proxy variables name it, Landlock lets connect reach only it. */
#define CODECELL_PROXY_PORT 3128
#define CODECELL_PROXY_PORT_TEXT "3128"

/* In the calling thread's network namespace, which it must administer (CAP_NET_ADMIN over it):
 * the loopback up, then the listener. The fd (close-on-exec), or -errno. */
int proxy_listener_make(void);
/* One byte with fd (SCM_RIGHTS) on the stream socket sock: 0 or -errno. */
int proxy_listener_send(int sock, int fd);
/* Whether fd is a listening TCP socket on 127.0.0.1:CODECELL_PROXY_PORT. */
int proxy_listener_check(int fd);
/* The listener sent on sock, when it is next in the stream (it was queued before anything else
 * could be): checked to be a listening TCP socket on 127.0.0.1:CODECELL_PROXY_PORT. The fd, or
 * -errno (-EPROTO when what came is something else). */
int proxy_listener_receive(int sock);

#endif
