/* Children born in a cgroup v2 (src/zygote/into_cgroup.c), for real: a cgroup made in this
 * host's cgroup2 tree (the unified one of a hybrid host will do: no controller is needed to
 * place a process), then glibc's own fork() with the trap armed, and init's clone on a stack
 * of its own. Each child reads /proc/self/cgroup as its first act: nobody ever writes a pid
 * into the cgroup's cgroup.procs, so a child found there was born there. Root only. */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "into_cgroup.h"

static char cgroup_path[4096]; /* the cgroup's directory */
static char cgroup_name[4096]; /* as /proc/self/cgroup names it ("/codecell-unit-…") */

/* The cgroup2 mount point: /sys/fs/cgroup on a unified host, its unified/ on a hybrid one. */
static const char *cgroup2_root(void)
{
        static char root[4096];
        FILE *f = fopen("/proc/self/mounts", "r");
        char dev[256], dir[4096], type[64];
        while (f && fscanf(f, "%255s %4095s %63s %*[^\n]", dev, dir, type) == 3)
                if (strcmp(type, "cgroup2") == 0) {
                        snprintf(root, sizeof(root), "%s", dir);
                        fclose(f);
                        return root;
                }
        if (f)
                fclose(f);
        return NULL;
}

/* This process's cgroup v2 path ("0::PATH"), into buf. */
static void own_cgroup(char *buf, size_t size)
{
        buf[0] = '\0';
        FILE *f = fopen("/proc/self/cgroup", "r");
        char line[4096];
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, "0::", 3) == 0) {
                        line[strcspn(line, "\n")] = '\0';
                        snprintf(buf, size, "%s", line + 3);
                }
        if (f)
                fclose(f);
}

static volatile sig_atomic_t raised;
static bool sigsys_blocked_before; /* in the fork's parent, before it was armed */

static bool sigsys_blocked(void)
{
        sigset_t now;
        sigprocmask(SIG_SETMASK, NULL, &now);
        return sigismember(&now, SIGSYS) == 1;
}
static void on_usr1(int sig)
{
        (void)sig;
        raised = 1;
}

/* A child of glibc's fork(): 0 when it found itself where it should be, with a thread id the
 * kernel wrote and glibc's bookkeeping intact (raise() signals the thread glibc thinks it is). */
static int child_checks(const char *want_cgroup, bool want_born)
{
        char now[4096];
        own_cgroup(now, sizeof(now));
        int bad = 0;
        if (strcmp(now, want_cgroup) != 0)
                bad |= 1;
        if (into_cgroup_born() != want_born)
                bad |= 2;
        if (gettid() != getpid())
                bad |= 4;
        signal(SIGUSR1, on_usr1);
        if (raise(SIGUSR1) != 0 || !raised)
                bad |= 8;
        void *p = malloc(1 << 20); /* the allocator's locks, taken again in the child */
        if (!p)
                bad |= 16;
        free(p);
        if (sigsys_blocked() != sigsys_blocked_before) /* the runtime's mask, as it was */
                bad |= 32;
        return bad;
}

/* Forks with the trap armed (or not); the child's verdict, and whether the parent was told
 * it was born. */
static int fork_and_check(int dir, const char *want_cgroup, bool want_born, bool *ret_born,
                          void (*between)(void))
{
        sigsys_blocked_before = sigsys_blocked();
        bool armed = into_cgroup_arm(dir);
        if (between)
                between();
        pid_t pid = fork();
        *ret_born = armed ? into_cgroup_disarm() : false;
        if (pid == 0)
                _exit(child_checks(want_cgroup, want_born));
        if (pid < 0 || sigsys_blocked() != sigsys_blocked_before)
                return -1;
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
                return -1;
        return WEXITSTATUS(status);
}

static void call_getppid(void)
{
        (void)getppid();
}

static void block_usr2(void)
{
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR2);
        sigprocmask(SIG_BLOCK, &set, NULL);
}

static void *spin(void *stop)
{
        while (!*(volatile bool *)stop)
                (void)getpid();
        return NULL;
}

static volatile sig_atomic_t foreign_sigsys;

static void on_foreign_sigsys(int sig)
{
        (void)sig;
        foreign_sigsys++;
}

