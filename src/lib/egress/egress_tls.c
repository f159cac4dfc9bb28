/* A cell's CA, its hosts' certificates, and the two sides of a terminated connection
 * (egress_tls.h has the promise). The keys are P-256: quick to make at a cell's start, and
 * what every TLS client accepts. */
#include "egress_tls.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "error.h"
#include "openssl_api.h"
#include "util.h"

/* The CA lives as long as the cell; a year is longer than any server runs between restarts,
 * and a day before now absorbs a guest clock that is behind. */
#define VALID_DAYS 365
#define BUNDLE_MAX (8u << 20)

struct tls_host {
        char host[EGRESS_HOST_MAX];
        SSL_CTX *ctx; /* the guest's side: this host's certificate */
        /* The server's last session ticket, to resume with on the next connection: the
         * server then skips its signature and the engine its check of the chain, which were
         * most of what a terminated connection added. */
        pthread_mutex_t lock;
        SSL_SESSION *session; /* guarded by lock */
        bool lock_made;
};

struct egress_tls {
        const struct openssl_api *o;
        EVP_PKEY *ca_key, *leaf_key;
        X509 *ca;
        char *ca_pem;
        SSL_CTX *client; /* the server's side, shared by every host */
        struct tls_host *hosts;
        size_t n_hosts;
};

struct egress_tls_side {
        const struct openssl_api *o;
        SSL *ssl;
        bool to_server;
        bool ready;  /* the handshake is done */
        bool failed; /* a fatal error: no close_notify may follow */
        char host[EGRESS_HOST_MAX];
        char why[320];
};

struct extension {
        int nid;
        const char *value;
};

/* OpenSSL's error queue as one line, emptied. */
static void queue_text(const struct openssl_api *o, char *buf, size_t size)
{
        unsigned long e, last = 0;
        while ((e = o->ERR_get_error()))
                last = e; /* the last is the outermost: "certificate verify failed" */
        if (last)
                o->ERR_error_string_n(last, buf, size);
        else
                snprintf(buf, size, "%s", errno ? strerror(errno) : "the connection ended");
}

static int fail(const struct openssl_api *o, codecell_error *err, const char *what)
{
        char why[256];
        queue_text(o, why, sizeof(why));
        return err_set(err, CODECELL_ERR_SYSTEM, EPROTO, "network: TLS termination: %s: %s", what,
                       why);
}

static EVP_PKEY *new_key(const struct openssl_api *o)
{
        return o->EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

/* A certificate for key named cn, signed by issuer_key (self-signed when issuer is NULL). */
static X509 *make_cert(const struct openssl_api *o, EVP_PKEY *key, const char *cn, X509 *issuer,
                       EVP_PKEY *issuer_key, const struct extension *exts, size_t n_exts)
{
        X509 *x = o->X509_new();
        unsigned char serial[8];
        uint64_t s = 0;
        if (!x || o->RAND_bytes(serial, sizeof(serial)) != 1)
                goto fail;
        memcpy(&s, serial, sizeof(s));
        s >>= 1; /* a positive serial */
        X509_NAME *name = o->X509_get_subject_name(x);
        if (o->X509_set_version(x, 2) != 1 ||
            o->ASN1_INTEGER_set_uint64(o->X509_get_serialNumber(x), s) != 1 ||
            !o->X509_gmtime_adj(o->X509_getm_notBefore(x), -24L * 3600) ||
            !o->X509_gmtime_adj(o->X509_getm_notAfter(x), VALID_DAYS * 24L * 3600) ||
            o->X509_set_pubkey(x, key) != 1 ||
            o->X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1,
                                          -1, 0) != 1 ||
            o->X509_set_issuer_name(x, o->X509_get_subject_name(issuer ? issuer : x)) != 1)
                goto fail;
        for (size_t i = 0; i < n_exts; i++) {
                X509V3_CTX ctx;
                o->X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
                X509_EXTENSION *ext =
                        o->X509V3_EXT_nconf_nid(NULL, &ctx, exts[i].nid, exts[i].value);
                int added = ext ? o->X509_add_ext(x, ext, -1) : 0;
                if (ext)
                        o->X509_EXTENSION_free(ext);
                if (added != 1)
                        goto fail;
        }
        if (o->X509_sign(x, issuer_key, o->EVP_sha256()) <= 0)
                goto fail;
        return x;
fail:
        if (x)
                o->X509_free(x);
        return NULL;
}

