#include "base64.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *base64_encode(const void *data, size_t len, size_t *ret_len)
{
        const unsigned char *in = data;
        size_t n = (len + 2) / 3 * 4;
        char *out = malloc(n + 1);
        if (!out)
                return NULL;
        size_t o = 0, i = 0;
        for (; i + 2 < len; i += 3) {
                uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
                out[o++] = alphabet[v >> 18 & 63];
                out[o++] = alphabet[v >> 12 & 63];
                out[o++] = alphabet[v >> 6 & 63];
                out[o++] = alphabet[v & 63];
        }
        if (i < len) {
                uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
                out[o++] = alphabet[v >> 18 & 63];
                out[o++] = alphabet[v >> 12 & 63];
                out[o++] = i + 1 < len ? alphabet[v >> 6 & 63] : '=';
                out[o++] = '=';
        }
        out[o] = '\0';
        if (ret_len)
                *ret_len = o;
        return out;
}

static int sextet(char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

int base64_decode(const char *text, size_t len, unsigned char **ret, size_t *ret_len)
{
        if (len % 4 != 0)
                return -EINVAL;
        size_t pad = len >= 1 && text[len - 1] == '=' ? 1 + (len >= 2 && text[len - 2] == '=') : 0;
        unsigned char *out = malloc(len / 4 * 3 + 1);
        if (!out)
                return -ENOMEM;
        size_t o = 0;
        for (size_t i = 0; i < len; i += 4) {
                bool last = i + 4 == len;
                int s[4];
                for (int k = 0; k < 4; k++) {
                        s[k] = last && k >= 4 - (int)pad ? 0 : sextet(text[i + k]);
                        if (s[k] < 0) {
                                free(out);
                                return -EINVAL;
                        }
                }
                uint32_t v = (uint32_t)s[0] << 18 | (uint32_t)s[1] << 12 | (uint32_t)s[2] << 6 |
                             (uint32_t)s[3];
                out[o++] = (unsigned char)(v >> 16);
                if (!last || pad < 2)
                        out[o++] = (unsigned char)(v >> 8);
                if (!last || pad < 1)
                        out[o++] = (unsigned char)v;
        }
        *ret = out;
        *ret_len = o;
        return 0;
}
