/* Taking a delegated cgroup v2 subtree (cgroup_delegate.c) against a fake cgroupfs tree: the
 * engine moves into its leaf and enables memory and pids only where the cgroup was delegated to
 * it (systemd's delegate xattr, or a non-root owner), and leaves every other cgroup untouched.
 * The real thing runs in the systemd VM lane (scripts/vm/systemd-guest.sh). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cgroup.h"
#include "check.h"
#include "fake_cgroupfs.h"
#include "util.h"

static bool exists(const char *dir, const char *file)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        return access(path, F_OK) == 0;
}

/* A fake service cgroup: its parent gives it controllers, it holds a process, it hands nothing
 * to children yet. */
static void make_top(char *dir, const char *controllers)
{
        snprintf(dir, PATH_MAX, "/tmp/codecell-fake-delegate-XXXXXX");
        CHECK(mkdtemp(dir) != NULL);
        put(dir, "cgroup.controllers", controllers);
        put(dir, "cgroup.procs", "1\n");
        put(dir, "cgroup.subtree_control", "");
}

static void remove_top(const char *dir)
{
        const char *files[] = {"engine/cgroup.procs", "cgroup.controllers", "cgroup.procs",
                               "cgroup.subtree_control"};
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
                unlink(path);
        }
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/engine", dir);
        rmdir(path);
        CHECK(rmdir(dir) == 0);
}

int main(void)
{
        char top[PATH_MAX], why[PATH_MAX + 128], pid[16];
        snprintf(pid, sizeof(pid), "%d", (int)getpid());

        /* Not delegated (a login session's scope, a unit without Delegate=): untouched. */
        make_top(top, "cpu memory pids");
        CHECK(cgroup_v2_take_delegated(top, why, sizeof(why)) == -ENOTSUP);
        CHECK(strstr(why, "was not delegated to codecell") != NULL);
        CHECK(!exists(top, "engine"));
        expect(top, "cgroup.subtree_control", "");

        /* systemd's mark of a delegated unit (trusted.* needs root to set, as systemd is). */
        if (geteuid() == 0 && setxattr(top, "trusted.delegate", "1", 1, 0) == 0) {
                CHECK(!cgroup_v2_delegates(top));
                CHECK(cgroup_v2_take_delegated(top, why, sizeof(why)) == 0);
                char leaf[PATH_MAX + 16];
                snprintf(leaf, sizeof(leaf), "%s/engine", top);
                expect(leaf, "cgroup.procs", pid);
                /* memory and pids first, cpu apart: the fake file keeps the last write. */
                expect(top, "cgroup.subtree_control", "+cpu");
                /* Again (a second cell): the same leaf, no error. */
                CHECK(cgroup_v2_take_delegated(top, why, sizeof(why)) == 0);
        } else {
                printf("skipped the trusted.delegate case: cannot set trusted.* xattrs here\n");
        }
        remove_top(top);

        /* user.delegate (systemd 252 also writes it, readable by everyone); no cpu offered. */
        make_top(top, "memory pids");
        if (setxattr(top, "user.delegate", "1", 1, 0) == 0) {
                CHECK(cgroup_v2_take_delegated(top, why, sizeof(why)) == 0);
                expect(top, "cgroup.subtree_control", "+memory +pids");
        } else {
                printf("skipped the user.delegate case: %s\n", strerror(errno));
        }
        remove_top(top);

        /* Delegated, but its parent gives it no pids controller: nothing to take. */
        make_top(top, "cpu memory");
        if (setxattr(top, "user.delegate", "1", 1, 0) == 0) {
                CHECK(cgroup_v2_take_delegated(top, why, sizeof(why)) == -ENOTSUP);
                CHECK(strstr(why, "not given memory and pids") != NULL);
                CHECK(!exists(top, "engine"));
        }
        remove_top(top);

        /* A non-root owner of the directory and its cgroup.procs (User=, DynamicUser=). */
        if (geteuid() == 0) {
                make_top(top, "memory pids");
                char procs[PATH_MAX + 16], sub[PATH_MAX + 32];
                snprintf(procs, sizeof(procs), "%s/cgroup.procs", top);
                snprintf(sub, sizeof(sub), "%s/cgroup.subtree_control", top);
                CHECK(chown(top, 65534, 65534) == 0 && chown(procs, 65534, 65534) == 0 &&
                      chown(sub, 65534, 65534) == 0);
                pid_t child = fork();
                if (child == 0) {
                        if (setresgid(65534, 65534, 65534) < 0 ||
                            setresuid(65534, 65534, 65534) < 0)
                                _exit(2);
                        _exit(cgroup_v2_take_delegated(top, why, sizeof(why)) == 0 ? 0 : 1);
                }
                int status;
                CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
                      WEXITSTATUS(status) == 0);
                expect(top, "cgroup.subtree_control", "+memory +pids");
                /* Owned by root, taken by that user: not its own, refused (for that reason:
                 * the user can still read the tree). */
                CHECK(chown(top, 0, 0) == 0 && chmod(top, 0755) == 0);
                put(top, "cgroup.subtree_control", "");
                child = fork();
                if (child == 0) {
                        if (setresgid(65534, 65534, 65534) < 0 ||
                            setresuid(65534, 65534, 65534) < 0)
                                _exit(2);
                        _exit(cgroup_v2_take_delegated(top, why, sizeof(why)) == -ENOTSUP &&
                                              strstr(why, "was not delegated") != NULL
                                      ? 0
                                      : 1);
                }
                CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
                      WEXITSTATUS(status) == 0);
                expect(top, "cgroup.subtree_control", "");
                remove_top(top);
        }
        CHECK_DONE();
}
