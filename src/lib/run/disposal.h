/* Sandboxes already killed whose end is still to be collected: reaping init, removing the
 * cgroup, closing the pipes. Waiting for the kernel to tear a dead interpreter down takes a
 * millisecond or two; a run whose result is in hand and that cannot have touched the host
 * (see execution.c) hands its sandbox here instead of making the caller wait. One thread per
 * cell; stopping it collects everything first, so nothing outlives the cell. */
#ifndef CODECELL_DISPOSAL_H
#define CODECELL_DISPOSAL_H

#include "codecell.h"
#include "standby.h"

struct disposal;

int disposal_start(struct disposal **ret, codecell_error *err);
/* Takes s (already killed with standby_kill) and frees it on the disposal thread. */
void disposal_add(struct disposal *d, struct standby *s);
/* Returns once everything handed over so far is collected. */
void disposal_flush(struct disposal *d);
/* Collects everything left and stops the thread. Accepts NULL. */
void disposal_stop(struct disposal *d);

#endif
