/* Flags shared by the verbs that build a cell. */
#ifndef CODECELL_CLI_CELL_FLAGS_H
#define CODECELL_CLI_CELL_FLAGS_H

#include "codecell.h"

/* SRC:DST[:ro|rw] → a mount on config. Prints one line naming the problem (prefixed by who)
 * and returns < 0 when it is bad. */
int add_mount_flag(const char *who, codecell_config *config, const char *spec, codecell_error *err);
/* The guest language for a script file, from its extension; ruby when it has none we know. */
const char *language_of(const char *path);

#endif
