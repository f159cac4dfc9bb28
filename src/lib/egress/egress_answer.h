/* The head of a server's answer on its way to the guest, for a request the proxy sent on
 * itself (plain HTTP, or inside a terminated tunnel): the proxy closes such a connection after
 * one answer, and says so with "Connection: close", whatever the server said. A guest's client
 * that took the connection for a kept one would send its next request into a closing socket,
 * and lose it (a POST is not retried). Interim answers (1xx) pass as they are; the final one
 * loses its Connection, Keep-Alive and Proxy-Connection headers and gets "Connection: close";
 * the body after it passes untouched. A head over EGRESS_HEAD_MAX passes untouched too (the
 * guest's client then decides). Who includes it: the egress wing only. */
#ifndef CODECELL_EGRESS_ANSWER_H
#define CODECELL_EGRESS_ANSWER_H

#include <stdbool.h>
#include <stddef.h>

#include "egress_http.h"

/* What the rewritten head may add to what was read: "Connection: close\r\n". */
#define EGRESS_ANSWER_GROWTH 32

struct egress_answer {
        char head[EGRESS_HEAD_MAX];
        size_t len;   /* bytes of head held, not yet passed on */
        bool passing; /* the final head is through: the rest goes as it comes */
};

/* Where the next bytes of the server's answer go while the head is not through: into
 * a->head + a->len, at most the size returned (0 once passing). */
size_t egress_answer_room(const struct egress_answer *a);
/* After n more bytes were read into the room: what may go to the guest now, written into out
 * (at least EGRESS_HEAD_MAX + EGRESS_ANSWER_GROWTH bytes). Returns its length (0: more of the
 * head is needed). With at_end (the server has ended), whatever is held goes as it is. */
size_t egress_answer_feed(struct egress_answer *a, size_t n, bool at_end, char *out);

#endif
