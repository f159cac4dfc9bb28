#include "openssl_api.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#include "dynlib.h"

static struct openssl_api api;
static const struct openssl_api *loaded;
static const char *load_error = "OpenSSL was not loaded";
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
        static const struct dynlib_symbol symbols[] = {
#define SYMBOL(name) DYNLIB_SYMBOL(struct openssl_api, name, #name)
                SYMBOL(TLS_server_method),
                SYMBOL(TLS_client_method),
                SYMBOL(SSL_CTX_new),
                SYMBOL(SSL_CTX_free),
                SYMBOL(SSL_CTX_ctrl),
                SYMBOL(SSL_CTX_set_options),
                SYMBOL(SSL_CTX_set_verify),
                SYMBOL(SSL_CTX_set_default_verify_paths),
                SYMBOL(SSL_CTX_load_verify_locations),
                SYMBOL(SSL_CTX_set_alpn_select_cb),
                SYMBOL(SSL_CTX_set_alpn_protos),
                SYMBOL(SSL_CTX_use_certificate),
                SYMBOL(SSL_CTX_use_PrivateKey),
                SYMBOL(SSL_CTX_check_private_key),
                SYMBOL(SSL_CTX_sess_set_new_cb),
                SYMBOL(SSL_new),
                SYMBOL(SSL_set_ex_data),
                SYMBOL(SSL_get_ex_data),
                SYMBOL(SSL_set_session),
                SYMBOL(SSL_SESSION_free),
                SYMBOL(SSL_SESSION_is_resumable),
                SYMBOL(SSL_free),
                SYMBOL(SSL_set_fd),
                SYMBOL(SSL_ctrl),
                SYMBOL(SSL_set1_host),
                SYMBOL(SSL_accept),
                SYMBOL(SSL_connect),
                SYMBOL(SSL_read),
                SYMBOL(SSL_write),
                SYMBOL(SSL_shutdown),
                SYMBOL(SSL_get_error),
                SYMBOL(SSL_get_verify_result),
                SYMBOL(SSL_get_servername),
                SYMBOL(SSL_select_next_proto),
                SYMBOL(EVP_PKEY_Q_keygen),
                SYMBOL(EVP_PKEY_free),
                SYMBOL(EVP_sha256),
                SYMBOL(X509_new),
                SYMBOL(X509_free),
                SYMBOL(X509_set_version),
                SYMBOL(X509_get_serialNumber),
                SYMBOL(ASN1_INTEGER_set_uint64),
                SYMBOL(X509_getm_notBefore),
                SYMBOL(X509_getm_notAfter),
                SYMBOL(X509_gmtime_adj),
                SYMBOL(X509_set_pubkey),
                SYMBOL(X509_get_subject_name),
                SYMBOL(X509_set_issuer_name),
                SYMBOL(X509_NAME_add_entry_by_txt),
                SYMBOL(X509V3_set_ctx),
                SYMBOL(X509V3_EXT_nconf_nid),
                SYMBOL(X509_add_ext),
                SYMBOL(X509_EXTENSION_free),
                SYMBOL(X509_sign),
                SYMBOL(X509_verify_cert_error_string),
                SYMBOL(BIO_new),
                SYMBOL(BIO_s_mem),
                SYMBOL(BIO_ctrl),
                SYMBOL(BIO_free),
                SYMBOL(PEM_write_bio_X509),
                SYMBOL(RAND_bytes),
                SYMBOL(ERR_get_error),
                SYMBOL(ERR_clear_error),
                SYMBOL(ERR_error_string_n),
                SYMBOL(X509_get_default_cert_file),
                SYMBOL(X509_get_default_cert_dir),
                SYMBOL(X509_get_default_cert_file_env),
                SYMBOL(X509_get_default_cert_dir_env),
                SYMBOL(OpenSSL_version),
#undef SYMBOL
        };
        const char *why = NULL;
        /* libssl.so.3 brings libcrypto.so.3 with it, and dlsym on its handle finds both. */
        int r = dynlib_load("libssl.so.3", symbols, sizeof(symbols) / sizeof(symbols[0]), &api,
                            &why);
        if (r == -ENOSYS)
                why = "libssl.so.3 lacks a function codecell needs (OpenSSL 3.0 or later)";
        if (r < 0) {
                load_error = why;
                return;
        }
        loaded = &api;
}

const struct openssl_api *openssl_api_load(const char **ret_why)
{
        pthread_once(&once, load);
        if (!loaded && ret_why)
                *ret_why = load_error;
        return loaded;
}

const struct openssl_api *openssl_api(void)
{
        return loaded;
}
