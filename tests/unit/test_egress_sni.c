/* The SNI of real ClientHellos (Python's ssl, TLS 1.2 and 1.3; openssl s_client), whole and in
 * pieces; refused: no SNI, a hello split over records, bytes that are not TLS; and no crash on
 * any prefix or any byte changed. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "egress_sni.h"

static size_t hello(const char *name, const char *version, unsigned char *buf, size_t size)
{
        char cmd[512];
        const char *dir = getenv("EGRESS_TEST_DIR");
        snprintf(cmd, sizeof(cmd), "python3 %s/egress_hello.py '%s' %s", dir ? dir : ".", name,
                 version);
        FILE *f = popen(cmd, "r");
        if (!f)
                return 0;
        size_t n = fread(buf, 1, size, f);
        pclose(f);
        return n;
}

static size_t openssl_hello(const char *name, unsigned char *buf, size_t size)
{
        /* s_client writes its hello to a port where nothing answers TLS: a listener made by
         * python that prints what it got. */
        char cmd[1024];
        snprintf(cmd, sizeof(cmd),
                 "python3 -c 'import socket,subprocess,sys\n"
                 "s=socket.socket(); s.bind((\"127.0.0.1\",0)); s.listen(1)\n"
                 "p=subprocess.Popen([\"openssl\",\"s_client\",\"-connect\",\"127.0.0.1:%%d\"%%s."
                 "getsockname()[1],"
                 "\"-servername\",\"%s\"],stdin=subprocess.PIPE,stdout=subprocess.DEVNULL,stderr="
                 "subprocess.DEVNULL)\n"
                 "c,_=s.accept(); c.settimeout(5); d=b\"\"\n"
                 "while len(d)<5 or len(d)<5+int.from_bytes(d[3:5],\"big\"):\n"
                 "  x=c.recv(65536)\n"
                 "  if not x: break\n"
                 "  d+=x\n"
                 "sys.stdout.buffer.write(d); p.kill()'",
                 name);
        FILE *f = popen(cmd, "r");
        if (!f)
                return 0;
        size_t n = fread(buf, 1, size, f);
        pclose(f);
        return n;
}

/* The offset of the type of the first extension of a real hello (record 5, handshake 4,
 * version 2, random 32, then the lengths walked), or 0. */
static size_t first_extension(const unsigned char *b, size_t n)
{
        size_t i = 5 + 4 + 2 + 32;
        if (i >= n)
                return 0;
        i += 1 + b[i];
        if (i + 2 > n)
                return 0;
        i += 2 + (((size_t)b[i] << 8) | b[i + 1]);
        if (i >= n)
                return 0;
        i += 1 + b[i];
        return i + 2 + 4 <= n ? i + 2 : 0;
}

static const char *sni(const unsigned char *buf, size_t n, char out[EGRESS_HOST_MAX])
{
        const char *why = NULL;
        int r = egress_client_hello_sni(buf, n, out, &why);
        return r == 1 ? out : r == 0 ? "(more)" : why;
}

