/* A delegated cgroup v2 subtree whose top holds the engine (a systemd unit with Delegate=yes,
 * `systemd-run --scope -p Delegate=yes`): cgroup v2 lets a cgroup hand controllers to its
 * children only while it holds no process itself, so the engine moves into a leaf of its own,
 * `<top>/engine`, enables memory and pids for the top's children, and makes the sandboxes'
 * cgroups beside that leaf. Done only where the subtree was delegated to us: a cgroup that is
 * not ours to manage (a login session's scope, a unit without Delegate=) is left alone. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cgroup.h"
#include "util.h"

/* systemd marks the cgroup of a unit it delegates with the xattr trusted.delegate=1 (v251 and
 * later; only a privileged process can read trusted.*) and user.delegate=1 (v252 and later,
 * for everyone). A non-root owner of the directory and of its cgroup.procs, for a system
 * manager's unit with User= or DynamicUser=, is the delegation of cgroup v2's own model. */
static bool delegated(const char *dir)
{
        const char *names[] = {"trusted.delegate", "user.delegate"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                char value[8] = "";
                ssize_t n = getxattr(dir, names[i], value, sizeof(value) - 1);
                if (n > 0 && strncmp(value, "1", (size_t)n) == 0)
                        return true;
        }
        char procs[PATH_MAX + 16];
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
        struct stat d, p;
        uid_t me = geteuid();
        return me != 0 && stat(dir, &d) == 0 && stat(procs, &p) == 0 && d.st_uid == me &&
               p.st_uid == me;
}

bool cgroup_v2_delegates(const char *dir)
{
        char path[PATH_MAX + 32], text[512];
        snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
        return read_file(path, text, sizeof(text)) >= 0 && cgroup_has_word(text, "memory") &&
               cgroup_has_word(text, "pids");
}

int cgroup_v2_take_delegated(const char *top, char *why, size_t why_size)
{
        static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        char path[PATH_MAX + 32], text[512], pid[16];
        snprintf(path, sizeof(path), "%s/cgroup.controllers", top);
        if (read_file(path, text, sizeof(text)) < 0 || !cgroup_has_word(text, "memory") ||
            !cgroup_has_word(text, "pids")) {
                snprintf(why, why_size,
                         "cgroup v2 at %s is not given memory and pids by its parent", top);
                return -ENOTSUP;
        }
        bool cpu = cgroup_has_word(text, "cpu");
        if (!delegated(top)) {
                snprintf(why, why_size,
                         "cgroup v2 at %s does not delegate memory and pids, and was not "
                         "delegated to codecell",
                         top);
                return -ENOTSUP;
        }
        /* Once per process at a time: cells made by two threads take the same leaf. */
        pthread_mutex_lock(&lock);
        int r = 0;
        const char *step = "";
        snprintf(path, sizeof(path), "%s/%s", top, CGROUP_ENGINE_LEAF);
        if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                r = -errno;
                step = "make the engine's leaf";
                goto out;
        }
        /* The whole process, every thread with it (cgroup.procs moves a thread group). */
        snprintf(path, sizeof(path), "%s/%s/cgroup.procs", top, CGROUP_ENGINE_LEAF);
        snprintf(pid, sizeof(pid), "%d", (int)getpid());
        if ((r = write_file(path, pid)) < 0) {
                step = "move the engine into its leaf";
                goto out;
        }
        snprintf(path, sizeof(path), "%s/cgroup.subtree_control", top);
        if ((r = write_file(path, "+memory +pids")) < 0) {
                /* EBUSY: another process is still in the top cgroup itself. */
                step = r == -EBUSY ? "enable memory and pids (another process is in it)"
                                   : "enable memory and pids";
                goto out;
        }
        if (cpu)
                (void)write_file(path, "+cpu"); /* CPU time is counted without it too */
out:
        pthread_mutex_unlock(&lock);
        if (r < 0)
                snprintf(why, why_size, "cgroup v2 at %s is delegated, but could not %s: %s", top,
                         step, strerror(-r));
        return r;
}
