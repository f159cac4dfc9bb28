/* The cell: a configuration plus everything prepared once for its runs. */
#ifndef CODECELL_CELL_H
#define CODECELL_CELL_H

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
#include "seccomp_program.h"
#include "session.h"
#include "tools.h"

/* As root, the guest runs as nobody on the host, never as uid 0. */
#define PRIVILEGED_GUEST_UID 65534
#define PRIVILEGED_GUEST_GID 65534

struct codecell_cell {
        codecell_config *config;
        struct mount_plan plan;
        struct landlock_plan landlock;
        struct seccomp_program seccomp;
        struct cgroup_place cgroup_place; /* backend NULL: no cgroup on this host */
        uid_t host_uid;                   /* the guest's uid on the host */
        gid_t host_gid;
        bool privileged;        /* the engine runs as root */
        int *idmap_fds;         /* per user mount: a user namespace fd, or -1 */
        char *interpreter_real; /* the interpreter binary, symlinks resolved */
        char *elf_interpreter;  /* its dynamic loader, or NULL */
        json_t *layers;         /* layers in force for every run */
        json_t *warnings;       /* layers missing, under the "warn" policy */
        char *description;
        struct pool *pool;         /* its thread also starts sessions' kernels */
        struct disposal *disposal; /* collects sandboxes killed after their result */
        struct netns_stock netns;  /* recycled network namespaces (privileged only) */
        bool writes_host;          /* some mount is read-write */
        struct mount_roots mount_roots; /* the read-write folders' own modes */
        struct tool_table tools;
        struct session_table sessions;
        pthread_mutex_t description_lock; /* guards description, rebuilt as tools are added */
        /* What the sandbox executes (config's, or the runtime's), with its argv (runtime_argv:
         * the boot program and the load paths), and what its probe found (version NULL: not
         * probed yet, see codecell_cell_description). */
        const char *interpreter;
        char **argv;
        struct interpreter_info probe;
};

/* A new result for code the cell accepts, with what every result carries (the layers, the
 * warnings). < 0 with err for code that is not UTF-8, holds a NUL or is over the limit. */
int cell_result_for(struct codecell_cell *cell, const char *code, size_t len, codecell_result **ret,
                    codecell_error *err);

/* Adds a tool (owned from then on, freed on failure) and rebuilds the description. */
int cell_add_tool(struct codecell_cell *cell, struct tool *tool, codecell_error *err);

struct standby;
/* Runs one `exec` on a sandbox standing by (execution.c). With keep, a sandbox that returned
 * "ok" or "error" is left running for the next exec (a session) and true is returned;
 * otherwise it is torn down (not freed) and false is returned. */
bool execution_on(struct codecell_cell *cell, struct standby *s, const char *code, size_t len,
                  bool keep, const codecell_run_options *options, codecell_result *res);
/* Runs one execution on a sandbox from the pool, or a cold one (execution.c), into res. */
void execution_run(struct codecell_cell *cell, const char *code, size_t len,
                   const codecell_run_options *options, codecell_result *res);

/* The description the model sees (description.c), for the interpreter probe found. NULL when
 * out of memory. */
char *description_build(const codecell_config *config, const struct interpreter_info *probe,
                        struct tool_table *tools);

#endif