static char *pem_of(const struct openssl_api *o, X509 *x)
{
        BIO *b = o->BIO_new(o->BIO_s_mem());
        char *out = NULL, *data = NULL;
        if (b && o->PEM_write_bio_X509(b, x) == 1) {
                long n = o->BIO_ctrl(b, BIO_CTRL_INFO, 0, &data); /* BIO_get_mem_data */
                if (n > 0 && (out = malloc((size_t)n + 1))) {
                        memcpy(out, data, (size_t)n);
                        out[n] = '\0';
                }
        }
        if (b)
                o->BIO_free(b);
        return out;
}

/* The guest speaks HTTP/1.1 to the engine, which reads its requests: a client that offers
 * ALPN gets http/1.1, one that offers only h2 gets none (and falls back to HTTP/1.1). */
static int select_http1(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                        const unsigned char *in, unsigned int inlen, void *arg)
{
        (void)ssl;
        const struct openssl_api *o = arg;
        static const unsigned char http1[] = "\x08http/1.1";
        unsigned char *chosen = NULL;
        if (o->SSL_select_next_proto(&chosen, outlen, http1, sizeof(http1) - 1, in, inlen) !=
            OPENSSL_NPN_NEGOTIATED)
                return SSL_TLSEXT_ERR_NOACK;
        *out = chosen;
        return SSL_TLSEXT_ERR_OK;
}

static void ctx_common(const struct openssl_api *o, SSL_CTX *ctx)
{
        (void)o->SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL);
        (void)o->SSL_CTX_ctrl(ctx, SSL_CTRL_MODE,
                              SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER,
                              NULL);
        /* A server that closes without close_notify ends its answer like a plain socket; the
         * guest's HTTP client checks the length it was told. */
        (void)o->SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                                  SSL_OP_IGNORE_UNEXPECTED_EOF);
}

static int make_host(struct egress_tls *t, struct tls_host *h, const char *host,
                     codecell_error *err)
{
        const struct openssl_api *o = t->o;
        pthread_mutex_init(&h->lock, NULL);
        h->lock_made = true;
        char san[EGRESS_HOST_MAX + 8];
        snprintf(san, sizeof(san), "DNS:%s", host);
        const struct extension exts[] = {
                {NID_basic_constraints, "critical,CA:FALSE"},
                {NID_key_usage, "critical,digitalSignature"},
                {NID_ext_key_usage, "serverAuth"},
                {NID_subject_alt_name, san},
                {NID_subject_key_identifier, "hash"},
                {NID_authority_key_identifier, "keyid:always"},
        };
        snprintf(h->host, sizeof(h->host), "%s", host);
        X509 *leaf = make_cert(o, t->leaf_key, host, t->ca, t->ca_key, exts,
                               sizeof(exts) / sizeof(exts[0]));
        if (!leaf)
                return fail(o, err, "a certificate for the host");
        h->ctx = o->SSL_CTX_new(o->TLS_server_method());
        int ok = h->ctx && o->SSL_CTX_use_certificate(h->ctx, leaf) == 1 &&
                 o->SSL_CTX_use_PrivateKey(h->ctx, t->leaf_key) == 1 &&
                 o->SSL_CTX_check_private_key(h->ctx) == 1;
        o->X509_free(leaf); /* the context holds its own reference */
        if (!ok)
                return fail(o, err, "the guest's side");
        ctx_common(o, h->ctx);
        o->SSL_CTX_set_alpn_select_cb(h->ctx, select_http1, (void *)o);
        return 0;
}

/* Whether dir holds OpenSSL's hash links ("5ad8a5d6.0"), so that a lookup by hash finds roots. */
static bool has_hash_links(const char *dir)
{
        DIR *d = dir ? opendir(dir) : NULL;
        bool found = false;
        for (struct dirent *e; d && !found && (e = readdir(d));) {
                size_t n = strspn(e->d_name, "0123456789abcdef");
                found = n == 8 && e->d_name[8] == '.' && e->d_name[9] >= '0' && e->d_name[9] <= '9';
        }
        if (d)
                closedir(d);
        return found;
}

/* The engine's trust store for the servers: OpenSSL's default paths, SSL_CERT_FILE and
 * SSL_CERT_DIR of the engine's environment first; but where the default folder has its hash
 * links (Debian's /etc/ssl/certs) it alone, looked up by hash, which reads only the roots a
 * server's chain needs: the default file is the whole bundle, parsed at once (tens of ms
 * here, on every start of a cell). 1 on success, as OpenSSL's. */
