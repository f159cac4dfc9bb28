/* The jail's cgroups made ahead (src/lib/jail/jail_cgroup_stock.c), against the real kernel: a
 * spare appears once a jail ran, the next jail with the same limits takes it, and nothing of one
 * jail is counted in the next; a jail with other limits still gets its own; a spare no jail took
 * goes at exit. Needs a cgroup this process may make children in (root on a v1 host, or a
 * delegated v2 subtree); skips otherwise. */
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "codecell.h"
#include "jail_run.h"

#define SKIP 77

/* Where this process's jails make their cgroups: its own cgroup, in the memory hierarchy (v1)
 * or the unified one (v2), as the engine chooses (cgroup.c). Up to 4 candidates. */
static int places(char out[][PATH_MAX], int max)
{
        FILE *f = fopen("/proc/self/cgroup", "r");
        if (!f)
                return 0;
        char line[PATH_MAX];
        int n = 0;
        while (n + 2 <= max && fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = '\0';
                char *ctrl = strchr(line, ':');
                char *path = ctrl ? strchr(ctrl + 1, ':') : NULL;
                if (!path)
                        continue;
                *path++ = '\0';
                ctrl++;
                if (strcmp(ctrl, "memory") == 0 || strstr(ctrl, "memory,") ||
                    strstr(ctrl, ",memory"))
                        snprintf(out[n++], PATH_MAX, "/sys/fs/cgroup/memory%s", path);
                else if (ctrl[0] == '\0') {
                        snprintf(out[n++], PATH_MAX, "/sys/fs/cgroup%s", path);
                        snprintf(out[n++], PATH_MAX, "/sys/fs/cgroup/unified%s", path);
                }
        }
        fclose(f);
        return n;
}

/* The cgroups of pid's jails now (codecell-<pid>-<n>), their names joined by spaces. */
static int cgroups_of(int pid, char *names, size_t size)
{
        char dirs[4][PATH_MAX], prefix[32];
        int n = places(dirs, 4), count = 0;
        snprintf(prefix, sizeof(prefix), "codecell-%d-", pid);
        names[0] = '\0';
        for (int i = 0; i < n; i++) {
                DIR *d = opendir(dirs[i]);
                struct dirent *e;
                while (d && (e = readdir(d)))
                        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
                                count++;
                                size_t used = strlen(names);
                                snprintf(names + used, size - used, "%s ", e->d_name);
                        }
                if (d)
                        closedir(d);
        }
        return count;
}

/* Polls (a loaded machine: generously) until pid's jails have exactly `want` cgroups, and not
 * just the one named avoid (one that is on its way out). */
static bool cgroups_become(int pid, int want, const char *avoid, char *names, size_t size)
{
        for (int i = 0; i < 6000; i++) {
                if (cgroups_of(pid, names, size) == want && (!avoid || strcmp(names, avoid) != 0))
                        return true;
                nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
        }
        return false;
}

/* Touches arg MiB, then answers. */
static void touch_fn(codecell_jail *jail, void *arg)
{
        size_t len = (size_t)(uintptr_t)arg << 20;
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED)
                memset(p, 1, len);
        codecell_jail_answer(jail, CODECELL_JAIL_VALUE, "ok", 2);
}

/* The cgroup (its last path component) of the jailed process, found from outside while the
 * jail's function waits: the grandchild of this process whose memory (v1) or unified (v2)
 * cgroup is a jail's. It is then killed, which ends the function. */
static char watched[128];

static bool jail_cgroup_of(int pid, char *name, size_t size)
{
        char path[64], line[PATH_MAX];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
        FILE *f = fopen(path, "r");
        bool found = false;
        while (f && !found && fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = '\0';
                char *ctrl = strchr(line, ':');
                char *cg = ctrl ? strchr(ctrl + 1, ':') : NULL;
                if (!cg || !(strstr(ctrl, "memory") || ctrl[1] == ':'))
                        continue;
                const char *leaf = strrchr(cg, '/');
                if (leaf && strncmp(leaf + 1, "codecell-", 9) == 0) {
                        snprintf(name, size, "%s", leaf + 1);
                        found = true;
                }
        }
        if (f)
                fclose(f);
        return found;
}

static int parent_of(int pid)
{
        char path[64], stat[512];
        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f)
                return -1;
        size_t n = fread(stat, 1, sizeof(stat) - 1, f);
        fclose(f);
        stat[n] = '\0';
        char *end = strrchr(stat, ')');
        int ppid = -1;
        return end && sscanf(end + 2, "%*c %d", &ppid) == 1 ? ppid : -1;
}

