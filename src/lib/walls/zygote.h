/* A cell's zygote, seen from the engine (docs/security.md, "Forked sandboxes"): a sandbox whose
 * interpreter booted once with its prelude and then makes every sandbox of the cell as a copy
 * of itself, each behind its own walls (src/zygote/zygote.c). Started at the first fork, again
 * whenever it has died; one order at a time. */
#ifndef CODECELL_ZYGOTE_H
#define CODECELL_ZYGOTE_H

#include <stdbool.h>
#include <stdint.h>

#include "codecell.h"
#include "sandbox.h"

struct zygote;

/* warm, when not NULL, is called on the zygote's own thread each time it has started a zygote,
 * while the zygote boots: the cell starts there the wait its first sandbox's cgroup move would
 * otherwise begin with (cgroup_place_warm). */
struct zygote *zygote_new(void (*warm)(void *ctx), void *warm_ctx);
/* What starts the zygote when it is not running: the spec of one of the cell's sandboxes (its
 * argv and envp the cell's interpreter's; the zygote's mode is added to it), made only then,
 * and released once the start is over. */
struct zygote_starter {
        int (*make_spec)(void *ctx, struct sandbox_spec *spec, codecell_error *err);
        void (*release)(void *ctx);
        void *ctx;
};

/* A new sandbox, forked: ret's pid is its init (PID 1 of its pid namespace) and ret's guest
 * the interpreter (PID 2), by host pids, each with its pidfd. With cgroup_dir (a cgroup v2
 * directory, or -1) both are born in that cgroup where the zygote can (*ret_born:
 * ZYGOTE_BORN_INIT, ZYGOTE_BORN_GUEST); the caller moves the others. An interpreter not born
 * there waits for one byte on ret's control socket (the word that both are in the run's cgroup)
 * before anything else. < 0 with err. */
int zygote_fork(struct zygote *z, const struct zygote_starter *starter, bool session,
                int cgroup_dir, struct sandbox *ret, uint32_t *ret_born, codecell_error *err);
/* Ends the zygote; its children die with it. Accepts NULL. */
void zygote_free(struct zygote *z);

#endif
