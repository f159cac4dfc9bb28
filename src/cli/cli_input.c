#include "cli_input.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int cell_from_config(const char *who, const char *path, const char *name,
                     codecell_cellset **ret_set, codecell_cell **ret_cell)
{
        codecell_error err = {0};
        /* No pool: one run, started cold, as with flags. */
        codecell_cellset *set = codecell_cellset_load(path, CODECELL_CELLSET_NO_POOL, &err);
        if (!set) {
                fprintf(stderr, "%s: %s\n", who, err.message);
                return err.kind == CODECELL_ERR_INVALID ? EXIT_USAGE : EXIT_SANDBOX;
        }
        int i = name ? codecell_cellset_find(set, name) : codecell_cellset_size(set) == 1 ? 0 : -1;
        if (i < 0) {
                if (name)
                        fprintf(stderr, "%s: --cell %s: %s has no such cell (it has:", who, name,
                                path);
                else
                        fprintf(stderr,
                                "%s: %s has several cells: name one with --cell (it has:", who,
                                path);
                for (size_t k = 0; k < codecell_cellset_size(set); k++)
                        fprintf(stderr, " %s", codecell_cellset_name(set, k));
                fputs(")\n", stderr);
                codecell_cellset_free(set);
                return EXIT_USAGE;
        }
        *ret_set = set;
        *ret_cell = codecell_cellset_cell(set, (size_t)i);
        return 0;
}
