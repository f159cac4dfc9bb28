/* A root caller's keeper's id maps, written by the parent (jail_wait.c).
 *
 * The keeper makes its user namespace while it is still root, so that the namespace is owned
 * by root: no process of nobody's on the host holds a capability in it (setns, ptrace of what
 * runs there). The parent, root in the initial namespace (CAP_SETUID, CAP_SETGID), then maps
 * nobody to itself in it, and the keeper becomes nobody through that map (jail_child.c). The
 * keeper could not write the maps itself without being dumpable for the writes — a moment in
 * which any process of nobody's could take its fds (pidfd_getfd) or read the copy of the
 * caller's memory it holds. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "error.h"
#include "jail.h"

static int write_keeper(pid_t keeper, const char *name, const char *text, codecell_error *err)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/%s", (int)keeper, name);
        errno = 0;
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
                return err_sys(err, errno ? errno : EIO, "jail: the keeper's user namespace: %s",
                               path);
        return 0;
}

int jail_keeper_map_ids(const struct codecell_jail *j, pid_t keeper, codecell_error *err)
{
        char uid_map[32], gid_map[32];
        snprintf(uid_map, sizeof(uid_map), "%u %u 1\n", (unsigned)j->host_uid,
                 (unsigned)j->host_uid);
        snprintf(gid_map, sizeof(gid_map), "%u %u 1\n", (unsigned)j->host_gid,
                 (unsigned)j->host_gid);
        /* "deny" first (it is refused once a gid map is written): nobody inside may not take
         * a group back with setgroups. */
        int r = write_keeper(keeper, "setgroups", "deny", err);
        if (r == 0)
                r = write_keeper(keeper, "uid_map", uid_map, err);
        if (r == 0)
                r = write_keeper(keeper, "gid_map", gid_map, err);
        return r;
}
