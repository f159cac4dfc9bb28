/* The jail's C API against the real kernel: each wall is checked by what a function inside it
 * gets back from the kernel, each outcome by a function that earns it. Run as root and again
 * as nobody (tests/CMakeLists.txt). */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/io_uring.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "codecell.h"
#include "jail_run.h"

static void answer_text(codecell_jail *jail, codecell_jail_outcome outcome, const char *text)
{
        codecell_jail_answer(jail, outcome, text, strlen(text));
}

static int counter = 41; /* the parent's memory, seen by the child */

static void value_fn(codecell_jail *jail, void *arg)
{
        char text[64];
        snprintf(text, sizeof(text), "%d %s pid=%d", counter + 1, (const char *)arg, (int)getpid());
        counter = 0; /* the child's copy only */
        answer_text(jail, CODECELL_JAIL_VALUE, text);
}

static void test_value(void)
{
        codecell_jail_result r = run(NULL, value_fn, "closure");
        CHECK(r.outcome == CODECELL_JAIL_VALUE);
        /* PID 1 of its own pid namespace */
        CHECK(r.data && r.len == strlen("42 closure pid=1") &&
              memcmp(r.data, "42 closure pid=1", r.len) == 0);
        CHECK(counter == 41);
        codecell_jail_result_clear(&r);
        CHECK(r.data == NULL);
}

static void dumpable_fn(codecell_jail *jail, void *arg)
{
        (void)arg;
        char text[8];
        /* Made dumpable again, it could be ptraced by any process of nobody's: refused. */
        int again = prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0 && errno == EPERM;
        snprintf(text, sizeof(text), "%d%d", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), again);
        answer_text(jail, CODECELL_JAIL_VALUE, text);
}

/* A root caller's jail runs as nobody, and no other process of nobody's may ptrace it (it holds
 * a copy of root's memory): not dumpable, and it cannot make itself dumpable again. */
static void test_not_dumpable_for_root(void)
{
        codecell_jail_result r = run(NULL, dumpable_fn, NULL);
        CHECK(r.outcome == CODECELL_JAIL_VALUE && r.len == 2);
        if (r.len == 2) {
                CHECK(r.data[0] == (geteuid() == 0 ? '0' : '1'));
                CHECK(r.data[1] == '1');
        }
        codecell_jail_result_clear(&r);
}

static void raise_fn(codecell_jail *jail, void *arg)
{
        (void)arg;
        answer_text(jail, CODECELL_JAIL_RAISED, "boom");
        CHECK(codecell_jail_answer(jail, CODECELL_JAIL_VALUE, "x", 1) == -EALREADY);
}

static void test_raised(void)
{
        codecell_jail_result r = run(NULL, raise_fn, NULL);
        CHECK(r.outcome == CODECELL_JAIL_RAISED);
        CHECK(r.len == 4 && memcmp(r.data, "boom", 4) == 0);
        CHECK_STR(codecell_jail_outcome_name(r.outcome), "raised");
        codecell_jail_result_clear(&r);
}

static void sleep_fn(codecell_jail *jail, void *arg)
{
        (void)jail;
        (void)arg;
        for (;;)
                pause();
}

static void spin_fn(codecell_jail *jail, void *arg)
{
        (void)jail;
        (void)arg;
        for (volatile unsigned long i = 0;; i++)
                ;
}

static void test_timeouts(void)
{
        codecell_jail_options o = {.timeout_ms = 300};
        codecell_jail_result r = run(&o, sleep_fn, NULL);
        CHECK(r.outcome == CODECELL_JAIL_TIMEOUT && !r.cpu);
        CHECK(r.signal == SIGKILL);
        codecell_jail_result_clear(&r);
        /* A CPU budget far below the wall clock: a loaded machine cannot make it a wall-clock
         * timeout. */
        o = (codecell_jail_options){.timeout_ms = 60000, .cpu_ms = 200};
        r = run(&o, spin_fn, NULL);
        CHECK(r.outcome == CODECELL_JAIL_TIMEOUT && r.cpu);
        CHECK(r.cpu_ms >= 200);
        CHECK(r.duration_ms < 60000);
        codecell_jail_result_clear(&r);
}

static void memory_fn(codecell_jail *jail, void *arg)
{
        (void)arg;
        /* 256 MiB touched page by page, against a 64 MiB limit. */
        size_t size = 256u << 20;
        char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
                answer_text(jail, CODECELL_JAIL_MEMORY, "mmap refused");
                return;
        }
        for (size_t i = 0; i < size; i += 4096)
                p[i] = 1;
        answer_text(jail, CODECELL_JAIL_VALUE, "all touched");
}

static void test_memory(void)
{
        codecell_jail_options o = {.memory_bytes = 64u << 20};
        codecell_jail_result r = run(&o, memory_fn, NULL);
        CHECK(r.outcome == CODECELL_JAIL_MEMORY);
        codecell_jail_result_clear(&r);
}

/* Answers "errno-name" of opening path (flags in arg's first char: r or w). */
static void open_fn(codecell_jail *jail, void *arg)
{
        const char *spec = arg;
        int fd = open(spec + 1, spec[0] == 'w' ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY, 0644);
        char text[64];
        snprintf(text, sizeof(text), "%s", fd >= 0 ? "ok" : strerror(errno));
        answer_text(jail, CODECELL_JAIL_VALUE, text);
}

static char *open_in_jail(const codecell_jail_options *o, const char *spec)
{
        codecell_jail_result r = run(o, open_fn, (void *)spec);
        char *text = strndup(r.data ? r.data : "", r.len);
        codecell_jail_result_clear(&r);
        return text;
}

/* What the function may leave in fs_allow: a file yes; a symbolic link (to /etc/shadow) or a
 * FIFO, which a caller reading the folder afterwards would follow or block on, no. */
