/* keep_open: descriptors of the caller's that the function uses as they are, of the kinds a
 * program opens for itself (refused_kind). Every other inherited one points at /dev/null in
 * the jailed process (jail_child.c); these are left alone, so the function shares the caller's open
 * file: its offset, its access mode (a file opened for writing can be written whatever Landlock
 * grants on its path), a socket's peer (a connected socket reaches its peer even without the
 * network). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "jail.h"

void jail_fd_link(int fd, char *target, size_t size)
{
        char link[64];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, size - 1);
        target[n > 0 ? (size_t)n : 0] = '\0';
}

/* Descriptors of namespaces: a way back out for a process that may enter one (setns), and the
 * library's own (the recycled network namespaces, the idmaps) are among them. */
static bool namespace_fd(const char *target)
{
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

/* Why the function may not hold fd, or NULL. Files, folders, FIFOs and pipes, sockets and
 * character devices are what a program opens for itself. An anonymous inode is a piece of
 * the caller's machinery that the kernel shares on: an epoll set the function would add its
 * own descriptors to with data of its choosing (which the caller's loop then takes for its
 * own pointers), an io_uring whose submissions run with the caller's rights, a pidfd, a
 * signalfd, a timerfd, an inotify or fanotify watch, a userfaultfd, an eventfd. Their fstat
 * type is none or a regular file (pidfs), so the /proc link tells them apart too. */
static const char *refused_kind(int fd, char *target, size_t size)
{
        jail_fd_link(fd, target, size);
        if (namespace_fd(target))
                return "a namespace's";
        if (strncmp(target, "anon_inode:", 11) == 0)
                return "an anonymous inode's (an epoll set, io_uring, pidfd, signalfd, timerfd, "
                       "inotify, fanotify, userfaultfd or eventfd)";
        struct stat st;
        if (fstat(fd, &st) < 0)
                return "unknown";
        switch (st.st_mode & S_IFMT) {
        case S_IFREG:
        case S_IFDIR:
                /* A path, or a memfd ("/memfd:name (deleted)"); not a kernel object's name. */
                return target[0] == '/' ? NULL : "a kernel object's";
        case S_IFIFO:
        case S_IFSOCK:
        case S_IFCHR:
                return NULL;
        case S_IFBLK:
                return "a block device's";
        default:
                return "of no file type (an anonymous inode)";
        }
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
                char target[128];
                const char *kind = refused_kind(fd, target, sizeof(target));
                if (kind)
                        return err_set(err, CODECELL_ERR_INVALID, EPERM,
                                       "jail: keep_open[%zu]: descriptor %d (%s) is %s, which the "
                                       "function may not hold (files, folders, pipes, sockets "
                                       "and character devices only)",
                                       i, fd, target, kind);
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