static void *watch(void *arg)
{
        (void)arg;
        for (int i = 0; i < 6000; i++) {
                DIR *d = opendir("/proc");
                struct dirent *e;
                while (d && (e = readdir(d))) {
                        int pid = atoi(e->d_name);
                        if (pid <= 0 || parent_of(pid) <= 0 ||
                            parent_of(parent_of(pid)) != getpid())
                                continue;
                        if (jail_cgroup_of(pid, watched, sizeof(watched))) {
                                kill(pid, SIGKILL);
                                closedir(d);
                                return NULL;
                        }
                }
                if (d)
                        closedir(d);
                nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
        }
        return NULL;
}

static void wait_fn(codecell_jail *jail, void *arg)
{
        (void)jail;
        (void)arg;
        for (;;)
                pause();
}

/* Runs a jail whose function waits to be killed by the watcher; its cgroup's name into
 * watched (empty when none was seen); returns the result. */
static codecell_jail_result run_watched(const codecell_jail_options *o)
{
        watched[0] = '\0';
        pthread_t t;
        CHECK(pthread_create(&t, NULL, watch, NULL) == 0);
        codecell_jail_result r = run(o, wait_fn, NULL);
        pthread_join(t, NULL);
        return r;
}

int main(void)
{
        codecell_jail_options o = {.memory_bytes = 256u << 20,
                                   .on_unsupported = CODECELL_POLICY_IGNORE};
        codecell_jail_result r = run(&o, touch_fn, (void *)(uintptr_t)64);
        if (r.memory_peak_bytes < 0) {
                printf("skip: the jail has no cgroup here (not root, no delegated subtree)\n");
                return SKIP;
        }
        /* The first jail had none to take; it counted its 64 MiB. */
        CHECK(r.outcome == CODECELL_JAIL_VALUE);
        CHECK(r.memory_peak_bytes >= (64 << 20));
        codecell_jail_result_clear(&r);

        /* The next one's cgroup: fresh too (nothing of the 64 MiB), seen from outside. */
        r = run_watched(&o);
        CHECK(r.outcome == CODECELL_JAIL_CRASHED && r.signal == SIGKILL);
        CHECK(r.memory_peak_bytes >= 0 && r.memory_peak_bytes < (32 << 20));
        codecell_jail_result_clear(&r);
        char used[128], spare[512], now[512];
        snprintf(used, sizeof(used), "%s ", watched);
        CHECK(watched[0] != '\0');

        /* Its cgroup is removed behind it and a spare made: one left, not the one it used. */
        CHECK(cgroups_become(getpid(), 1, used, spare, sizeof(spare)));

        /* The next jail with the same limits runs in that spare, which was never used: nothing
         * of any jail before it is counted there. Another spare is made behind it. */
        r = run_watched(&o);
        CHECK(r.outcome == CODECELL_JAIL_CRASHED);
        CHECK(r.memory_peak_bytes >= 0 && r.memory_peak_bytes < (32 << 20));
        codecell_jail_result_clear(&r);
        snprintf(used, sizeof(used), "%s ", watched);
        CHECK_STR(used, spare);
        CHECK(cgroups_become(getpid(), 1, used, now, sizeof(now)));

        /* Other limits: the spare (made for 256 MiB) is not handed out; the jail's own 32 MiB
         * hold. */
        codecell_jail_options small = {.memory_bytes = 32u << 20,
                                       .on_unsupported = CODECELL_POLICY_IGNORE};
        r = run(&small, touch_fn, (void *)(uintptr_t)64);
        CHECK(r.outcome == CODECELL_JAIL_MEMORY);
        codecell_jail_result_clear(&r);
        r = run(&o, touch_fn, (void *)(uintptr_t)64);
        CHECK(r.outcome == CODECELL_JAIL_VALUE);
        codecell_jail_result_clear(&r);

        /* A process that ran a jail and exits leaves no spare behind. */
        pid_t child = fork();
        if (child == 0) {
                /* Once its jail's own cgroup is gone and only the spare is left. */
                codecell_jail_result c = run_watched(&o);
                snprintf(used, sizeof(used), "%s ", watched);
                bool ok = c.outcome == CODECELL_JAIL_CRASHED && watched[0] &&
                          cgroups_become(getpid(), 1, used, now, sizeof(now));
                codecell_jail_result_clear(&c);
                exit(ok && check_failures == 0 ? 0 : 1);
        }
        int status = 0;
        CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);
        CHECK(cgroups_become(child, 0, NULL, now, sizeof(now)));
        CHECK_DONE();
}
