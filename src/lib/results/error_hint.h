/* A short hint beside an error the sandbox caused (results/ floor): the code met a wall (no
 * network, no subprocesses, a folder that is not mounted) and the exception, which the guest's
 * own library raised, does not say so. The exception's class and message stay as they are. */
#ifndef CODECELL_ERROR_HINT_H
#define CODECELL_ERROR_HINT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* What the sandbox of the run is: the folders mounted in it (their paths inside), besides its
 * own (/usr, /tmp, /work …) and the interpreter's (its host path, the same inside, or NULL);
 * and whether it may start subprocesses. */
struct sandbox_shape {
        const char *const *mounts;
        size_t n_mounts;
        const char *interpreter;
        bool subprocesses;
        /* A network cell's allowed hosts ("api.github.com, *.wikipedia.org:443"), or NULL: the
         * cell has no network. */
        const char *network_allowed;
};

/* The hint for a run's error, {class, message, backtrace} as the prelude reported it: "this
 * sandbox has no network" (in a network cell: "... only through its proxy ..."), "subprocesses are
 * off in this cell", "nothing is mounted at /data; mounts: /in, /out"; or NULL when none applies.
 * Free with free(). */
char *error_hint(const json_t *error, const struct sandbox_shape *shape);

#endif
