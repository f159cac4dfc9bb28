/* How a sandbox's init ends: it waits for the interpreter and exits with a code that says how
 * the interpreter ended (sandbox_guest_signal, sandbox_guest_exit_code). Shared by the exec'd
 * sandbox's init (sandbox.c) and a forked sandbox's zygote (src/zygote/zygote.c), which
 * reports its interpreter's end the same way: no allocation. */
#ifndef CODECELL_INIT_EXIT_H
#define CODECELL_INIT_EXIT_H

#include <errno.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* init's exit code for "the interpreter could not be started". */
#define INIT_EXEC_FAILED 255

/* The exit code that says how the interpreter ended, from its wait status: 128 + its signal,
 * or its exit code (254 for its 255, which means a failed set-up). */
static inline int init_exit_code(int status)
{
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return WEXITSTATUS(status) == INIT_EXEC_FAILED ? INIT_EXEC_FAILED - 1 : WEXITSTATUS(status);
}

/* Reaps every child until the interpreter ends, then exits with init_exit_code. */
static inline _Noreturn void init_wait_and_exit(pid_t guest)
{
        for (;;) {
                int status;
                pid_t p = waitpid(-1, &status, 0);
                if (p == guest)
                        _exit(init_exit_code(status));
                if (p < 0 && errno != EINTR)
                        _exit(INIT_EXEC_FAILED);
        }
}

#endif
