/* A sandbox standing by, ready for its one execution (DESIGN §9). */
#ifndef CODECELL_STANDBY_H
#define CODECELL_STANDBY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

#include "cell_plan.h"
#include "cgroup.h"
#include "mount_roots.h"
#include "netns.h"
#include "pump.h"
#include "sandbox.h"

struct standby {
        struct sandbox sb;
        struct cgroup cg;
        bool have_cg;
        pid_t guest;     /* the interpreter, by host pid */
        bool whole_tree; /* subprocesses allowed: CPU counts every process (cpu_time.h) */
        struct pump pump;
        struct output_buffer boot_out, boot_err;
        double boot_cpu_ms;              /* set by standby_arm */
        struct netns_stock *netns_stock; /* where netns_fd goes back, or NULL */
        int netns_fd;                    /* a recycled network namespace, or -1 */
        struct mount_roots *mount_roots; /* the cell's: put back when the sandbox ends */
};

/* Builds a sandbox as plan says and waits for the prelude's "ready". The sandbox takes a
 * network namespace from plan's stock and puts its mount roots back when it ends: plan must
 * outlive it. A session's sandbox (a kernel that serves many evals) has no RLIMIT_CPU
 * backstop. Called from the pool's thread or, on a cold start, from the caller's: the
 * sandbox's parent-death signal is tied to that thread. */
int standby_start(struct cell_plan *plan, bool session, struct standby **ret, codecell_error *err);
/* False when the sandbox died (or spoke) while waiting. */
bool standby_alive(struct standby *s);
/* Starts the CPU budget now (the pump enforces it); records boot_cpu_ms. */
void standby_arm(struct standby *s, uint64_t cpu_budget_ms);
enum standby_end {
        END_NOW,         /* kill everything at once: its result, if any, is in hand */
        END_GUEST_FIRST, /* kill the interpreter, let init reap it (its CPU time is counted) */
        END_WAIT,        /* the interpreter is ending by itself: give init a moment */
};

/* The sandbox's CPU time so far by the meter standby_arm started (boot included), or 0 when
 * it was not started. */
double standby_cpu_ms(const struct standby *s);
/* The sandbox's cgroup counters so far (left unchanged without a cgroup). */
void standby_stats(struct standby *s, struct cgroup_stats *ret);
/* Ends the sandbox and removes its cgroup; returns init's exit code (see sandbox_destroy). */
int standby_teardown(struct standby *s, enum standby_end how, struct rusage *ret_usage,
                     struct cgroup_stats *ret_stats);
/* Kills the whole sandbox at once without waiting for it: standby_free collects it. */
void standby_kill(struct standby *s);
/* Tears down (if not yet) and frees. Accepts NULL. */
void standby_free(struct standby *s);

#endif