static void plant_fn(codecell_jail *jail, void *arg)
{
        char path[160], text[160];
        snprintf(path, sizeof(path), "%s/link", (const char *)arg);
        int sym = symlink("/etc/shadow", path);
        const char *sym_why = sym == 0 ? "made" : strerror(errno);
        snprintf(path, sizeof(path), "%s/fifo", (const char *)arg);
        int fifo = mkfifo(path, 0666);
        snprintf(text, sizeof(text), "%s|%s", sym_why, fifo == 0 ? "made" : strerror(errno));
        answer_text(jail, CODECELL_JAIL_VALUE, text);
}

static void test_nothing_to_trip_on_in_fs_allow(void)
{
        char dir[] = "/tmp/codecell-jail-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        chmod(dir, 0777);
        const char *allow[] = {dir, NULL};
        codecell_jail_options o = {.fs_allow = allow};
        codecell_jail_result r = run(&o, plant_fn, dir);
        char want[160];
        snprintf(want, sizeof(want), "%s|%s", strerror(EACCES), strerror(EACCES));
        bool as_wanted = r.outcome == CODECELL_JAIL_VALUE && r.data && r.len == strlen(want) &&
                         memcmp(r.data, want, r.len) == 0;
        CHECK(as_wanted);
        if (!as_wanted && r.data)
                fprintf(stderr, "planted: %.*s\n", (int)r.len, r.data);
        codecell_jail_result_clear(&r);
        char cmd[96];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        CHECK(system(cmd) == 0);
}

/* A process the function forks holds a copy of the jail but cannot answer for it. */
static void forked_answer_fn(codecell_jail *jail, void *arg)
{
        (void)arg;
        int p[2];
        if (pipe(p) < 0)
                return;
        pid_t child = fork();
        if (child == 0) {
                int r = codecell_jail_answer(jail, CODECELL_JAIL_FILESYSTEM, "forged", 6);
                (void)!write(p[1], &r, sizeof(r));
                _exit(0);
        }
        int r = 0;
        (void)!read(p[0], &r, sizeof(r));
        waitpid(child, NULL, 0);
        char text[32];
        snprintf(text, sizeof(text), "child answer %d", r);
        answer_text(jail, CODECELL_JAIL_VALUE, text);
}

static void test_only_the_function_answers(void)
{
        codecell_jail_options o = {0};
        codecell_jail_result r = run(&o, forked_answer_fn, NULL);
        char want[32];
        snprintf(want, sizeof(want), "child answer %d", -EPERM);
        CHECK(r.outcome == CODECELL_JAIL_VALUE && r.data && r.len == strlen(want) &&
              memcmp(r.data, want, r.len) == 0);
        codecell_jail_result_clear(&r);
}

static void test_filesystem(void)
{
        char dir[] = "/tmp/codecell-jail-XXXXXX", other[] = "/var/tmp/codecell-jail-XXXXXX";
        CHECK(mkdtemp(dir) != NULL && mkdtemp(other) != NULL);
        chmod(dir, 0777); /* the child of a root caller is nobody */
        chmod(other, 0777);
        char path[128], spec[160];
        snprintf(path, sizeof(path), "%s/secret", other);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (f) {
                fputs("secret", f);
                fclose(f);
        }
        chmod(path, 0644);
        const char *allow[] = {dir, NULL};
        codecell_jail_options o = {.fs_allow = allow};
        char *t;
        snprintf(spec, sizeof(spec), "w%s/out", dir);
        CHECK_STR(t = open_in_jail(&o, spec), "ok");
        free(t);
        /* world-readable, but outside the lists: Landlock */
        snprintf(spec, sizeof(spec), "r%s", path);
        CHECK_STR(t = open_in_jail(&o, spec), strerror(EACCES));
        free(t);
        snprintf(spec, sizeof(spec), "w%s/new", other);
        CHECK_STR(t = open_in_jail(&o, spec), strerror(EACCES));
        free(t);
        /* inside /etc, which is read-only for the interpreter's sake: the uid keeps it out */
        CHECK_STR(t = open_in_jail(&o, "r/etc/shadow"), strerror(EACCES));
        free(t);
        CHECK_STR(t = open_in_jail(&o, "w/etc/codecell-jail-test"), strerror(EACCES));
        free(t);
        CHECK_STR(t = open_in_jail(&o, "r/etc/hostname"), "ok");
        free(t);
        /* read-only grant */
        const char *read_only[] = {other, NULL};
        codecell_jail_options ro = {.fs_read_allow = read_only};
        snprintf(spec, sizeof(spec), "r%s", path);
        CHECK_STR(t = open_in_jail(&ro, spec), "ok");
        free(t);
        snprintf(spec, sizeof(spec), "w%s/new", other);
        CHECK_STR(t = open_in_jail(&ro, spec), strerror(EACCES));
        free(t);
        /* a path that does not exist is left out, as the seed does */
        const char *missing[] = {"/app/tmp/does-not-exist", NULL};
        codecell_jail_options m = {.fs_allow = missing};
        CHECK_STR(t = open_in_jail(&m, "r/etc/hostname"), "ok");
        free(t);
        snprintf(path, sizeof(path), "rm -rf %s %s", dir, other);
        CHECK(system(path) == 0);
}

static int listener_port;

