/* The head of a server's answer on its way to the guest (src/lib/egress/egress_answer.c): the
 * final head says "Connection: close" and nothing else about the connection, interim answers
 * pass as they are, the body is untouched however the bytes come, and a head too large to read
 * passes untouched. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "egress_answer.h"

/* Feeds text in pieces of step bytes (the server's writes), then the end; returns all that
 * went to the guest, NUL-terminated. */
static char *through(const char *text, size_t step)
{
        struct egress_answer *a = calloc(1, sizeof(*a));
        size_t len = strlen(text), done = 0, out_len = 0;
        char *all = calloc(1, len + 4096), *out = malloc(EGRESS_HEAD_MAX + EGRESS_ANSWER_GROWTH);
        while (done < len) {
                size_t room = egress_answer_room(a);
                size_t n = len - done < step ? len - done : step;
                if (!room) { /* passing: the caller relays the rest itself */
                        memcpy(all + out_len, text + done, len - done);
                        out_len += len - done;
                        break;
                }
                if (n > room)
                        n = room;
                memcpy(a->head + a->len, text + done, n);
                done += n;
                size_t got = egress_answer_feed(a, n, false, out);
                memcpy(all + out_len, out, got);
                out_len += got;
        }
        if (egress_answer_room(a)) {
                size_t got = egress_answer_feed(a, 0, true, out);
                memcpy(all + out_len, out, got);
                out_len += got;
        }
        all[out_len] = '\0';
        free(out);
        free(a);
        return all;
}

#define THROUGH(text, want)                                                                        \
        do {                                                                                       \
                for (size_t step = 1; step <= strlen(text); step = step * 3 + 1) {                 \
                        char *got = through(text, step);                                           \
                        if (strcmp(got, want) != 0) {                                              \
                                fprintf(stderr, "%s:%d: step %zu\n  got  %s\n  want %s\n",         \
                                        __FILE__, __LINE__, step, got, want);                      \
                                check_failures++;                                                  \
                        }                                                                          \
                        free(got);                                                                 \
                }                                                                                  \
        } while (0)

int main(void)
{
        /* Nothing said: "Connection: close" is added; the body is untouched. */
        THROUGH("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
        /* What the server said of the connection goes, in any case of letters. */
        THROUGH("HTTP/1.1 200 OK\r\nconnection: Keep-Alive\r\nKeep-Alive: timeout=5\r\n"
                "Proxy-Connection: keep-alive\r\nX-A: 1\r\n\r\nbody\r\n\r\nmore",
                "HTTP/1.1 200 OK\r\nX-A: 1\r\nConnection: close\r\n\r\nbody\r\n\r\nmore");
        /* A header that only starts like one of them stays. */
        THROUGH("HTTP/1.1 204 No Content\r\nConnectionX: 1\r\n\r\n",
                "HTTP/1.1 204 No Content\r\nConnectionX: 1\r\nConnection: close\r\n\r\n");
        /* Interim answers pass as they are; the final one after them is rewritten. */
        THROUGH("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                "HTTP/1.1 201 Created\r\nConnection: keep-alive\r\n\r\nok",
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                "HTTP/1.1 201 Created\r\nConnection: close\r\n\r\nok");
        /* A server that ends in the middle of its head: what it sent, as it is. */
        THROUGH("HTTP/1.1 200 OK\r\nContent-Le", "HTTP/1.1 200 OK\r\nContent-Le");

        /* A head too large to read passes untouched. */
        char *big = malloc(EGRESS_HEAD_MAX + 100);
        strcpy(big, "HTTP/1.1 200 OK\r\nX-Big: ");
        size_t n = strlen(big);
        memset(big + n, 'a', EGRESS_HEAD_MAX + 10 - n);
        strcpy(big + EGRESS_HEAD_MAX + 10, "\r\n\r\nz");
        char *got = through(big, 4096);
        CHECK(strcmp(got, big) == 0);
        free(got);
        free(big);
        CHECK_DONE();
}
