/* The cell of a configuration file a verb works in (--config FILE [--cell NAME]): run, repl and
 * describe. */
#ifndef CODECELL_CLI_CONFIG_CELL_H
#define CODECELL_CLI_CONFIG_CELL_H

#include "codecell.h"

/* The cell NAME of the configuration file at path, or its only cell when name is NULL, loaded
 * without a pool and tightened by caps (NULL: as the file says). *ret_set holds it (free the
 * set, with its cells); *ret_index is its place in the set. 0, or the exit code after one line
 * on stderr that names who and lists the cells when the name is not one. */
int cell_from_config(const char *who, const char *path, const char *name,
                     const codecell_cellset_caps *caps, codecell_cellset **ret_set,
                     size_t *ret_index);

#endif
