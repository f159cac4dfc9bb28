/* The stored form of a session's journal (docs/sessions.md, issue 33 part 4): every field of
 * every kept eval (run/journal.h), the seed, and the session's identity (cell name, scoped
 * session name), behind a magic and a format version and ended by a checksum of all before
 * it. Read strictly: a truncated, corrupt or foreign file is refused whole with the reason,
 * never half-restored. Not yet written to disk by anything: the store that will is not built. */
#ifndef CODECELL_JOURNAL_CODEC_H
#define CODECELL_JOURNAL_CODEC_H

#include <stddef.h>

#include "journal.h"

#define JOURNAL_CODEC_VERSION 1u

/* The stored form of j's kept evals (not the one under way) in a malloc'd *out; -1 when out
 * of memory or j is over its bound (nothing to store). */
int journal_encode(const struct journal *j, const char *cell, const char *session, char **out,
                   size_t *out_len);
/* Reads a stored form into j (journal_init'ed and empty, by the caller; its max_bytes bounds
 * what is read) and malloc'd *cell and *session; -1 with why (a sentence) when the form is
 * refused: j is then left empty. */
int journal_decode(const void *buf, size_t len, struct journal *j, char **cell, char **session,
                   char *why, size_t why_len);

#endif
