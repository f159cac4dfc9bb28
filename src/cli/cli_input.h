/* What `codecell run` hands the code besides the code itself: its stdin, and the cell of a
 * configuration file to run it in (--config FILE --cell NAME). */
#ifndef CODECELL_CLI_INPUT_H
#define CODECELL_CLI_INPUT_H

#include <stddef.h>

#include "codecell.h"

/* Our stdin for the guest when it is not a terminal (read to its end before the code starts);
 * *ret_data NULL when it is a terminal or empty. 0, or the exit code after printing why. */
int stdin_for_guest(char **ret_data, size_t *ret_len);

/* The cell NAME of the configuration FILE, in *ret_set (free it, with its cells); NULL
 * names the file's only cell. 0, or the exit code after printing why, prefixed by who (the
 * message lists the cells when the name is not one, or none was given and there are
 * several). */
int cell_from_config(const char *who, const char *path, const char *name,
                     codecell_cellset **ret_set, codecell_cell **ret_cell);

#endif
