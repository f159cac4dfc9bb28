/* Scope-bound cleanup helpers (systemd style), and the closing and reaping they do. Every
 * variable using them is initialised where it is declared; steal_ptr()/steal_fd()/steal_pid()
 * hand ownership on. Nothing here but freep allocates or frees: the rest may run between clone
 * and exec. */
#ifndef CODECELL_CLEANUP_H
#define CODECELL_CLEANUP_H

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static inline void freep(void *p)
{
        free(*(void **)p);
}
static inline void closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                (void)close(*fd);
                errno = saved;
        }
}

/* Closes *fd when open and marks it closed; errno is kept. */
static inline void close_fd(int *fd)
{
        closep(fd);
        *fd = -1;
}
/* Both ends of a pipe or socket pair, each as close_fd. */
static inline void close_pair(int fds[2])
{
        close_fd(&fds[0]);
        close_fd(&fds[1]);
}
static inline void close_pairp(int (*fds)[2])
{
        close_pair(*fds);
}

/* Waits for the child pid to end, again after EINTR: waitpid's answer, its status in
 * *ret_status unless NULL. */
static inline pid_t wait_child(pid_t pid, int *ret_status)
{
        pid_t r;
        while ((r = waitpid(pid, ret_status, 0)) < 0 && errno == EINTR)
                ;
        return r;
}
/* Kills the child pid (SIGKILL) and reaps it; nothing when pid <= 0. errno is kept. */
static inline void kill_and_reap(pid_t pid)
{
        if (pid <= 0)
                return;
        int saved = errno;
        (void)kill(pid, SIGKILL);
        (void)wait_child(pid, NULL);
        errno = saved;
}
static inline void kill_and_reapp(pid_t *pid)
{
        kill_and_reap(*pid);
}

#define _cleanup_free_ __attribute__((cleanup(freep)))
#define _cleanup_close_ __attribute__((cleanup(closep)))
/* int fds[2]: both ends closed at the end of the scope, those still open. */
#define _cleanup_close_pair_ __attribute__((cleanup(close_pairp)))
/* pid_t: a child killed and reaped at the end of the scope unless handed on (steal_pid). */
#define _cleanup_pid_ __attribute__((cleanup(kill_and_reapp)))

#define steal_ptr(p)                                                                               \
        ({                                                                                         \
                __typeof__(p) _tmp = (p);                                                          \
                (p) = NULL;                                                                        \
                _tmp;                                                                              \
        })
#define steal_fd(fd)                                                                               \
        ({                                                                                         \
                int _tmp = (fd);                                                                   \
                (fd) = -1;                                                                         \
                _tmp;                                                                              \
        })
#define steal_pid(pid)                                                                             \
        ({                                                                                         \
                pid_t _tmp = (pid);                                                                \
                (pid) = -1;                                                                        \
                _tmp;                                                                              \
        })

#endif
