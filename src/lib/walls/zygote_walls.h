/* The walls every child of a cell's zygote puts up, written once per cell for the zygote to
 * read (zygote_protocol.h): the same filter, Landlock rules, rlimits and tmpfs sizes as an
 * exec'd sandbox gets. */
#ifndef CODECELL_ZYGOTE_WALLS_H
#define CODECELL_ZYGOTE_WALLS_H

#include <stddef.h>
#include <sys/types.h>

#include "codecell.h"
#include "landlock.h"
#include "mount_plan.h"
#include "sandbox.h"
#include "seccomp_filter.h"
#include "zygote_protocol.h"

/* Fills w (zeroed first). < 0 with err when something does not fit. */
int zygote_walls_encode(struct zygote_walls *w, const struct mount_plan *mounts,
                        const struct landlock_plan *landlock, const struct seccomp_program *filter,
                        const struct sandbox_rlimit *rlimits, size_t n_rlimits, uid_t inner_uid,
                        gid_t inner_gid, codecell_error *err);

#endif
