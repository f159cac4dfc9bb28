/* The user namespaces of idmapped mounts (idmap.h). */
#include "idmap.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"

int idmap_userns(uid_t from_uid, gid_t from_gid, uid_t to_uid, gid_t to_gid, codecell_error *err)
{
        /* On the way out, in this order: ready closed, then the child killed and reaped (it
         * only owns the namespace until the fd opened below holds it). */
        _cleanup_pid_ pid_t pid = -1;
        _cleanup_close_pair_ int ready[2] = {-1, -1};
        if (pipe2(ready, O_CLOEXEC) < 0)
                return err_sys(err, errno, "idmap: pipe");
        pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
        if (pid == 0) {
                /* Exists only to own the namespace until the engine has opened it. */
                close(ready[1]);
                char c;
                (void)!read(ready[0], &c, 1);
                _exit(0);
        }
        close_fd(&ready[0]);
        if (pid < 0)
                return err_sys(err, errno, "idmap: clone");
        char path[64], map[64];
        int r = 0, fd = -1;
        snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)from_uid, (unsigned)to_uid);
        r = write_file(path, map);
        if (r == 0) {
                snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
                snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)from_gid, (unsigned)to_gid);
                r = write_file(path, map);
        }
        if (r == 0) {
                snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        r = -errno;
        }
        return r < 0 ? err_sys(err, -r, "idmap: %s", path) : fd;
}

int idmap_probe(const char *path, int userns_fd)
{
        _cleanup_close_ int tree = (int)syscall(SYS_open_tree, AT_FDCWD, path,
                                                OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (tree < 0)
                return -errno;
        struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns_fd};
        if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
                    sizeof(attr)) < 0)
                return -errno;
        return 0;
}
