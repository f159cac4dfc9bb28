/* Approval before effects (tools/ wing; rpc.c includes it): a call of a tool marked
 * "approval": "always" waits for the cell's approval callback (codecell_cell_set_approval) on
 * the tool's side of the wall, before the tool runs. While it waits the run's clock is parked:
 * the wait counts against CODECELL_LIMIT_APPROVAL_MS, not the run's timeout. */
#ifndef CODECELL_APPROVAL_H
#define CODECELL_APPROVAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools.h"

/* The time an execution's calls spent waiting for approval, which its deadline moves by. One
 * per helper thread of an execution; the engine's pump reads it while a call waits.
 *
 * Guarded by lock: all of it. */
struct approval_clock {
        pthread_mutex_t lock;
        pthread_cond_t settled; /* broadcast when waiting drops to 0 */
        unsigned waiting;       /* callbacks running now */
        double since;           /* when the first of them began (now_ms clock) */
        double bound_ms;        /* the longest of their bounds */
        double parked_ms;       /* time parked by waits that have ended */
        /* A call of this execution was declined or not answered: the later ones are refused
         * without asking, so a guest cannot keep the run alive (its clock parked) nor flood
         * the person by calling again and again. */
        bool refused;
        /* The execution is ending (approval_clock_settle): no callback starts any more, since
         * the run's userdata they are given is about to be the caller's again. */
        bool closed;
};

void approval_clock_init(struct approval_clock *c);
void approval_clock_destroy(struct approval_clock *c);
/* The time parked so far, the wait under way included (at most its bound: a callback that
 * hangs parks the clock no longer than approval_ms, and the run's timeout then ends it). */
double approval_clock_parked(struct approval_clock *c);
/* Returns once no callback is running, and keeps any from starting after it (workers of the
 * execution may still be on their way to one): they may use the run's userdata, which its
 * caller frees once the run has returned. */
void approval_clock_settle(struct approval_clock *c);

/* Asks the table's approval callback whether tool may run with args_json, waiting at most
 * wait_ms. NULL when it may; else the message for the guest's SB::ToolError (malloc'd, or
 * NULL when out of memory: then *ret_refused is still true). *ret_waited_ms is the time parked
 * (the caller's deadline moves by it). */
char *approval_ask(struct tool_table *t, struct approval_clock *c, const char *tool,
                   const char *args_json, uint64_t wait_ms, void *run_userdata,
                   double *ret_waited_ms, bool *ret_refused);

#endif
