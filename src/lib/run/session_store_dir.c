/* The folder store (session_store_dir.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session_store_dir.h"

#define NAME_MAX_KEY 100 /* bytes of key: 200 hex digits and ".ccj" fit a file name */

static int say(char *why, size_t why_len, const char *what, const char *detail)
{
        snprintf(why, why_len, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
        return -1;
}

int session_store_dir_open(struct session_store_dir *s, const char *path, char *why, size_t why_len)
{
        s->fd = -1;
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
                return say(why, why_len, "the state folder cannot be made", strerror(errno));
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return say(why, why_len, "the state folder cannot be opened (a folder, not a link)",
                           strerror(errno));
        struct stat st;
        if (fstat(fd, &st) != 0) {
                close(fd);
                return say(why, why_len, "the state folder cannot be read", strerror(errno));
        }
        if (st.st_uid != geteuid() || (st.st_mode & 0077)) {
                close(fd);
                return say(why, why_len,
                           "the state folder must be owned by the server's user and open to no one "
                           "else (chmod 0700)",
                           path);
        }
        s->fd = fd;
        return 0;
}

void session_store_dir_close(struct session_store_dir *s)
{
        if (s->fd >= 0)
                close(s->fd);
        s->fd = -1;
}

static int file_name(const char *key, char *name, size_t n, char *why, size_t why_len)
{
        size_t k = strlen(key);
        if (k == 0 || k > NAME_MAX_KEY || 2 * k + 5 > n)
                return say(why, why_len, "a session key is empty or too long to store", NULL);
        for (size_t i = 0; i < k; i++)
                snprintf(name + 2 * i, 3, "%02x", (unsigned char)key[i]);
        memcpy(name + 2 * k, ".ccj", 5);
        return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
        while (n) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return -1;
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

int session_store_dir_put(struct session_store_dir *s, const char *key, const void *buf, size_t len,
                          char *why, size_t why_len)
{
        char name[256], tmp[300];
        if (file_name(key, name, sizeof name, why, why_len) != 0)
                return -1;
        snprintf(tmp, sizeof tmp, ".%s.%ld.tmp", name, (long)getpid());
        int fd = openat(s->fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return say(why, why_len, "the state folder cannot be written", strerror(errno));
        int e = 0;
        if (write_all(fd, buf, len) != 0 || fsync(fd) != 0)
                e = errno ? errno : EIO;
        if (close(fd) != 0 && !e)
                e = errno;
        if (!e && renameat(s->fd, tmp, s->fd, name) != 0)
                e = errno;
        if (e) {
                unlinkat(s->fd, tmp, 0);
                return say(why, why_len, "a session journal cannot be stored", strerror(e));
        }
        if (fsync(s->fd) != 0)
                return say(why, why_len, "the state folder cannot be synced", strerror(errno));
        return 0;
}

int session_store_dir_get(struct session_store_dir *s, const char *key, char **buf, size_t *len,
                          char *why, size_t why_len)
{
        char name[256];
        if (file_name(key, name, sizeof name, why, why_len) != 0)
                return -1;
        int fd = openat(s->fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 && errno == ENOENT)
                return 0;
        if (fd < 0)
                return say(why, why_len, "a stored session journal cannot be opened",
                           strerror(errno));
        struct stat st;
        char *b = NULL;
        size_t got = 0;
        int e = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
        if (!e && !(b = malloc((size_t)st.st_size + 1)))
                e = ENOMEM;
        while (!e && got < (size_t)st.st_size) {
                ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0) {
                        e = r < 0 ? errno : EIO; /* shrank while read */
                        break;
                }
                got += (size_t)r;
        }
        close(fd);
        if (e) {
                free(b);
                return say(why, why_len, "a stored session journal cannot be read", strerror(e));
        }
        *buf = b;
        *len = got;
        return 1;
}

int session_store_dir_remove(struct session_store_dir *s, const char *key, char *why,
                             size_t why_len)
{
        char name[256];
        if (file_name(key, name, sizeof name, why, why_len) != 0)
                return -1;
        if (unlinkat(s->fd, name, 0) != 0 && errno != ENOENT)
                return say(why, why_len, "a stored session journal cannot be removed",
                           strerror(errno));
        if (fsync(s->fd) != 0)
                return say(why, why_len, "the state folder cannot be synced", strerror(errno));
        return 0;
}
