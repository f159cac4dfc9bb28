/* Memory and pids limits through a cgroup: v2 where it is delegated to us, v1 where the host
 * is hybrid (memory and pids on v1). Both backends sit behind this one small table. */
#ifndef CODECELL_CGROUP_H
#define CODECELL_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "codecell.h"

struct cgroup_limits {
        uint64_t memory_bytes;
        uint64_t pids;
        bool cpu_accounting; /* v1: also a cpuacct cgroup, where the host has one */
};

struct cgroup_stats {
        uint64_t oom_kills;        /* processes the kernel killed for memory */
        uint64_t memory_failures;  /* allocations refused at the limit */
        int64_t memory_peak_bytes; /* -1 when the kernel does not say */
};

/* Where new cgroups go: one parent directory per controller (v2: both the same). */
struct cgroup_place {
        const struct cgroup_backend *backend;
        char memory_parent[PATH_MAX];
        char pids_parent[PATH_MAX];
        char cpu_parent[PATH_MAX]; /* v1 cpuacct, or "" (v2 counts CPU in every cgroup) */
        /* v2: the cgroup this process is in, memory_parent itself or its leaf beside the
         * sandboxes' (CGROUP_ENGINE_LEAF); "" on v1. */
        char engine_dir[PATH_MAX];
};

/* One sandbox's cgroup. */
struct cgroup {
        const struct cgroup_backend *backend;
        char memory_dir[PATH_MAX];
        char pids_dir[PATH_MAX]; /* v2: same as memory_dir */
        char cpu_dir[PATH_MAX];  /* v1 cpuacct, or "" */
};

struct cgroup_backend {
        const char *name; /* "cgroup_v2", "cgroup_v1" */
        int (*create)(const struct cgroup_place *place, const char *name,
                      const struct cgroup_limits *limits, struct cgroup *ret, codecell_error *err);
        int (*attach)(const struct cgroup *cg, pid_t pid, codecell_error *err);
        /* v2: the cgroup's directory, open (close-on-exec), for a child born in it with
         * clone3(CLONE_INTO_CGROUP): no move, and every page it touches is charged there.
         * NULL (v1): a child is moved with attach. */
        int (*open_dir)(const struct cgroup *cg, codecell_error *err);
        /* v2: whether process pid (by this process's pid namespace) is in the cgroup, from
         * its cgroup.procs: what a child said was born there is checked, never trusted.
         * NULL (v1). */
        bool (*holds)(const struct cgroup *cg, pid_t pid);
        void (*stats)(const struct cgroup *cg, struct cgroup_stats *ret);
        /* CPU time of every process the cgroup held, the dead ones included, in ms; -1 when
         * this cgroup does not count it. */
        double (*cpu_ms)(const struct cgroup *cg);
        /* Removes the directories; the processes must be dead. */
        void (*destroy)(const struct cgroup *cg);
};

extern const struct cgroup_backend cgroup_v1_backend;
extern const struct cgroup_backend cgroup_v2_backend;

/* Finds where this process may create cgroups with memory and pids controllers: v2 first,
 * then v1. Fails (with the reason in err) when neither is usable, e.g. an unprivileged user
 * without a delegated v2 subtree. */
int cgroup_place_find(struct cgroup_place *ret, codecell_error *err);

/* Starts the wait the next move into a cgroup would begin with: a cgroup move takes a lock
 * whose first writer after an idle spell waits for an RCU grace period (5-20 ms on this kind of
 * host), and the ones that follow within a grace period do not. Rewrites this process into the
 * cgroup it is in (a move to nowhere new); blocks for that wait; errors are ignored. */
void cgroup_place_warm(const struct cgroup_place *place);

/* The leaf of a delegated cgroup v2 subtree the engine moves into (cgroup_delegate.c). */
#define CGROUP_ENGINE_LEAF "engine"

/* Whether the v2 cgroup dir hands memory and pids to its children (cgroup.subtree_control). */
bool cgroup_v2_delegates(const char *dir);
/* For a v2 cgroup top that holds this process and was delegated to it (systemd's delegate
 * xattr, or a non-root owner): moves the process into top/CGROUP_ENGINE_LEAF and enables memory
 * and pids (and cpu) for top's children. -errno with the reason in why otherwise. */
int cgroup_v2_take_delegated(const char *top, char *why, size_t why_size);
/* Whether word is one of the space- or line-separated words of text. */
bool cgroup_has_word(const char *text, const char *word);

/* Removes the empty cgroups of engines that died without cleaning up. */
void cgroup_sweep_stale(const struct cgroup_place *place);

/* A name unique in this process: "codecell-<pid>-<n>". */
void cgroup_unique_name(char *buf, size_t size);

/* Shared by both backends: remove a directory, waiting briefly for the kernel to let go of
 * the dying processes (rmdir answers EBUSY until then). */
void cgroup_rmdir(const char *dir);
uint64_t cgroup_read_key(const char *path, const char *key);

#endif
