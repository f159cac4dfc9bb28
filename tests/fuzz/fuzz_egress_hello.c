/* libFuzzer: the TLS ClientHello a guest sends in a tunnel to port 443, whose server name the
 * proxy checks against the CONNECT host (src/lib/egress/egress_sni.c). Any bytes read without a
 * fault to a name, "more needed" or a refusal with its reason; a name is normalized (lowercase
 * printable ASCII, no empty label), and every prefix of an input that gave a name asks for
 * more or refuses, never gives another name. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress_sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char name[EGRESS_HOST_MAX];
        const char *why = NULL;
        int got = egress_client_hello_sni(data, size, name, &why);
        if (got < 0 && !why)
                abort();
        if (got != 1)
                return 0;
        size_t n = strnlen(name, EGRESS_HOST_MAX);
        if (n == 0 || n == EGRESS_HOST_MAX || name[0] == '.' || strstr(name, ".."))
                abort();
        for (size_t i = 0; i < n; i++)
                if (name[i] <= ' ' || name[i] >= 0x7f || (name[i] >= 'A' && name[i] <= 'Z'))
                        abort();
        for (size_t cut = 0; cut < size && cut < 64; cut++) {
                char other[EGRESS_HOST_MAX];
                const char *w = NULL;
                if (egress_client_hello_sni(data, cut, other, &w) == 1 && strcmp(other, name) != 0)
                        abort();
        }
        return 0;
}