/* A vfork (the child runs on the caller's stack, in its memory, until it exits), which the
 * handler could not make: the child would return through the handler's frame and leave it
 * spent for the parent. 0 when the child exited 7 and the parent came back. */
static int vfork_exits_7(void)
{
        pid_t pid = vfork();
        if (pid == 0)
                _exit(7);
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
                return -1;
        return WEXITSTATUS(status) == 7 ? 0 : -1;
}

static int vforked;

static void call_vfork(void)
{
        vforked = vfork_exits_7() == 0 ? 1 : -1;
}

/* As glibc 2.41's _Fork makes a fork: every signal blocked first (a trapped sigprocmask), the
 * clone, the mask put back on both sides. The child is born there, and both sides end with
 * the mask they had. 0 when all holds. */
static int fork_like_glibc_2_41(int dir)
{
        sigset_t all, old, during;
        sigfillset(&all);
        if (!into_cgroup_arm(dir))
                return -1;
        sigprocmask(SIG_BLOCK, &all, &old);
        pid_t pid = fork();
        if (pid == 0) {
                sigprocmask(SIG_SETMASK, NULL, &during);
                int bad = sigismember(&during, SIGSYS) == 1 && sigismember(&during, SIGUSR1) == 1
                                  ? 0
                                  : 64;
                sigprocmask(SIG_SETMASK, &old, NULL);
                sigsys_blocked_before = false;
                _exit(bad | child_checks(cgroup_name, true));
        }
        bool born = into_cgroup_disarm();
        sigprocmask(SIG_SETMASK, NULL, &during);
        bool blocked_as_asked = sigismember(&during, SIGSYS) == 1;
        sigprocmask(SIG_SETMASK, &old, NULL);
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
                return -1;
        if (WEXITSTATUS(status) != 0)
                return WEXITSTATUS(status);
        return born && blocked_as_asked && !sigsys_blocked() ? 0 : -2;
}

/* init's way: a clone sharing this memory (the parent waits, as for vfork) on a stack of its
 * own, which writes its cgroup into the shared memory. */
static char init_saw[4096];
static int init_side(void *unused)
{
        (void)unused;
        own_cgroup(init_saw, sizeof(init_saw));
        return 7;
}

