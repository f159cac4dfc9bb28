#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "util.h"

/* The path of this process's cgroup in the hierarchy that has `controller` ("" for v2), from
 * /proc/self/cgroup lines "id:controllers:path". */
static int own_cgroup_path(const char *controller, char *buf, size_t size)
{
        char text[4096];
        if (read_file("/proc/self/cgroup", text, sizeof(text)) < 0)
                return -ENOENT;
        /* strtok_r: strtok's place is shared by every thread of the engine. */
        char *lines = NULL;
        for (char *line = strtok_r(text, "\n", &lines); line; line = strtok_r(NULL, "\n", &lines)) {
                char *c1 = strchr(line, ':');
                char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (!c2)
                        continue;
                *c2 = '\0';
                const char *ctrls = c1 + 1;
                bool match = false;
                if (!*controller) {
                        match = (*ctrls == '\0' && strncmp(line, "0", 1) == 0);
                } else {
                        for (char *save = NULL, *tok = strtok_r((char *)ctrls, ",", &save); tok;
                             tok = strtok_r(NULL, ",", &save))
                                if (strcmp(tok, controller) == 0)
                                        match = true;
                }
                if (match) {
                        snprintf(buf, size, "%s", strcmp(c2 + 1, "/") == 0 ? "" : c2 + 1);
                        return 0;
                }
        }
        return -ENOENT;
}

/* The mount point of a cgroup hierarchy from /proc/self/mountinfo: fstype "cgroup2", or
 * "cgroup" with `controller` among its super options. */
static int hierarchy_mount(const char *controller, char *buf, size_t size)
{
        FILE *f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return -errno;
        char line[4096];
        int r = -ENOENT;
        while (fgets(line, sizeof(line), f)) {
                char mnt[PATH_MAX], fstype[64], opts[1024];
                char *sep = strstr(line, " - ");
                if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
                    sscanf(sep + 3, "%63s %*s %1023s", fstype, opts) != 2)
                        continue;
                bool match = false;
                if (!*controller) {
                        match = strcmp(fstype, "cgroup2") == 0;
                } else if (strcmp(fstype, "cgroup") == 0) {
                        for (char *save = NULL, *tok = strtok_r(opts, ",", &save); tok;
                             tok = strtok_r(NULL, ",", &save))
                                if (strcmp(tok, controller) == 0)
                                        match = true;
                }
                if (match) {
                        snprintf(buf, size, "%s", mnt);
                        r = 0;
                        break;
                }
        }
        fclose(f);
        return r;
}

