/* The jail tests' one way to run a function: a run that fails outright fails the test, and
 * comes back as an empty UNSUPPORTED result so the checks after it read nothing. */
#pragma once

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "codecell.h"

static inline codecell_jail_result run(const codecell_jail_options *o, codecell_jail_fn fn,
                                       void *arg)
{
        codecell_jail_result r;
        codecell_error err = {0};
        if (codecell_jail_run(o, fn, arg, &r, &err) < 0) {
                fprintf(stderr, "jail run failed: %s\n", err.message);
                check_failures++;
                memset(&r, 0, sizeof(r));
                r.outcome = CODECELL_JAIL_UNSUPPORTED;
        }
        return r;
}
