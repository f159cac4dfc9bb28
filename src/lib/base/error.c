#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

static int err_vset(codecell_error *err, codecell_error_kind kind, int errno_value, const char *fmt,
                    va_list ap)
{
        if (err) {
                err->kind = kind;
                err->errno_value = errno_value;
                vsnprintf(err->message, sizeof(err->message), fmt, ap);
                /* Messages name the bad input, which may be long: a cut never splits a
                 * character (the message may end up in a JSON string). */
                utf8_trim_cut(err->message);
        }
        return errno_value > 0 ? -errno_value : -EINVAL;
}

int err_set(codecell_error *err, codecell_error_kind kind, int errno_value, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int r = err_vset(err, kind, errno_value, fmt, ap);
        va_end(ap);
        return r;
}

int err_sys(codecell_error *err, int errno_value, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int r = err_vset(err, CODECELL_ERR_SYSTEM, errno_value, fmt, ap);
        va_end(ap);
        if (err) {
                size_t used = strlen(err->message);
                snprintf(err->message + used, sizeof(err->message) - used, ": %s",
                         strerror(errno_value));
                utf8_trim_cut(err->message);
        }
        return r;
}

void err_prefix(codecell_error *err, const char *fmt, ...)
{
        if (!err)
                return;
        char prefix[256];
        char rest[sizeof(err->message)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        utf8_trim_cut(prefix);
        snprintf(rest, sizeof(rest), "%s", err->message);
        size_t n = utf8_cut(prefix, strlen(prefix), sizeof(err->message) - 1);
        memcpy(err->message, prefix, n);
        size_t room = sizeof(err->message) - 1 - n;
        size_t m = strnlen(rest, room);
        memcpy(err->message + n, rest, m);
        err->message[n + m] = '\0';
        utf8_trim_cut(err->message);
}
