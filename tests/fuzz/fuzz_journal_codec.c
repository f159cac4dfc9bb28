/* libFuzzer: the reader of a stored journal (run/journal_codec.h). The input is sealed with
 * its right checksum first, so the fuzzer reaches the field parser, not only the checksum
 * test. What is taken must encode back to the very same bytes; what is refused must leave the
 * journal empty (ASan: nothing leaked, nothing read past the end). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "journal_codec.h"

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
        uint64_t h = 14695981039346656037ull;
        for (size_t i = 0; i < n; i++)
                h = (h ^ p[i]) * 1099511628211ull;
        return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        uint8_t *sealed = malloc(size + 8);
        if (!sealed)
                return 0;
        memcpy(sealed, data, size);
        uint64_t h = fnv1a(data, size);
        for (int i = 0; i < 8; i++)
                sealed[size + i] = (uint8_t)(h >> (8 * i));
        struct journal j;
        journal_init(&j, 1 << 16);
        char *cell, *session, why[256];
        if (journal_decode(sealed, size + 8, &j, &cell, &session, why, sizeof why) == 0) {
                char *again;
                size_t len;
                if (journal_encode(&j, cell, session, &again, &len) != 0 || len != size + 8 ||
                    memcmp(again, sealed, len) != 0)
                        abort();
                free(again);
                free(cell);
                free(session);
        } else if (j.n || j.evals || cell || session) {
                abort();
        }
        journal_free(&j);
        free(sealed);
        return 0;
}
