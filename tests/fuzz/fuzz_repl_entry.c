/* libFuzzer: codecell repl's judgement of whether an entry is whole (src/cli/repl_entry.c),
 * in each language, on any text: it must read only within the entry, and always answer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "repl_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *s = malloc(size + 1);
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        static const char *const languages[] = {"ruby", "python"};
        for (size_t i = 0; i < 2; i++) {
                enum repl_entry e = repl_entry_state(languages[i], s);
                if (e != ENTRY_WHOLE && e != ENTRY_OPEN && e != ENTRY_BLOCK)
                        abort();
        }
        free(s);
        return 0;
}
