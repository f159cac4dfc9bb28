/* A session's journal (docs/sessions.md, Parked sessions): every eval that completed on the
 * session's kernel ("ok" or "error"), with what it was given (code, files, argv, env, stdin)
 * and the host-tool calls it made and their replies, plus the seed its random numbers come
 * from. Replaying it on a fresh kernel (session_restore.h) brings the session back. In memory,
 * bounded by session_journal_bytes: a journal over it is dropped and the session can no longer
 * be restored. */
#ifndef CODECELL_JOURNAL_H
#define CODECELL_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "call_record.h"
#include "codecell.h"

struct journal_eval {
        char *code;
        size_t len;
        /* Copies of the eval's options: NULL-terminated arrays, NULL when it had none. */
        char **argv, **env;
        char *stdin_data;
        size_t stdin_len;
        codecell_file *files; /* ended by an entry whose name is NULL */
        struct call_record calls;
        bool ok; /* its status was "ok" (else "error") */
};

struct journal {
        struct journal_eval *evals;
        size_t n, cap;
        struct journal_eval pending; /* the eval under way, kept once it completes */
        bool has_pending;
        uint64_t seed; /* of the session's random numbers: srand, random.seed */
        size_t bytes, max_bytes;
        /* Over max_bytes (or out of memory): nothing is kept, the session cannot be restored,
         * until it starts afresh. */
        bool over;
};

/* An empty journal with a new seed. */
void journal_init(struct journal *j, size_t max_bytes);
/* Forgets every eval and takes a new seed: the session starts afresh. */
void journal_reset(struct journal *j);
void journal_free(struct journal *j);
/* Starts recording an eval (its calls go to j->pending.calls); false when it is not kept (the
 * journal is over its bound, or no memory: over is then set). */
bool journal_begin(struct journal *j, const char *code, size_t len,
                   const codecell_run_options *options);
/* Ends the eval begun: kept when it completed (ok: its status was "ok"), dropped otherwise.
 * True when this eval took the journal over its bound. */
bool journal_end(struct journal *j, bool completed, bool ok);
/* A copy of from's evals and seed (a fork of the session); -1 when out of memory (to is then to
 * be freed). Not while an eval of from runs. */
int journal_copy(struct journal *to, const struct journal *from);
/* The options an eval was given, for its replay (pointing into e); cancel is the caller's. */
codecell_run_options journal_eval_options(const struct journal_eval *e, codecell_cancel *cancel);

#endif
