/* `codecell run --save-outputs DIR`: the files a run handed back from its output folder, under
 * their own names, into a folder of the host. */
#ifndef CODECELL_CLI_SAVE_OUTPUTS_H
#define CODECELL_CLI_SAVE_OUTPUTS_H

#include "codecell.h"

/* Writes the result's files and named images (those of the output folder; matplotlib's figures
 * have no name and are --save-images's) into dir, listed on stderr. dir_fd: dir opened before
 * the run, or -1 when it did not exist (then it is made). A name that is already in dir is
 * refused, never overwritten, and neither a link nor a FIFO planted there is followed. 0, or
 * -1 when a file could not be written (each reason on stderr; the others are still written). */
int save_outputs(const codecell_result *res, const char *dir, int dir_fd);

#endif
