/* What `codecell run` hands the code besides the code itself: its stdin and its files. */
#ifndef CODECELL_CLI_INPUT_H
#define CODECELL_CLI_INPUT_H

#include <stddef.h>

#include "codecell.h"

/* Our stdin for the guest when it is not a terminal (read to its end before the code starts);
 * *ret_data NULL when it is a terminal or empty. 0, or the exit code after printing why. */
int stdin_for_guest(char **ret_data, size_t *ret_len);

/* The --file flags: host files read now, for the run's codecell_run_options.files. */
struct cli_files {
        codecell_file *list; /* ended by an entry whose name is NULL; NULL while empty */
        size_t n;
};
/* One --file NAME=PATH (or PATH, named by its last part): PATH read whole. 0, or the exit code
 * after printing why. The engine checks the name and the cell's limits. */
int cli_files_take(struct cli_files *files, const char *arg);
void cli_files_free(struct cli_files *files);

#endif
