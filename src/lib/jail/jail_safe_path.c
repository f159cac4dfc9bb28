/* Whether a root caller's fs_allow folder may be idmapped (jail_idmap.c): through the clone the
 * child writes as the folder's owner, root included, so the folder must be the one the caller
 * meant, not one another user steered the path to. A user who may write a folder on the way
 * (a link planted in their own /tmp/pub, pointing at /root) decides what the path names; a
 * user who may rename a folder on the way may swap it after the check.
 *
 * The path is resolved here by hand, one name at a time, each opened O_PATH|O_NOFOLLOW
 * beneath the descriptor of the folder before it, symbolic links read and followed as the
 * kernel would: every folder in which a name is looked up (those of the path as given, of
 * every link's target, and the resolved folder's own ancestors) is seen, and the descriptor
 * at the end is the inode checked, which the clone is then made from. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jail.h"

#define MAX_DEPTH 128 /* folders deep */
#define MAX_LINKS 40  /* the kernel's own limit (ELOOP) */

/* Whether an entry looked up in dir can be trusted to stay what it is: dir is root's or the
 * owner's and nobody else may write it, or it is sticky (like /tmp) and the entry itself is
 * root's or the owner's, which nobody else may then rename or remove. */
static bool trusted(const struct stat *dir, const struct stat *entry, uid_t owner)
{
        if (dir->st_uid != 0 && dir->st_uid != owner)
                return false;
        if (!(dir->st_mode & (S_IWGRP | S_IWOTH)))
                return true;
        return (dir->st_mode & S_ISVTX) && (entry->st_uid == 0 || entry->st_uid == owner);
}

static int refuse(char *why, size_t why_size, int e, const char *fmt, const char *a, const char *b)
{
        snprintf(why, why_size, fmt, a, b);
        errno = e;
        return -1;
}

/* Takes the next name off *p (skipping slashes) into name; false at the end. */
static bool next_name(const char **p, char name[NAME_MAX + 1], bool *too_long)
{
        while (**p == '/')
                (*p)++;
        if (!**p)
                return false;
        const char *end = strchrnul(*p, '/');
        size_t n = (size_t)(end - *p);
        *too_long = n > NAME_MAX;
        if (!*too_long)
                memcpy(name, *p, n);
        name[*too_long ? 0 : n] = '\0';
        *p = end;
        return true;
}

struct walk {
        int fds[MAX_DEPTH]; /* the folders from / down to where the walk stands */
        struct stat st[MAX_DEPTH];
        size_t depth;
        char rest[2 * PATH_MAX]; /* what is left to resolve */
};

static void walk_up_to(struct walk *w, size_t depth)
{
        while (w->depth > depth)
                close(w->fds[--w->depth]);
}

/* Splices a link's target in front of what is left after it. */
static int follow(struct walk *w, int link_fd, const char **p, char *why, size_t why_size)
{
        char target[PATH_MAX], spliced[sizeof(w->rest)];
        ssize_t n = readlinkat(link_fd, "", target, sizeof(target) - 1);
        if (n <= 0)
                return refuse(why, why_size, n < 0 ? errno : EINVAL, "read a link%s%s", "", "");
        target[n] = '\0';
        if ((size_t)snprintf(spliced, sizeof(spliced), "%s/%s", target, *p) >= sizeof(spliced))
                return refuse(why, why_size, ENAMETOOLONG, "the path is too long%s%s", "", "");
        memcpy(w->rest, spliced, strlen(spliced) + 1);
        *p = w->rest;
        if (target[0] == '/')
                walk_up_to(w, 1);
        return 0;
}

int jail_safe_open(const char *path, bool check, uid_t owner, char *why, size_t why_size)
{
        struct walk w = {.depth = 0};
        size_t len = 0;
        if (path[0] != '/') {
                if (!getcwd(w.rest, PATH_MAX))
                        return refuse(why, why_size, errno, "the current folder%s%s", "", "");
                len = strlen(w.rest);
                w.rest[len++] = '/';
        }
        if (len + strlen(path) >= sizeof(w.rest))
                return refuse(why, why_size, ENAMETOOLONG, "the path is too long%s%s", "", "");
        memcpy(w.rest + len, path, strlen(path) + 1);
        w.fds[0] = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (w.fds[0] < 0 || fstat(w.fds[0], &w.st[0]) < 0)
                return refuse(why, why_size, errno, "open /%s%s", "", "");
        w.depth = 1;
        const char *p = w.rest;
        char name[NAME_MAX + 1], dir[PATH_MAX];
        bool too_long;
        int links = 0, r = -1;
        while (next_name(&p, name, &too_long)) {
                if (too_long) {
                        refuse(why, why_size, ENAMETOOLONG, "a name is too long%s%s", "", "");
                        goto out;
                }
                if (strcmp(name, ".") == 0)
                        continue;
                if (strcmp(name, "..") == 0) {
                        walk_up_to(&w, w.depth > 1 ? w.depth - 1 : 1);
                        continue;
                }
                int fd = openat(w.fds[w.depth - 1], name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0) {
                        refuse(why, why_size, errno, "look up %s: %s", name, strerror(errno));
                        if (fd >= 0)
                                close(fd);
                        goto out;
                }
                if (check && !trusted(&w.st[w.depth - 1], &st, owner)) {
                        const struct stat *d = &w.st[w.depth - 1];
                        jail_fd_link(w.fds[w.depth - 1], dir, sizeof(dir));
                        snprintf(why, why_size,
                                 "%s/%s: its folder (owner %u, mode %04o) or itself (owner %u) "
                                 "may be changed by another user than root or the folder's "
                                 "owner (%u), who could steer the path elsewhere",
                                 strcmp(dir, "/") ? dir : "", name, (unsigned)d->st_uid,
                                 (unsigned)(d->st_mode & 07777), (unsigned)st.st_uid,
                                 (unsigned)owner);
                        errno = EPERM;
                        close(fd);
                        goto out;
                }
                if (S_ISLNK(st.st_mode)) {
                        int f = ++links > MAX_LINKS
                                        ? refuse(why, why_size, ELOOP, "too many links%s%s", "", "")
                                        : follow(&w, fd, &p, why, why_size);
                        close(fd);
                        if (f < 0)
                                goto out;
                        continue;
                }
                if (w.depth == MAX_DEPTH) {
                        refuse(why, why_size, ENAMETOOLONG, "too deep%s%s", "", "");
                        close(fd);
                        goto out;
                }
                w.fds[w.depth] = fd;
                w.st[w.depth++] = st;
        }
        r = w.fds[--w.depth];
out:
        walk_up_to(&w, 0);
        return r;
}
