/* libFuzzer: the framing checks of an HTTP request's header lines (src/mcp/framing.c). The
 * input is header lines, "name:value" each (as libmicrohttpd stores them: the name up to the
 * first colon, the value after it), the first byte choosing HTTP/1.0. Any input is judged
 * without a fault, and a request let through has one unambiguous length: at most one
 * Content-Length or one Transfer-Encoding, never both, the latter exactly "chunked", and no
 * header name holding anything but token characters. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "framing.h"

static bool token_char(unsigned char c)
{
        return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size == 0)
                return 0;
        bool http_1_0 = data[0] & 1;
        const char *p = (const char *)data + 1, *end = (const char *)data + size;
        struct framing f = {0};
        unsigned lengths = 0, codings = 0;
        bool chunked = false, bad_name = false;
        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t)(end - p));
                const char *line_end = eol ? eol : end;
                const char *colon = memchr(p, ':', (size_t)(line_end - p));
                const char *name = p, *value = colon ? colon + 1 : line_end;
                size_t name_len = (size_t)((colon ? colon : line_end) - p);
                size_t value_len = (size_t)(line_end - value);
                framing_note(&f, name, name_len, value, value_len);
                for (size_t i = 0; i < name_len; i++)
                        bad_name |= !token_char((unsigned char)name[i]);
                bad_name |= name_len == 0;
                if (name_len == 14 && strncasecmp(name, "content-length", 14) == 0)
                        lengths++;
                if (name_len == 17 && strncasecmp(name, "transfer-encoding", 17) == 0) {
                        codings++;
                        chunked = value_len == 7 && strncasecmp(value, "chunked", 7) == 0;
                }
                p = line_end + 1;
        }
        const char *why = NULL;
        unsigned status = framing_verdict(&f, http_1_0, &why);
        if (status != 0 && (status != 400 || !why))
                abort(); /* a refusal without its status or its reason */
        if (status == 0 && (bad_name || lengths > 1 || codings > 1 || (lengths && codings) ||
                            (codings && (!chunked || http_1_0))))
                abort(); /* an ambiguous request let through */
        return 0;
}
