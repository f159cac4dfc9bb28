/* The last stretch of every process that runs guest code: from the moment it is made (clone or
 * fork) to the moment the guest's code may run. One sequence, in one order (written, with the
 * reason for each step's place, at the top of sandbox_entry.c), for the three kinds:
 *   - an exec'd sandbox's interpreter, before its exec (sandbox.c);
 *   - a forked sandbox's interpreter, the zygote's child (src/zygote/zygote.c);
 *   - the jail's process, before the caller's function (jail_child.c).
 * What they legitimately differ in is a parameter (struct sandbox_entry), never a fourth order.
 *
 * Floor: walls. Included by sandbox.c, the jail and the zygote's fork server, which compiles
 * sandbox_entry.c into itself: so this header and its file use nothing but the C library,
 * the kernel's headers, landlock.h and capabilities.h (no libseccomp, no engine, no
 * allocation: it runs between clone and exec, and in an unsanitized copy of the interpreter). */
#ifndef CODECELL_SANDBOX_ENTRY_H
#define CODECELL_SANDBOX_ENTRY_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "landlock.h"

struct sandbox_rlimit {
        int resource;
        struct rlimit value;
};

/* Why a step failed: fixed text (never allocated), for the caller's own fixed record. */
struct sandbox_entry_failure {
        int errno_value;
        const char *what; /* the step, e.g. "setrlimit" or "landlock " */
        const char *path; /* what it failed on, to be appended to what; or NULL */
        /* The parent was already gone at the start: nobody is left to tell, and no guest must
         * run. The caller ends quietly. */
        bool parent_gone;
};

/* Signals (flags): */
/* Past RLIMIT_FSIZE a write fails with EFBIG, which the guest can read, instead of killing
 * it with SIGXFSZ. */
#define SANDBOX_ENTRY_IGNORE_SIGXFSZ 1u
/* Every other disposition back to the default and no signal blocked: a mask and ignored
 * signals survive exec, and the engine's thread may have either (serve blocks SIGINT and
 * SIGTERM to sigwait for them; a caller may ignore SIGHUP). Only for a process that execs (a
 * forked interpreter keeps its runtime's handlers). */
#define SANDBOX_ENTRY_RESET_SIGNALS 2u

/* What to apply. Everything is prepared before the process is made (or, in the zygote, read
 * from its walls): the sequence only makes system calls. */
struct sandbox_entry {
        /* A descriptor whose end (POLLHUP or POLLERR for events) means the parent is gone, or
         * -1: checked once the parent-death signal is armed. */
        int parent_watch;
        short parent_watch_events;
        /* The caller's own part, run once the process dies with its parent and before any
         * wall: it takes the process into its sandbox (namespaces, ids, session, a wait for
         * init) and leaves it only the guest's descriptors (0-3 or 0-2, the rest closed,
         * close-on-exec or harmless) and nothing of the parent's it must not keep. 0, or < 0
         * with *ret_failure filled; it may also end the process itself, with its caller's
         * own report. NULL: nothing. */
        int (*prepare)(void *ctx, struct sandbox_entry_failure *ret_failure);
        void *prepare_ctx;
        const char *workdir;                  /* chdir there, or NULL */
        unsigned signals;                     /* SANDBOX_ENTRY_* */
        int guest_umask;                      /* or -1: the caller's stays */
        const struct landlock_plan *landlock; /* NULL or abi 0: none */
        const struct sandbox_rlimit *rlimits;
        size_t n_rlimits;
        /* Capabilities that stay (a mask of 1 << CAP_*, permitted, effective, inheritable and
         * ambient, so they survive exec); every other one goes from every set, bounding
         * included. 0 for everything but a cell's zygote. */
        uint64_t keep_caps;
        const struct sock_fprog *seccomp; /* a prepared BPF program; NULL: none */
};

/* Fills *ret_failure (for a prepare hook) and returns -errno_value, or -EIO when errno_value
 * is 0 (an EOF where a byte was due). */
int sandbox_entry_failed(struct sandbox_entry_failure *ret_failure, int errno_value,
                         const char *what, const char *path);

/* Runs the sequence in the calling process, which must be single-threaded. No allocation.
 * 0: the guest's code may run (or the caller's exec follow); < 0 (-errno) with *ret_failure
 * filled, when no later step has run. */
int sandbox_entry_run(const struct sandbox_entry *entry, struct sandbox_entry_failure *ret_failure);

#endif
