/* A JSON file read whole, with errors a person can act on. */
#ifndef CODECELL_JSON_FILE_H
#define CODECELL_JSON_FILE_H

#include <jansson.h>

#include "codecell.h"

/* The file's JSON (duplicate keys refused), or NULL with err: "PATH: cannot open: No such file
 * or directory" when it cannot be read, "PATH:LINE: what" when it is not JSON. */
json_t *json_file_load(const char *path, codecell_error *err);

#endif
