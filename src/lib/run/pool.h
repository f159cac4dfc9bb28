/* The warm pool of one cell (DESIGN §9): sandboxes standing by, each serving exactly one
 * execution, replaced in the background by a few threads (up to one per CPU, at most 4, no more
 * than the pool's size) that start sandboxes at the same time and live as long as the cell.
 * Whichever is free also starts sessions' kernels. */
#ifndef CODECELL_POOL_H
#define CODECELL_POOL_H

#include <stddef.h>

#include "codecell.h"
#include "standby.h"

struct pool;

/* Starts the pool's threads, which begin filling at once with sandboxes built as plan says
 * (plan must outlive the pool). Sandboxes standing by and being started never number more
 * than size. */
int pool_start(struct cell_plan *plan, size_t size, struct pool **ret, codecell_error *err);
/* A live sandbox standing by, or NULL when none is ready (the caller then starts one cold).
 * Thread-safe. Wakes the threads to replace it. */
struct standby *pool_take(struct pool *pool);
/* Starts a session's kernel on one of the pool's threads (whatever the pool's size) and waits
 * for it: it must outlive the calling thread. */
int pool_spawn(struct pool *pool, struct standby **ret, codecell_error *err);
/* Waits until the pool is full. Fails when sandboxes cannot be started (the reason in err). */
int pool_warmup(struct pool *pool, codecell_error *err);
/* Sandboxes standing by now. */
size_t pool_ready_count(struct pool *pool);
/* The most sandboxes that were being started at the same time (what the tests check). */
size_t pool_peak_starting(struct pool *pool);
/* Stops the threads (each first finishes the start it is in) and ends every sandbox standing
 * by. Accepts NULL. */
void pool_stop(struct pool *pool);

#endif
