/* What a run may be given besides its code (codecell_run_options): arguments, environment
 * variables and stdin, checked before anything runs and carried in the exec frame. */
#ifndef CODECELL_RUN_INPUT_H
#define CODECELL_RUN_INPUT_H

#include <jansson.h>

#include "codecell.h"

/* 0, or < 0 with err (CODECELL_ERR_INVALID) naming the bad argument or variable. */
int run_input_check(const codecell_run_options *options, codecell_error *err);

/* Adds "argv", "env" and "stdin_b64" to an exec frame, for the options that give them. 0, or
 * -ENOMEM. */
int run_input_add(json_t *exec, const codecell_run_options *options);

#endif
