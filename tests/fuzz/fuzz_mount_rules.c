/* libFuzzer: mount destination rules and path overlap, on arbitrary strings. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mount_rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *a = malloc(size + 1);
        memcpy(a, data, size);
        a[size] = '\0';
        char *b = strchr(a, '\n');
        if (b)
                *b++ = '\0';
        if (!mount_dest_problem(a)) {
                (void)mount_dest_reserved(a);
                if (b && !mount_dest_problem(b))
                        (void)paths_overlap(a, b);
        }
        free(a);
        return 0;
}
