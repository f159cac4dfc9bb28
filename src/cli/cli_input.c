#include "cli_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"

#define WHO "codecell run"
/* Base64 in the exec frame (16 MiB by default) grows it by a third. */
#define MAX_STDIN (8u << 20)

int stdin_for_guest(char **ret_data, size_t *ret_len)
{
        *ret_data = NULL;
        *ret_len = 0;
        if (isatty(STDIN_FILENO))
                return 0; /* a person at a terminal: nothing is waiting to be read */
        size_t cap = 65536, len = 0;
        char *data = malloc(cap);
        for (;;) {
                if (!data) {
                        fprintf(stderr, WHO ": stdin: out of memory\n");
                        return EXIT_SANDBOX;
                }
                if (len == cap) {
                        char *grown = cap * 2 > MAX_STDIN + 1 ? NULL : realloc(data, cap * 2);
                        if (!grown) {
                                free(data);
                                fprintf(stderr,
                                        WHO ": stdin: more than %u MiB; pass a larger "
                                            "input as a file in a --mount\n",
                                        MAX_STDIN >> 20);
                                return EXIT_USAGE;
                        }
                        data = grown;
                        cap *= 2;
                }
                ssize_t n = read(STDIN_FILENO, data + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno != EBADF) {
                        fprintf(stderr, WHO ": stdin: %s\n", strerror(errno));
                        free(data);
                        return EXIT_USAGE;
                }
                if (n <= 0)
                        break;
                len += (size_t)n;
                if (len > MAX_STDIN) {
                        free(data);
                        fprintf(stderr,
                                WHO ": stdin: more than %u MiB; pass a larger input as a "
                                    "file in a --mount\n",
                                MAX_STDIN >> 20);
                        return EXIT_USAGE;
                }
        }
        if (len == 0) {
                free(data);
                return 0;
        }
        *ret_data = data;
        *ret_len = len;
        return 0;
}

/* Past this a file is refused before it is read whole: no cell takes more (file_bytes'
 * default; the engine then holds it to the cell's own limits). */
#define MAX_FILE (64u << 20)

/* PATH's bytes into *ret (malloc'd, at least one byte so that NULL means failure). */
static int read_host_file(const char *path, const char *flag, char **ret, size_t *ret_len)
{
        /* O_NONBLOCK: a FIFO is refused below instead of waiting for a writer. */
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                fprintf(stderr, WHO ": --file %s: %s\n", flag,
                        fd < 0 ? strerror(errno) : "not a regular file");
                if (fd >= 0)
                        close(fd);
                return EXIT_USAGE;
        }
        if ((uint64_t)st.st_size > MAX_FILE) {
                fprintf(stderr, WHO ": --file %s: %lld bytes is over %u MiB\n", flag,
                        (long long)st.st_size, MAX_FILE >> 20);
                close(fd);
                return EXIT_USAGE;
        }
        size_t len = 0, cap = (size_t)st.st_size + 1;
        char *data = malloc(cap);
        while (data) {
                ssize_t n = read(fd, data + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        fprintf(stderr, WHO ": --file %s: %s\n", flag, strerror(errno));
                        free(data);
                        close(fd);
                        return EXIT_USAGE;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len == cap) { /* it grew while being read: refused, never cut */
                        fprintf(stderr, WHO ": --file %s: changed while it was read\n", flag);
                        free(data);
                        close(fd);
                        return EXIT_USAGE;
                }
        }
        close(fd);
        if (!data) {
                fprintf(stderr, WHO ": --file %s: out of memory\n", flag);
                return EXIT_SANDBOX;
        }
        *ret = data;
        *ret_len = len;
        return 0;
}

int cli_files_take(struct cli_files *files, const char *arg)
{
        const char *eq = strchr(arg, '=');
        const char *path = eq ? eq + 1 : arg;
        const char *slash = strrchr(path, '/');
        char *name = eq ? strndup(arg, (size_t)(eq - arg)) : strdup(slash ? slash + 1 : path);
        codecell_file *grown = realloc(files->list, (files->n + 2) * sizeof(*grown));
        if (!name || !grown) {
                free(name);
                if (grown)
                        files->list = grown;
                fprintf(stderr, WHO ": --file %s: out of memory\n", arg);
                return EXIT_SANDBOX;
        }
        files->list = grown;
        char *data = NULL;
        size_t len = 0;
        int r = read_host_file(path, arg, &data, &len);
        if (r) {
                free(name);
                files->list[files->n] = (codecell_file){0};
                return r;
        }
        files->list[files->n++] = (codecell_file){.name = name, .data = data, .len = len};
        files->list[files->n] = (codecell_file){0};
        return 0;
}

void cli_files_free(struct cli_files *files)
{
        for (size_t i = 0; i < files->n; i++) {
                free((char *)files->list[i].name);
                free((void *)files->list[i].data);
        }
        free(files->list);
        *files = (struct cli_files){0};
}
