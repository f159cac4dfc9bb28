/* What /proc says of a process: the numeric fields of its stat line (proc(5)), its children. */
#ifndef CODECELL_PROC_STAT_H
#define CODECELL_PROC_STAT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Fills f[3..last] from text, numbered as in proc(5) (f[3] is the state, which reads as 0);
 * f must hold last + 1 values. False when the line has fewer fields. No allocation: init uses
 * it between clone and exec. */
bool proc_stat_fields(const char *text, unsigned long long *f, int last);

/* Appends the children of every thread of pid to list[n..max); returns the new n. */
size_t proc_children(pid_t pid, pid_t *list, size_t n, size_t max);

#endif
