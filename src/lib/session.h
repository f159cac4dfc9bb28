/* Sessions (DESIGN §7): named, persistent sandboxes of a cell whose interpreter keeps its state
 * between evals, closed by name, when idle, or with the cell. */
#ifndef CODECELL_SESSION_H
#define CODECELL_SESSION_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct session;

struct session_table {
        pthread_mutex_t lock;
        pthread_cond_t changed; /* a session was added, used, or removed; or stop */
        struct session **items;
        size_t n;
        pthread_t reaper; /* closes idle sessions; started with the first session */
        bool reaper_started, stopping;
};

void session_table_init(struct session_table *t);
struct codecell_cell;
/* Closes every session of the cell and stops the reaper. */
void session_table_free(struct codecell_cell *cell);

/* NULL when name is a valid session name, else what is wrong with it. */
const char *session_name_problem(const char *name);

#endif
