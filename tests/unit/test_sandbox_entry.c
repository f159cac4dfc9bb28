/* The one entry every guest takes (sandbox_entry.c): its order holds where it matters. Each
 * case runs the sequence in a child of its own, which takes a user namespace of its own in its
 * prepare hook, as the real callers do (so that its capabilities can go as root or not). */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "landlock.h"
#include "sandbox_entry.h"

/* Runs fn in a child; true when it exited 0 (its own checks print why not). */
static bool in_child(int (*fn)(void))
{
        fflush(stderr);
        pid_t pid = fork();
        if (pid == 0) {
                check_failures = 0; /* the child's own */
                _exit(fn());
        }
        int status = 0;
        return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
               WEXITSTATUS(status) == 0;
}

static int own_user_namespace(void *ctx, struct sandbox_entry_failure *ret_failure)
{
        (void)ctx;
        if (unshare(CLONE_NEWUSER) < 0)
                return sandbox_entry_failed(ret_failure, errno, "unshare", NULL);
        return 0;
}

/* Written with write(2) alone: after a strict filter nothing else may be called. */
static void say(const char *a, const char *b)
{
        (void)!write(STDERR_FILENO, a, strlen(a));
        if (b)
                (void)!write(STDERR_FILENO, b, strlen(b));
        (void)!write(STDERR_FILENO, "\n", 1);
}

static int run_or_say(const struct sandbox_entry *entry)
{
        struct sandbox_entry_failure failure;
        int r = sandbox_entry_run(entry, &failure);
        if (r < 0) {
                say("the entry failed at ", failure.what);
                if (failure.path)
                        say("  on ", failure.path);
                say("  with ", strerror(failure.errno_value));
        }
        return r;
}

static struct landlock_plan read_everything(void)
{
        struct landlock_plan plan = {.abi = landlock_abi()};
        landlock_plan_add(&plan, "/", GRANT_READ);
        return plan;
}

/* Landlock before the limits: with more descriptors open than RLIMIT_NOFILE allows (an
 * exec'd guest holds the engine's until its exec), a limit set first leaves the ruleset no
 * descriptor to be made with. */
static int many_descriptors_then_landlock_and_a_low_limit(void)
{
        for (int i = 0; i < 64; i++)
                if (open("/dev/null", O_RDONLY | O_CLOEXEC) < 0)
                        return 2;
        struct landlock_plan plan = read_everything();
        const struct sandbox_rlimit limits[] = {{RLIMIT_NOFILE, {16, 16}}};
        const struct sandbox_entry entry = {.parent_watch = -1,
                                            .prepare = own_user_namespace,
                                            .guest_umask = -1,
                                            .landlock = &plan,
                                            .rlimits = limits,
                                            .n_rlimits = 1};
        if (run_or_say(&entry) < 0)
                return 1;
        struct rlimit now;
        CHECK(getrlimit(RLIMIT_NOFILE, &now) == 0 && now.rlim_cur == 16 && now.rlim_max == 16);
        CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1);
        /* Landlock is up: /tmp is writable to everyone, but not under a plan that only reads. */
        char dir[64];
        snprintf(dir, sizeof(dir), "/tmp/codecell-entry-test-%d", (int)getpid());
        int made = mkdir(dir, 0700);
        CHECK(made < 0 && errno == EACCES);
        if (made == 0)
                rmdir(dir);
        return check_failures;
}

/* seccomp last (and no_new_privs before it, which a filter needs once the capabilities are
 * gone): under a filter that refuses everything but write and exit, a step after it would
 * fail. */
static int a_filter_that_refuses_everything_else(void)
{
        struct sock_filter insns[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 3, 0),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit_group, 2, 0),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        const struct sock_fprog filter = {.len = sizeof(insns) / sizeof(insns[0]), .filter = insns};
        struct landlock_plan plan = read_everything();
        const struct sandbox_rlimit limits[] = {{RLIMIT_CORE, {0, 0}}};
        const struct sandbox_entry entry = {
                .parent_watch = -1,
                .prepare = own_user_namespace,
                .workdir = "/",
                .signals = SANDBOX_ENTRY_IGNORE_SIGXFSZ | SANDBOX_ENTRY_RESET_SIGNALS,
                .guest_umask = 022,
                .landlock = &plan,
                .rlimits = limits,
                .n_rlimits = 1,
                .seccomp = &filter,
        };
        /* Ended by the raw call: a sanitizer's runtime makes calls of its own before a
         * function that does not return (_exit), which this filter refuses. */
        if (run_or_say(&entry) < 0)
                syscall(SYS_exit_group, 1);
        /* The filter is in force. */
        if (syscall(SYS_getpid) != -1 || errno != EPERM) {
                say("the filter is not loaded", NULL);
                syscall(SYS_exit_group, 1);
        }
        syscall(SYS_exit_group, 0);
        return 2; /* not reached */
}

