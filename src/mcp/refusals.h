/* Requests codecell serve turned away before any code ran: counted for GET /metrics
 * (codecell_refusals_total{reason}) and written to the operator's log. */
#ifndef CODECELL_MCP_REFUSALS_H
#define CODECELL_MCP_REFUSALS_H

#include <stdio.h>

enum refusal {
        REFUSAL_UNAUTHORIZED, /* no or a wrong bearer token */
        REFUSAL_FORBIDDEN,    /* a Host or Origin this server does not answer to */
        REFUSAL_TOO_LARGE,    /* a body over --max-body */
        REFUSAL_BUSY,         /* --max-runs or --max-sessions reached */
        REFUSAL_BAD_REQUEST,  /* anything else malformed: method, headers, session id, params */
        REFUSAL__COUNT
};

/* Counts one and logs it (event "refused", with the reason and why). Thread-safe. */
void refusal_note(enum refusal reason, const char *why);
/* The HTTP status's reason. */
enum refusal refusal_of_http_status(unsigned status);
void refusals_render(FILE *f);

#endif
