/* The two ways `codecell serve` talks MCP. Each returns when told to stop (end of input, or a
 * signal read from signal_fd, a signalfd for SIGTERM and SIGINT) after every run has ended. */
#ifndef CODECELL_MCP_TRANSPORTS_H
#define CODECELL_MCP_TRANSPORTS_H

#include <stddef.h>
#include <stdint.h>

#include "mcp.h"

/* Messages over max_message bytes are refused with a parse error. 0 or < 0 (-errno). */
int mcp_serve_stdio(struct mcp_server *server, int in_fd, int out_fd, size_t max_message,
                    int signal_fd);

struct http_options {
        const char *address; /* "127.0.0.1:8080", "[::1]:8080", "0.0.0.0:8080" */
        /* > 0: a socket listening on address already (systemd's); else address is bound. */
        int listen_fd;
        const char **allowed_hosts;   /* extra Host values (host[:port]), NULL-terminated */
        const char **allowed_origins; /* extra Origin values, NULL-terminated */
        /* Bearer tokens, NULL-terminated, or NULL for none. Each is one authorization context:
         * an MCP session, and the code sessions of 2026-07-28 requests, belong to the token
         * that opened them. */
        const char **tokens;
        /* Origins whose pages may call the server from a browser (CORS; "*" for any),
         * NULL-terminated; NULL or empty: none. */
        const char **cors_origins;
        size_t max_body; /* request body cap in bytes */
        /* A connection whose requests have not passed the bearer token is closed this long
         * after its accept; at most max_connections at once (half of them without a token),
         * at most max_connections_per_address from one address (0: no such cap). */
        uint64_t header_timeout_ms;
        unsigned max_connections;
        unsigned max_connections_per_address;
        uint64_t client_idle_ms; /* an MCP session unused this long is ended */
        /* SIGTERM drains this long at most: new work is refused with 503 while the requests in
         * flight finish (0: SIGTERM stops at once, cancelling them, as SIGINT does). */
        uint64_t drain_ms;
        /* Called once the socket listens, with the port it got (for --http 127.0.0.1:0). */
        void (*listening)(unsigned port, void *userdata);
        void *userdata;
};

int mcp_serve_http(struct mcp_server *server, const struct http_options *o, int signal_fd);

#endif
