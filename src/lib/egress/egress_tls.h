/* TLS termination for the hosts of a cell that have headers (a policy with "terminate_tls"):
 * the secrets of "headers" reach an HTTPS server without ever entering the sandbox. The cell
 * has a CA of its own, made when the cell is built, which signs a certificate for each of those
 * hosts and whose key is then erased (it never leaves egress_tls_new); the guest trusts its
 * certificate (egress_tls_ca_pem, installed in the sandbox with the system's
 * roots). A CONNECT to such a host is answered by the engine with a certificate for that host
 * signed by that CA; the engine then speaks TLS to the real host, verifying its certificate
 * against the system's store (OpenSSL's default paths: SSL_CERT_FILE and SSL_CERT_DIR of the
 * engine's environment, else the distribution's bundle) and its name. The CA is
 * name-constrained to those hosts: a copy of it could vouch for nothing else.
 *
 * A terminated side is non-blocking: each call does what the socket allows now and says what
 * it waits for. Thread-safe: any number of connections of the cell at once.
 * Who includes it: the egress wing (its proxy) and the run wing (which makes one per cell). */
#ifndef CODECELL_EGRESS_TLS_H
#define CODECELL_EGRESS_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "codecell.h"
#include "egress_policy.h"

struct egress_tls;
struct egress_tls_side;

/* Whether this host can terminate TLS (OpenSSL 3 loads): its version ("OpenSSL 3.0.19 ...")
 * or NULL with *ret_why. For `codecell check`. */
const char *egress_tls_library(const char **ret_why);

/* The CA and a certificate for each host of p's headers. NULL with err when OpenSSL cannot be
 * loaded (CODECELL_ERR_UNSUPPORTED) or a step fails. p must outlive it. */
struct egress_tls *egress_tls_new(const struct egress_policy *p, codecell_error *err);
void egress_tls_free(struct egress_tls *t);
/* The CA's certificate, PEM: what the guest must trust. */
const char *egress_tls_ca_pem(const struct egress_tls *t);
/* The system's bundle of roots (OpenSSL's default file) with the CA's certificate after it:
 * the sandbox's trust store. malloc'd, *ret_len bytes; NULL when out of memory. */
char *egress_tls_bundle(const struct egress_tls *t, size_t *ret_len);
/* Whether a CONNECT to host (normalized) is terminated. */
bool egress_tls_terminates(const struct egress_tls *t, const char *host);

enum egress_tls_status {
        EGRESS_TLS_OK,         /* done (bytes moved, handshake finished) */
        EGRESS_TLS_WANT_READ,  /* call again once the socket is readable */
        EGRESS_TLS_WANT_WRITE, /* call again once the socket is writable */
        EGRESS_TLS_EOF,        /* the peer ended the stream */
        EGRESS_TLS_ERROR,      /* failed: egress_tls_why says why */
};

/* The guest's side of a terminated CONNECT to host, on fd (a connected, non-blocking socket,
 * still the caller's), or NULL. */
struct egress_tls_side *egress_tls_guest_side(const struct egress_tls *t, const char *host, int fd);
/* The server's side: TLS to host on fd, its certificate verified for host. Or NULL. */
struct egress_tls_side *egress_tls_server_side(const struct egress_tls *t, const char *host,
                                               int fd);
enum egress_tls_status egress_tls_handshake(struct egress_tls_side *s);
/* Up to n bytes: OK with *ret_n > 0, or another status. */
enum egress_tls_status egress_tls_read(struct egress_tls_side *s, void *buf, size_t n,
                                       size_t *ret_n);
/* Some of buf[0..n): OK with *ret_n > 0 taken; the rest is to be offered again. */
enum egress_tls_status egress_tls_write(struct egress_tls_side *s, const void *buf, size_t n,
                                        size_t *ret_n);
/* The server name the guest's hello asked for, or NULL (after the handshake). */
const char *egress_tls_server_name(const struct egress_tls_side *s);
/* Why the last call failed, for a model to act on. */
const char *egress_tls_why(const struct egress_tls_side *s);
/* Sends close_notify as far as the socket takes it now, and frees (the fd stays open). NULL
 * is fine. */
void egress_tls_side_free(struct egress_tls_side *s);

#endif
