/* The jail (codecell_jail_* in codecell.h): a caller's function in a forked child behind the
 * walls of a sandbox. Three processes take part:
 *   parent  the caller; prepares everything (jail.c), then supervises (jail_wait.c);
 *   keeper  what the caller's fork made: makes the namespaces and maps its ids, waits for
 *           the parent to move it into the cgroup, forks the jailed process and stays
 *           outside as its reaper (jail_child.c);
 *   jailed  PID 1 of the new pid namespace: builds the last walls and runs the function.
 * The keeper and the jailed process report to the parent in fixed records on a pipe
 * (struct jail_record); the function's answer travels on a second pipe. */
#ifndef CODECELL_JAIL_H
#define CODECELL_JAIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "cgroup.h"
#include "codecell.h"
#include "landlock.h"
#include "sandbox_entry.h"
#include "seccomp_filter.h"

#define JAIL_MAX_PATHS 64
#define JAIL_MAX_WARNINGS 4
#define JAIL_RLIMITS 5
#define JAIL_MAX_KEEP_OPEN 64

enum jail_record_type {
        JAIL_FAILED = 1, /* set-up failed in the keeper or the jailed process */
        JAIL_STARTED,    /* the jailed process's host pid */
        JAIL_ENDED,      /* how the jailed process ended, from its reaper */
        JAIL_UNSHARED,   /* a root caller's keeper made its namespaces: the parent maps its ids */
};

/* One record on the report pipe: smaller than PIPE_BUF, so written whole or not at all. */
struct jail_record {
        int type;
        int errno_value;
        int pid;
        int wait_status;
        bool unsupported; /* FAILED: the host lacks a required layer */
        char what[160];
};

/* The head of the answer on the answer pipe, before len bytes. */
struct jail_answer_head {
        uint32_t magic;
        uint32_t outcome;
        uint64_t len;
};
#define JAIL_ANSWER_MAGIC 0x6c69616aU /* "jail" */

struct codecell_jail {
        codecell_jail_options options; /* the lists point into paths */
        char *paths[JAIL_MAX_PATHS];   /* resolved, existing */
        /* The caller's spelling of the read-write ones, during codecell_jail_new only. */
        const char *given[JAIL_MAX_PATHS];
        size_t n_paths;
        size_t n_read_write; /* the first n_paths of them */
        pid_t parent;
        uid_t host_uid; /* the child's uid on the host */
        gid_t host_gid;
        bool privileged;
        struct landlock_plan landlock; /* abi 0: not applied */
        const struct seccomp_program *seccomp;
        struct sandbox_rlimit rlimits[JAIL_RLIMITS];
        size_t n_rlimits;
        bool has_cgroup;
        struct cgroup cgroup;
        int netns_fd; /* a recycled empty network namespace to join, or -1 */
        /* A root caller's fs_allow folders not owned by the child's uid: detached idmapped
         * clones (jail_idmap.c), attached by the keeper over the same paths, parents first. */
        struct {
                int tree_fd;
                size_t path; /* into paths */
        } idmapped[JAIL_MAX_PATHS];
        size_t n_idmapped;
        /* Made inside another jail's walls: no namespaces of its own (jail_nested.c). */
        bool nested;
        int keep_open[JAIL_MAX_KEEP_OPEN]; /* the caller's fds handed to the function */
        size_t n_keep_open;
        /* pipes: [0] read, [1] write */
        int report[2]; /* keeper/jailed -> parent: jail_record */
        int go[2];     /* parent -> keeper: one byte once it is in the cgroup (and mapped) */
        int answer[2]; /* jailed -> parent: jail_answer_head + data */
        int alive[2];  /* keeper -> jailed: EOF when the keeper is gone */
        int null_fd;   /* /dev/null, opened in the parent */
        bool answered;
        bool entered;     /* in the keeper or the jailed process */
        bool jailed;      /* in the jailed process */
        pid_t jailed_pid; /* in it: its pid, the only one that answers (not its children) */
        char layers[512];
        char *warnings[JAIL_MAX_WARNINGS];
        size_t n_warnings;
};

