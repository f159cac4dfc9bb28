/* libFuzzer: the Base64 sentinel form of 2026-07-28 header values (src/mcp/headers.c). Any text
 * decodes without a fault to NULL or a NUL-terminated string; a text that is not in the form
 * comes back as it was; and any value without a NUL, written in the form, decodes to itself. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "headers.h"

static char *encode(const uint8_t *p, size_t n)
{
        static const char alphabet[] =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *out = malloc(9 + (n + 2) / 3 * 4 + 3);
        if (!out)
                abort();
        char *o = stpcpy(out, "=?base64?");
        for (size_t i = 0; i < n; i += 3) {
                unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
                             (i + 2 < n ? p[i + 2] : 0);
                *o++ = alphabet[v >> 18 & 63];
                *o++ = alphabet[v >> 12 & 63];
                *o++ = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
                *o++ = i + 2 < n ? alphabet[v & 63] : '=';
        }
        strcpy(o, "?=");
        return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size + 1);
        if (!text)
                abort();
        memcpy(text, data, size);
        text[size] = '\0';
        char *decoded = mcp_header_decode(text);
        bool sentinel = strncmp(text, "=?base64?", 9) == 0 && strlen(text) >= 11 &&
                        strcmp(text + strlen(text) - 2, "?=") == 0;
        if (decoded && !sentinel && strcmp(decoded, text) != 0)
                abort(); /* a plain value was changed */
        free(decoded);
        if (!memchr(data, '\0', size)) {
                char *encoded = encode(data, size);
                decoded = mcp_header_decode(encoded);
                if (!decoded || strlen(decoded) != size || memcmp(decoded, data, size) != 0)
                        abort(); /* a value did not survive its own encoding */
                free(decoded);
                free(encoded);
        }
        free(text);
        return 0;
}
