/* Ctrl-C while an entry of `codecell repl` runs: it interrupts the entry's code, as it would
 * a program's, and the session goes on. */
#ifndef CODECELL_CLI_REPL_INTERRUPT_H
#define CODECELL_CLI_REPL_INTERRUPT_H

#include "codecell.h"

/* Blocks SIGINT in this thread, and so in every thread started after it (call it before any
 * starts), and starts the one that takes it. < 0 when that thread cannot start. */
int repl_interrupts_start(void);
/* From now on a SIGINT interrupts the run that uses cancel (NULL: a SIGINT does nothing).
 * Returns how many SIGINTs the previous target took. */
unsigned repl_interrupts_target(codecell_cancel *cancel);

#endif
