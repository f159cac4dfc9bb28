/* A root caller's keeper and jailed process, seen from the host by another process of
 * nobody's: neither may ever be dumpable (a copy of root's memory and fds), and their user
 * namespace is root's (no capability in it for nobody). Root only: a caller that is not root
 * has a keeper of its own uid, which exposes nothing of another user's. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "codecell.h"
#include "jail_run.h"

#define NOBODY 65534
#define READY_MS 60000

static char secret_path[64];
static int secret_fd = -1;

/* A file only root may open, held open by the caller: what nobody must not take. */
static void make_secret(void)
{
        char dir[] = "/tmp/jail-keeper-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        snprintf(secret_path, sizeof(secret_path), "%s/secret", dir);
        secret_fd = open(secret_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        CHECK(secret_fd >= 0 && write(secret_fd, "root's", 6) == 6);
}

static void remove_secret(void)
{
        close(secret_fd);
        unlink(secret_path);
        *strrchr(secret_path, '/') = '\0';
        rmdir(secret_path);
}

/* In a fork of the test as nobody (no group): 1 if it took fd of pid, or opened its user
 * namespace or its memory; 0 if all of it was refused; 2 if it could not become nobody. */
static int attack(pid_t pid, int fd)
{
        pid_t attacker = fork();
        if (attacker == 0) {
                if (syscall(SYS_setgroups, 0, NULL) < 0 ||
                    syscall(SYS_setresgid, NOBODY, NOBODY, NOBODY) < 0 ||
                    syscall(SYS_setresuid, NOBODY, NOBODY, NOBODY) < 0)
                        _exit(2);
                int won = 0;
                int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
                if (pidfd >= 0 && syscall(SYS_pidfd_getfd, pidfd, fd, 0) >= 0)
                        won = 1;
                char path[64];
                snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
                if (open(path, O_RDONLY) >= 0)
                        won = 1;
                snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
                if (open(path, O_RDONLY) >= 0)
                        won = 1;
                _exit(won);
        }
        int status = 0;
        if (attacker < 0 || waitpid(attacker, &status, 0) != attacker || !WIFEXITED(status))
                return 2;
        return WEXITSTATUS(status);
}

static int ready[2], release[2];

/* Says it runs, then waits for the test to have looked; answers what /proc/self names (1 in
 * the /proc of its own pid namespace, which it mounts with the capabilities the keeper kept
 * through its change of uid). */
static void waiting_fn(codecell_jail *jail, void *arg)
{
        (void)arg;
        char byte, self[16] = "";
        if (write(ready[1], "r", 1) != 1 || read(release[0], &byte, 1) != 1)
                _exit(3);
        ssize_t n = readlink("/proc/self", self, sizeof(self) - 1);
        codecell_jail_answer(jail, CODECELL_JAIL_VALUE, self, n > 0 ? (size_t)n : 0);
}

struct waiting_run {
        pid_t tid;
        codecell_jail_result result;
};

static void *run_waiting(void *arg)
{
        struct waiting_run *w = arg;
        w->tid = (pid_t)syscall(SYS_gettid);
        int keep[] = {ready[1], release[0], secret_fd, -1};
        codecell_jail_options o = {.keep_open = keep};
        w->result = run(&o, waiting_fn, NULL);
        return NULL;
}

/* The first pid in /proc/<pid>/task/<tid>/children, or -1. */
static pid_t first_child(pid_t pid, pid_t tid)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)tid);
        FILE *f = fopen(path, "r");
        if (!f)
                return -1;
        int child = -1;
        if (fscanf(f, "%d", &child) != 1)
                child = -1;
        fclose(f);
        return child;
}

/* Checks one process of the jail from the host: nobody, not dumpable (its /proc files stay
 * root's), in a user namespace owned by root, and out of an attacker's reach. */
static void check_from_host(const char *who, pid_t pid)
{
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        FILE *f = fopen(path, "r");
        CHECK(f != NULL);
        bool nobody = false;
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, "Uid:", 4) == 0)
                        nobody = strcmp(line, "Uid:\t65534\t65534\t65534\t65534\n") == 0;
        if (f)
                fclose(f);
        CHECK(nobody);
        struct stat st;
        /* (not /proc/<pid> itself, which always shows the euid) */
        CHECK(stat(path, &st) == 0 && st.st_uid == 0);
        snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
        int ns = open(path, O_RDONLY | O_CLOEXEC);
        uid_t owner = (uid_t)-1;
        CHECK(ns >= 0 && ioctl(ns, NS_GET_OWNER_UID, &owner) == 0);
        printf("%s %d: uid %s, /proc owned by %u, user namespace owned by %u\n", who, (int)pid,
               nobody ? "nobody" : "not nobody", (unsigned)st.st_uid, (unsigned)owner);
        CHECK(owner == 0);
        if (ns >= 0)
                close(ns);
        CHECK(attack(pid, secret_fd) == 0);
}

/* While the function waits, the keeper (a child of the thread that runs the jail) and the
 * jailed process (the keeper's) are looked at from the host. */
