/* What a cell prepares once for all its sandboxes: the interpreter and how it is started, the
 * mount plan, the compiled seccomp filter, the Landlock rules, the id maps of the user's
 * folders, where the sandboxes' cgroups go, the recycled network namespaces, and the layers all
 * this puts in force. Below the pool, the sandboxes standing by and the executions, which read
 * it and never the cell. */
#ifndef CODECELL_CELL_PLAN_H
#define CODECELL_CELL_PLAN_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "cgroup.h"
#include "config.h"
#include "interpreter.h"
#include "landlock.h"
#include "mount_plan.h"
#include "mount_roots.h"
#include "netns.h"
#include "sandbox.h"
#include "seccomp_filter.h"

/* The interpreter and prelude must be ready this long after the sandbox exists. Start-up is
 * not counted in the execution's own limits, which start at `exec`. */
#define SANDBOX_STARTUP_TIMEOUT_MS 10000

struct egress_tls;
struct zygote;

struct cell_plan {
        const codecell_config *config; /* the cell's, borrowed: it outlives the plan */
        /* What the sandbox executes (config's, or the runtime's), its argv (runtime_argv: the
         * boot program and the load paths, which point into probe) and its environment. */
        const char *interpreter;
        char **argv;
        const char *const *envp;
        char *interpreter_real; /* the interpreter binary, symlinks resolved */
        char *elf_interpreter;  /* its dynamic loader, or NULL */
        /* What the interpreter's probe found: at build only when the configuration names an
         * interpreter or library folders (their load paths go into argv); version NULL: not
         * probed yet (the cell probes it for its description, see codecell_cell_description). */
        struct interpreter_info probe;
        struct mount_plan mounts;
        struct landlock_plan landlock;
        struct seccomp_program seccomp;
        struct cgroup_place cgroup_place; /* backend NULL: no cgroup on this host */
        uid_t host_uid;                   /* the guest's uid on the host */
        gid_t host_gid;
        bool privileged;                /* the engine runs as root */
        int *idmap_fds;                 /* per user mount: a user namespace fd, or -1 */
        struct netns_stock netns;       /* recycled network namespaces (privileged only) */
        bool writes_host;               /* some mount is read-write */
        struct mount_roots mount_roots; /* the read-write folders' own modes */
        struct zygote *zygote;          /* forked cells': what makes their sandboxes; or NULL */
        struct egress_tls *egress_tls;  /* terminate_tls: the cell's CA and certificates */
        json_t *layers;                 /* layers in force for every run */
        json_t *warnings;               /* layers missing, under the "warn" policy */
};

/* Prepares everything for config's sandboxes (config must outlive the plan). < 0 with err
 * when the interpreter is missing, a folder cannot be mapped, or a layer is missing under the
 * "raise" policy; nothing is left then (the plan is zeroed). */
int cell_plan_build(struct cell_plan *plan, const codecell_config *config, codecell_error *err);
/* Accepts a zeroed plan. */
void cell_plan_free(struct cell_plan *plan);
/* The rlimits of a sandbox of the plan (at most 8): a session's kernel lives through many
 * evals, each with its own budget, so it has no RLIMIT_CPU backstop. Returns how many. */
size_t cell_plan_rlimits(const struct cell_plan *plan, bool session, struct sandbox_rlimit *out);

#endif
