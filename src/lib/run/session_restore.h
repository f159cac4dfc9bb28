/* Bringing a session's state onto a fresh kernel (docs/sessions.md, Parked sessions): the
 * session's seeds are set first, then every eval of its journal runs again in order, each
 * host-tool call answered from the journal. */
#ifndef CODECELL_SESSION_RESTORE_H
#define CODECELL_SESSION_RESTORE_H

#include <stdbool.h>
#include <stddef.h>

#include "cell_plan.h"
#include "journal.h"
#include "standby.h"
#include "tools.h"

/* Sets the session's seeds on a fresh kernel (Ruby's srand, Python's random.seed). False, with
 * why, when the kernel did not take them (it is then ended). */
bool session_seed(struct cell_plan *plan, struct tool_table *tools, struct standby *kernel,
                  uint64_t seed, char *why, size_t n);

/* What a replay came to. */
struct replay_outcome {
        bool restored;  /* every eval ran again and ended as it first did */
        size_t evals;   /* replayed, when restored */
        double ms;      /* the replay's time */
        size_t stopped; /* the eval (from 1) where it stopped, when not restored; 0: before any */
        char why[600];  /* why it stopped, for the model */
};

/* Replays j's evals on kernel (seeded already) within restore_ms and the caller's cancel.
 * False when it stopped: the kernel may hold part of the state and is to be ended. */
bool session_replay(struct cell_plan *plan, struct tool_table *tools, struct standby *kernel,
                    struct journal *j, codecell_cancel *cancel, struct replay_outcome *out);

#endif
