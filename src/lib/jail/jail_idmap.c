/* A root caller's fs_allow, honoured: the child runs as nobody, so a folder only its owner
 * may write (a Dir.mktmpdir, 0700 root) would be read-only to it. As a cell's read-write
 * mounts are (cell_plan.c, standby.c), the folder is cloned (open_tree) and the clone idmapped
 * (mount_setattr MOUNT_ATTR_IDMAP) so that through it the folder's owner is the child's uid:
 * the child writes there what the owner may, and what it creates is stored as the owner's.
 * The jail keeps the host's file names, so the keeper mounts the clone over the same path in
 * its own mount namespace, whose mounts propagate nothing back to the host (a mount namespace
 * made in a new user namespace turns shared mounts into slaves). A file of another owner in
 * the folder is not mapped and stays another's (nobody may not write it); nothing outside the
 * folder changes. seccomp refuses the setuid and setgid bits (deny_privileged_modes), which
 * would otherwise make a program of the owner's.
 *
 * Cost: a user namespace per owner, made once per process and kept (the mapping never
 * changes), then for each folder per jail an open_tree, a mount_setattr and a move_mount. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "idmap.h"
#include "jail.h"

#define CACHED_IDMAPS 16

/* The idmaps made so far, by the owner they show as the child's uid. An fd is checked by its
 * inode before each use: a program that closed it (close_range before exec) may have another
 * file under its number by now. Guarded by cache_lock. */
static struct idmap_entry {
        uid_t uid;
        gid_t gid;
        int fd;
        dev_t dev;
        ino_t ino;
} cache[CACHED_IDMAPS];
static size_t n_cached;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A fork taken while another thread held the lock must not leave it held in the child. */
static void lock_cache(void)
{
        pthread_mutex_lock(&cache_lock);
}
static void unlock_cache(void)
{
        pthread_mutex_unlock(&cache_lock);
}
static void register_atfork(void)
{
        pthread_atfork(lock_cache, unlock_cache, unlock_cache);
}

static bool still_ours(const struct idmap_entry *e)
{
        struct stat st;
        return fstat(e->fd, &st) == 0 && st.st_dev == e->dev && st.st_ino == e->ino;
}

/* A user namespace showing uid:gid as the child's ids: a descriptor of the caller's own (a
 * copy of the cache's, which another thread may replace meanwhile), or < 0 with err. */
static int idmap_for(const struct codecell_jail *j, uid_t uid, gid_t gid, codecell_error *err)
{
        pthread_once(&atfork_once, register_atfork);
        lock_cache();
        int fd = -1;
        for (size_t i = 0; i < n_cached; i++) {
                struct idmap_entry *e = &cache[i];
                if (e->uid != uid || e->gid != gid)
                        continue;
                if (still_ours(e))
                        fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0);
                else
                        *e = cache[--n_cached]; /* gone: made anew below */
                break;
        }
        struct stat st;
        int made = fd < 0 ? idmap_userns(uid, gid, j->host_uid, j->host_gid, err) : -1;
        if (made >= 0 && fstat(made, &st) == 0) {
                if (n_cached == CACHED_IDMAPS)
                        close(cache[--n_cached].fd); /* the last made makes room */
                cache[n_cached++] = (struct idmap_entry){uid, gid, made, st.st_dev, st.st_ino};
                fd = fcntl(made, F_DUPFD_CLOEXEC, 0);
        } else if (made >= 0) {
                fd = made;
        }
        unlock_cache();
        return fd < 0 && made >= 0 ? err_sys(err, errno, "idmap: dup") : fd;
}

/* The folder as a descriptor (*ret_fd, its stat st) whose path nobody but root and its owner
 * may steer (jail_safe_path.c): 0; 1 when another user may (why filled); -1 on failure. */
