/* A forked sandbox born in its cgroup on cgroup v2 (clone3 with CLONE_INTO_CGROUP), in the
 * zygote (zygote.c): nothing to move, so nothing waits for a move, and every page the child
 * writes from its first one is charged to the sandbox.
 *
 * Two children are made per sandbox, each its own way:
 *   init         the zygote's own clone: clone3_on_stack, glibc's clone with clone3's
 *                arguments (init runs on a stack of its own in the zygote's memory);
 *   interpreter  the runtime's own fork (Ruby's, Python's), which must stay the runtime's and
 *                glibc's, whose after-fork work (the thread's id, its locks, the runtime's
 *                timer and descriptors) would otherwise be skipped. The zygote arms syscall
 *                user dispatch (prctl PR_SET_SYSCALL_USER_DISPATCH, Linux 5.11) on the forking
 *                thread just before glibc makes the fork's clone; the kernel turns that clone
 *                into SIGSYS, and the handler here makes it clone3(CLONE_INTO_CGROUP) with the
 *                same arguments. glibc and the runtime see a fork that returned as usual.
 * Dispatch is off in every child (the kernel clears it at fork) and one-shot in the zygote:
 * the fork's clone spends it, and so does any other system call but rt_sigprocmask (a fork's
 * own, glibc 2.41's _Fork blocks every signal first), which is answered in the handler with
 * the trap left armed; any other is made again by the kernel as it was asked, and that fork
 * is made as before, for the engine to move. Where the kernel or the architecture lacks it,
 * the same. A clone3 the kernel refuses is the fork's failure, not a plain fork (the refusal
 * took a pid: into_cgroup.c). */
#ifndef CODECELL_INTO_CGROUP_H
#define CODECELL_INTO_CGROUP_H

#include <stdbool.h>
#include <sys/types.h>

struct clone_args;

/* Installs the SIGSYS handler the interpreter's fork needs, keeping the runtime's disposition;
 * false where this kernel or architecture cannot trap a system call this way. Once. */
bool into_cgroup_setup(void);

/* Arms the calling thread: its next system call from outside this file, when it is a fork's
 * clone, is made clone3(CLONE_INTO_CGROUP) into cgroup_dir; sigprocmask calls before it are
 * answered and leave it armed; any other system call is made as it was, and disarms. false
 * when not armed (no setup, or the kernel refused). */
bool into_cgroup_arm(int cgroup_dir);

/* In the parent after the fork: disarms; whether the child was born in the cgroup. */
bool into_cgroup_disarm(void);

/* In the child, first in its after-fork work: whether it was born in the cgroup. */
bool into_cgroup_born(void);

/* In a guest: the runtime's SIGSYS disposition back. */
void into_cgroup_forget(void);

/* clone3(args) with the child on args' stack, running fn(arg), whose return is its exit code;
 * the child's pid, or -errno. The caller's memory may be shared (CLONE_VM | CLONE_VFORK): the
 * child never returns here. -ENOSYS on an architecture without it. */
pid_t clone3_on_stack(struct clone_args *args, int (*fn)(void *), void *arg);

#endif
