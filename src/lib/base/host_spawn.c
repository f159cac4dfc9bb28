#include "host_spawn.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"

/* vfork: the child only makes system calls before exec, which is safe in a threaded engine
 * (posix_spawn does the same, but cannot set the parent-death signal or the folder). */
int host_spawn(const struct host_spawn *s, pid_t *ret_pid)
{
        volatile int child_errno = 0;
        pid_t parent = getpid();
        pid_t pid = vfork();
        if (pid == 0) {
                sigset_t none;
                sigemptyset(&none);
                if (setpgid(0, 0) < 0 ||
                    (s->die_with_thread &&
                     (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)) ||
                    (s->cwd && chdir(s->cwd) < 0) || dup2(s->in, 0) < 0 || dup2(s->out, 1) < 0 ||
                    dup2(s->err, 2) < 0 || sigprocmask(SIG_SETMASK, &none, NULL) < 0) {
                        child_errno = errno ? errno : ESRCH;
                        _exit(127);
                }
                /* Raw system calls: they change this process only, where glibc's wrappers
                 * would signal every thread of the engine that this vfork child shares. */
                if (s->as_user && (syscall(SYS_setgroups, 0, NULL) < 0 ||
                                   syscall(SYS_setresgid, s->gid, s->gid, s->gid) < 0 ||
                                   syscall(SYS_setresuid, s->uid, s->uid, s->uid) < 0)) {
                        child_errno = errno;
                        _exit(127);
                }
                execve(s->argv[0], s->argv, s->env);
                child_errno = errno;
                _exit(127);
        }
        if (pid < 0)
                return errno;
        if (child_errno) {
                (void)wait_child(pid, NULL);
                return child_errno;
        }
        *ret_pid = pid;
        return 0;
}

/* A program is a regular file we may execute: a folder has the x bit too. */
static bool executable_file(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

char *host_resolve_program(const char *program, const char *file_dir)
{
        char candidate[PATH_MAX];
        if (strchr(program, '/')) {
                if (program[0] == '/')
                        snprintf(candidate, sizeof(candidate), "%s", program);
                else
                        snprintf(candidate, sizeof(candidate), "%s/%s", file_dir, program);
                return executable_file(candidate) ? realpath(candidate, NULL) : NULL;
        }
        const char *path = getenv("PATH");
        _cleanup_free_ char *copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
        for (char *save = NULL, *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir;
             dir = strtok_r(NULL, ":", &save)) {
                snprintf(candidate, sizeof(candidate), "%s/%s", dir, program);
                if (executable_file(candidate))
                        return realpath(candidate, NULL);
        }
        return NULL;
}

/* Why the command's program cannot be run, into buf: not there, not a file, or not executable
 * (with the chmod that fixes it), said of the path it was looked for at. */
const char *host_program_problem(const char *program, const char *dir, char *buf, size_t size)
{
        if (!strchr(program, '/')) {
                snprintf(buf, size, "%.*s: not found on PATH, or not executable there",
                         utf8_prefix(program, 200), program);
                return buf;
        }
        char path[PATH_MAX];
        if (program[0] == '/')
                snprintf(path, sizeof(path), "%s", program);
        else
                snprintf(path, sizeof(path), "%s/%s", dir,
                         strncmp(program, "./", 2) == 0 ? program + 2 : program);
        struct stat st;
        if (stat(path, &st) < 0)
                snprintf(buf, size, "%.*s: not found (looked for %.*s)", utf8_prefix(program, 200),
                         program, utf8_prefix(path, 400), path);
        else if (!S_ISREG(st.st_mode))
                snprintf(buf, size, "%.*s: not a regular file (%.*s)", utf8_prefix(program, 200),
                         program, utf8_prefix(path, 400), path);
        else
                snprintf(buf, size, "%.*s: not executable (chmod +x %.*s)",
                         utf8_prefix(program, 200), program, utf8_prefix(path, 400), path);
        utf8_trim_cut(buf);
        return buf;
}