int main(void)
{
        unsigned char buf[EGRESS_HELLO_MAX * 2];
        char out[EGRESS_HOST_MAX];
        size_t n = hello("api.example.test", "1.3", buf, sizeof(buf));
        if (n < 100) {
                fprintf(stderr, "skipped: python3's ssl made no ClientHello\n");
                return 77;
        }
        CHECK_STR(sni(buf, n, out), "api.example.test");
        /* In pieces: every prefix short of the record asks for more. */
        size_t record = 5 + (((size_t)buf[3] << 8) | buf[4]);
        CHECK(record == n);
        for (size_t k = 0; k < record; k++)
                CHECK_STR(sni(buf, k, out), "(more)");
        /* More bytes after the record do not change the answer. */
        memset(buf + n, 0x17, 10);
        CHECK_STR(sni(buf, n + 10, out), "api.example.test");

        n = hello("Mixed.Case.Example", "1.2", buf, sizeof(buf));
        CHECK_STR(sni(buf, n, out), "mixed.case.example");
        n = hello("-", "1.3", buf, sizeof(buf));
        CHECK_STR(sni(buf, n, out), "the ClientHello names no server (no SNI)");

        size_t m = openssl_hello("files.pythonhosted.org", buf, sizeof(buf));
        if (m > 0)
                CHECK_STR(sni(buf, m, out), "files.pythonhosted.org");
        else
                fprintf(stderr, "openssl s_client gave no hello: that case skipped\n");

        /* The hello split over two records. */
        n = hello("api.example.test", "1.3", buf, sizeof(buf));
        unsigned char split[EGRESS_HELLO_MAX * 2];
        size_t body = n - 5, first = 40;
        memcpy(split, buf, 5);
        split[3] = (unsigned char)(first >> 8);
        split[4] = (unsigned char)first;
        memcpy(split + 5, buf + 5, first);
        memcpy(split + 5 + first, buf, 5);
        split[5 + first + 3] = (unsigned char)((body - first) >> 8);
        split[5 + first + 4] = (unsigned char)(body - first);
        memcpy(split + 10 + first, buf + 5 + first, body - first);
        CHECK_STR(sni(split, n + 5, out), "the ClientHello is split over TLS records");

        /* An Encrypted Client Hello: its extension (0xfe0d) in place of the first one. */
        n = hello("api.example.test", "1.3", buf, sizeof(buf));
        size_t ext = first_extension(buf, n);
        CHECK(ext > 0);
        if (ext) {
                unsigned char was0 = buf[ext], was1 = buf[ext + 1];
                buf[ext] = 0xfe;
                buf[ext + 1] = 0x0d;
                CHECK_STR(sni(buf, n, out),
                          "the ClientHello is encrypted (ECH), its server name unseen");
                buf[ext] = was0;
                buf[ext + 1] = was1;
                CHECK_STR(sni(buf, n, out), "api.example.test");
        }

        /* Not TLS at all. */
        CHECK_STR(sni((const unsigned char *)"GET / HTTP/1.1\r\n", 16, out),
                  "the tunnel did not start with a TLS handshake");
        CHECK_STR(sni((const unsigned char *)"\x16\x03\x01\x40\x01", 5, out),
                  "a TLS record of a wrong length");
        CHECK_STR(sni((const unsigned char *)"\x16\x03\x01\x00\x10\x02", 6, out),
                  "the first handshake message is not a ClientHello");

        /* A hello whose name is not a host name (a NUL inside, a space). */
        n = hello("api.example.test", "1.3", buf, sizeof(buf));
        unsigned char *at = memmem(buf, n, "api.example.test", 16);
        CHECK(at != NULL);
        if (at) {
                at[3] = '\0';
                CHECK_STR(sni(buf, n, out), "the ClientHello's server name is not a host name");
                at[3] = ' ';
                CHECK_STR(sni(buf, n, out), "the ClientHello's server name is not a host name");
                at[3] = '.';
        }

        /* Any byte changed, any length: an answer, never a read out of bounds (ASan watches). */
        unsigned int seed = 31;
        for (int round = 0; round < 20000; round++) {
                unsigned char copy[EGRESS_HELLO_MAX];
                memcpy(copy, buf, n);
                int flips = 1 + rand_r(&seed) % 4;
                for (int k = 0; k < flips; k++)
                        copy[rand_r(&seed) % n] = (unsigned char)rand_r(&seed);
                const char *why;
                size_t len = (size_t)rand_r(&seed) % (n + 1);
                unsigned char *exact = malloc(len ? len : 1);
                memcpy(exact, copy, len);
                int r = egress_client_hello_sni(exact, len, out, &why);
                CHECK(r >= -1 && r <= 1);
                free(exact);
        }
        CHECK_DONE();
}
