/* The guest-name rule (guest_names.h). */
#include <ctype.h>
#include <stdbool.h>

#include "guest_names.h"

int guest_name_sanitize(const char *name, char *out, size_t size)
{
        size_t o = 0;
        if (!name || !*name || size < 2)
                return -1;
        if (isdigit((unsigned char)name[0]))
                out[o++] = '_';
        for (const char *p = name; *p; p++) {
                if (o + 1 >= size)
                        return -1;
                out[o++] = isalnum((unsigned char)*p) || *p == '_' ? *p : '_';
        }
        out[o] = '\0';
        return 0;
}

void guest_module_name(const char *server, char *out, size_t size)
{
        size_t o = 0;
        bool up = true;
        for (const char *p = server; *p && o + 1 < size; p++) {
                if (*p == '_' && isalnum((unsigned char)p[1])) {
                        up = true;
                        continue;
                }
                out[o++] = up ? (char)toupper((unsigned char)*p) : *p;
                up = false;
        }
        out[o] = '\0';
}
