/* Printing a result for a person (codecell run without --json, codecell repl). */
#ifndef CODECELL_CLI_RESULT_PRINT_H
#define CODECELL_CLI_RESULT_PRINT_H

#include "codecell.h"

/* stdout and stderr replayed, then "=> value" on stdout or the error on stderr, and any
 * warnings. */
void print_result(const codecell_result *res);
/* The same without the output: for a run whose output was shown as it came. */
void print_outcome(const codecell_result *res);

#endif
