/* libFuzzer: the command line's sizes and durations, and UTF-8 cleaning of guest output. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *s = malloc(size + 1);
        memcpy(s, data, size);
        s[size] = '\0';
        uint64_t v;
        (void)parse_size(s, &v);
        (void)parse_duration_ms(s, &v);
        size_t n = 0;
        char *clean = utf8_sanitize(s, size, &n);
        if (clean && !utf8_valid(clean, n))
                abort(); /* what the cleaner returns must be valid UTF-8 */
        free(clean);
        free(s);
        return 0;
}
