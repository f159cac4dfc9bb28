/* The server name a TLS ClientHello asks for (RFC 8446 4.1.2, RFC 6066 3): a tunnel to port
 * 443 opened for one host must not carry a handshake for another, which a server shared by
 * many names (a CDN) would answer; for the same reason an Encrypted Client Hello, whose real
 * name is hidden, is refused. Only the first record is read, and the hello must be whole
 * in it: a hello split over records, or without a host_name, is refused rather than guessed.
 * Who includes it: the egress wing only. */
#ifndef CODECELL_EGRESS_SNI_H
#define CODECELL_EGRESS_SNI_H

#include <stddef.h>
#include <stdint.h>

#include "egress_host.h"

/* The largest record a ClientHello may come in: a TLS record's plaintext limit and header. */
#define EGRESS_HELLO_MAX (16384 + 5)

/* buf[0..len): the first bytes the guest sent in the tunnel. 1 with the normalized name in out;
 * 0 when more bytes are needed (fewer than the record's length); -1 with *ret_why when it is
 * not a ClientHello with exactly one host_name that is a valid name. */
int egress_client_hello_sni(const uint8_t *buf, size_t len, char out[EGRESS_HOST_MAX],
                            const char **ret_why);

/* The *ret_why of a whole, well-formed ClientHello that names no server: what every client
 * sends for an address (RFC 6066 allows names only), which the caller may take for one. */
extern const char egress_sni_none[];

#endif