static void connect_fn(codecell_jail *jail, void *arg)
{
        (void)arg;
        int s = socket(AF_INET, SOCK_STREAM, 0);
        char text[96];
        if (s < 0) {
                snprintf(text, sizeof(text), "socket: %s", strerror(errno));
        } else {
                struct sockaddr_in a = {.sin_family = AF_INET,
                                        .sin_port = htons((uint16_t)listener_port),
                                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
                int c = connect(s, (struct sockaddr *)&a, sizeof(a));
                snprintf(text, sizeof(text), "connect: %s", c == 0 ? "ok" : strerror(errno));
        }
        answer_text(jail, CODECELL_JAIL_VALUE, text);
}

static void test_network(void)
{
        int l = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(a);
        CHECK(bind(l, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(l, 4) == 0 &&
              getsockname(l, (struct sockaddr *)&a, &len) == 0);
        listener_port = ntohs(a.sin_port);
        codecell_jail_result r = run(NULL, connect_fn, NULL);
        CHECK(r.outcome == CODECELL_JAIL_VALUE);
        CHECK(r.len > 0 && strstr(r.data, "ok") == NULL);
        codecell_jail_result_clear(&r);
        /* nothing reached the listener */
        fcntl(l, F_SETFL, O_NONBLOCK);
        CHECK(accept(l, NULL, NULL) < 0 && errno == EAGAIN);
        /* with the network, the same connection is made */
        codecell_jail_options o = {.network = true};
        r = run(&o, connect_fn, NULL);
        CHECK(r.len > 0 && strncmp(r.data, "connect: ok", r.len) == 0);
        codecell_jail_result_clear(&r);
        close(l);
}

static void bomb_fn(codecell_jail *jail, void *arg)
{
        (void)arg;
        int made = 0, refused = 0;
        for (int i = 0; i < 400; i++) {
                pid_t p = fork();
                if (p == 0) {
                        pause();
                        _exit(0);
                }
                if (p > 0)
                        made++;
                else
                        refused++;
        }
        char text[64];
        snprintf(text, sizeof(text), "%d %d", made, refused);
        answer_text(jail, CODECELL_JAIL_VALUE, text);
}

static void test_fork_bomb(void)
{
        codecell_jail_options o = {.pids = 16};
        codecell_jail_result r = run(&o, bomb_fn, NULL);
        int made = -1, refused = -1;
        CHECK(r.outcome == CODECELL_JAIL_VALUE && r.data &&
              sscanf(r.data, "%d %d", &made, &refused) == 2);
        CHECK(made >= 1 && made < 16 && refused > 0);
        codecell_jail_result_clear(&r);
}

static atomic_long ticks;
static atomic_bool stop;

static void *ticker(void *arg)
{
        (void)arg;
        while (!atomic_load(&stop)) {
                atomic_fetch_add(&ticks, 1);
                usleep(1000);
        }
        return NULL;
}

static void threads_fn(codecell_jail *jail, void *arg)
{
        (void)arg;
        /* only this thread exists here: the ticker does not tick in the child */
        long before = atomic_load(&ticks);
        usleep(200000);
        char text[32];
        snprintf(text, sizeof(text), "%ld", atomic_load(&ticks) - before);
        answer_text(jail, CODECELL_JAIL_VALUE, text);
}

static void test_threads(void)
{
        pthread_t t;
        CHECK(pthread_create(&t, NULL, ticker, NULL) == 0);
        long before = atomic_load(&ticks);
        codecell_jail_result r = run(NULL, threads_fn, NULL);
        CHECK(r.outcome == CODECELL_JAIL_VALUE && r.len == 1 && r.data[0] == '0');
        /* the parent's thread went on meanwhile */
        CHECK(atomic_load(&ticks) > before);
        atomic_store(&stop, true);
        pthread_join(t, NULL);
        codecell_jail_result_clear(&r);
}

static int inherited[2];

/* Writes "leak" to the descriptor *arg and answers what write returned. */
static void fds_fn(codecell_jail *jail, void *arg)
{
        ssize_t n = write(*(const int *)arg, "leak", 4);
        char text[32];
        snprintf(text, sizeof(text), "%zd", n);
        answer_text(jail, CODECELL_JAIL_VALUE, text);
}

static void test_fds(void)
{
        CHECK(pipe(inherited) == 0);
        codecell_jail_result r = run(NULL, fds_fn, &inherited[1]);
        CHECK(r.outcome == CODECELL_JAIL_VALUE); /* the write "worked": into /dev/null */
        fcntl(inherited[0], F_SETFL, O_NONBLOCK);
        char buf[8];
        CHECK(read(inherited[0], buf, sizeof(buf)) < 0 && errno == EAGAIN);
        codecell_jail_result_clear(&r);
        close(inherited[0]);
        close(inherited[1]);
}

static void crash_fn(codecell_jail *jail, void *arg)
{
        (void)jail;
        (void)arg;
        /* A real fault: raise() would be ignored, as any signal PID 1 of a pid namespace
         * sends itself with no handler. */
        volatile char *guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        *guard = 1;
}

static void silent_fn(codecell_jail *jail, void *arg)
{
        (void)jail;
        (void)arg;
        _exit(3);
}

static void big_fn(codecell_jail *jail, void *arg)
{
        (void)arg;
        size_t n = 1u << 20;
        char *p = calloc(1, n);
        codecell_jail_answer(jail, CODECELL_JAIL_VALUE, p, n);
        free(p);
}

static void test_other_outcomes(void)
{
        codecell_jail_result r = run(NULL, crash_fn, NULL);
        /* (Under AddressSanitizer its handler reports the fault and exits non-zero.) */
        CHECK(r.outcome == CODECELL_JAIL_CRASHED && (r.signal == SIGSEGV || r.exit_code > 0));
        codecell_jail_result_clear(&r);
        r = run(NULL, silent_fn, NULL);
        CHECK(r.outcome == CODECELL_JAIL_CRASHED && r.signal == 0 && r.exit_code == 3);
        codecell_jail_result_clear(&r);
        r = run(NULL, big_fn, NULL);
        CHECK(r.outcome == CODECELL_JAIL_VALUE && r.len == (1u << 20));
        codecell_jail_result_clear(&r);
        codecell_jail_options o = {.answer_bytes = 1000};
        codecell_error err = {0};
        CHECK(codecell_jail_run(&o, big_fn, NULL, &r, &err) == -EFBIG);
        CHECK(strstr(err.message, "1000-byte limit") != NULL);
}

static void test_bad_options(void)
{
        codecell_error err = {0};
        codecell_jail_options o = {.memory_bytes = 1000};
        CHECK(codecell_jail_new(&o, &err) == NULL && err.kind == CODECELL_ERR_INVALID);
        CHECK(strstr(err.message, "1 MiB minimum") != NULL);
        const char *empty[] = {"", NULL};
        o = (codecell_jail_options){.fs_allow = empty};
        CHECK(codecell_jail_new(&o, &err) == NULL && strstr(err.message, "fs_allow[0] is empty"));
        o = (codecell_jail_options){.on_unsupported = (codecell_policy)7};
        CHECK(codecell_jail_new(&o, &err) == NULL && strstr(err.message, "on_unsupported"));
        o = (codecell_jail_options){0};
        codecell_jail_result r;
        CHECK(codecell_jail_run(&o, NULL, NULL, &r, &err) == -EINVAL);
}

/* Creates name in the folder arg and answers "ok" and the folder's owner as the child sees it,
 * or the error. */
static void create_fn(codecell_jail *jail, void *arg)
{
        char path[256], text[160];
        snprintf(path, sizeof(path), "%s/made-in-jail", (const char *)arg);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
        struct stat st = {0};
        stat((const char *)arg, &st);
        if (fd >= 0) {
                close(fd);
                snprintf(text, sizeof(text), "ok owner=%u", (unsigned)st.st_uid);
        } else {
                snprintf(text, sizeof(text), "%s", strerror(errno));
        }
        answer_text(jail, CODECELL_JAIL_VALUE, text);
}

/* In an idmapped folder what the child makes is its owner's (root's): a setuid bit there
 * would be a setuid-root program on the host. Answers how chmod and a creation with the bit
 * ended. */
static void setuid_fn(codecell_jail *jail, void *arg)
{
        char path[256], text[160];
        snprintf(path, sizeof(path), "%s/made-in-jail", (const char *)arg);
        int c = chmod(path, 04755);
        const char *chmod_why = c == 0 ? "made" : strerror(errno);
        snprintf(path, sizeof(path), "%s/suid", (const char *)arg);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 04755);
        snprintf(text, sizeof(text), "%s|%s", chmod_why, fd >= 0 ? "made" : strerror(errno));
        answer_text(jail, CODECELL_JAIL_VALUE, text);
}

static bool mounted_at(const char *dir)
{
        FILE *f = fopen("/proc/self/mountinfo", "r");
        char line[4096];
        bool found = false;
        while (f && fgets(line, sizeof(line), f))
                found = found || strstr(line, dir) != NULL;
        if (f)
                fclose(f);
        return found;
}

/* A root caller's folder that only root may write (0700, as mkdtemp makes it): the child
 * (nobody) writes there through an idmapped clone, and what it makes is root's on the host.
 * A file of another owner inside stays another's; nothing is left mounted. */
static void test_idmapped_fs_allow(void)
{
        if (geteuid() != 0) {
                printf("SKIP idmapped fs_allow: needs root (the child of a root caller)\n");
                return;
        }
        char dir[] = "/tmp/codecell-jail-XXXXXX", other[] = "/tmp/codecell-jail-XXXXXX";
        CHECK(mkdtemp(dir) != NULL && mkdtemp(other) != NULL);
        char theirs[128], spec[160];
        snprintf(theirs, sizeof(theirs), "%s/theirs", dir);
        FILE *f = fopen(theirs, "w");
        CHECK(f != NULL && fclose(f) == 0);
        CHECK(chown(theirs, 1234, 1234) == 0 && chmod(theirs, 0644) == 0);
        const char *allow[] = {dir, NULL};
        codecell_jail_options o = {.fs_allow = allow, .on_unsupported = CODECELL_POLICY_RAISE};
        codecell_error err = {0};
        codecell_jail *j = codecell_jail_new(&o, &err);
        if (!j && err.kind == CODECELL_ERR_UNSUPPORTED) {
                printf("SKIP idmapped fs_allow: %s\n", err.message);
                goto out;
        }
        CHECK(j != NULL && strstr(codecell_jail_layers(j), "idmapped_fs_allow") != NULL);
        codecell_jail_free(j);
        codecell_jail_result r = run(&o, create_fn, dir);
        CHECK(r.outcome == CODECELL_JAIL_VALUE && r.data && r.len == strlen("ok owner=65534") &&
              memcmp(r.data, "ok owner=65534", r.len) == 0);
        if (r.data)
                printf("idmapped fs_allow: %.*s\n", (int)r.len, r.data);
        codecell_jail_result_clear(&r);
        char made[160];
        snprintf(made, sizeof(made), "%s/made-in-jail", dir);
        struct stat st;
        CHECK(stat(made, &st) == 0 && st.st_uid == 0 && st.st_gid == 0);
        r = run(&o, setuid_fn, dir);
        char refused[64];
        snprintf(refused, sizeof(refused), "%s|%s", strerror(EPERM), strerror(EPERM));
        CHECK(r.outcome == CODECELL_JAIL_VALUE && r.data && r.len == strlen(refused) &&
              memcmp(r.data, refused, r.len) == 0);
        codecell_jail_result_clear(&r);
        CHECK(stat(made, &st) == 0 && !(st.st_mode & (S_ISUID | S_ISGID)));
        /* another owner's file in the folder: not mapped, not the child's */
        snprintf(spec, sizeof(spec), "w%s", theirs);
        char *t;
        CHECK_STR(t = open_in_jail(&o, spec), strerror(EACCES));
        free(t);
        /* a folder of root's outside fs_allow stays out of reach */
        snprintf(spec, sizeof(spec), "w%s/new", other);
        CHECK_STR(t = open_in_jail(&o, spec), strerror(EACCES));
        free(t);
        CHECK(!mounted_at(dir));
        /* A folder of another owner inside, listed first: mounted after (over) the outer
         * clone, so that its own mapping shows; what the child makes there is that owner's. */
        char sub[96];
        snprintf(sub, sizeof(sub), "%s/sub", dir);
        CHECK(mkdir(sub, 0700) == 0 && chown(sub, 1234, 1234) == 0);
        const char *both[] = {sub, dir, NULL};
        codecell_jail_options b = {.fs_allow = both};
        r = run(&b, create_fn, sub);
        CHECK(r.outcome == CODECELL_JAIL_VALUE && r.data && r.len == strlen("ok owner=65534") &&
              memcmp(r.data, "ok owner=65534", r.len) == 0);
        codecell_jail_result_clear(&r);
        snprintf(made, sizeof(made), "%s/made-in-jail", sub);
        CHECK(stat(made, &st) == 0 && st.st_uid == 1234 && st.st_gid == 1234);
        /* A file system that cannot be idmapped (sysfs): on_unsupported decides, and says
         * which folder. */
        const char *sys[] = {"/sys/kernel", NULL};
        codecell_jail_options s = {.fs_allow = sys, .on_unsupported = CODECELL_POLICY_RAISE};
        CHECK(codecell_jail_new(&s, &err) == NULL && err.kind == CODECELL_ERR_UNSUPPORTED &&
              strstr(err.message, "idmapped fs_allow: /sys/kernel: "));
        s.on_unsupported = CODECELL_POLICY_WARN;
        j = codecell_jail_new(&s, &err);
        bool warned = false;
        for (size_t i = 0; j && codecell_jail_warning(j, i); i++)
                warned = warned ||
                         strstr(codecell_jail_warning(j, i), "idmapped fs_allow: /sys/kernel");
        CHECK(j != NULL && warned && strstr(codecell_jail_layers(j), "idmapped") == NULL);
        codecell_jail_free(j);
        /* a folder the child owns already needs no clone */
        CHECK(chown(other, 65534, 65534) == 0);
        const char *own[] = {other, NULL};
        codecell_jail_options mine = {.fs_allow = own};
        j = codecell_jail_new(&mine, &err);
        CHECK(j != NULL && strstr(codecell_jail_layers(j), "idmapped") == NULL);
        codecell_jail_free(j);
out:;
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s %s", dir, other);
        CHECK(system(cmd) == 0);
}

static bool warned_of(const codecell_jail *j, const char *what)
{
        bool warned = false;
        for (size_t i = 0; j && codecell_jail_warning(j, i); i++)
                warned = warned || strstr(codecell_jail_warning(j, i), what) != NULL;
        return warned;
}

/* A root caller's fs_allow is idmapped only where nobody but root and the folder's owner
 * steers its path: a link planted by another user in a folder of theirs (pub/job -> a
 * folder of root's) is not followed into root's ownership, and a folder everyone may write
 * (/tmp) stays written as nobody. */
static void test_idmap_refused(void)
{
        if (geteuid() != 0) {
                printf("SKIP idmap refused: needs root (the child of a root caller)\n");
                return;
        }
        char target[] = "/tmp/codecell-jail-XXXXXX", pub[] = "/tmp/codecell-jail-XXXXXX";
        CHECK(mkdtemp(target) != NULL && mkdtemp(pub) != NULL);
        CHECK(chmod(pub, 0755) == 0 && chown(pub, 1000, 1000) == 0);
        char job[96], made[128];
        snprintf(job, sizeof(job), "%s/job", pub);
        CHECK(symlink(target, job) == 0 && lchown(job, 1000, 1000) == 0);
        const char *planted[] = {job, NULL};
        codecell_jail_options o = {.fs_allow = planted, .on_unsupported = CODECELL_POLICY_RAISE};
        codecell_error err = {0};
        CHECK(codecell_jail_new(&o, &err) == NULL && err.kind == CODECELL_ERR_UNSUPPORTED &&
              strstr(err.message, "not idmapped: ") && strstr(err.message, pub));
        printf("idmap refused: %s\n", err.message);
        o.on_unsupported = CODECELL_POLICY_WARN;
        codecell_jail *j = codecell_jail_new(&o, &err);
        CHECK(j != NULL && warned_of(j, "not idmapped: ") &&
              strstr(codecell_jail_layers(j), "idmapped") == NULL);
        codecell_jail_free(j);
        codecell_jail_result r = run(&o, create_fn, job);
        CHECK(r.outcome == CODECELL_JAIL_VALUE && r.data && r.len == strlen(strerror(EACCES)) &&
              memcmp(r.data, strerror(EACCES), r.len) == 0);
        codecell_jail_result_clear(&r);
        snprintf(made, sizeof(made), "%s/made-in-jail", target);
        struct stat st;
        CHECK(lstat(made, &st) < 0 && errno == ENOENT);
        /* The same folder named directly is the caller's own choice: idmapped. */
        const char *direct[] = {target, NULL};
        o.fs_allow = direct;
        j = codecell_jail_new(&o, &err);
        CHECK(j != NULL && strstr(codecell_jail_layers(j), "idmapped_fs_allow") != NULL);
        codecell_jail_free(j);
        /* /tmp, and a sticky folder everyone may write like it: nobody writes there already,
         * and no warning (nothing the caller asked for is missing). */
        const char *tmp[] = {"/tmp", NULL};
        o.fs_allow = tmp;
        j = codecell_jail_new(&o, &err);
        CHECK(j != NULL && strstr(codecell_jail_layers(j), "idmapped") == NULL &&
              codecell_jail_warning(j, 0) == NULL);
        codecell_jail_free(j);
        CHECK(chown(pub, 0, 0) == 0 && chmod(pub, 01777) == 0 && unlink(job) == 0);
        const char *sticky[] = {pub, NULL};
        o.fs_allow = sticky;
        r = run(&o, create_fn, pub);
        CHECK(r.outcome == CODECELL_JAIL_VALUE && r.data && r.len > 3 &&
              memcmp(r.data, "ok ", 3) == 0);
        codecell_jail_result_clear(&r);
        snprintf(made, sizeof(made), "%s/made-in-jail", pub);
        CHECK(stat(made, &st) == 0 && st.st_uid == 65534);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s %s", target, pub);
        CHECK(system(cmd) == 0);
}

/* A host whose cgroup is not delegated (nobody's, here) still runs under "raise": RLIMIT_AS
 * is the seed's own memory limit, a fallback told as a warning, not a missing layer. */
static void test_raise_without_a_cgroup(void)
{
        codecell_jail_options o = {.on_unsupported = CODECELL_POLICY_RAISE,
                                   .memory_bytes = 64u << 20};
        codecell_error err = {0};
        codecell_jail *j = codecell_jail_new(&o, &err);
        CHECK(j != NULL);
        if (!j) {
                fprintf(stderr, "raise without a cgroup: %s\n", err.message);
                return;
        }
        const char *layers = codecell_jail_layers(j);
        bool cgroup = strstr(layers, "cgroup_") != NULL;
        printf("layers: %s\n", layers);
        CHECK(cgroup || strstr(layers, "rlimit_as") != NULL);
        if (!cgroup)
                /* says that the limit is each process's, not the jail's */
                CHECK(codecell_jail_warning(j, 0) &&
                      strncmp(codecell_jail_warning(j, 0), "cgroup: ", 8) == 0 &&
                      strstr(codecell_jail_warning(j, 0), "for each process, not for the jail") &&
                      strstr(codecell_jail_warning(j, 0), "pids x memory_mb: 64 processes"));
        codecell_jail_free(j);
        codecell_jail_result r = run(&o, memory_fn, NULL);
        CHECK(r.outcome == CODECELL_JAIL_MEMORY);
        codecell_jail_result_clear(&r);
        o.on_unsupported = CODECELL_POLICY_IGNORE;
        j = codecell_jail_new(&o, &err);
        CHECK(j != NULL && codecell_jail_warning(j, 0) == NULL);
        codecell_jail_free(j);
}

/* What the inner jail's function does, by arg's first char. */
static void inner_fn(codecell_jail *jail, void *arg)
{
        const char *what = arg;
        char text[128];
        if (what[0] == 'v') {
                snprintf(text, sizeof(text), "inner pid=%d", (int)getpid());
        } else if (what[0] == 'l') {
                /* leaves a process behind: double fork, its own session */
                pid_t p = fork();
                if (p == 0) {
                        setsid();
                        if (fork() == 0)
                                for (;;)
                                        pause();
                        _exit(0);
                }
                waitpid(p, NULL, 0);
                snprintf(text, sizeof(text), "left");
        } else {
                for (;;)
                        pause();
        }
        answer_text(jail, CODECELL_JAIL_VALUE, text);
}

/* The outer function: runs the inner jail and answers what it saw. */
static void outer_fn(codecell_jail *jail, void *arg)
{
        const char *what = arg;
        char text[512];
        codecell_jail_options o = {.timeout_ms = what[0] == 's' ? 300 : 0};
        const char *allow[] = {what + 1, NULL};
        if (what[0] == 'w') {
                o.fs_allow = allow;
                snprintf(text, sizeof(text), "w%s/inner", what + 1);
                what = text;
        }
        codecell_error err = {0};
        codecell_jail *probe = codecell_jail_new(&o, &err);
        char layers[256] = "";
        if (probe)
                snprintf(layers, sizeof(layers), "%s", codecell_jail_layers(probe));
        codecell_jail_free(probe);
        codecell_jail_result r;
        char out[512];
        int rc = codecell_jail_run(&o, what[0] == 'w' ? open_fn : inner_fn, (void *)what, &r, &err);
        if (rc < 0)
                snprintf(out, sizeof(out), "error %s", err.message);
        else
                snprintf(out, sizeof(out), "%s %.*s|%s", codecell_jail_outcome_name(r.outcome),
                         (int)r.len, r.data ? r.data : "", layers);
        codecell_jail_result_clear(&r);
        /* nothing of the inner jail outlives its run */
        char path[64], kids[64] = "";
        snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
        FILE *f = fopen(path, "r");
        if (f && !fgets(kids, sizeof(kids), f))
                kids[0] = '\0';
        if (f)
                fclose(f);
        int procs = 0;
        for (int pid = 2; pid < 4096; pid++)
                procs += kill(pid, 0) == 0 && pid != getpid();
        size_t n = strlen(out);
        snprintf(out + n, sizeof(out) - n, "|children=%s|others=%d", kids, procs);
        answer_text(jail, CODECELL_JAIL_VALUE, out);
}

static char *outer_says(const codecell_jail_options *o, const char *what)
{
        codecell_jail_result r = run(o, outer_fn, (void *)what);
        char *text = strndup(r.outcome == CODECELL_JAIL_VALUE && r.data ? r.data : "", r.len);
        codecell_jail_result_clear(&r);
        printf("nested %c: %s\n", what[0], text);
        return text;
}

/* A jail inside a jail: no namespaces of its own (the outer's filter refuses them), but its
 * own fork, Landlock stacked on the outer's, its own clock, and nothing left behind. */
static void test_nested(void)
{
        char dir[] = "/tmp/codecell-jail-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        chmod(dir, 0777);
        char *t = outer_says(NULL, "v");
        CHECK(strncmp(t, "value inner pid=", 16) == 0 && strstr(t, "inner pid=1|") == NULL);
        CHECK(strstr(t, "inside_another_jail") && strstr(t, "landlock_abi_") &&
              strstr(t, "seccomp"));
        CHECK(strstr(t, "|children=|others=0") != NULL);
        free(t);
        t = outer_says(NULL, "l");
        CHECK(strncmp(t, "value left|", 11) == 0 && strstr(t, "|children=|others=0") != NULL);
        free(t);
        t = outer_says(NULL, "s");
        CHECK(strncmp(t, "timeout |", 9) == 0 && strstr(t, "|children=|others=0") != NULL);
        free(t);
        /* the outer grants dir; the inner grants it too: both walls allow the write */
        const char *allow[] = {dir, NULL};
        codecell_jail_options o = {.fs_allow = allow};
        char what[64];
        snprintf(what, sizeof(what), "w%s", dir);
        t = outer_says(&o, what);
        CHECK(strncmp(t, "value ok|", 9) == 0);
        free(t);
        /* the outer does not grant it: the inner's fs_allow cannot widen the outer's walls */
        t = outer_says(NULL, what);
        CHECK(strncmp(t, "value Permission denied|", 24) == 0 ||
              strncmp(t, "value Read-only", 15) == 0);
        free(t);
        char cmd[96];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        CHECK(system(cmd) == 0);
}

static int kept[2];

/* Opens a file beneath a kept folder's descriptor: Landlock checks what is opened beneath. */
static void beneath_fn(codecell_jail *jail, void *arg)
{
        int fd = openat(*(int *)arg, "file", O_RDONLY | O_CLOEXEC);
        answer_text(jail, CODECELL_JAIL_VALUE, fd >= 0 ? "opened" : strerror(errno));
}

/* A descriptor of the caller's machinery (an epoll set, an io_uring, ...) is refused: the
 * function would add to it, or act through it, as the caller. fd < 0: the host has none. */
static void check_refused_kind(const char *what, int fd)
{
        if (fd < 0) {
                printf("SKIP keep_open of %s: %s\n", what, strerror(errno));
                return;
        }
        int keep[] = {fd, -1};
        codecell_jail_options o = {.keep_open = keep};
        codecell_error err = {0};
        codecell_jail *j = codecell_jail_new(&o, &err);
        CHECK(j == NULL && err.kind == CODECELL_ERR_INVALID &&
              strstr(err.message, "which the function may not hold"));
        if (j)
                fprintf(stderr, "keep_open of %s was taken\n", what);
        codecell_jail_free(j);
        close(fd);
}

static void test_keep_open_kinds(void)
{
        check_refused_kind("an epoll set", epoll_create1(EPOLL_CLOEXEC));
        check_refused_kind("an eventfd", eventfd(0, EFD_CLOEXEC));
        check_refused_kind("a timerfd", timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR2);
        check_refused_kind("a signalfd", signalfd(-1, &set, SFD_CLOEXEC));
        check_refused_kind("an inotify", inotify_init1(IN_CLOEXEC));
        check_refused_kind("a pidfd", (int)syscall(SYS_pidfd_open, getpid(), 0));
        struct io_uring_params params = {0};
        check_refused_kind("an io_uring", (int)syscall(SYS_io_uring_setup, 2, &params));
        check_refused_kind("a userfaultfd", (int)syscall(SYS_userfaultfd, O_CLOEXEC));
        /* A folder's descriptor is kept, and gives no way around Landlock: a file of the
         * caller's beneath it, readable by the child's uid, is refused. */
        char dir[] = "/tmp/codecell-jail-XXXXXX", file[64];
        CHECK(mkdtemp(dir) != NULL && chmod(dir, 0755) == 0);
        snprintf(file, sizeof(file), "%s/file", dir);
        FILE *f = fopen(file, "w");
        CHECK(f != NULL && fclose(f) == 0 && chmod(file, 0644) == 0);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int keep[] = {dfd, -1};
        codecell_jail_options o = {.keep_open = keep};
        codecell_jail_result r = run(&o, beneath_fn, &dfd);
        CHECK(r.outcome == CODECELL_JAIL_VALUE && r.data && r.len == strlen(strerror(EACCES)) &&
              memcmp(r.data, strerror(EACCES), r.len) == 0);
        codecell_jail_result_clear(&r);
        close(dfd);
        CHECK(unlink(file) == 0 && rmdir(dir) == 0);
}

/* keep_open hands chosen descriptors to the function as they are; the rest stay /dev/null. */
static void test_keep_open(void)
{
        CHECK(pipe(kept) == 0);
        int keep[] = {kept[1], -1};
        codecell_jail_options o = {.keep_open = keep};
        codecell_jail_result r = run(&o, fds_fn, &kept[1]);
        CHECK(r.outcome == CODECELL_JAIL_VALUE && r.len == 1 && r.data[0] == '4');
        codecell_jail_result_clear(&r);
        char buf[8] = "";
        fcntl(kept[0], F_SETFL, O_NONBLOCK);
        CHECK(read(kept[0], buf, sizeof(buf)) == 4 && memcmp(buf, "leak", 4) == 0);
        codecell_error err = {0};
        int closed[] = {kept[1] + 100, -1};
        o.keep_open = closed;
        CHECK(codecell_jail_new(&o, &err) == NULL && err.kind == CODECELL_ERR_INVALID &&
              strstr(err.message, "is not open"));
        int negative[] = {-7, -1};
        o.keep_open = negative;
        CHECK(codecell_jail_new(&o, &err) == NULL && strstr(err.message, "not a descriptor"));
        int ns = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
        int namespace[] = {ns, -1};
        o.keep_open = namespace;
        CHECK(codecell_jail_new(&o, &err) == NULL && strstr(err.message, "a namespace's"));
        close(ns);
        close(kept[0]);
        close(kept[1]);
}

static char *shared_file, *shared_anon, *shared_readonly;

/* Answers what the caller's shared mappings held, then writes over them. */
static void shared_fn(codecell_jail *jail, void *arg)
{
        (void)arg;
        char text[64];
        snprintf(text, sizeof(text), "%.8s|%.8s|%.8s", shared_file, shared_anon, shared_readonly);
        memcpy(shared_file, "JAILWROT", 8);
        memcpy(shared_anon, "JAILWROT", 8);
        answer_text(jail, CODECELL_JAIL_VALUE, text);
}

/* A fork shares MAP_SHARED mappings: a file of the caller's mapped writable (outside
 * fs_allow) would be written by the function, and a shared anonymous region would carry its
 * writes into the caller's memory. The function gets private copies: it sees the bytes, and
 * what it writes stays its own. */
static void test_shared_mappings(void)
{
        char dir[] = "/tmp/codecell-jail-XXXXXX", path[64], readonly[64];
        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, sizeof(path), "%s/mapped", dir);
        snprintf(readonly, sizeof(readonly), "%s/readonly", dir);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        int ro = open(readonly, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        CHECK(fd >= 0 && write(fd, "original", 8) == 8 && ro >= 0 && write(ro, "readonly", 8) == 8);
        close(ro);
        ro = open(readonly, O_RDONLY | O_CLOEXEC);
        shared_file = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        shared_anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        shared_readonly = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ro, 0);
        CHECK(shared_file != MAP_FAILED && shared_anon != MAP_FAILED &&
              shared_readonly != MAP_FAILED);
        close(fd);
        close(ro);
        memcpy(shared_anon, "anonymou", 8);
        codecell_jail_result r = run(NULL, shared_fn, NULL);
        CHECK(r.outcome == CODECELL_JAIL_VALUE && r.data && r.len == 26 &&
              memcmp(r.data, "original|anonymou|readonly", 26) == 0);
        codecell_jail_result_clear(&r);
        CHECK(memcmp(shared_file, "original", 8) == 0 && memcmp(shared_anon, "anonymou", 8) == 0);
        char back[9] = "";
        fd = open(path, O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0 && read(fd, back, 8) == 8 && memcmp(back, "original", 8) == 0);
        close(fd);
        munmap(shared_file, 4096);
        munmap(shared_anon, 4096);
        munmap(shared_readonly, 4096);
        CHECK(unlink(path) == 0 && unlink(readonly) == 0 && rmdir(dir) == 0);
}

