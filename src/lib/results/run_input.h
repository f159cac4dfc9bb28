/* What a run may be given besides its code (codecell_run_options): arguments, environment
 * variables, stdin and files for /work, checked before anything runs and carried in the exec
 * frame. */
#ifndef CODECELL_RUN_INPUT_H
#define CODECELL_RUN_INPUT_H

#include <jansson.h>
#include <stdint.h>

#include "codecell.h"

/* 0, or < 0 with err (CODECELL_ERR_INVALID) naming the bad argument, variable or file
 * ("files[2].name: ..."); limits are the cell's (files_in, files_in_bytes, file_bytes). */
int run_input_check(const codecell_run_options *options, const uint64_t *limits,
                    codecell_error *err);

/* Why name cannot be the name of a file given to a run (codecell_file), or NULL when it can. */
const char *run_input_file_name_problem(const char *name);

/* Adds "argv", "env", "stdin_b64" and "files" to an exec frame, for the options that give
 * them. 0, or -ENOMEM. */
int run_input_add(json_t *exec, const codecell_run_options *options);

#endif
