#include "save_outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"

/* One file into dir_fd. The name is one path component (the engine refuses any other), so
 * openat stays in dir; O_EXCL refuses a name already there, which also means a link or a FIFO
 * that a guest with a read-write mount of dir planted is neither followed nor opened. */
static int save_one(int dir_fd, const char *dir, const char *name, const char *mime,
                    const void *data, size_t len)
{
        int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
                fprintf(stderr, "codecell run: --save-outputs: %s/%s: %s\n", dir, name,
                        errno == EEXIST ? "already there; not overwritten" : strerror(errno));
                return -1;
        }
        bool ok = write_all(fd, data, len) == 0;
        int saved = errno;
        if (close(fd) < 0 && ok) {
                ok = false;
                saved = errno;
        }
        if (!ok) {
                (void)unlinkat(dir_fd, name, 0);
                fprintf(stderr, "codecell run: --save-outputs: %s/%s: %s\n", dir, name,
                        strerror(saved));
                return -1;
        }
        fprintf(stderr, "codecell run: saved %s/%s (%s, %zu bytes)\n", dir, name, mime, len);
        return 0;
}

int save_outputs(const codecell_result *res, const char *dir, int dir_fd)
{
        size_t files = codecell_result_file_count(res), images = codecell_result_image_count(res);
        if (dir_fd < 0 && mkdir(dir, 0755) < 0 && errno != EEXIST) {
                fprintf(stderr, "codecell run: --save-outputs %s: %s\n", dir, strerror(errno));
                return -1;
        }
        _cleanup_close_ int made =
                dir_fd < 0 ? open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (dir_fd < 0 && made < 0) {
                fprintf(stderr, "codecell run: --save-outputs %s: %s\n", dir, strerror(errno));
                return -1;
        }
        int fd = dir_fd >= 0 ? dir_fd : made;
        int r = 0;
        size_t saved = 0;
        for (size_t i = 0; i < images; i++) {
                const char *name = codecell_result_image_name(res, i), *mime = NULL;
                size_t len = 0;
                const void *data = codecell_result_image(res, i, &len, &mime);
                if (!name)
                        continue;
                r |= save_one(fd, dir, name, mime, data, len);
                saved++;
        }
        for (size_t i = 0; i < files; i++) {
                const char *name = NULL, *mime = NULL;
                size_t len = 0;
                const void *data = codecell_result_file(res, i, &name, &mime, &len);
                r |= save_one(fd, dir, name, mime, data, len);
                saved++;
        }
        if (saved == 0)
                fprintf(stderr, "codecell run: no output files to save in %s\n", dir);
        return r < 0 ? -1 : 0;
}
