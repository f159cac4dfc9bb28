/* The cell's interpreter, asked on the host what it is: its language and version, where each
 * library folder puts code on its load path, and the libraries the guest can use. */
#ifndef CODECELL_INTERPRETER_H
#define CODECELL_INTERPRETER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* Where library folder i appears in the sandbox: "/codecell/lib/0". */
#define INTERPRETER_LIBRARY_DEST "/codecell/lib/%zu"

struct interpreter_info {
        char *version;     /* "3.11.7", or NULL when never probed */
        char **load_paths; /* in the sandbox, in order: "/codecell/lib/0/lib/python3.11/…" */
        size_t n_load_paths;
        /* The library folders' first, each {"text": "numpy 1.24.2", "imports": ["numpy"]}, the
         * names the code loads it by; or NULL. Which load is known once checked in the
         * sandbox (library_check.h), which keeps only those. */
        json_t *libraries;
        bool libraries_checked;
};

/* Runs the runtime's probe (guest/<language>/probe.*) with interpreter and config's library
 * folders on the host, as the sandbox starts it. Refuses, with an error that names the
 * interpreter or folder, an interpreter that does not run the probe as config's language, a
 * folder the guest could not read, and a library folder the probe finds unusable. */
int interpreter_probe(const codecell_config *config, const char *interpreter, bool privileged,
                      struct interpreter_info *ret, codecell_error *err);
void interpreter_info_free(struct interpreter_info *info);

#endif
