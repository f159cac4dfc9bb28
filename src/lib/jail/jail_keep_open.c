/* keep_open: descriptors of the caller's that the function uses as they are. Every other
 * inherited one points at /dev/null in the jailed process (jail_child.c); these are left
 * alone, so the function shares the caller's open file: its offset, its access mode (a file
 * opened for writing can be written whatever Landlock grants on its path), a socket's peer
 * (a connected socket reaches its peer even without the network). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "jail.h"

/* Descriptors of namespaces: a way back out for a process that may enter one (setns), and the
 * library's own (the recycled network namespaces, the idmaps) are among them. */
static bool namespace_fd(int fd)
{
        char link[64], target[64];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n <= 0)
                return false;
        target[n] = '\0';
        static const char *const kinds[] = {"user:[",
                                            "mnt:[",
                                            "net:[",
                                            "pid:[",
                                            "ipc:[",
                                            "uts:[",
                                            "cgroup:[",
                                            "time:[",
                                            "pid_for_children:[",
                                            "time_for_children:["};
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
                if (strncmp(target, kinds[i], strlen(kinds[i])) == 0)
                        return true;
        return false;
}

int jail_keep_open_plan(struct codecell_jail *j, const int *fds, codecell_error *err)
{
        for (size_t i = 0; fds && fds[i] != -1; i++) {
                int fd = fds[i];
                if (fd < 0)
                        return err_set(err, CODECELL_ERR_INVALID, EBADF,
                                       "jail: keep_open[%zu] is %d, not a descriptor", i, fd);
                if (fcntl(fd, F_GETFD) < 0)
                        return err_set(err, CODECELL_ERR_INVALID, EBADF,
                                       "jail: keep_open[%zu]: descriptor %d is not open", i, fd);
                if (namespace_fd(fd))
                        return err_set(err, CODECELL_ERR_INVALID, EPERM,
                                       "jail: keep_open[%zu]: descriptor %d is a namespace's, "
                                       "which the function may not hold",
                                       i, fd);
                if (jail_keeps_open(j, fd))
                        continue;
                if (j->n_keep_open >= JAIL_MAX_KEEP_OPEN)
                        return err_set(err, CODECELL_ERR_INVALID, E2BIG,
                                       "jail: more than %d descriptors in keep_open",
                                       JAIL_MAX_KEEP_OPEN);
                j->keep_open[j->n_keep_open++] = fd;
        }
        return 0;
}

bool jail_keeps_open(const struct codecell_jail *j, int fd)
{
        for (size_t i = 0; i < j->n_keep_open; i++)
                if (j->keep_open[i] == fd)
                        return true;
        return false;
}
