/* Read from /proc/self when asked: nothing is kept between scrapes. */
#include "process_metrics.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "proc_stat.h"
#include "util.h"
#include "codecell.h"

static long open_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        if (!d)
                return -1;
        long n = 0;
        struct dirent *e;
        while ((e = readdir(d)))
                if (e->d_name[0] != '.')
                        n++;
        closedir(d);
        return n - 1; /* not the one opendir holds */
}

/* The boot time in seconds since the epoch (/proc/stat "btime"), or 0. */
static unsigned long long boot_time(void)
{
        char text[16384];
        if (read_file("/proc/stat", text, sizeof(text)) < 0)
                return 0;
        const char *p = strstr(text, "\nbtime ");
        return p ? strtoull(p + 7, NULL, 10) : 0;
}

void process_metrics_render(FILE *f)
{
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
        fprintf(f,
                "# HELP process_cpu_seconds_total User and system CPU time of codecell serve "
                "(not of its sandboxes).\n"
                "# TYPE process_cpu_seconds_total counter\n"
                "process_cpu_seconds_total %.3f\n",
                cpu);
        long page = sysconf(_SC_PAGESIZE);
        char text[1024];
        unsigned long long vm = 0, rss = 0;
        if (read_file("/proc/self/statm", text, sizeof(text)) >= 0 &&
            sscanf(text, "%llu %llu", &vm, &rss) == 2)
                fprintf(f,
                        "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                        "# TYPE process_resident_memory_bytes gauge\n"
                        "process_resident_memory_bytes %llu\n"
                        "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                        "# TYPE process_virtual_memory_bytes gauge\n"
                        "process_virtual_memory_bytes %llu\n",
                        rss * (unsigned long long)page, vm * (unsigned long long)page);
        struct rlimit nofile;
        long fds = open_fds();
        if (fds >= 0 && getrlimit(RLIMIT_NOFILE, &nofile) == 0)
                fprintf(f,
                        "# HELP process_open_fds Number of open file descriptors.\n"
                        "# TYPE process_open_fds gauge\n"
                        "process_open_fds %ld\n"
                        "# HELP process_max_fds Maximum number of open file descriptors.\n"
                        "# TYPE process_max_fds gauge\n"
                        "process_max_fds %llu\n",
                        fds, (unsigned long long)nofile.rlim_cur);
        /* Field 22 of the stat line: the start time in clock ticks after boot. */
        unsigned long long fields[23] = {0};
        if (read_file("/proc/self/stat", text, sizeof(text)) > 0 &&
            proc_stat_fields(text, fields, 22)) {
                unsigned long long boot = boot_time();
                if (boot)
                        fprintf(f,
                                "# HELP process_start_time_seconds Start time of the process "
                                "since the epoch, in seconds.\n"
                                "# TYPE process_start_time_seconds gauge\n"
                                "process_start_time_seconds %.2f\n",
                                (double)boot + (double)fields[22] / (double)sysconf(_SC_CLK_TCK));
        }
        fprintf(f,
                "# HELP codecell_build_info The version of codecell serving, always 1.\n"
                "# TYPE codecell_build_info gauge\n"
                "codecell_build_info{version=\"%s\"} 1\n",
                codecell_version());
}
