/* The CPU time a sandbox's code has used. Without subprocesses that is the interpreter's own
 * CPU clock (exact, one call). A cell that allows subprocesses may spread work over many
 * processes, and a budget read from the interpreter alone would let a spinning child run until
 * the wall clock: there every process of the sandbox counts, read from /proc. */
#ifndef CODECELL_CPU_TIME_H
#define CODECELL_CPU_TIME_H

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

struct cgroup;

struct cpu_meter {
        pid_t init;              /* the sandbox's init, by host pid */
        pid_t guest;             /* the interpreter, by host pid */
        clockid_t clock;         /* the interpreter's CPU clock */
        bool whole_tree;         /* count every process of the sandbox */
        const struct cgroup *cg; /* the sandbox's cgroup, or NULL */
};

/* Prepares a meter; false when the interpreter is gone. cg may be NULL. */
bool cpu_meter_init(struct cpu_meter *m, pid_t init, pid_t guest, bool whole_tree,
                    const struct cgroup *cg);
/* CPU milliseconds so far. With whole_tree, where the sandbox's cgroup counts CPU (v2, or a v1
 * cpuacct hierarchy): the cgroup's usage, which holds every process it ever had. Elsewhere:
 * the interpreter's clock, plus user and system time of every other live process under init,
 * plus what each process's reaped children used (a child that came and went counts through
 * its parent or through init) -- but not a child the kernel reaped by itself because its
 * parent ignores SIGCHLD: its time is lost with it, which only the cgroup sees. */
double cpu_meter_read(const struct cpu_meter *m);
/* The CPU time of a process by its CPU clock, in ms (0 when it cannot be read). */
double process_cpu_ms(clockid_t clock);

#endif
