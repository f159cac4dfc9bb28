/* cleanup.h's closing and reaping: a pair closed and marked closed, at the end of a scope too;
 * a child reaped with its status, killed and reaped, and left alone once handed on. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cleanup.h"

static bool is_open(int fd)
{
        return fcntl(fd, F_GETFD) >= 0;
}

/* A child that waits to be killed. */
static pid_t sleeper(void)
{
        pid_t pid = fork();
        if (pid == 0) {
                for (;;)
                        pause();
        }
        return pid;
}

static bool gone(pid_t pid)
{
        /* Reaped: no longer our child. */
        return waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD;
}

int main(void)
{
        int fds[2], copy[2];
        CHECK(pipe(fds) == 0);
        copy[0] = fds[0];
        copy[1] = fds[1];
        errno = EXDEV;
        close_pair(fds);
        CHECK(errno == EXDEV);
        CHECK(fds[0] == -1 && fds[1] == -1);
        CHECK(!is_open(copy[0]) && !is_open(copy[1]));
        close_pair(fds); /* closed already: nothing */

        {
                _cleanup_close_pair_ int scoped[2] = {-1, -1};
                CHECK(pipe(scoped) == 0);
                copy[0] = scoped[0];
                copy[1] = steal_fd(scoped[1]);
        }
        CHECK(!is_open(copy[0]));
        CHECK(is_open(copy[1])); /* handed on */
        close_fd(&copy[1]);
        CHECK(copy[1] == -1);

        pid_t pid = fork();
        if (pid == 0)
                _exit(7);
        int status = 0;
        CHECK(wait_child(pid, &status) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7);

        pid = sleeper();
        errno = EXDEV;
        kill_and_reap(pid);
        CHECK(errno == EXDEV);
        CHECK(gone(pid));
        kill_and_reap(-1); /* none: nothing */

        pid_t killed = -1, kept = -1;
        {
                _cleanup_pid_ pid_t a = sleeper();
                _cleanup_pid_ pid_t b = sleeper();
                killed = a;
                kept = steal_pid(b);
                CHECK(b == -1);
        }
        CHECK(gone(killed));
        CHECK(!gone(kept));
        kill(kept, SIGKILL);
        CHECK(wait_child(kept, &status) == kept);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        CHECK_DONE();
}
