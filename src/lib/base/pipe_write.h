/* Writing to a pipe whose reader may be gone, without SIGPIPE. The library never changes the
 * process's signal dispositions (an embedding program owns them) and must not be killed by a
 * reader that went away: the signal is blocked in the calling thread for the write, and one it
 * raised is taken back before the mask is restored. */
#ifndef CODECELL_PIPE_WRITE_H
#define CODECELL_PIPE_WRITE_H

#include <stddef.h>
#include <sys/types.h>

/* write(2), with EPIPE instead of SIGPIPE. Async-signal-safe, allocates nothing. */
ssize_t pipe_write(int fd, const void *buf, size_t len);

#endif
