/* A host command run outside the sandbox with its arguments as JSON on stdin and its answer on
 * stdout: a command tool's call (rpc.c), and the interpreter's probe when a cell is made
 * (interpreter.c). */
#ifndef CODECELL_COMMAND_TOOL_H
#define CODECELL_COMMAND_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct command_spec {
        char **argv;         /* argv[0] absolute, NULL-terminated */
        char **env;          /* "NAME=value" for the variables the tool's config names */
        uint64_t timeout_ms; /* 0: the cell's CODECELL_LIMIT_TOOL_CALL_MS */
        /* Run as this uid and gid, with no supplementary groups (the engine is root). */
        bool as_user;
        uid_t uid;
        gid_t gid;
};

/* Runs one call to a command tool: args on stdin, the result from stdout (at most max_answer
 * bytes), stderr kept for the error (capped). deadline_ms is on the now_ms() clock. stop_fd,
 * or -1: once it is readable (the execution ended), the tool's process group is killed and the
 * call fails at once. Returns 0 with *ret_json, or < 0 with *ret_error (both malloc'd). */
int command_tool_call(const struct command_spec *cmd, const char *name, const char *args_json,
                      double deadline_ms, uint64_t timeout_ms, size_t max_answer, int stop_fd,
                      char **ret_json, char **ret_error);

#endif
