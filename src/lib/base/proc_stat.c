#include "proc_stat.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

bool proc_stat_fields(const char *text, unsigned long long *f, int last)
{
        const char *p = strrchr(text, ')'); /* the command name may hold anything */
        if (!p)
                return false;
        int field = 2;
        for (p++; *p && field < last;) {
                while (*p == ' ')
                        p++;
                char *end = (char *)p;
                f[++field] = strtoull(p, &end, 10);
                for (p = end; *p && *p != ' '; p++) /* a field that is not a number: the state */
                        ;
        }
        return field >= last;
}

size_t proc_children(pid_t pid, pid_t *list, size_t n, size_t max)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        DIR *tasks = opendir(path);
        if (!tasks)
                return n;
        for (struct dirent *d; n < max && (d = readdir(tasks));) {
                if (d->d_name[0] < '0' || d->d_name[0] > '9')
                        continue;
                /* A zygote's list: up to ZYGOTE_MAX_CHILDREN sandboxes of two processes. */
                char file[96], text[16384];
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