/* A failed step ends the sequence: the steps before it have run, none after it. */
static int a_limit_that_cannot_be_set(void)
{
        const struct sandbox_rlimit limits[] = {{RLIMIT_CORE, {2, 1}}}; /* soft over hard */
        const struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        const struct sock_fprog filter = {.len = 1, .filter = (struct sock_filter *)&allow};
        const struct sandbox_entry entry = {.parent_watch = -1,
                                            .prepare = own_user_namespace,
                                            .guest_umask = -1,
                                            .rlimits = limits,
                                            .n_rlimits = 1,
                                            .seccomp = &filter};
        struct sandbox_entry_failure failure;
        CHECK(sandbox_entry_run(&entry, &failure) == -EINVAL);
        CHECK_STR(failure.what, "setrlimit");
        CHECK(failure.errno_value == EINVAL && !failure.path && !failure.parent_gone);
        CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1);
        CHECK(prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) == 1);
        CHECK(prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 0);
        return check_failures;
}

static bool prepared;

static int note_prepared(void *ctx, struct sandbox_entry_failure *ret_failure)
{
        (void)ctx;
        (void)ret_failure;
        prepared = true;
        return 0;
}

/* A parent gone before the parent-death signal was armed: nothing else runs. */
static int a_parent_already_gone(void)
{
        int watch[2];
        if (pipe(watch) < 0)
                return 2;
        close(watch[1]);
        const struct sandbox_entry entry = {.parent_watch = watch[0],
                                            .parent_watch_events = POLLIN,
                                            .prepare = note_prepared,
                                            .guest_umask = -1};
        struct sandbox_entry_failure failure;
        CHECK(sandbox_entry_run(&entry, &failure) == -ESRCH);
        CHECK(failure.parent_gone);
        CHECK(!prepared);
        CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0);
        return check_failures;
}

/* The caller's part: after the parent-death signal, before the process's own state and the
 * walls; its failure is the sequence's. */
static int callers_part_in_its_place(void *ctx, struct sandbox_entry_failure *ret_failure)
{
        (void)ctx;
        (void)ret_failure;
        int signal_on_death = 0;
        char cwd[64] = "";
        CHECK(prctl(PR_GET_PDEATHSIG, &signal_on_death, 0, 0, 0) == 0 &&
              signal_on_death == SIGKILL);
        CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0);
        CHECK(getcwd(cwd, sizeof(cwd)) && strcmp(cwd, "/proc") != 0);
        prepared = true;
        return own_user_namespace(NULL, ret_failure);
}

static int the_process_s_own_state(void)
{
        signal(SIGUSR1, SIG_IGN);
        sigset_t blocked;
        sigemptyset(&blocked);
        sigaddset(&blocked, SIGUSR2);
        sigprocmask(SIG_BLOCK, &blocked, NULL);
        const struct sandbox_entry entry = {
                .parent_watch = -1,
                .prepare = callers_part_in_its_place,
                .workdir = "/proc",
                .signals = SANDBOX_ENTRY_IGNORE_SIGXFSZ | SANDBOX_ENTRY_RESET_SIGNALS,
                .guest_umask = 027,
        };
        if (run_or_say(&entry) < 0)
                return 1;
        CHECK(prepared);
        char cwd[64] = "";
        CHECK(getcwd(cwd, sizeof(cwd)) && strcmp(cwd, "/proc") == 0);
        CHECK(umask(0) == 027);
        struct sigaction now;
        CHECK(sigaction(SIGUSR1, NULL, &now) == 0 && now.sa_handler == SIG_DFL);
        CHECK(sigaction(SIGXFSZ, NULL, &now) == 0 && now.sa_handler == SIG_IGN);
        sigset_t mask;
        CHECK(sigprocmask(SIG_SETMASK, NULL, &mask) == 0 && !sigismember(&mask, SIGUSR2));
        /* Without a filter, none is loaded; without a plan, no Landlock domain. */
        CHECK(prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 0);
        return check_failures;
}

static int fail_quietly(void *ctx, struct sandbox_entry_failure *ret_failure)
{
        (void)ctx;
        (void)ret_failure;
        return -1;
}

static int fail_in_words(void *ctx, struct sandbox_entry_failure *ret_failure)
{
        (void)ctx;
        return sandbox_entry_failed(ret_failure, 0, "wait for init", NULL);
}

static int the_callers_part_fails(void)
{
        struct sandbox_entry entry = {
                .parent_watch = -1, .prepare = fail_quietly, .workdir = "/proc", .guest_umask = -1};
        struct sandbox_entry_failure failure;
        CHECK(sandbox_entry_run(&entry, &failure) == -1);
        CHECK_STR(failure.what, "set-up");
        entry.prepare = fail_in_words;
        CHECK(sandbox_entry_run(&entry, &failure) == -EIO); /* an EOF: no errno */
        CHECK_STR(failure.what, "wait for init");
        char cwd[64] = "";
        CHECK(getcwd(cwd, sizeof(cwd)) && strcmp(cwd, "/proc") != 0);
        return check_failures;
}

int main(void)
{
        if (landlock_abi() > 0)
                CHECK(in_child(many_descriptors_then_landlock_and_a_low_limit));
        else
                printf("skipped the Landlock case: this kernel has no Landlock\n");
        CHECK(in_child(a_filter_that_refuses_everything_else));
        CHECK(in_child(a_limit_that_cannot_be_set));
        CHECK(in_child(a_parent_already_gone));
        CHECK(in_child(the_process_s_own_state));
        CHECK(in_child(the_callers_part_fails));
        CHECK_DONE();
}
