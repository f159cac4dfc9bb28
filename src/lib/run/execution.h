/* One execution (DESIGN §4): the code handed to a sandbox standing by, its output and result
 * collected until the deadline, the status decided from what the kernel says. */
#ifndef CODECELL_EXECUTION_H
#define CODECELL_EXECUTION_H

#include <stdbool.h>
#include <stddef.h>

#include "cell_plan.h"
#include "codecell.h"
#include "disposal.h"
#include "pool.h"
#include "standby.h"
#include "call_record.h"
#include "tools.h"

/* A new result for code the plan's cell accepts with options, carrying what every result
 * carries (the layers, the warnings). < 0 with err for code that is not UTF-8, holds a NUL or
 * is over the limit, and for bad options. */
int execution_accept(const struct cell_plan *plan, const char *code, size_t len,
                     const codecell_run_options *options, codecell_result **ret,
                     codecell_error *err);
/* How a sandbox that gave no result ended. */
struct execution_end {
        /* It ended before the prelude took the code (neither cancelled nor out of time): none
         * of the code ran, so it may run elsewhere (a session's fresh kernel). */
        bool untaken;
        int init_status; /* init's exit code as sandbox_destroy gives it, or -1 */
};

/* Runs one `exec` on a sandbox standing by, calling tools' host tools (record: a session
 * eval's journal of its calls, which in replay answers them instead; NULL: none). With keep, a
 * sandbox that returned "ok" or "error" is left running for the next exec (a session) and true is
 * returned; otherwise it is torn down (not freed), false is returned, and ret_end (NULL: not
 * wanted) says how it ended. */
bool execution_on(struct cell_plan *plan, struct tool_table *tools, struct standby *s,
                  const char *code, size_t len, bool keep, struct call_record *record,
                  const codecell_run_options *options, codecell_result *res,
                  struct execution_end *ret_end);
/* Runs one execution on a sandbox from pool, or a cold one, into res; its sandbox goes to
 * disposal when it is still to be collected. */
void execution_run(struct cell_plan *plan, struct tool_table *tools, struct pool *pool,
                   struct disposal *disposal, const char *code, size_t len,
                   const codecell_run_options *options, codecell_result *res);

#endif
