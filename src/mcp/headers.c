/* The Base64 sentinel form of 2026-07-28 header values: a client writes a value that is not
 * plain visible ASCII (or that looks like the sentinel) as "=?base64?" Base64 "?=", and the
 * server decodes it before comparing it with the body. */
#include <stdlib.h>
#include <string.h>

#include "headers.h"

#define PREFIX "=?base64?"
#define SUFFIX "?="

char *mcp_header_decode(const char *v)
{
        size_t n = strlen(v), head = sizeof(PREFIX) - 1, tail = sizeof(SUFFIX) - 1;
        if (n < head + tail || strncmp(v, PREFIX, head) != 0 || strcmp(v + n - tail, SUFFIX) != 0)
                return strdup(v);
        static const char alphabet[] =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *in = v + head;
        size_t len = n - head - tail;
        /* Padded Base64 only: whole quanta, at most two '=' and only at the end. */
        size_t pad = len >= 1 && in[len - 1] == '=' ? (len >= 2 && in[len - 2] == '=' ? 2 : 1) : 0;
        if (len % 4 || strspn(in, alphabet) != len - pad)
                return NULL;
        char *out = malloc(len / 4 * 3 + 1);
        if (!out)
                return NULL;
        size_t o = 0;
        unsigned bits = 0, acc = 0;
        for (size_t i = 0; i < len - pad; i++) {
                acc = (acc << 6) | (unsigned)(strchr(alphabet, in[i]) - alphabet);
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[o++] = (char)((acc >> bits) & 0xff);
                }
        }
        out[o] = '\0';
        /* A NUL inside is not a name any body can hold. */
        if (strlen(out) != o) {
                free(out);
                return NULL;
        }
        return out;
}
