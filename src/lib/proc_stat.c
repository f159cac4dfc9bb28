#include "proc_stat.h"

#include <stdlib.h>
#include <string.h>

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
