/* Landlock: a second wall over the mount plan, at the best ABI the kernel offers. The plan is
 * built in the engine; it is applied in the sandbox between clone and exec without allocating. */
#ifndef CODECELL_LANDLOCK_H
#define CODECELL_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LANDLOCK_PLAN_MAX_RULES 96
#define LANDLOCK_PLAN_STORAGE 2048

enum landlock_grant {
        GRANT_READ,  /* read files, list directories */
        GRANT_LIST,  /* list directories only */
        GRANT_WRITE, /* everything a scratch folder needs (no device nodes) */
        /* files and folders only: no symbolic link, FIFO or socket that a caller reading the
         * folder afterwards could trip on (the jail's fs_allow) */
        GRANT_WRITE_FILES,
        GRANT_DEVICE,       /* read, write and ioctl one device file */
        GRANT_EXECUTE,      /* read and execute one program file */
        GRANT_EXECUTE_TREE, /* read, list and execute beneath a directory */
};

struct landlock_rule {
        const char *path; /* inside the sandbox, after pivot_root */
        enum landlock_grant grant;
};

struct landlock_plan {
        int abi;      /* 0 when the kernel has no Landlock */
        bool network; /* TCP bind and connect left to the network namespace (the jail's option) */
        /* Otherwise (ABI 4 on) no bind, and connect to this TCP port only (a network cell's
         * proxy, proxy_listener.h); 0: to none. */
        uint16_t connect_port;
        struct landlock_rule rules[LANDLOCK_PLAN_MAX_RULES];
        size_t n_rules;
        char storage[LANDLOCK_PLAN_STORAGE]; /* paths copied by landlock_plan_add_copy */
        size_t storage_used;
};

/* LANDLOCK_PROC_SELF_FILES, NULL-terminated. */
extern const char *const landlock_proc_self_files[];

/* The Landlock ABI version of this kernel, or 0 when Landlock is unavailable. */
int landlock_abi(void);
/* Appends a rule; -E2BIG when the plan is full. */
int landlock_plan_add(struct landlock_plan *plan, const char *path, enum landlock_grant grant);
/* The same with a copy of the first len bytes of path kept in the plan. */
int landlock_plan_add_copy(struct landlock_plan *plan, const char *path, size_t len,
                           enum landlock_grant grant);
/* Restricts the calling process. Requires no_new_privs. Async-signal-safe: no allocation.
 * Returns 0 or -errno; *ret_failed_path names the rule that failed. */
int landlock_apply(const struct landlock_plan *plan, const char **ret_failed_path);

#endif
