/* A folder of stored session journals (issue 33 part 4; the form is journal_codec.h): one file
 * per session, named by the hex of its key (so no key can name a path), mode 0600, in a folder
 * of mode 0700 owned by the server's user; a folder others could write is refused. A file is
 * written whole or not at all: a temp file in the folder, fsync, rename, fsync of the folder.
 * Not yet used by `codecell serve` (--state-dir is not built). */
#ifndef CODECELL_SESSION_STORE_DIR_H
#define CODECELL_SESSION_STORE_DIR_H

#include <stddef.h>

struct session_store_dir {
        int fd; /* of the folder, O_DIRECTORY */
};

/* Opens (creating it 0700 when absent) the folder; -1 with why when it cannot be used. */
int session_store_dir_open(struct session_store_dir *s, const char *path, char *why,
                           size_t why_len);
void session_store_dir_close(struct session_store_dir *s);
/* Stores buf under key, durably once it returns 0; -1 with why (nothing changed then). */
int session_store_dir_put(struct session_store_dir *s, const char *key, const void *buf, size_t len,
                          char *why, size_t why_len);
/* 1 with a malloc'd *buf, 0 when none is stored, -1 with why. */
int session_store_dir_get(struct session_store_dir *s, const char *key, char **buf, size_t *len,
                          char *why, size_t why_len);
/* Removes what key holds (none: fine); -1 with why. */
int session_store_dir_remove(struct session_store_dir *s, const char *key, char *why,
                             size_t why_len);

#endif
