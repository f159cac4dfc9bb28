/* The jail's cgroup: memory and pids (and CPU accounting where the host counts it), made in
 * the parent before the fork, with the same backends as a sandbox's (cgroup.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "jail.h"
#include "util.h"

static pthread_once_t place_once = PTHREAD_ONCE_INIT;
static struct cgroup_place place;
static codecell_error place_error;
static int place_found = -1;

static void find_place(void)
{
        place_found = cgroup_place_find(&place, &place_error);
        if (place_found == 0)
                cgroup_sweep_stale(&place);
}

int jail_cgroup_create(struct codecell_jail *j, codecell_error *err)
{
        pthread_once(&place_once, find_place);
        if (place_found < 0) {
                if (err)
                        *err = place_error;
                return place_found;
        }
        struct cgroup_limits limits = {.memory_bytes = j->options.memory_bytes,
                                       .pids = j->options.pids,
                                       .cpu_accounting = true};
        if (jail_cgroup_stock_take(&place, &limits, &j->cgroup)) {
                j->has_cgroup = true;
                return 0;
        }
        char name[64];
        cgroup_unique_name(name, sizeof(name));
        int r = place.backend->create(&place, name, &limits, &j->cgroup, err);
        if (r == 0)
                j->has_cgroup = true;
        return r;
}

int jail_cgroup_attach(const struct codecell_jail *j, pid_t pid, codecell_error *err)
{
        if (!j->has_cgroup)
                return 0;
        if (j->cgroup.backend != &cgroup_v1_backend)
                return j->cgroup.backend->attach(&j->cgroup, pid, err);
        /* v1: the keeper has one thread, so moving that thread ("tasks") moves the process;
         * unlike a write to cgroup.procs it does not take the lock of every thread group,
         * whose RCU grace period (10-20 ms) would be most of a jail's cost. */
        char path[PATH_MAX + 32], value[16];
        snprintf(value, sizeof(value), "%d", (int)pid);
        const char *dirs[3] = {j->cgroup.memory_dir, j->cgroup.pids_dir, j->cgroup.cpu_dir};
        for (int i = 0; i < 3 && dirs[i][0]; i++) {
                snprintf(path, sizeof(path), "%s/tasks", dirs[i]);
                int r = write_file(path, value);
                if (r < 0)
                        return err_sys(err, -r, "cgroup v1: %s", path);
        }
        return 0;
}
