/* The guest languages: which interpreter runs, with which flags, and the prelude it loads.
 * Adding a language means one entry here and one guest/<language>/prelude file. */
#ifndef CODECELL_RUNTIME_H
#define CODECELL_RUNTIME_H

#include <stddef.h>

struct runtime {
        const char *name;         /* "ruby" */
        const char *interpreter;  /* absolute path on the host and inside the sandbox */
        const char *const *argv;  /* argv for execve; the prelude path is the last element */
        const char *prelude_path; /* where the prelude appears inside the sandbox */
        const char *prelude;      /* NUL-terminated source, embedded at build time */
        const char *package_hint; /* what to install when the interpreter is missing */
        /* The guest error class that means the interpreter ran out of memory. */
        const char *out_of_memory_class;
};

const struct runtime *runtime_find(const char *name);

#endif