static void test_seen_from_the_host(void)
{
        CHECK(pipe2(ready, O_CLOEXEC) == 0 && pipe2(release, O_CLOEXEC) == 0);
        struct waiting_run w = {0};
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, run_waiting, &w) == 0);
        struct pollfd p = {.fd = ready[0], .events = POLLIN};
        char byte;
        CHECK(poll(&p, 1, READY_MS) == 1 && read(ready[0], &byte, 1) == 1);
        pid_t keeper = first_child(getpid(), w.tid);
        pid_t jailed = keeper > 0 ? first_child(keeper, keeper) : -1;
        CHECK(keeper > 0 && jailed > 0);
        if (keeper > 0)
                check_from_host("keeper", keeper);
        if (jailed > 0)
                check_from_host("jailed", jailed);
        CHECK(write(release[1], "g", 1) == 1);
        pthread_join(thread, NULL);
        CHECK(w.result.outcome == CODECELL_JAIL_VALUE && w.result.len == 1 &&
              w.result.data[0] == '1');
        codecell_jail_result_clear(&w.result);
        for (int i = 0; i < 2; i++) {
                close(ready[i]);
                close(release[i]);
        }
}

static void quick_fn(codecell_jail *jail, void *arg)
{
        (void)arg;
        codecell_jail_answer(jail, CODECELL_JAIL_VALUE, "ok", 2);
}

/* The jail in a child of the test, which the test traces: its keeper starts stopped, then
 * stops at every system call of its set-up, and at each an attacker tries to take the
 * caller's secret from it. No race: every moment between two of its system calls is tried,
 * up to its fork of the jailed process (from there test_seen_from_the_host looks). */
static void test_no_moment_open(void)
{
        pid_t caller = fork();
        if (caller == 0) {
                raise(SIGSTOP); /* until the test traces it */
                codecell_jail_result r;
                codecell_error err = {0};
                int rc = codecell_jail_run(NULL, quick_fn, NULL, &r, &err);
                if (rc < 0)
                        fprintf(stderr, "jail: %s\n", err.message);
                _exit(rc == 0 && r.outcome == CODECELL_JAIL_VALUE ? 0 : 1);
        }
        CHECK(caller > 0);
        int status;
        CHECK(waitpid(caller, &status, WSTOPPED) == caller);
        CHECK(ptrace(PTRACE_SEIZE, caller, 0, PTRACE_O_TRACEFORK | PTRACE_O_TRACECLONE) == 0);
        CHECK(kill(caller, SIGCONT) == 0);
        pid_t keeper = -1;
        int stops = 0, won = 0, caller_status = -1;
        bool keeper_done = false;
        for (;;) {
                pid_t who = waitpid(-1, &status, __WALL);
                if (who < 0)
                        break;
                if (WIFEXITED(status) || WIFSIGNALED(status)) {
                        if (who == caller)
                                caller_status = status;
                        if (who == keeper)
                                keeper_done = true;
                        continue;
                }
                int sig = WSTOPSIG(status), event = status >> 16;
                if (who == keeper && !keeper_done) {
                        if (sig == (SIGTRAP | 0x80)) {
                                stops++;
                                int a = attack(keeper, secret_fd);
                                if (a != 0) {
                                        won++;
                                        CHECK(a == 1 || !"the attacker could not become nobody");
                                }
                                struct __ptrace_syscall_info info;
                                long n = ptrace(PTRACE_GET_SYSCALL_INFO, keeper, sizeof(info),
                                                &info);
                                if (n > 0 && info.op == PTRACE_SYSCALL_INFO_ENTRY &&
                                    (info.entry.nr == SYS_clone || info.entry.nr == SYS_clone3)) {
                                        keeper_done = true;
                                        CHECK(ptrace(PTRACE_DETACH, keeper, 0, 0) == 0);
                                        continue;
                                }
                                ptrace(PTRACE_SYSCALL, keeper, 0, 0);
                        } else {
                                /* its first stop, or a signal to deliver */
                                bool first = sig == SIGSTOP || event == PTRACE_EVENT_STOP;
                                ptrace(PTRACE_SETOPTIONS, keeper, 0, PTRACE_O_TRACESYSGOOD);
                                ptrace(PTRACE_SYSCALL, keeper, 0, first ? 0 : sig);
                        }
                        continue;
                }
                if (event == PTRACE_EVENT_FORK && who == caller) {
                        unsigned long child = 0;
                        ptrace(PTRACE_GETEVENTMSG, who, 0, &child);
                        keeper = (pid_t)child;
                        ptrace(PTRACE_CONT, who, 0, 0);
                        continue;
                }
                /* the caller's threads and their events, a thread's first stop */
                bool ours = event != 0 || sig == SIGSTOP || sig == SIGTRAP;
                if (event == PTRACE_EVENT_STOP && who != caller)
                        ours = true;
                ptrace(PTRACE_CONT, who, 0, ours ? 0 : sig);
        }
        printf("the keeper stopped at %d system calls; the attacker won at %d\n", stops, won);
        CHECK(keeper > 0 && stops > 10);
        CHECK(won == 0);
        CHECK(caller_status == 0);
}

int main(void)
{
        if (geteuid() != 0) {
                printf("SKIP jail keeper: needs root (a caller that is not root has a keeper of "
                       "its own uid)\n");
                return 77;
        }
        make_secret();
        test_seen_from_the_host();
        test_no_moment_open();
        remove_secret();
        CHECK_DONE();
}