/* Whether this process has no child left (the reaper thread collected the keepers), polled
 * with a generous deadline. */
static bool no_children_within(int seconds)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
        for (int i = 0; i < seconds * 100; i++) {
                char buf[64] = "";
                FILE *f = fopen(path, "r");
                if (f) {
                        if (!fgets(buf, sizeof(buf), f))
                                buf[0] = '\0';
                        fclose(f);
                }
                if (buf[0] == '\0')
                        return true;
                usleep(10000);
        }
        return false;
}

/* A jail whose answer is in hand returns before the kernel's teardown; the library collects
 * the rest on a thread of its own. A process forked afterwards (a server's worker) has a copy
 * of that thread's list but not the thread: its own jails must be collected all the same. */
static void test_collected_after_a_fork(void)
{
        codecell_jail_result r = run(NULL, value_fn, "x");
        CHECK(r.outcome == CODECELL_JAIL_VALUE);
        codecell_jail_result_clear(&r);
        CHECK(no_children_within(60));
        pid_t p = fork();
        if (p == 0) {
                bool ok = true;
                for (int i = 0; i < 3 && ok; i++) {
                        codecell_jail_result c;
                        codecell_error err;
                        ok = codecell_jail_run(NULL, value_fn, "y", &c, &err) == 0 &&
                             c.outcome == CODECELL_JAIL_VALUE;
                        codecell_jail_result_clear(&c);
                }
                _exit(ok && no_children_within(60) ? 0 : 1);
        }
        int status = -1;
        CHECK(p > 0 && waitpid(p, &status, 0) == p && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);
}