static int load_trust(const struct openssl_api *o, SSL_CTX *ctx)
{
        const char *file = getenv(o->X509_get_default_cert_file_env());
        const char *dir = getenv(o->X509_get_default_cert_dir_env());
        if (file || dir)
                return o->SSL_CTX_load_verify_locations(ctx, file, dir);
        if (has_hash_links(o->X509_get_default_cert_dir()))
                return o->SSL_CTX_load_verify_locations(ctx, NULL, o->X509_get_default_cert_dir());
        return o->SSL_CTX_set_default_verify_paths(ctx);
}

/* "permitted;DNS:a,permitted;DNS:b,excluded;IP:...": the CA vouches for its hosts only. */
static char *name_constraints(const struct egress_policy *p)
{
        size_t cap = 128;
        for (size_t i = 0; i < p->n_headers; i++)
                cap += strlen(p->headers[i].host) + 16;
        char *out = malloc(cap);
        if (!out)
                return NULL;
        size_t n = 0;
        for (size_t i = 0; i < p->n_headers; i++)
                n += (size_t)snprintf(out + n, cap - n, "permitted;DNS:%s,", p->headers[i].host);
        snprintf(out + n, cap - n,
                 "excluded;IP:0.0.0.0/0.0.0.0,excluded;IP:0:0:0:0:0:0:0:0/0:0:0:0:0:0:0:0");
        return out;
}

const char *egress_tls_library(const char **ret_why)
{
        const struct openssl_api *o = openssl_api_load(ret_why);
        return o ? o->OpenSSL_version(OPENSSL_VERSION) : NULL;
}

/* A session the server gave (its ticket): kept for the host's next connection. 1: the
 * reference is ours. */
static int keep_ticket(SSL *ssl, SSL_SESSION *session)
{
        const struct openssl_api *o = openssl_api();
        struct tls_host *h = o->SSL_get_ex_data(ssl, 0);
        if (!h)
                return 0;
        pthread_mutex_lock(&h->lock);
        SSL_SESSION *old = h->session;
        h->session = session;
        pthread_mutex_unlock(&h->lock);
        if (old)
                o->SSL_SESSION_free(old);
        return 1;
}

