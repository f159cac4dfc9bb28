#include "egress_sni.h"

#include <string.h>

const char egress_sni_none[] = "the ClientHello names no server (no SNI)";

struct reader {
        const uint8_t *p;
        size_t left;
        int bad;
};

static unsigned get(struct reader *r, size_t n)
{
        unsigned v = 0;
        if (r->bad || r->left < n) {
                r->bad = 1;
                return 0;
        }
        for (size_t i = 0; i < n; i++)
                v = (v << 8) | r->p[i];
        r->p += n;
        r->left -= n;
        return v;
}

static struct reader sub(struct reader *r, size_t n)
{
        struct reader s = {r->p, n, 0};
        if (r->bad || r->left < n) {
                r->bad = 1;
                s.bad = 1;
                s.left = 0;
                return s;
        }
        r->p += n;
        r->left -= n;
        return s;
}

int egress_client_hello_sni(const uint8_t *buf, size_t len, char out[EGRESS_HOST_MAX],
                            const char **ret_why)
{
        if (len >= 1 && buf[0] != 0x16) {
                *ret_why = "the tunnel did not start with a TLS handshake";
                return -1;
        }
        if (len >= 2 && buf[1] != 0x03) {
                *ret_why = "not a TLS record";
                return -1;
        }
        if (len < 5)
                return 0;
        size_t record = ((size_t)buf[3] << 8) | buf[4];
        if (record > 16384 || record < 4) {
                *ret_why = "a TLS record of a wrong length";
                return -1;
        }
        if (len >= 6 && buf[5] != 0x01) {
                *ret_why = "the first handshake message is not a ClientHello";
                return -1;
        }
        if (len < 5 + record)
                return 0;
        struct reader rec = {buf + 5, record, 0};
        (void)get(&rec, 1);
        size_t hello_len = get(&rec, 3);
        if (hello_len > rec.left) {
                *ret_why = "the ClientHello is split over TLS records";
                return -1;
        }
        struct reader h = sub(&rec, hello_len);
        (void)get(&h, 2);          /* legacy_version */
        (void)sub(&h, 32);         /* random */
        (void)sub(&h, get(&h, 1)); /* legacy_session_id */
        (void)sub(&h, get(&h, 2)); /* cipher_suites */
        (void)sub(&h, get(&h, 1)); /* legacy_compression_methods */
        if (h.bad) {
                *ret_why = "a malformed ClientHello";
                return -1;
        }
        if (h.left == 0) {
                *ret_why = egress_sni_none;
                return -1;
        }
        struct reader ext = sub(&h, get(&h, 2));
        int found = 0;
        while (!ext.bad && ext.left > 0) {
                unsigned type = get(&ext, 2);
                struct reader body = sub(&ext, get(&ext, 2));
                if (ext.bad)
                        break;
                if (type == 0xfe0d) {
                        /* Encrypted Client Hello: the name checked would be the outer one,
                         * while the server answers the inner one, which nobody here sees. */
                        *ret_why = "the ClientHello is encrypted (ECH), its server name unseen";
                        return -1;
                }
                if (type != 0)
                        continue;
                if (found++) {
                        *ret_why = "the ClientHello has two server_name extensions";
                        return -1;
                }
                struct reader list = sub(&body, get(&body, 2));
                int names = 0;
                while (!list.bad && list.left > 0) {
                        unsigned name_type = get(&list, 1);
                        struct reader name = sub(&list, get(&list, 2));
                        if (list.bad)
                                break;
                        if (name_type != 0)
                                continue;
                        if (names++) {
                                *ret_why = "the ClientHello names two servers";
                                return -1;
                        }
                        const char *why = NULL;
                        int kind = memchr(name.p, 0, name.left)
                                           ? 0
                                           : egress_host_normalize((const char *)name.p, name.left,
                                                                   out, &why);
                        if (kind != EGRESS_HOST_NAME) {
                                *ret_why = "the ClientHello's server name is not a host name";
                                return -1;
                        }
                }
                if (list.bad || body.bad || body.left || names == 0) {
                        *ret_why = "a malformed server_name extension";
                        return -1;
                }
        }
        if (ext.bad || h.bad) {
                *ret_why = "a malformed ClientHello";
                return -1;
        }
        if (!found) {
                *ret_why = egress_sni_none;
                return -1;
        }
        return 1;
}
