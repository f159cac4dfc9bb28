/* What `codecell run` hands the code besides the code itself: its stdin. */
#ifndef CODECELL_CLI_INPUT_H
#define CODECELL_CLI_INPUT_H

#include <stddef.h>

#include "codecell.h"

/* Our stdin for the guest when it is not a terminal (read to its end before the code starts);
 * *ret_data NULL when it is a terminal or empty. 0, or the exit code after printing why. */
int stdin_for_guest(char **ret_data, size_t *ret_len);

#endif
