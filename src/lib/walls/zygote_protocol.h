/* What the engine and a cell's zygote say to each other (docs/security.md, "Forked
 * sandboxes"). The zygote is the cell's interpreter, booted once with its prelude, that forks
 * every sandbox of the cell; its fork server is C (src/zygote/zygote.c, loaded into the
 * interpreter), built from the same headers as the engine, so these are plain structs.
 *
 * At start the zygote reads the walls every child puts up (struct zygote_walls) from
 * ZYGOTE_WALLS_PATH, which the mount plan writes. Then, on its control socket (fd 3):
 *   engine -> zygote  struct zygote_order, with ZYGOTE_ORDER_FDS descriptors (SCM_RIGHTS): the
 *                     child's control socket, stdout and stderr, and the write end of a pipe
 *                     that will carry its end; on cgroup v2 also its cgroup's directory;
 *   zygote -> engine  struct zygote_reply: the sandbox's interpreter and init, by their pids in
 *                     the zygote's pid namespace (both are its children), with their pidfds
 *                     (SCM_RIGHTS: the interpreter's, then init's, then a network cell's
 *                     listener, proxy_listener.h), by which the engine holds them; or
 *                     what failed, without a descriptor (ETOOMANYREFS when the pidfds
 *                     could not be sent: a guest that fills its user's quota of
 *                     descriptors in flight must not stop the zygote's answers);
 *   zygote -> pipe    struct zygote_exit once both are gone: how the interpreter ended, as an
 *                     exec'd sandbox's init reports it (init_exit.h), and their rusage.
 * The zygote exits when the engine closes the socket; its children die with it. */
#ifndef CODECELL_ZYGOTE_PROTOCOL_H
#define CODECELL_ZYGOTE_PROTOCOL_H

#include <linux/filter.h>
#include <stdint.h>
#include <sys/resource.h>

#include "landlock.h"

#define ZYGOTE_WALLS_PATH "/codecell/walls"
#define ZYGOTE_SO_PATH "/codecell/zygote.so"
/* A forked sandbox's init (src/zygote/init.c), which the zygote execs in each. */
#define ZYGOTE_INIT_PATH "/codecell/codecell-init"
/* The variable that starts the prelude as a zygote (removed before guest code runs). */
#define ZYGOTE_ENV "CODECELL_ZYGOTE"

#define ZYGOTE_MAGIC 0x5a434331u /* "1CCZ" */
/* Sandboxes a zygote keeps alive at once (each is two of its children: init, interpreter). */
#define ZYGOTE_MAX_CHILDREN 1024
#define ZYGOTE_MAX_FILTER 4096 /* BPF instructions */
#define ZYGOTE_MAX_RLIMITS 8
#define ZYGOTE_PATHS 8192 /* bytes of Landlock rule paths */

struct zygote_walls {
        uint32_t magic;
        uint32_t size; /* sizeof(struct zygote_walls): a zygote.so of another build refuses */
        uint32_t inner_uid, inner_gid;
        char tmp_options[160], work_options[160]; /* tmpfs mount data of /tmp and /work */
        int32_t landlock_abi;
        /* A network cell (proxy_listener.h): each child a new network namespace with the
         * proxy's listener, whose fd goes third with the reply; and the one TCP port Landlock
         * lets its connect reach (0: none). */
        uint32_t network;
        uint32_t landlock_connect_port;
        uint32_t n_rules;
        struct {
                uint32_t grant; /* enum landlock_grant */
                uint32_t path;  /* offset in paths */
        } rules[LANDLOCK_PLAN_MAX_RULES];
        char paths[ZYGOTE_PATHS];
        uint32_t n_rlimits;
        struct {
                int32_t resource;
                uint64_t cur, max;
        } rlimits[ZYGOTE_MAX_RLIMITS];
        uint32_t filter_len;
        struct sock_filter filter[ZYGOTE_MAX_FILTER];
};

enum { ZYGOTE_FD_CTL, ZYGOTE_FD_OUT, ZYGOTE_FD_ERR, ZYGOTE_FD_EXIT, ZYGOTE_ORDER_FDS };

/* A session's kernel serves many evals, each with its own budget: no RLIMIT_CPU backstop. */
#define ZYGOTE_ORDER_SESSION 1u
/* cgroup v2: the sandbox's cgroup comes as a fifth descriptor (its directory), for init and
 * the interpreter to be born there (src/zygote/into_cgroup.h). */
#define ZYGOTE_ORDER_CGROUP 2u

/* Which of the sandbox's processes were born in its cgroup (the rest the engine moves). */
#define ZYGOTE_BORN_INIT 1u
#define ZYGOTE_BORN_GUEST 2u

struct zygote_order {
        uint32_t magic;
        uint32_t flags; /* ZYGOTE_ORDER_* */
        uint64_t id;
};

struct zygote_reply {
        uint32_t magic;
        int32_t error; /* 0, or the errno of what failed */
        uint64_t id;
        int32_t pid;    /* the interpreter, as the zygote sees it */
        int32_t init;   /* the sandbox's init, as the zygote sees it */
        uint32_t born;  /* ZYGOTE_BORN_*: those the engine must not move */
        char what[108]; /* which step failed */
};

struct zygote_exit {
        int32_t status; /* as waitpid gives it (init_exit.h: the interpreter's end as init reports
                           it) */
        int32_t reserved;
        struct rusage usage;
};

#endif
