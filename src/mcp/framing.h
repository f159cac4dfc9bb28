/* Whether an HTTP/1.1 request's framing is unambiguous (RFC 9112 §6, RFC 9110 §5.5), judged from
 * its header lines as libmicrohttpd parsed them, before any of its body is read. A proxy in front
 * and this server must agree on where each request ends: a request whose length two parsers could
 * read differently is refused and its connection closed, so that no request can hide in its body
 * (request smuggling). Pure: no libmicrohttpd, so a fuzzer reaches it alone. */
#ifndef CODECELL_MCP_FRAMING_H
#define CODECELL_MCP_FRAMING_H

#include <stdbool.h>
#include <stddef.h>

struct framing {
        unsigned content_lengths, transfer_encodings;
        bool chunked;     /* the one Transfer-Encoding is exactly "chunked" */
        const char *why;  /* the first fault found, NULL while there is none */
        unsigned repeats; /* bit i: a header of framing.c's single[] table seen once already */
};

/* Looks at one header line (name and value as libmicrohttpd stored them, with their sizes). */
void framing_note(struct framing *f, const char *name, size_t name_len, const char *value,
                  size_t value_len);

/* 0 when the request may be read, else the status to refuse it with (400), and why. Every
 * refusal must close the connection: what follows is not known to be a request. */
unsigned framing_verdict(const struct framing *f, bool http_1_0, const char **ret_why);

#endif
