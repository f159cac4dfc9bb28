/* cgroup v1: memory and pids are separate hierarchies, so a sandbox gets one directory in
 * each. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "error.h"
#include "util.h"

static int v1_create(const struct cgroup_place *place, const char *name,
                     const struct cgroup_limits *limits, struct cgroup *ret, codecell_error *err)
{
        char path[PATH_MAX + 64], value[32];
        ret->backend = &cgroup_v1_backend;
        snprintf(ret->memory_dir, sizeof(ret->memory_dir), "%s/%s", place->memory_parent, name);
        snprintf(ret->pids_dir, sizeof(ret->pids_dir), "%s/%s", place->pids_parent, name);
        if (mkdir(ret->memory_dir, 0755) < 0)
                return err_sys(err, errno, "cgroup v1: mkdir %s", ret->memory_dir);
        if (mkdir(ret->pids_dir, 0755) < 0) {
                int e = errno;
                cgroup_rmdir(ret->memory_dir);
                return err_sys(err, e, "cgroup v1: mkdir %s", ret->pids_dir);
        }
        ret->cpu_dir[0] = '\0';
        if (limits->cpu_accounting && place->cpu_parent[0]) {
                snprintf(ret->cpu_dir, sizeof(ret->cpu_dir), "%s/%s", place->cpu_parent, name);
                if (mkdir(ret->cpu_dir, 0755) < 0) {
                        int e = errno;
                        ret->cpu_dir[0] = '\0';
                        cgroup_v1_backend.destroy(ret);
                        return err_sys(err, e, "cgroup v1: mkdir %s/%s", place->cpu_parent, name);
                }
        }
        snprintf(value, sizeof(value), "%" PRIu64, limits->memory_bytes);
        snprintf(path, sizeof(path), "%s/memory.limit_in_bytes", ret->memory_dir);
        int r = write_file(path, value);
        if (r == 0) {
                /* Where swap is accounted, cap memory+swap too so the limit cannot be dodged
                 * by swapping; where it is not, the file is absent and nothing is needed. */
                snprintf(path, sizeof(path), "%s/memory.memsw.limit_in_bytes", ret->memory_dir);
                if (access(path, F_OK) == 0)
                        r = write_file(path, value);
        }
        if (r == 0) {
                snprintf(value, sizeof(value), "%" PRIu64, limits->pids);
                snprintf(path, sizeof(path), "%s/pids.max", ret->pids_dir);
                r = write_file(path, value);
        }
        if (r < 0) {
                cgroup_v1_backend.destroy(ret);
                return err_sys(err, -r, "cgroup v1: %s", path);
        }
        return 0;
}

static int v1_attach(const struct cgroup *cg, pid_t pid, codecell_error *err)
{
        char path[PATH_MAX + 32], value[16];
        snprintf(value, sizeof(value), "%d", (int)pid);
        const char *dirs[3] = {cg->memory_dir, cg->pids_dir, cg->cpu_dir};
        for (int i = 0; i < 3 && dirs[i][0]; i++) {
                snprintf(path, sizeof(path), "%s/cgroup.procs", dirs[i]);
                int r = write_file(path, value);
                if (r < 0)
                        return err_sys(err, -r, "cgroup v1: %s", path);
        }
        return 0;
}

static void v1_stats(const struct cgroup *cg, struct cgroup_stats *ret)
{
        char path[PATH_MAX + 32], text[64];
        snprintf(path, sizeof(path), "%s/memory.oom_control", cg->memory_dir);
        ret->oom_kills = cgroup_read_key(path, "oom_kill");
        snprintf(path, sizeof(path), "%s/memory.failcnt", cg->memory_dir);
        ret->memory_failures =
                read_file(path, text, sizeof(text)) > 0 ? strtoull(text, NULL, 10) : 0;
        snprintf(path, sizeof(path), "%s/memory.max_usage_in_bytes", cg->memory_dir);
        ret->memory_peak_bytes =
                read_file(path, text, sizeof(text)) > 0 ? strtoll(text, NULL, 10) : -1;
}

static double v1_cpu_ms(const struct cgroup *cg)
{
        char path[PATH_MAX + 32], text[64];
        if (!cg->cpu_dir[0])
                return -1;
        snprintf(path, sizeof(path), "%s/cpuacct.usage", cg->cpu_dir);
        if (read_file(path, text, sizeof(text)) <= 0)
                return -1;
        return (double)strtoull(text, NULL, 10) / 1e6; /* nanoseconds */
}

static void v1_destroy(const struct cgroup *cg)
{
        cgroup_rmdir(cg->memory_dir);
        cgroup_rmdir(cg->pids_dir);
        if (cg->cpu_dir[0])
                cgroup_rmdir(cg->cpu_dir);
}

const struct cgroup_backend cgroup_v1_backend = {
        .name = "cgroup_v1",
        .create = v1_create,
        .attach = v1_attach,
        .stats = v1_stats,
        .cpu_ms = v1_cpu_ms,
        .destroy = v1_destroy,
};