/* The bindings lay these structs out themselves (Python's ctypes): their layout is ABI. */
static void test_layouts(void)
{
        CHECK(sizeof(codecell_jail_options) == 96);
        CHECK(offsetof(codecell_jail_options, fs_allow) == 40);
        CHECK(offsetof(codecell_jail_options, network) == 56);
        CHECK(offsetof(codecell_jail_options, on_unsupported) == 60);
        CHECK(offsetof(codecell_jail_options, keep_open) == 64);
        CHECK(offsetof(codecell_jail_options, reserved) == 72);
        CHECK(sizeof(codecell_jail_result) == 88);
        CHECK(offsetof(codecell_jail_result, data) == 16);
        CHECK(offsetof(codecell_jail_result, memory_peak_bytes) == 48);
        CHECK(CODECELL_JAIL_CRASHED == 5 && CODECELL_JAIL_UNSUPPORTED == 6);
        CHECK_STR(codecell_jail_outcome_name(CODECELL_JAIL_FILESYSTEM), "filesystem");
        CHECK_STR(codecell_jail_outcome_name((codecell_jail_outcome)99), "unknown");
}

int main(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        /* No process of a jail may outlive its run: each test ends with none left. */
        test_layouts();
        test_value();
        test_not_dumpable_for_root();
        test_raised();
        test_timeouts();
        test_memory();
        test_filesystem();
        test_nothing_to_trip_on_in_fs_allow();
        test_only_the_function_answers();
        test_network();
        test_fork_bomb();
        test_threads();
        test_fds();
        test_other_outcomes();
        test_bad_options();
        test_idmapped_fs_allow();
        test_idmap_refused();
        test_raise_without_a_cgroup();
        test_nested();
        test_keep_open();
        test_keep_open_kinds();
        test_shared_mappings();
        test_collected_after_a_fork();
        CHECK(no_children_within(60));
        CHECK_DONE();
}