/* jail_child.c. In the keeper: its namespaces and ids (returns 0, or never on failure). */
int jail_enter_namespaces(struct codecell_jail *j);
/* In the jailed process (forked by the keeper): the last walls; returns 0. */
int jail_enter_walls(struct codecell_jail *j);
/* In the keeper: reaps the jailed process (pid, or -errno when it could not be forked) and
 * reports; never returns. */
_Noreturn void jail_keep(struct codecell_jail *j, pid_t jailed);
/* All three, with fork(2) between: returns 0 in the jailed process only. */
int jail_enter(struct codecell_jail *j);

/* jail_shared_maps.c. In the jailed process, before Landlock: every shared mapping that may
 * be written made a private copy at the same address (or unmapped). 0 or -errno. */
int jail_unshare_mappings(void);

/* jail_reaper.c: collects the keeper, the cgroup and the network namespace of a jail whose
 * answer is in hand, on a thread of its own. False when it cannot (the caller then waits). */
bool jail_reaper_add(struct codecell_jail *j, pid_t keeper);
/* Also there: a detached thread of the library running fn, with every signal blocked (they are
 * the caller's threads'). False when it cannot be made. */
bool jail_thread_start(void *(*fn)(void *));
/* jail_netns.c: a recycled empty network namespace, or -1 when the stock has none. */
int jail_netns_take(void);
/* The same back to the stock (-1: nothing). */
void jail_netns_give_back(int fd);

/* jail_keeper_ids.c, in the parent: writes a root caller's keeper's id maps, once it has made its
 * user namespace: 0, or < 0 with err. */
int jail_keeper_map_ids(const struct codecell_jail *j, pid_t keeper, codecell_error *err);

/* jail_idmap.c. In the parent (root): an idmapped clone of read-write path i (given: the
 * caller's spelling of it), when its owner is not the child's uid, so that the child writes
 * there as the owner does (0, also when no clone is needed). 1: refused, its path may be
 * steered by another user (jail_safe_path.c); < 0: the kernel or the file system cannot. Both
 * fill why, and the path stays as it is. */
int jail_idmap_prepare(struct codecell_jail *j, size_t i, const char *given, char *why,
                       size_t why_size);
/* jail_safe_path.c: path resolved one name at a time without following a link blindly, an O_PATH
 * descriptor of what it names; with check, refused (-1, why filled) when a folder in which a
 * name is looked up may be written by another user than root and owner. */
int jail_safe_open(const char *path, bool check, uid_t owner, char *why, size_t why_size);
/* In the keeper, in its own mount namespace: the clones over their paths. 0, or -errno with
 * *ret_path the path that failed. */
int jail_idmap_attach(struct codecell_jail *j, const char **ret_path);
void jail_idmap_close(struct codecell_jail *j);

/* jail_nested.c. Whether this process is a jailed one (or a process it forked): a jail made
 * here cannot make namespaces (the outer filter refuses them) and stands inside the outer's. */
bool jail_nested(void);
/* In the jailed process, once its walls are up. */
void jail_mark_jailed(void);
/* In a nested jail's keeper (a child subreaper): kills and reaps every process the jailed one
 * left behind, which no pid namespace ends for it. */
void jail_nested_end_rest(void);
/* The rlimits lowered to what this process may set (a nested jail cannot raise the outer's). */
void jail_clamp_rlimits(struct codecell_jail *j);

/* jail_keep_open.c. In the parent: checks and notes the caller's fds for the function (a -1-
 * terminated list). 0, or < 0 with err. */
int jail_keep_open_plan(struct codecell_jail *j, const int *fds, codecell_error *err);
bool jail_keeps_open(const struct codecell_jail *j, int fd);
/* What fd is, by its /proc link: a path, "anon_inode:[eventpoll]", "user:[4026531837]" ("" when
 * unknown). */
void jail_fd_link(int fd, char *target, size_t size);

/* jail_cgroup.c: the jail's cgroup, made in the parent before the fork. */
int jail_cgroup_create(struct codecell_jail *jail, codecell_error *err);
int jail_cgroup_attach(const struct codecell_jail *jail, pid_t pid, codecell_error *err);
/* jail_cgroup_stock.c: a spare made ahead with these limits into *ret (true), or false; either
 * way the next spare is made, for these limits, while the jail runs. */
bool jail_cgroup_stock_take(const struct cgroup_place *place, const struct cgroup_limits *limits,
                            struct cgroup *ret);

#endif
