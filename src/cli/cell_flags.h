/* Flags shared by the verbs that build a cell. */
#ifndef CODECELL_CLI_CELL_FLAGS_H
#define CODECELL_CLI_CELL_FLAGS_H

#include <stdint.h>

#include "codecell.h"

/* SRC:DST[:ro|rw] → a mount on config. Prints one line naming the problem (prefixed by who)
 * and returns < 0 when it is bad. */
int add_mount_flag(const char *who, codecell_config *config, const char *spec, codecell_error *err);
/* What the verbs that build a cell take from their flags. */
struct cell_flags {
        const char *who; /* "codecell run": the prefix of every error line */
        const char *lang;
        const char *mounts[64];
        size_t n_mounts;
        const char *tools;
        codecell_policy policy;
        uint64_t limits[CODECELL_LIMIT__COUNT];        /* 0: the default */
        const char *limit_text[CODECELL_LIMIT__COUNT]; /* as given, for error lines */
};

/* Builds the cell the flags describe, without a pool (the command-line verbs run and exit).
 * On failure prints one line naming the bad input and returns the exit code (2 for bad input,
 * 4 when the host cannot make the sandbox); 0 with *ret on success. */
int cell_from_flags(const struct cell_flags *f, codecell_cell **ret);

/* The guest language for a script file, from its extension; ruby when it has none we know. */
const char *language_of(const char *path);

#endif
