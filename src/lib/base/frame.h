/* The guest protocol's framing (DESIGN §5): a 4-byte big-endian length, then one JSON object. */
#ifndef CODECELL_FRAME_H
#define CODECELL_FRAME_H

#include <jansson.h>
#include <stddef.h>

#include "codecell.h"

struct frame_reader {
        unsigned char *buf;
        size_t len, cap;
        size_t max_frame; /* a larger declared length is a protocol error */
};

void frame_reader_init(struct frame_reader *r, size_t max_frame);
void frame_reader_free(struct frame_reader *r);
/* Appends bytes read from the socket. -ENOMEM on failure. */
int frame_reader_feed(struct frame_reader *r, const void *data, size_t n);
/* 1 and a new reference in *ret when a whole frame is buffered; 0 when more bytes are needed;
 * < 0 for a protocol error (oversize, not JSON, not an object with a string "t"), with the
 * reason in err. */
int frame_reader_next(struct frame_reader *r, json_t **ret, codecell_error *err);

/* The string member key of obj when it reads whole as a C string, else NULL: frames may carry
 * NUL bytes (\u0000) in strings, and a name such as "echo\u0000x" must not be taken for
 * "echo". */
const char *frame_string(const json_t *obj, const char *key);

/* Length prefix + compact JSON, malloc'd. */
int frame_encode(const json_t *obj, char **ret_buf, size_t *ret_len);
/* Writes a whole frame, waiting at most timeout_ms for the peer to read. */
int frame_send(int fd, const json_t *obj, int timeout_ms, codecell_error *err);
/* The same for a frame's JSON text, body[0..n), sent as it is. */
int frame_send_text(int fd, const char *body, size_t n, int timeout_ms, codecell_error *err);
/* The same, for the one who also reads fd: while the peer does not read, what it writes is
 * read into in (at most in_cap bytes buffered), since a peer may read its answers only after
 * it wrote all its requests (SB.parallel, asyncio.gather). Still at most timeout_ms. */
int frame_send_text_reading(int fd, const char *body, size_t n, int timeout_ms,
                            struct frame_reader *in, size_t in_cap, codecell_error *err);

#endif
