/* The cgroup v2 backend against a fake cgroupfs tree: this host's memory and pids controllers
 * are on v1, so v2 cannot run for real here. The fake checks what the backend writes and how
 * it reads the kernel's counters; the v1 backend is exercised for real by the end-to-end
 * tests when they run as root. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "check.h"
#include "fake_cgroupfs.h"
#include "util.h"

int main(void)
{
        char root[] = "/tmp/codecell-fake-cgroup-XXXXXX";
        CHECK(mkdtemp(root) != NULL);
        struct cgroup_place place = {.backend = &cgroup_v2_backend};
        snprintf(place.memory_parent, sizeof(place.memory_parent), "%s", root);
        snprintf(place.pids_parent, sizeof(place.pids_parent), "%s", root);

        struct cgroup cg;
        codecell_error err = {0};
        struct cgroup_limits lim = {.memory_bytes = 128 << 20, .pids = 32};
        CHECK(cgroup_v2_backend.create(&place, "sandbox-1", &lim, &cg, &err) == 0);
        CHECK(cg.backend == &cgroup_v2_backend);
        expect(cg.memory_dir, "memory.max", "134217728");
        expect(cg.memory_dir, "memory.swap.max", "0");
        expect(cg.memory_dir, "pids.max", "32");
        CHECK(cgroup_v2_backend.attach(&cg, 4242, &err) == 0);
        expect(cg.memory_dir, "cgroup.procs", "4242");
        /* Who is in it, from cgroup.procs (one pid a line): what a zygote said was born there
         * is checked this way. */
        put(cg.memory_dir, "cgroup.procs", "17\n4242\n1234\n");
        CHECK(cgroup_v2_backend.holds(&cg, 4242));
        CHECK(cgroup_v2_backend.holds(&cg, 1234));
        CHECK(!cgroup_v2_backend.holds(&cg, 424));
        CHECK(!cgroup_v2_backend.holds(&cg, 99));
        CHECK(cgroup_v1_backend.holds == NULL);

        /* The kernel's counters after an OOM kill. */
        put(cg.memory_dir, "memory.events",
            "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n");
        put(cg.memory_dir, "memory.peak", "134213632\n");
        struct cgroup_stats st = {0};
        cgroup_v2_backend.stats(&cg, &st);
        CHECK(st.oom_kills == 1);
        CHECK(st.memory_failures == 7);
        CHECK(st.memory_peak_bytes == 134213632);

        /* A second create with the same name fails with a message naming the directory. */
        struct cgroup again;
        CHECK(cgroup_v2_backend.create(&place, "sandbox-1", &lim, &again, &err) < 0);
        CHECK(strstr(err.message, "sandbox-1") != NULL);

        /* destroy removes the directory once the kernel's files are gone (a real cgroupfs
         * removes them itself; here the test does). */
        const char *files[] = {"memory.max",   "memory.swap.max", "pids.max",
                               "cgroup.procs", "memory.events",   "memory.peak"};
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/%s", cg.memory_dir, files[i]);
                unlink(path);
        }
        cgroup_v2_backend.destroy(&cg);
        struct stat sb;
        CHECK(stat(cg.memory_dir, &sb) < 0);
        CHECK(rmdir(root) == 0);
        CHECK_DONE();
}
