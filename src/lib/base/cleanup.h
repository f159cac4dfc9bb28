/* Scope-bound cleanup helpers (systemd style). Every variable using them is initialised where
 * it is declared; steal_ptr()/steal_fd() hand ownership on. */
#ifndef CODECELL_CLEANUP_H
#define CODECELL_CLEANUP_H

#include <errno.h>
#include <stdlib.h>
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

#define _cleanup_free_ __attribute__((cleanup(freep)))
#define _cleanup_close_ __attribute__((cleanup(closep)))

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

#endif