bool cgroup_has_word(const char *text, const char *word)
{
        size_t n = strlen(word);
        for (const char *p = text; (p = strstr(p, word)); p += n)
                if ((p == text || p[-1] == ' ' || p[-1] == '\n') &&
                    (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
                        return true;
        return false;
}

/* v2: usable when our own cgroup delegates memory and pids to its children (the root cgroup,
 * or an engine back in its leaf of a delegated subtree) and we may create a child there; or
 * when it was delegated to us but holds us, and we move into a leaf of our own
 * (cgroup_delegate.c). We never move the engine out of a cgroup that is not ours to manage. */
static int find_v2(struct cgroup_place *ret, char *why, size_t why_size)
{
        char mnt[PATH_MAX / 2], own[PATH_MAX / 2];
        if (hierarchy_mount("", mnt, sizeof(mnt)) < 0 ||
            own_cgroup_path("", own, sizeof(own)) < 0) {
                snprintf(why, why_size, "no cgroup v2 hierarchy");
                return -ENOENT;
        }
        snprintf(ret->memory_parent, sizeof(ret->memory_parent), "%s%s", mnt, own);
        snprintf(ret->engine_dir, sizeof(ret->engine_dir), "%s", ret->memory_parent);
        const char *leaf = strrchr(own, '/');
        if (leaf && strcmp(leaf + 1, CGROUP_ENGINE_LEAF) == 0) {
                /* Already in its leaf (an earlier cell of this engine moved it): beside it. */
                ret->memory_parent[strlen(ret->memory_parent) - strlen(leaf)] = '\0';
        } else if (!cgroup_v2_delegates(ret->memory_parent)) {
                int r = cgroup_v2_take_delegated(ret->memory_parent, why, why_size);
                if (r < 0)
                        return r;
                snprintf(ret->engine_dir, sizeof(ret->engine_dir), "%s/%s", ret->memory_parent,
                         CGROUP_ENGINE_LEAF);
        }
        if (!cgroup_v2_delegates(ret->memory_parent)) {
                snprintf(why, why_size, "cgroup v2 at %s does not delegate memory and pids",
                         ret->memory_parent);
                return -ENOTSUP;
        }
        if (access(ret->memory_parent, W_OK) < 0) {
                snprintf(why, why_size, "cgroup v2 at %s is not writable", ret->memory_parent);
                return -EACCES;
        }
        snprintf(ret->pids_parent, sizeof(ret->pids_parent), "%s", ret->memory_parent);
        ret->backend = &cgroup_v2_backend;
        return 0;
}

static int find_v1(struct cgroup_place *ret, char *why, size_t why_size)
{
        const char *controllers[2] = {"memory", "pids"};
        char *parents[2] = {ret->memory_parent, ret->pids_parent};
        for (int i = 0; i < 2; i++) {
                char mnt[PATH_MAX / 2], own[PATH_MAX / 2];
                if (hierarchy_mount(controllers[i], mnt, sizeof(mnt)) < 0 ||
                    own_cgroup_path(controllers[i], own, sizeof(own)) < 0) {
                        snprintf(why, why_size, "no cgroup v1 %s hierarchy", controllers[i]);
                        return -ENOENT;
                }
                snprintf(parents[i], PATH_MAX, "%s%s", mnt, own);
                if (access(parents[i], W_OK) < 0) {
                        snprintf(why, why_size,
                                 "cgroup v1 %s at %s is not writable (run as root "
                                 "or delegate it)",
                                 controllers[i], parents[i]);
                        return -EACCES;
                }
        }
        /* cpuacct, for the CPU time of a sandbox's every process (cpu_time.h): optional. */
        char mnt[PATH_MAX / 2], own[PATH_MAX / 2];
        if (hierarchy_mount("cpuacct", mnt, sizeof(mnt)) == 0 &&
            own_cgroup_path("cpuacct", own, sizeof(own)) == 0) {
                snprintf(ret->cpu_parent, sizeof(ret->cpu_parent), "%s%s", mnt, own);
                if (access(ret->cpu_parent, W_OK) < 0)
                        ret->cpu_parent[0] = '\0';
        }
        ret->backend = &cgroup_v1_backend;
        return 0;
}

int cgroup_place_find(struct cgroup_place *ret, codecell_error *err)
{
        char why_v2[PATH_MAX + 128], why_v1[PATH_MAX + 128];
        memset(ret, 0, sizeof(*ret));
        if (find_v2(ret, why_v2, sizeof(why_v2)) == 0)
                return 0;
        memset(ret, 0, sizeof(*ret));
        if (find_v1(ret, why_v1, sizeof(why_v1)) == 0)
                return 0;
        memset(ret, 0, sizeof(*ret));
        return err_set(err, CODECELL_ERR_UNSUPPORTED, ENOTSUP, "%s; %s", why_v2, why_v1);
}

/* An engine killed with SIGKILL cannot remove its cgroups; its sandboxes died with it (their
 * parent-death signal), leaving empty directories named after its pid. The next engine to
 * start removes those whose engine is gone. */
static void sweep_dir(const char *parent)
{
        DIR *d = opendir(parent);
        if (!d)
                return;
        struct dirent *e;
        while ((e = readdir(d))) {
                int pid = 0;
                unsigned n = 0;
                if (sscanf(e->d_name, "codecell-%d-%u", &pid, &n) != 2 || pid <= 0 ||
                    pid == getpid())
                        continue;
                if (kill(pid, 0) == 0 || errno != ESRCH)
                        continue; /* its engine is alive (or not ours to judge) */
                char path[PATH_MAX + 256];
                snprintf(path, sizeof(path), "%s/%s", parent, e->d_name);
                (void)rmdir(path); /* fails harmlessly if something still lives there */
        }
        closedir(d);
}

void cgroup_sweep_stale(const struct cgroup_place *place)
{
        sweep_dir(place->memory_parent);
        if (strcmp(place->pids_parent, place->memory_parent) != 0)
                sweep_dir(place->pids_parent);
        if (place->cpu_parent[0])
                sweep_dir(place->cpu_parent);
}

void cgroup_unique_name(char *buf, size_t size)
{
        static atomic_uint counter;
        snprintf(buf, size, "codecell-%d-%u", (int)getpid(), atomic_fetch_add(&counter, 1));
}

void cgroup_place_warm(const struct cgroup_place *place)
{
        char path[PATH_MAX + 32], value[16];
        snprintf(path, sizeof(path), "%s/cgroup.procs",
                 place->engine_dir[0] ? place->engine_dir : place->memory_parent);
        snprintf(value, sizeof(value), "%d", (int)getpid());
        (void)write_file(path, value);
}

void cgroup_rmdir(const char *dir)
{
        for (int i = 0; i < 200; i++) {
                if (rmdir(dir) == 0 || errno == ENOENT)
                        return;
                if (errno != EBUSY)
                        return;
                nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
        }
}

uint64_t cgroup_read_key(const char *path, const char *key)
{
        char text[4096];
        if (read_file(path, text, sizeof(text)) < 0)
                return 0;
        size_t n = strlen(key);
        for (char *line = text; line && *line;
             line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
                if (strncmp(line, key, n) == 0 && line[n] == ' ')
                        return strtoull(line + n + 1, NULL, 10);
        return 0;
}
