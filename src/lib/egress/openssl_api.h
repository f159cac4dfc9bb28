/* OpenSSL (libssl.so.3, and libcrypto through it), loaded the first time a cell terminates TLS
 * rather than linked: a `codecell run` without a network pays nothing for it, and a host
 * without OpenSSL runs everything but TLS termination, which then fails at load with the
 * reason. Only the functions egress_tls.c calls; OpenSSL's macros that stand for a function
 * (SSL_set_tlsext_host_name, BIO_get_mem_data ...) are written out with the table's *_ctrl.
 * Who includes it: egress_tls.c only. */
#ifndef CODECELL_OPENSSL_API_H
#define CODECELL_OPENSSL_API_H

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

struct openssl_api {
        /* libssl */
        const SSL_METHOD *(*TLS_server_method)(void);
        const SSL_METHOD *(*TLS_client_method)(void);
        SSL_CTX *(*SSL_CTX_new)(const SSL_METHOD *method);
        void (*SSL_CTX_free)(SSL_CTX *ctx);
        long (*SSL_CTX_ctrl)(SSL_CTX *ctx, int cmd, long larg, void *parg);
        uint64_t (*SSL_CTX_set_options)(SSL_CTX *ctx, uint64_t options);
        void (*SSL_CTX_set_verify)(SSL_CTX *ctx, int mode, SSL_verify_cb callback);
        int (*SSL_CTX_set_default_verify_paths)(SSL_CTX *ctx);
        int (*SSL_CTX_load_verify_locations)(SSL_CTX *ctx, const char *file, const char *dir);
        void (*SSL_CTX_set_alpn_select_cb)(SSL_CTX *ctx, SSL_CTX_alpn_select_cb_func cb, void *arg);
        int (*SSL_CTX_set_alpn_protos)(SSL_CTX *ctx, const unsigned char *protos, unsigned int len);
        int (*SSL_CTX_use_certificate)(SSL_CTX *ctx, X509 *x);
        int (*SSL_CTX_use_PrivateKey)(SSL_CTX *ctx, EVP_PKEY *pkey);
        int (*SSL_CTX_check_private_key)(const SSL_CTX *ctx);
        void (*SSL_CTX_sess_set_new_cb)(SSL_CTX *ctx, int (*cb)(SSL *ssl, SSL_SESSION *session));
        SSL *(*SSL_new)(SSL_CTX *ctx);
        int (*SSL_set_ex_data)(SSL *ssl, int idx, void *data);
        void *(*SSL_get_ex_data)(const SSL *ssl, int idx);
        int (*SSL_set_session)(SSL *ssl, SSL_SESSION *session);
        void (*SSL_SESSION_free)(SSL_SESSION *session);
        int (*SSL_SESSION_is_resumable)(const SSL_SESSION *session);
        void (*SSL_free)(SSL *ssl);
        int (*SSL_set_fd)(SSL *ssl, int fd);
        long (*SSL_ctrl)(SSL *ssl, int cmd, long larg, void *parg);
        int (*SSL_set1_host)(SSL *ssl, const char *hostname);
        int (*SSL_accept)(SSL *ssl);
        int (*SSL_connect)(SSL *ssl);
        int (*SSL_read)(SSL *ssl, void *buf, int num);
        int (*SSL_write)(SSL *ssl, const void *buf, int num);
        int (*SSL_shutdown)(SSL *ssl);
        int (*SSL_get_error)(const SSL *ssl, int ret);
        long (*SSL_get_verify_result)(const SSL *ssl);
        const char *(*SSL_get_servername)(const SSL *ssl, const int type);
        int (*SSL_select_next_proto)(unsigned char **out, unsigned char *outlen,
                                     const unsigned char *server, unsigned int server_len,
                                     const unsigned char *client, unsigned int client_len);
        /* libcrypto */
        EVP_PKEY *(*EVP_PKEY_Q_keygen)(OSSL_LIB_CTX *libctx, const char *propq, const char *type,
                                       ...);
        void (*EVP_PKEY_free)(EVP_PKEY *pkey);
        const EVP_MD *(*EVP_sha256)(void);
        X509 *(*X509_new)(void);
        void (*X509_free)(X509 *x);
        int (*X509_set_version)(X509 *x, long version);
        ASN1_INTEGER *(*X509_get_serialNumber)(X509 *x);
        int (*ASN1_INTEGER_set_uint64)(ASN1_INTEGER *a, uint64_t r);
        ASN1_TIME *(*X509_getm_notBefore)(const X509 *x);
        ASN1_TIME *(*X509_getm_notAfter)(const X509 *x);
        ASN1_TIME *(*X509_gmtime_adj)(ASN1_TIME *s, long adj);
        int (*X509_set_pubkey)(X509 *x, EVP_PKEY *pkey);
        X509_NAME *(*X509_get_subject_name)(const X509 *x);
        int (*X509_set_issuer_name)(X509 *x, const X509_NAME *name);
        int (*X509_NAME_add_entry_by_txt)(X509_NAME *name, const char *field, int type,
                                          const unsigned char *bytes, int len, int loc, int set);
        void (*X509V3_set_ctx)(X509V3_CTX *ctx, X509 *issuer, X509 *subject, X509_REQ *req,
                               X509_CRL *crl, int flags);
        X509_EXTENSION *(*X509V3_EXT_nconf_nid)(CONF *conf, X509V3_CTX *ctx, int ext_nid,
                                                const char *value);
        int (*X509_add_ext)(X509 *x, X509_EXTENSION *ex, int loc);
        void (*X509_EXTENSION_free)(X509_EXTENSION *ex);
        int (*X509_sign)(X509 *x, EVP_PKEY *pkey, const EVP_MD *md);
        const char *(*X509_verify_cert_error_string)(long n);
        BIO *(*BIO_new)(const BIO_METHOD *type);
        const BIO_METHOD *(*BIO_s_mem)(void);
        long (*BIO_ctrl)(BIO *bio, int cmd, long larg, void *parg);
        int (*BIO_free)(BIO *bio);
        int (*PEM_write_bio_X509)(BIO *bio, const X509 *x);
        int (*RAND_bytes)(unsigned char *buf, int num);
        unsigned long (*ERR_get_error)(void);
        void (*ERR_clear_error)(void);
        void (*ERR_error_string_n)(unsigned long e, char *buf, size_t len);
        const char *(*X509_get_default_cert_file)(void);
        const char *(*X509_get_default_cert_dir)(void);
        const char *(*X509_get_default_cert_file_env)(void);
        const char *(*X509_get_default_cert_dir_env)(void);
        const char *(*OpenSSL_version)(int type);
};

/* The table, loaded once; NULL when OpenSSL 3 cannot be loaded, with why (static text, or
 * dlerror's) in *ret_why. Thread-safe. */
const struct openssl_api *openssl_api_load(const char **ret_why);
/* The table once openssl_api_load has succeeded (for OpenSSL's callbacks, which carry no
 * pointer of ours but the SSL). */
const struct openssl_api *openssl_api(void);

#endif
