#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The number at the start of text and the suffix after it; refuses signs, blanks, NaN. */
static int split_number(const char *text, double *ret_value, const char **ret_suffix)
{
        if (!text || !isdigit((unsigned char)text[0]))
                return -EINVAL;
        char *end = NULL;
        errno = 0;
        double v = strtod(text, &end);
        if (errno || end == text || !isfinite(v) || v < 0)
                return -EINVAL;
        *ret_value = v;
        *ret_suffix = end;
        return 0;
}

int parse_size(const char *text, uint64_t *ret_bytes)
{
        double v;
        const char *s;
        if (split_number(text, &v, &s) < 0)
                return -EINVAL;
        static const struct {
                const char *suffix;
                double scale;
        } units[] = {
                {"", 1},
                {"B", 1},
                {"K", 1024.0},
                {"KB", 1024.0},
                {"KiB", 1024.0},
                {"M", 1048576.0},
                {"MB", 1048576.0},
                {"MiB", 1048576.0},
                {"G", 1073741824.0},
                {"GB", 1073741824.0},
                {"GiB", 1073741824.0},
        };
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                if (strcasecmp(s, units[i].suffix) != 0)
                        continue;
                double bytes = v * units[i].scale;
                if (bytes < 1 || bytes > 1e18)
                        return -EINVAL;
                *ret_bytes = (uint64_t)bytes;
                return 0;
        }
        return -EINVAL;
}

int parse_duration_ms(const char *text, uint64_t *ret_ms)
{
        double v;
        const char *s;
        if (split_number(text, &v, &s) < 0)
                return -EINVAL;
        double scale;
        if (strcmp(s, "ms") == 0)
                scale = 1;
        else if (strcmp(s, "") == 0 || strcmp(s, "s") == 0)
                scale = 1000;
        else if (strcmp(s, "m") == 0 || strcmp(s, "min") == 0)
                scale = 60000;
        else if (strcmp(s, "h") == 0)
                scale = 3600000;
        else
                return -EINVAL;
        double ms = v * scale;
        if (ms < 1 || ms > 86400000.0)
                return -EINVAL;
        *ret_ms = (uint64_t)ms;
        return 0;
}
