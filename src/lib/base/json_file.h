/* A JSON file read whole, and the keys of its objects checked, with errors a person can act
 * on. */
#ifndef CODECELL_JSON_FILE_H
#define CODECELL_JSON_FILE_H

#include <jansson.h>

#include "codecell.h"

/* The file's JSON (duplicate keys refused), or NULL with err: "PATH: cannot open: No such file
 * or directory" when it cannot be read, "PATH:LINE: what" when it is not JSON. */
json_t *json_file_load(const char *path, codecell_error *err);

/* The first key of the object obj that is not one of known (a NULL-terminated list), or NULL
 * when it has no other: what a file's error then names, with its JSON path. */
const char *json_unknown_key(const json_t *obj, const char *const *known);
/* The keys of a NULL-terminated list as such an error names them, "a, b, c", into buf (cut to
 * size). Returns buf, for a printf argument. */
const char *json_key_list(const char *const *keys, char *buf, size_t size);
/* The one key of known (NULL-terminated) that key is most likely a typing of, or NULL. */
const char *json_closest_key(const char *key, const char *const *known);
/* What the error of an unknown key says after its JSON path, into buf: "unknown key (did you
 * mean \"mounts\"? known: a, b, c)", the guess only when one known key is close to it (the same
 * but for case, '_' and '-', or one or two letters typed wrong, left out, added or swapped).
 * what: "key", "limit". Returns buf. */
const char *json_unknown_key_problem(const char *what, const char *key, const char *const *known,
                                     char *buf, size_t size);

#endif
