/* An execution's side of its cell's egress proxy (docs/network.md): the proxy serves the
 * sandbox's listener for the length of one execution, and its record of the connections goes
 * into the result. Nothing for a cell without a network policy. */
#ifndef CODECELL_RUN_NETWORK_H
#define CODECELL_RUN_NETWORK_H

#include <stdbool.h>

#include "codecell.h"
#include "config.h"

struct egress;
struct egress_tls;

/* Starts serving the sandbox's listener (proxy_fd, not taken) until deadline_ms, with the
 * cell's TLS termination (NULL: none). NULL when the
 * cell has no policy or the sandbox no listener; NULL with *ret_failed when it could not be
 * started (err says why: the run then ends as a sandbox_error, it never runs without its
 * proxy silently). */
struct egress *run_network_begin(const codecell_config *c, const struct egress_tls *tls,
                                 int proxy_fd, double deadline_ms, bool *ret_failed,
                                 codecell_error *err);
/* Ends it: every connection closed, the record taken into res. Takes e (NULL: nothing). */
void run_network_end(struct egress *e, codecell_result *res);

#endif
