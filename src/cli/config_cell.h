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

struct cell_flags;

/* The flag given that shapes a cell (its language, folders, tools, interpreter, start, images),
 * which a configuration file's cell takes from the file alone; NULL when none was. */
const char *cell_shaping_flag(const struct cell_flags *f);

/* cell_from_config() with f's limit flags (--timeout, --cpu, --memory, --max-output) as caps
 * and --on-unsupported raise kept. A flag above the cell's own limit is an error, not a silent
 * no-op: whoever wrote --timeout 60s believes the code has 60 s. */
int cell_from_config_narrowed(const struct cell_flags *f, const char *path, const char *name,
                              codecell_cellset **ret_set, size_t *ret_index);

#endif
