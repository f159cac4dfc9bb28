/* Flags shared by the verbs that build a cell: --mount, and the language of a file. */
#include "cell_flags.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SRC:DST[:ro|rw] */
int add_mount_flag(const char *who, codecell_config *config, const char *spec, codecell_error *err)
{
        char *copy = strdup(spec);
        if (!copy)
                return -ENOMEM;
        bool rw = false;
        char *first = strchr(copy, ':');
        char *mode = first ? strchr(first + 1, ':') : NULL;
        int r;
        if (!first) {
                fprintf(stderr, "%s: --mount %s: expected SRC:DST[:ro|rw]\n", who, spec);
                free(copy);
                return -EINVAL;
        }
        *first = '\0';
        if (mode) {
                *mode++ = '\0';
                if (strcmp(mode, "rw") == 0) {
                        rw = true;
                } else if (strcmp(mode, "ro") != 0) {
                        fprintf(stderr, "%s: --mount %s: mode must be ro or rw, not \"%s\"\n", who,
                                spec, mode);
                        free(copy);
                        return -EINVAL;
                }
        }
        r = codecell_config_add_mount(config, copy, first + 1, rw, NULL, err);
        if (r < 0)
                fprintf(stderr, "%s: %s\n", who, err->message);
        free(copy);
        return r;
}

const char *language_of(const char *path)
{
        const char *lang = codecell_language_of(path);
        return lang ? lang : "ruby";
}
