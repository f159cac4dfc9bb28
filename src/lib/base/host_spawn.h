/* Starting a host program outside the sandbox (a command tool, a stdio MCP server) with pipes as
 * its stdin, stdout and stderr, in a process group of its own. */
#ifndef CODECELL_HOST_SPAWN_H
#define CODECELL_HOST_SPAWN_H

#include <stdbool.h>
#include <sys/types.h>

struct host_spawn {
        char *const *argv; /* argv[0] absolute */
        char *const *env;
        const char *cwd; /* or NULL */
        int in, out, err;
        /* SIGKILL when the calling thread ends: for a program that lives no longer than the
         * call that started it. A long-lived one sees EOF on stdin when the engine dies. */
        bool die_with_thread;
        /* Run as uid:gid with no supplementary groups (the interpreter probe runs as the
         * sandbox's user). */
        bool as_user;
        uid_t uid;
        gid_t gid;
};

/* 0 with *ret_pid, or the errno of what failed (the child is reaped then). */
int host_spawn(const struct host_spawn *s, pid_t *ret_pid);

/* A program's absolute path: relative to dir when it has a '/', else looked up in PATH.
 * NULL when not found, not a regular file or not executable (a command tool's, a stdio MCP
 * server's). */
char *host_resolve_program(const char *program, const char *dir);
/* Why host_resolve_program() found nothing, into buf: "x: not found (looked for /d/x)", "not a
 * regular file", "not executable (chmod +x /d/x)" or "not found on PATH". Returns buf. */
const char *host_program_problem(const char *program, const char *dir, char *buf, size_t size);

#endif
