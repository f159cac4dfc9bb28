/* cgroup v2: one directory holds both controllers. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "error.h"
#include "util.h"

static int v2_create(const struct cgroup_place *place, const char *name,
                     const struct cgroup_limits *limits, struct cgroup *ret, codecell_error *err)
{
        char path[PATH_MAX + 32], value[32];
        ret->backend = &cgroup_v2_backend;
        snprintf(ret->memory_dir, sizeof(ret->memory_dir), "%s/%s", place->memory_parent, name);
        snprintf(ret->pids_dir, sizeof(ret->pids_dir), "%s", ret->memory_dir);
        if (mkdir(ret->memory_dir, 0755) < 0)
                return err_sys(err, errno, "cgroup v2: mkdir %s", ret->memory_dir);
        struct {
                const char *file;
                uint64_t value;
        } settings[] = {
                {"memory.max", limits->memory_bytes},
                /* No swap: the limit is on memory actually used, not on what can be paged out. */
                {"memory.swap.max", 0},
                {"pids.max", limits->pids},
        };
        for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", ret->memory_dir, settings[i].file);
                snprintf(value, sizeof(value), "%" PRIu64, settings[i].value);
                int r = write_file(path, value);
                if (r == -ENOENT && i == 1)
                        continue; /* kernel without swap accounting */
                if (r < 0) {
                        cgroup_rmdir(ret->memory_dir);
                        return err_sys(err, -r, "cgroup v2: %s", path);
                }
        }
        return 0;
}

static int v2_attach(const struct cgroup *cg, pid_t pid, codecell_error *err)
{
        char path[PATH_MAX + 32], value[16];
        snprintf(value, sizeof(value), "%d", (int)pid);
        snprintf(path, sizeof(path), "%s/cgroup.procs", cg->memory_dir);
        int r = write_file(path, value);
        return r < 0 ? err_sys(err, -r, "cgroup v2: %s", path) : 0;
}

static int v2_open_dir(const struct cgroup *cg, codecell_error *err)
{
        int fd = open(cg->memory_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? err_sys(err, errno, "cgroup v2: open %s", cg->memory_dir) : fd;
}

static bool v2_holds(const struct cgroup *cg, pid_t pid)
{
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/cgroup.procs", cg->memory_dir);
        FILE *f = fopen(path, "re");
        if (!f)
                return false;
        long each;
        bool found = false;
        while (!found && fscanf(f, "%ld", &each) == 1)
                found = each == (long)pid;
        fclose(f);
        return found;
}

static void v2_stats(const struct cgroup *cg, struct cgroup_stats *ret)
{
        char path[PATH_MAX + 32], text[64];
        snprintf(path, sizeof(path), "%s/memory.events", cg->memory_dir);
        ret->oom_kills = cgroup_read_key(path, "oom_kill");
        ret->memory_failures = cgroup_read_key(path, "max");
        snprintf(path, sizeof(path), "%s/memory.peak", cg->memory_dir);
        ret->memory_peak_bytes =
                read_file(path, text, sizeof(text)) > 0 ? strtoll(text, NULL, 10) : -1;
}

static double v2_cpu_ms(const struct cgroup *cg)
{
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/cpu.stat", cg->memory_dir);
        if (access(path, R_OK) < 0)
                return -1;
        return (double)cgroup_read_key(path, "usage_usec") / 1e3;
}

static void v2_destroy(const struct cgroup *cg)
{
        cgroup_rmdir(cg->memory_dir);
}

const struct cgroup_backend cgroup_v2_backend = {
        .name = "cgroup_v2",
        .create = v2_create,
        .attach = v2_attach,
        .open_dir = v2_open_dir,
        .holds = v2_holds,
        .stats = v2_stats,
        .cpu_ms = v2_cpu_ms,
        .destroy = v2_destroy,
};
