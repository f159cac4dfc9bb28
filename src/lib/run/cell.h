/* The cell: a configuration, what is prepared once for its sandboxes (cell_plan.h), and what
 * lives as long as it does: its pool, its host tools, its sessions, its description. */
#ifndef CODECELL_CELL_H
#define CODECELL_CELL_H

#include <pthread.h>

#include "cell_plan.h"
#include "config.h"
#include "disposal.h"
#include "pool.h"
#include "session.h"
#include "tools.h"

struct codecell_cell {
        codecell_config *config;
        struct cell_plan plan;
        char *description;
        struct pool *pool;         /* its threads also start sessions' kernels */
        struct disposal *disposal; /* collects sandboxes killed after their result */
        struct tool_table tools;
        struct session_table sessions;
        pthread_mutex_t description_lock; /* guards description, rebuilt as tools are added */
};

/* Adds a tool (owned from then on, freed on failure) and rebuilds the description. */
int cell_add_tool(struct codecell_cell *cell, struct tool *tool, codecell_error *err);

#endif
