/* A cell tool's "files" argument: the files a model gives a run, read into the C API's
 * codecell_file list. Names, counts and sizes are the engine's to check (run_input.c), so
 * that every entry point refuses the same entries in the same words. */
#ifndef CODECELL_MCP_RUN_FILES_H
#define CODECELL_MCP_RUN_FILES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "codecell.h"

struct run_files {
        codecell_file *list;   /* ended by an entry whose name is NULL; NULL when none given */
        unsigned char **bytes; /* the decoded contents, owned */
        size_t n;
};

/* The schema of the argument, for the tool's inputSchema (new reference). */
json_t *run_files_schema(void);
/* Reads args' "files" into *ret (freed with run_files_free, also on failure). False, with why
 * (naming the entry, for the model to fix), for an entry that is not {"name", "text"} or
 * {"name", "base64"}. */
bool run_files_read(const json_t *files, struct run_files *ret, char *why, size_t n);
void run_files_free(struct run_files *f);

#endif
