/* Sessions (DESIGN §7): named, persistent sandboxes of a cell whose interpreter keeps its state
 * between evals, closed by name, when idle, or with the cell. */
#ifndef CODECELL_SESSION_H
#define CODECELL_SESSION_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "cell_plan.h"
#include "codecell.h"
#include "pool.h"
#include "tools.h"

struct session;

struct session_table {
        pthread_mutex_t lock;
        pthread_cond_t changed; /* a session was added, used, or removed; or stop */
        struct session **items;
        size_t n;
        pthread_t reaper; /* closes idle sessions; started with the first session */
        bool reaper_started, stopping;
        /* The cell's, borrowed: they outlive the table. */
        struct cell_plan *plan;
        struct tool_table *tools;
        struct pool *pool; /* starts the kernels; set before the first eval */
};

void session_table_init(struct session_table *t, struct cell_plan *plan, struct tool_table *tools);
/* Closes every session and stops the reaper. */
void session_table_free(struct session_table *t);

/* NULL when name is a valid session name, else what is wrong with it. */
const char *session_name_problem(const char *name);

/* What codecell.h's codecell_session_* functions do, on the cell's table. */
int session_eval(struct session_table *t, const char *name, const char *code, size_t len,
                 const codecell_run_options *options, codecell_result **ret_result,
                 codecell_error *err);
int session_close(struct session_table *t, const char *name, codecell_error *err);
void session_close_all(struct session_table *t);
int session_close_idle(struct session_table *t, const char *prefix, char **ret_name,
                       codecell_error *err);
/* Parking (docs/sessions.md, Parked sessions): the kernel ends, the journal stays, the next
 * eval restores it. session_park_idle parks the least recently used idle session of prefix
 * that is running, or closes it when it cannot be restored (*ret_parked false). */
int session_park(struct session_table *t, const char *name, codecell_error *err);
int session_park_idle(struct session_table *t, const char *prefix, char **ret_name,
                      bool *ret_parked, codecell_error *err);
/* A new session as, parked with a copy of from's journal: its first eval replays it. */
int session_fork(struct session_table *t, const char *from, const char *as, codecell_error *err);
bool session_is_parked(struct session_table *t, const char *name);
char **session_list(struct session_table *t);

#endif
