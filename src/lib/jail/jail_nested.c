/* A jail made inside another one (CodeCell.jail { CodeCell.jail { … } }). The outer's filter
 * refuses new namespaces and mounts, so the inner jail has none of its own: it stands inside
 * the outer's (its user, pid, mount and network namespaces, its cgroup, its uid) and adds
 * what a process may add to itself there: its own fork and keeper, a Landlock domain stacked
 * on the outer's (what both grant), rlimits no higher than the outer's, a filter stacked on
 * the outer's, fds at /dev/null, and its own wall clock and CPU budget.
 *
 * Without a pid namespace of its own, the end of the jailed process does not end what it
 * started. Its keeper is a child subreaper instead: a process the function leaves behind (a
 * double fork, setsid) is reparented to the keeper, which kills and reaps every one of them
 * before it exits, and the caller's wait returns only then (jail_wait.c). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jail.h"

/* Set in the jailed process, and inherited by every process it forks. */
static bool jailed_here;

bool jail_nested(void)
{
        return jailed_here;
}

void jail_mark_jailed(void)
{
        jailed_here = true;
}

/* Kills the keeper's children (the jailed process's leftovers, reparented here) until there
 * is none. A child that one of them forks before it dies is reparented here before its parent
 * can be reaped, so it is listed on the next round; the outer's RLIMIT_NPROC and pids bound
 * how many there can be. Raw calls: the keeper is a fork of a multithreaded caller. */
void jail_nested_end_rest(void)
{
        char path[64], buf[4096];
        snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
        for (;;) {
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
                if (fd >= 0)
                        close(fd);
                buf[n > 0 ? n : 0] = '\0';
                for (char *c = buf; *c;) {
                        long pid = strtol(c, &c, 10);
                        if (pid > 0)
                                kill((pid_t)pid, SIGKILL);
                        while (*c == ' ' || *c == '\n')
                                c++;
                }
                int status;
                if (waitpid(-1, &status, 0) < 0 && errno != EINTR)
                        return; /* ECHILD: nothing is left */
        }
}

void jail_clamp_rlimits(struct codecell_jail *j)
{
        for (size_t i = 0; i < j->n_rlimits; i++) {
                struct rlimit now;
                struct rlimit *want = &j->rlimits[i].value;
                if (getrlimit(j->rlimits[i].resource, &now) < 0)
                        continue;
                if (now.rlim_max != RLIM_INFINITY &&
                    (want->rlim_max == RLIM_INFINITY || want->rlim_max > now.rlim_max))
                        want->rlim_max = now.rlim_max;
                if (want->rlim_cur > want->rlim_max)
                        want->rlim_cur = want->rlim_max;
        }
}
