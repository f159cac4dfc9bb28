/* libFuzzer: the command line's sizes and durations, UTF-8 cleaning of guest output, the
 * excerpts of output shown to a model, and the base64 of images. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "output.h"
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
        /* An excerpt of valid text is valid text, within its budget. */
        if (clean) {
                size_t budget = size ? data[0] : 0, len, head, tail;
                bool cut;
                char *e = excerpt_make(clean, n, clean, n, n, 0, budget, EXCERPT_CHARS, &len, &head,
                                       &tail, &cut);
                if (e && (!utf8_valid(e, len) ||
                          (cut &&
                           utf8_chars(clean, head) + utf8_chars(clean + n - tail, tail) > budget)))
                        abort();
                free(e);
        }
        /* What decodes, encodes to a text that decodes to the same bytes. */
        unsigned char *bytes = NULL, *again = NULL;
        size_t len = 0, len2 = 0;
        if (base64_decode(s, size, &bytes, &len) == 0) {
                char *text = base64_encode(bytes, len, NULL);
                if (!text || base64_decode(text, strlen(text), &again, &len2) != 0 || len2 != len ||
                    memcmp(again, bytes, len) != 0)
                        abort();
                free(text);
                free(again);
                free(bytes);
        }
        free(clean);
        free(s);
        return 0;
}
