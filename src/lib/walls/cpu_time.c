#include "cpu_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "proc_stat.h"
#include "util.h"

/* A sandbox holds at most its pids limit of processes; the walk stops here whatever happens. */
#define MAX_PROCESSES 1024

double process_cpu_ms(clockid_t clock)
{
        struct timespec ts;
        if (clock_gettime(clock, &ts) < 0)
                return 0;
        return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

bool cpu_meter_init(struct cpu_meter *m, pid_t init, pid_t guest, bool whole_tree,
                    const struct cgroup *cg)
{
        *m = (struct cpu_meter){.init = init, .guest = guest, .whole_tree = whole_tree, .cg = cg};
        return guest > 0 && clock_getcpuclockid(guest, &m->clock) == 0;
}

/* utime, stime, cutime, cstime (fields 14-17) of /proc/PID/stat, in clock ticks; false when
 * gone. */
static bool stat_times(pid_t pid, unsigned long long t[4])
{
        char path[64], text[1024];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        if (read_file(path, text, sizeof(text)) <= 0)
                return false;
        unsigned long long f[18] = {0};
        if (!proc_stat_fields(text, f, 17))
                return false;
        memcpy(t, &f[14], 4 * sizeof(t[0]));
        return true;
}

double cpu_meter_read(const struct cpu_meter *m)
{
        if (m->whole_tree && m->cg) {
                double ms = m->cg->backend->cpu_ms(m->cg);
                if (ms >= 0)
                        return ms;
        }
        double guest_ms = process_cpu_ms(m->clock);
        if (!m->whole_tree)
                return guest_ms;
        long ticks_per_s = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
        pid_t list[MAX_PROCESSES];
        size_t n = 0;
        list[n++] = m->init;
        /* A forked sandbox's interpreter is its zygote's child, not init's: listed once,
         * whoever its parent. */
        if (m->guest > 0 && m->guest != m->init)
                list[n++] = m->guest;
        unsigned long long ticks = 0;
        for (size_t i = 0; i < n; i++) {
                unsigned long long t[4];
                if (stat_times(list[i], t)) {
                        /* The interpreter's own time comes from its clock, exactly. */
                        ticks += (list[i] == m->guest ? 0 : t[0] + t[1]) + t[2] + t[3];
                }
                size_t before = n;
                n = proc_children(list[i], list, n, MAX_PROCESSES);
                for (size_t j = before; j < n; j++)
                        if (list[j] == m->guest)
                                list[j--] = list[--n];
        }
        return guest_ms + (double)ticks * 1000.0 / (double)ticks_per_s;
}
