/* A library opened at run time instead of linked, its functions gathered into a table of
 * function pointers: codecell does without what only some commands need (libcurl for HTTP
 * upstream servers, libmicrohttpd for `serve --http`) until they are used, so that a one-shot
 * `codecell run` does not pay for loading them, and a host without them runs everything else. */
#ifndef CODECELL_DYNLIB_H
#define CODECELL_DYNLIB_H

#include <stddef.h>

struct dynlib_symbol {
        const char *name;
        size_t offset; /* of its function pointer in the table */
};

#define DYNLIB_SYMBOL(type, field, name)                                                           \
        {                                                                                          \
                name, offsetof(type, field)                                                        \
        }

/* Opens soname (kept open for the life of the process) and stores each symbol's address in
 * table. 0, or on failure nothing stays open and: -ENOENT with *ret_why dlerror's text, or
 * -ENOSYS with *ret_why the name of a function the library lacks. */
int dynlib_load(const char *soname, const struct dynlib_symbol *symbols, size_t n, void *table,
                const char **ret_why);

#endif
