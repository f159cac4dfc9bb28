/* The numeric fields of a /proc/<pid>/stat line (proc(5)). */
#ifndef CODECELL_PROC_STAT_H
#define CODECELL_PROC_STAT_H

#include <stdbool.h>

/* Fills f[3..last] from text, numbered as in proc(5) (f[3] is the state, which reads as 0);
 * f must hold last + 1 values. False when the line has fewer fields. No allocation: init uses
 * it between clone and exec. */
bool proc_stat_fields(const char *text, unsigned long long *f, int last);

#endif
