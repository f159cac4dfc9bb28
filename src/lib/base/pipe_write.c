#include "pipe_write.h"

#include <errno.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

ssize_t pipe_write(int fd, const void *buf, size_t len)
{
        sigset_t pipe_set, old, pending;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        /* A SIGPIPE already pending (another write's) is not ours to take. */
        sigpending(&pending);
        int was_pending = sigismember(&pending, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        ssize_t n = write(fd, buf, len);
        int saved = errno;
        if (n < 0 && saved == EPIPE && !was_pending) {
                /* The kernel sent it to this thread: it is pending here, and taken back. */
                const struct timespec zero = {0, 0};
                while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
                        ;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        errno = saved;
        return n;
}
