/* Filling a codecell_error: a kind, an errno and a message that names the bad input. */
#ifndef CODECELL_ERROR_H
#define CODECELL_ERROR_H

#include "codecell.h"

/* Sets *err (if not NULL) and returns -errno_value (or -EINVAL when errno_value is 0), so a
 * caller can write `return err_set(err, …);`. */
int err_set(codecell_error *err, codecell_error_kind kind, int errno_value, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
/* err_set for a failed system call: appends strerror(errno_value). */
int err_sys(codecell_error *err, int errno_value, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Puts context in front of an existing message: "mount /data: " + cause. */
void err_prefix(codecell_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
