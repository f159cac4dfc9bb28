/* Printing a result for a person (codecell run without --json, codecell repl). */
#ifndef CODECELL_CLI_RESULT_PRINT_H
#define CODECELL_CLI_RESULT_PRINT_H

#include <stdbool.h>
#include <stddef.h>

#include "codecell.h"

/* stdout and stderr replayed, then "=> value" on stdout or the error on stderr, and any
 * warnings. */
void print_result(const codecell_result *res);
/* The same without the output: for a run whose output was shown as it came. */
void print_outcome(const codecell_result *res);
/* print_outcome(), with no "=> null" for an ok result without a value unless echo_null (a
 * Python REPL shows no None, and so no statement's value). */
void print_outcome_of(const codecell_result *res, bool echo_null);
/* A codecell_output_fn: the guest's output on ours as it comes (userdata unused). */
void print_live_output(int stream, const char *data, size_t len, void *userdata);

#endif