int main(void)
{
        if (geteuid() != 0) {
                printf("skipped: making a cgroup needs root\n");
                return 77;
        }
        const char *root = cgroup2_root();
        if (!root) {
                printf("skipped: no cgroup2 tree mounted on this host\n");
                return 77;
        }
        char mine[4096];
        own_cgroup(mine, sizeof(mine));
        /* Beside this process's own cgroup v2 (a sibling: the common parent is where a move
         * would need write access, as for the engine's sandboxes). */
        char parent[4096];
        snprintf(parent, sizeof(parent), "%s", mine);
        char *slash = strrchr(parent, '/');
        if (slash)
                *slash = '\0';
        snprintf(cgroup_name, sizeof(cgroup_name), "%s/codecell-unit-born-%d", parent, getpid());
        snprintf(cgroup_path, sizeof(cgroup_path), "%s%s", root, cgroup_name);
        if (mkdir(cgroup_path, 0755) < 0) {
                printf("skipped: cannot make a cgroup in %s%s (%s)\n", root, parent,
                       strerror(errno));
                return 77;
        }
        int dir = open(cgroup_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(dir >= 0);

        /* init's clone, with and without the cgroup. */
        char *stack = mmap(NULL, 64 * 1024, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        struct clone_args args = {.flags = CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP,
                                  .exit_signal = SIGCHLD,
                                  .stack = (uint64_t)(uintptr_t)stack,
                                  .stack_size = 64 * 1024,
                                  .cgroup = (uint64_t)dir};
        pid_t init = clone3_on_stack(&args, init_side, NULL);
        if (init == -ENOSYS) {
                printf("clone3_on_stack: not on this architecture (init is moved)\n");
        } else {
                int status = 0;
                CHECK(init > 0);
                CHECK(init > 0 && waitpid(init, &status, 0) == init);
                CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7);
                CHECK_STR(init_saw, cgroup_name);
                /* A refused cgroup (not a directory of the tree): -errno, nothing made. */
                int not_a_cgroup = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                args.cgroup = (uint64_t)not_a_cgroup;
                init_saw[0] = '\0';
                CHECK(clone3_on_stack(&args, init_side, NULL) < 0);
                CHECK(init_saw[0] == '\0');
                close(not_a_cgroup);
        }
        munmap(stack, 64 * 1024);

        signal(SIGSYS, on_foreign_sigsys); /* the runtime's, which setup keeps */
        if (!into_cgroup_setup()) {
                printf("into_cgroup_setup: this kernel or architecture has no syscall user "
                       "dispatch (the interpreter is moved)\n");
                CHECK(!into_cgroup_arm(dir));
        } else {
                bool born;
                /* The fork's own clone: born there, glibc's bookkeeping intact. */
                CHECK(fork_and_check(dir, cgroup_name, true, &born, NULL) == 0);
                CHECK(born);
                /* The parent never left its own cgroup. */
                char after[4096];
                own_cgroup(after, sizeof(after));
                CHECK_STR(after, mine);
                /* Unarmed: a plain fork, in the parent's cgroup. */
                CHECK(fork_and_check(-1, mine, false, &born, NULL) == 0);
                CHECK(!born);
                /* Another system call first: made by the kernel as asked (getppid answers),
                 * and the trap spent, so the fork that follows is a plain one. */
                CHECK(fork_and_check(dir, mine, false, &born, call_getppid) == 0);
                CHECK(!born);
                /* A vfork first (a call that depends on the stack): made by the kernel as
                 * the program made it, the trap spent, the fork plain. */
                CHECK(fork_and_check(dir, mine, false, &born, call_vfork) == 0);
                CHECK(!born);
                CHECK(vforked == 1);
                /* A trapped sigprocmask lands on the mask the handler's return restores, and
                 * leaves the trap armed for the fork. */
                CHECK(fork_and_check(dir, cgroup_name, true, &born, block_usr2) == 0);
                CHECK(born);
                sigset_t now;
                sigprocmask(SIG_SETMASK, NULL, &now);
                CHECK(sigismember(&now, SIGUSR2));
                sigemptyset(&now);
                sigprocmask(SIG_SETMASK, &now, NULL);
                /* glibc 2.41's _Fork: every signal blocked (SIGSYS too) before the clone, the
                 * mask put back after it, on both sides. */
                CHECK(fork_like_glibc_2_41(dir) == 0);
                /* A cgroup clone3 refuses (not a cgroup directory): the fork fails, as it
                 * would had the kernel refused a plain one, and no plain fork is made. */
                int not_a_cgroup = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                CHECK(into_cgroup_arm(not_a_cgroup));
                errno = 0;
                pid_t refused = fork();
                if (refused == 0)
                        _exit(0);
                int refused_errno = errno;
                CHECK(!into_cgroup_disarm());
                CHECK(refused < 0);
                CHECK(refused_errno != 0);
                close(not_a_cgroup);
                /* With another thread busy in system calls (as a runtime's timer thread):
                 * the trap is the forking thread's alone. */
                bool stop = false;
                pthread_t t;
                CHECK(pthread_create(&t, NULL, spin, &stop) == 0);
                for (int i = 0; i < 20; i++) {
                        CHECK(fork_and_check(dir, cgroup_name, true, &born, NULL) == 0);
                        CHECK(born);
                }
                stop = true;
                pthread_join(t, NULL);
                /* SIGSYS blocked, as Ruby's fork blocks every signal first (a trap then would
                 * kill the process): unblocked for the fork alone, blocked again on both
                 * sides. */
                sigset_t sys;
                sigemptyset(&sys);
                sigaddset(&sys, SIGSYS);
                sigprocmask(SIG_BLOCK, &sys, NULL);
                CHECK(fork_and_check(dir, cgroup_name, true, &born, NULL) == 0);
                CHECK(born);
                sigprocmask(SIG_UNBLOCK, &sys, NULL);
                /* A SIGSYS not of the trap's (a seccomp filter's, a kill): the runtime's own
                 * handler gets it, and the trap is never armed again. */
                raise(SIGSYS);
                CHECK(foreign_sigsys == 1);
                CHECK(!into_cgroup_arm(dir));
        }
        close(dir);
        /* Every child was reaped: the cgroup is empty and goes. */
        CHECK(rmdir(cgroup_path) == 0);
        CHECK_DONE();
}