static int refused(const struct codecell_jail *j, size_t i, const char *given, int *ret_fd,
                   struct stat *st, char *why, size_t why_size)
{
        /* First learn the owner, then walk again trusting only root and that owner: the
         * second walk's descriptor is the one cloned, and must be the first's inode. */
        int first = jail_safe_open(given, false, 0, why, why_size);
        if (first < 0)
                return -1;
        struct stat first_st;
        int r = fstat(first, &first_st);
        close(first);
        if (r < 0)
                return snprintf(why, why_size, "stat: %s", strerror(errno)), -1;
        int fd = jail_safe_open(given, true, first_st.st_uid, why, why_size);
        if (fd < 0)
                return 1;
        char real[PATH_MAX + 1];
        jail_fd_link(fd, real, sizeof(real));
        if (fstat(fd, st) < 0 || st->st_dev != first_st.st_dev || st->st_ino != first_st.st_ino ||
            strcmp(real, j->paths[i]) != 0) {
                close(fd);
                snprintf(why, why_size, "it changed while it was checked");
                return 1;
        }
        *ret_fd = fd;
        return 0;
}

/* 0: the folder is idmapped, or needs no idmap; 1: refused as unsafe, -1: the kernel or the
 * file system cannot (why filled for both). */
static int clone_idmapped(struct codecell_jail *j, size_t i, const char *given, char *why,
                          size_t why_size)
{
        struct stat st;
        if (stat(j->paths[i], &st) < 0)
                return snprintf(why, why_size, "stat: %s", strerror(errno)), -1;
        if (st.st_uid == j->host_uid && st.st_gid == j->host_gid)
                return 0; /* the child's own already */
        /* A folder everyone may write (/tmp, sticky or not) the child writes as nobody
         * already; idmapped, it would write there as root, over root's files. */
        if (st.st_mode & (S_IWOTH | S_ISVTX))
                return 0;
        int at_fd = -1;
        int r = refused(j, i, given, &at_fd, &st, why, why_size);
        if (r != 0)
                return r;
        _cleanup_close_ int folder = at_fd;
        codecell_error err = {0};
        _cleanup_close_ int userns = idmap_for(j, st.st_uid, st.st_gid, &err);
        if (userns < 0)
                return snprintf(why, why_size, "%s", err.message), -1;
        _cleanup_close_ int tree =
                (int)syscall(SYS_open_tree, folder, "",
                             AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (tree < 0)
                return snprintf(why, why_size, "open_tree: %s", strerror(errno)), -1;
        struct mount_attr attr = {
                .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                .userns_fd = (uint64_t)userns,
        };
        if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
                    sizeof(attr)) < 0)
                return snprintf(why, why_size, "idmapped mounts: %s", strerror(errno)), -1;
        /* Parents before the folders inside them, so that an inner clone is not hidden. */
        size_t at = j->n_idmapped++;
        while (at > 0 && strlen(j->paths[j->idmapped[at - 1].path]) > strlen(j->paths[i])) {
                j->idmapped[at] = j->idmapped[at - 1];
                at--;
        }
        j->idmapped[at].tree_fd = tree;
        j->idmapped[at].path = i;
        tree = -1;
        return 0;
}

int jail_idmap_prepare(struct codecell_jail *j, size_t i, const char *given, char *why,
                       size_t why_size)
{
        char what[256];
        int r = clone_idmapped(j, i, given, what, sizeof(what));
        if (r == 0)
                return 0;
        snprintf(why, why_size,
                 "idmapped fs_allow: %s: %s%s; the child (nobody) writes there only what nobody "
                 "may",
                 j->paths[i], r > 0 ? "not idmapped: " : "", what);
        return r;
}

int jail_idmap_attach(struct codecell_jail *j, const char **ret_path)
{
        for (size_t i = 0; i < j->n_idmapped; i++) {
                const char *path = j->paths[j->idmapped[i].path];
                if (syscall(SYS_move_mount, j->idmapped[i].tree_fd, "", AT_FDCWD, path,
                            MOVE_MOUNT_F_EMPTY_PATH) < 0) {
                        *ret_path = path;
                        return -errno;
                }
        }
        jail_idmap_close(j);
        return 0;
}

void jail_idmap_close(struct codecell_jail *j)
{
        for (size_t i = 0; i < j->n_idmapped; i++)
                close(j->idmapped[i].tree_fd);
        j->n_idmapped = 0;
}
