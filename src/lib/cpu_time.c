#include "cpu_time.h"

#include <dirent.h>
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

/* Appends the children of every thread of pid to list (from n), up to max. */
static size_t add_children(pid_t pid, pid_t *list, size_t n, size_t max)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        DIR *tasks = opendir(path);
        if (!tasks)
                return n;
        for (struct dirent *d; n < max && (d = readdir(tasks));) {
                if (d->d_name[0] < '0' || d->d_name[0] > '9')
                        continue;
                char file[96], text[4096];
                snprintf(file, sizeof(file), "/proc/%d/task/%s/children", (int)pid, d->d_name);
                if (read_file(file, text, sizeof(text)) <= 0)
                        continue;
                for (char *save = NULL, *tok = strtok_r(text, " \n", &save); tok && n < max;
                     tok = strtok_r(NULL, " \n", &save))
                        list[n++] = (pid_t)atoi(tok);
        }
        closedir(tasks);
        return n;
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
        static long ticks_per_s;
        if (!ticks_per_s)
                ticks_per_s = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
        pid_t list[MAX_PROCESSES];
        size_t n = 0;
        list[n++] = m->init;
        unsigned long long ticks = 0;
        for (size_t i = 0; i < n; i++) {
                unsigned long long t[4];
                if (stat_times(list[i], t)) {
                        /* The interpreter's own time comes from its clock, exactly. */
                        ticks += (list[i] == m->guest ? 0 : t[0] + t[1]) + t[2] + t[3];
                }
                n = add_children(list[i], list, n, MAX_PROCESSES);
        }
        return guest_ms + (double)ticks * 1000.0 / (double)ticks_per_s;
}