struct egress_tls *egress_tls_new(const struct egress_policy *p, codecell_error *err)
{
        const char *why = NULL;
        const struct openssl_api *o = openssl_api_load(&why);
        if (!o) {
                err_set(err, CODECELL_ERR_UNSUPPORTED, ENOTSUP,
                        "network: terminate_tls needs OpenSSL 3 (libssl.so.3): %s", why);
                return NULL;
        }
        struct egress_tls *t = calloc(1, sizeof(*t));
        _cleanup_free_ char *constraints = name_constraints(p);
        if (!t || !constraints || !(t->hosts = calloc(p->n_headers + 1, sizeof(*t->hosts)))) {
                err_sys(err, ENOMEM, "network: TLS termination");
                goto fail;
        }
        t->o = o;
        o->ERR_clear_error();
        if (!(t->ca_key = new_key(o)) || !(t->leaf_key = new_key(o))) {
                fail(o, err, "a key");
                goto fail;
        }
        const struct extension ca_exts[] = {
                {NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                {NID_key_usage, "critical,keyCertSign,cRLSign"},
                {NID_subject_key_identifier, "hash"},
                {NID_authority_key_identifier, "keyid:always"},
                {NID_name_constraints, constraints},
        };
        char cn[64];
        unsigned char id[6];
        if (o->RAND_bytes(id, sizeof(id)) != 1) {
                fail(o, err, "random bytes");
                goto fail;
        }
        snprintf(cn, sizeof(cn), "codecell cell CA %02x%02x%02x%02x%02x%02x", id[0], id[1], id[2],
                 id[3], id[4], id[5]);
        if (!(t->ca = make_cert(o, t->ca_key, cn, NULL, t->ca_key, ca_exts,
                                sizeof(ca_exts) / sizeof(ca_exts[0])))) {
                fail(o, err, "the CA");
                goto fail;
        }
        if (!(t->ca_pem = pem_of(o, t->ca))) {
                fail(o, err, "the CA's certificate");
                goto fail;
        }
        for (size_t i = 0; i < p->n_headers; i++) {
                t->n_hosts = i + 1; /* what make_host made, even when it fails, is freed */
                if (make_host(t, &t->hosts[i], p->headers[i].host, err) < 0)
                        goto fail;
        }
        /* Every certificate the CA will ever sign is signed: its key goes now (OpenSSL clears
         * a private key's numbers as it frees them), so that no later copy of the engine's
         * memory (a sandbox's init is a fork of it) holds it. */
        o->EVP_PKEY_free(t->ca_key);
        t->ca_key = NULL;
        static const unsigned char http1[] = "\x08http/1.1";
        t->client = o->SSL_CTX_new(o->TLS_client_method());
        if (!t->client || load_trust(o, t->client) != 1 ||
            o->SSL_CTX_set_alpn_protos(t->client, http1, sizeof(http1) - 1) != 0) {
                fail(o, err, "the server's side");
                goto fail;
        }
        ctx_common(o, t->client);
        o->SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
        /* Tickets go to keep_ticket, not to OpenSSL's own cache (which a client does not
         * look up by itself). */
        (void)o->SSL_CTX_ctrl(t->client, SSL_CTRL_SET_SESS_CACHE_MODE,
                              SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE, NULL);
        o->SSL_CTX_sess_set_new_cb(t->client, keep_ticket);
        return t;
fail:
        egress_tls_free(t);
        return NULL;
}

void egress_tls_free(struct egress_tls *t)
{
        if (!t)
                return;
        const struct openssl_api *o = t->o;
        if (o) {
                for (size_t i = 0; i < t->n_hosts; i++) {
                        if (t->hosts[i].ctx)
                                o->SSL_CTX_free(t->hosts[i].ctx);
                        if (t->hosts[i].session)
                                o->SSL_SESSION_free(t->hosts[i].session);
                        if (t->hosts[i].lock_made)
                                pthread_mutex_destroy(&t->hosts[i].lock);
                }
                if (t->client)
                        o->SSL_CTX_free(t->client);
                if (t->ca)
                        o->X509_free(t->ca);
                if (t->ca_key)
                        o->EVP_PKEY_free(t->ca_key);
                if (t->leaf_key)
                        o->EVP_PKEY_free(t->leaf_key);
        }
        free(t->hosts);
        free(t->ca_pem);
        free(t);
}

const char *egress_tls_ca_pem(const struct egress_tls *t)
{
        return t->ca_pem;
}

char *egress_tls_bundle(const struct egress_tls *t, size_t *ret_len)
{
        const char *system = t->o->X509_get_default_cert_file();
        size_t pem_len = strlen(t->ca_pem);
        struct stat st;
        size_t size = system && stat(system, &st) == 0 && S_ISREG(st.st_mode) &&
                                      (uint64_t)st.st_size <= BUNDLE_MAX
                              ? (size_t)st.st_size
                              : 0;
        /* The roots, read_file's NUL (or the newline put after them), then the CA. */
        char *out = malloc(size + 1 + pem_len + 1);
        if (!out)
                return NULL;
        ssize_t got = size ? read_file(system, out, size + 1) : 0;
        size_t have = got > 0 ? (size_t)got : 0;
        if (have && out[have - 1] != '\n')
                out[have++] = '\n';
        memcpy(out + have, t->ca_pem, pem_len);
        *ret_len = have + pem_len;
        return out;
}

static const struct tls_host *find_host(const struct egress_tls *t, const char *host)
{
        for (size_t i = 0; t && i < t->n_hosts; i++)
                if (strcmp(t->hosts[i].host, host) == 0)
                        return &t->hosts[i];
        return NULL;
}

bool egress_tls_terminates(const struct egress_tls *t, const char *host)
{
        return find_host(t, host) != NULL;
}

static struct egress_tls_side *new_side(const struct openssl_api *o, SSL_CTX *ctx, const char *host,
                                        int fd, bool to_server)
{
        struct egress_tls_side *s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->o = o;
        s->to_server = to_server;
        snprintf(s->host, sizeof(s->host), "%s", host);
        if (!(s->ssl = o->SSL_new(ctx)) || o->SSL_set_fd(s->ssl, fd) != 1) {
                egress_tls_side_free(s);
                return NULL;
        }
        return s;
}

struct egress_tls_side *egress_tls_guest_side(const struct egress_tls *t, const char *host, int fd)
{
        const struct tls_host *h = find_host(t, host);
        return h ? new_side(t->o, h->ctx, host, fd, false) : NULL;
}

struct egress_tls_side *egress_tls_server_side(const struct egress_tls *t, const char *host, int fd)
{
        const struct openssl_api *o = t->o;
        struct egress_tls_side *s = new_side(o, t->client, host, fd, true);
        if (!s)
                return NULL;
        struct tls_host *h = (struct tls_host *)find_host(t, host);
        if (o->SSL_ctrl(s->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, s->host) !=
                    1 ||
            o->SSL_set1_host(s->ssl, s->host) != 1 || !h || o->SSL_set_ex_data(s->ssl, 0, h) != 1) {
                egress_tls_side_free(s);
                return NULL;
        }
        pthread_mutex_lock(&h->lock);
        /* SSL_set_session takes a reference of its own; a ticket that cannot be resumed (its
         * lifetime over) is simply not offered, and the handshake is a full one. */
        if (h->session && o->SSL_SESSION_is_resumable(h->session))
                (void)o->SSL_set_session(s->ssl, h->session);
        pthread_mutex_unlock(&h->lock);
        return s;
}

/* What ret of an SSL call means; on an error, s->why says it in words. */
static enum egress_tls_status status(struct egress_tls_side *s, int ret, const char *what)
{
        const struct openssl_api *o = s->o;
        switch (o->SSL_get_error(s->ssl, ret)) {
        case SSL_ERROR_WANT_READ:
                return EGRESS_TLS_WANT_READ;
        case SSL_ERROR_WANT_WRITE:
                return EGRESS_TLS_WANT_WRITE;
        case SSL_ERROR_ZERO_RETURN:
                return EGRESS_TLS_EOF;
        default:
                break;
        }
        long verify = s->to_server ? o->SSL_get_verify_result(s->ssl) : X509_V_OK;
        char detail[256];
        queue_text(o, detail, sizeof(detail));
        if (verify != X509_V_OK)
                snprintf(s->why, sizeof(s->why),
                         "the certificate of %s is not trusted by the engine: %s", s->host,
                         o->X509_verify_cert_error_string(verify));
        else
                snprintf(s->why, sizeof(s->why), "%s: %s", what, detail);
        utf8_trim_cut(s->why);
        s->failed = true;
        return EGRESS_TLS_ERROR;
}

enum egress_tls_status egress_tls_handshake(struct egress_tls_side *s)
{
        s->o->ERR_clear_error();
        errno = 0;
        int r = s->to_server ? s->o->SSL_connect(s->ssl) : s->o->SSL_accept(s->ssl);
        if (r == 1) {
                s->ready = true;
                return EGRESS_TLS_OK;
        }
        enum egress_tls_status st =
                status(s, r, s->to_server ? "TLS to the server" : "the guest's TLS handshake");
        return st == EGRESS_TLS_EOF ? EGRESS_TLS_ERROR : st;
}

enum egress_tls_status egress_tls_read(struct egress_tls_side *s, void *buf, size_t n,
                                       size_t *ret_n)
{
        s->o->ERR_clear_error();
        errno = 0;
        int r = s->o->SSL_read(s->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
        *ret_n = r > 0 ? (size_t)r : 0;
        return r > 0 ? EGRESS_TLS_OK : status(s, r, "reading TLS");
}

enum egress_tls_status egress_tls_write(struct egress_tls_side *s, const void *buf, size_t n,
                                        size_t *ret_n)
{
        s->o->ERR_clear_error();
        errno = 0;
        int r = s->o->SSL_write(s->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
        *ret_n = r > 0 ? (size_t)r : 0;
        return r > 0 ? EGRESS_TLS_OK : status(s, r, "writing TLS");
}

const char *egress_tls_server_name(const struct egress_tls_side *s)
{
        return s->o->SSL_get_servername(s->ssl, TLSEXT_NAMETYPE_host_name);
}

const char *egress_tls_why(const struct egress_tls_side *s)
{
        return s->why[0] ? s->why : "TLS failed";
}

void egress_tls_side_free(struct egress_tls_side *s)
{
        if (!s)
                return;
        if (s->ssl) {
                s->o->ERR_clear_error();
                if (s->ready && !s->failed)
                        (void)s->o->SSL_shutdown(s->ssl);
                s->o->ERR_clear_error();
                s->o->SSL_free(s->ssl);
        }
        free(s);
}
