#include "frame.h"

#include <errno.h>
#include <stdbool.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "deadline.h"
#include "error.h"
#include "util.h"

void frame_reader_init(struct frame_reader *r, size_t max_frame)
{
        *r = (struct frame_reader){.max_frame = max_frame};
}

void frame_reader_free(struct frame_reader *r)
{
        free(r->buf);
        *r = (struct frame_reader){0};
}

int frame_reader_feed(struct frame_reader *r, const void *data, size_t n)
{
        if (n == 0)
                return 0;
        if (r->len + n > r->cap) {
                size_t cap = r->cap ? r->cap : 4096;
                while (cap < r->len + n)
                        cap *= 2;
                unsigned char *grown = realloc(r->buf, cap);
                if (!grown)
                        return -ENOMEM;
                r->buf = grown;
                r->cap = cap;
        }
        memcpy(r->buf + r->len, data, n);
        r->len += n;
        return 0;
}

int frame_reader_next(struct frame_reader *r, json_t **ret, codecell_error *err)
{
        *ret = NULL;
        if (r->len < 4)
                return 0;
        uint32_t size = (uint32_t)r->buf[0] << 24 | (uint32_t)r->buf[1] << 16 |
                        (uint32_t)r->buf[2] << 8 | (uint32_t)r->buf[3];
        if (size > r->max_frame)
                return err_set(err, CODECELL_ERR_INVALID, EMSGSIZE,
                               "frame of %u bytes is over the %zu-byte limit", size, r->max_frame);
        if (size == 0)
                return err_set(err, CODECELL_ERR_INVALID, EBADMSG, "empty frame");
        if (r->len < 4 + (size_t)size)
                return 0;
        json_error_t jerr;
        json_t *obj = json_loadb((const char *)r->buf + 4, size,
                                 JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        memmove(r->buf, r->buf + 4 + size, r->len - 4 - size);
        r->len -= 4 + (size_t)size;
        if (!obj)
                return err_set(err, CODECELL_ERR_INVALID, EBADMSG, "frame is not valid JSON: %s",
                               jerr.text);
        if (!json_is_object(obj) || !frame_string(obj, "t")) {
                json_decref(obj);
                return err_set(err, CODECELL_ERR_INVALID, EBADMSG,
                               "frame is not an object with a string \"t\" (without NUL bytes)");
        }
        *ret = obj;
        return 1;
}

const char *frame_string(const json_t *obj, const char *key)
{
        const json_t *s = json_object_get(obj, key);
        const char *text = json_string_value(s);
        return text && !memchr(text, '\0', json_string_length(s)) ? text : NULL;
}

int frame_encode(const json_t *obj, char **ret_buf, size_t *ret_len)
{
        _cleanup_free_ char *body = json_dumps(obj, JSON_COMPACT);
        if (!body)
                return -ENOMEM;
        size_t n = strlen(body);
        if (n > UINT32_MAX)
                return -EMSGSIZE;
        char *buf = malloc(n + 4);
        if (!buf)
                return -ENOMEM;
        buf[0] = (char)(n >> 24);
        buf[1] = (char)(n >> 16);
        buf[2] = (char)(n >> 8);
        buf[3] = (char)n;
        memcpy(buf + 4, body, n);
        *ret_buf = buf;
        *ret_len = n + 4;
        return 0;
}

int frame_send(int fd, const json_t *obj, int timeout_ms, codecell_error *err)
{
        _cleanup_free_ char *body = json_dumps(obj, JSON_COMPACT);
        if (!body)
                return err_sys(err, ENOMEM, "encode frame");
        return frame_send_text(fd, body, strlen(body), timeout_ms, err);
}

int frame_send_text(int fd, const char *body, size_t n, int timeout_ms, codecell_error *err)
{
        return frame_send_text_reading(fd, body, n, timeout_ms, NULL, 0, err);
}

/* Reads what the peer wrote into in, at most in_cap bytes buffered. 1 when something came,
 * 0 when nothing or the peer stopped writing (*eof), < 0 when in is full or on an error. */
static int take_input(int fd, struct frame_reader *in, size_t in_cap, bool *eof)
{
        unsigned char buf[65536];
        size_t room = in_cap > in->len ? in_cap - in->len : 0;
        if (room == 0)
                return -ENOBUFS;
        ssize_t k = read(fd, buf, room < sizeof(buf) ? room : sizeof(buf));
        if (k < 0)
                return errno == EINTR || errno == EAGAIN ? 0 : -errno;
        if (k == 0) {
                *eof = true;
                return 0;
        }
        int r = frame_reader_feed(in, buf, (size_t)k);
        return r < 0 ? r : 1;
}

int frame_send_text_reading(int fd, const char *body, size_t n, int timeout_ms,
                            struct frame_reader *in, size_t in_cap, codecell_error *err)
{
        if (n > UINT32_MAX)
                return err_sys(err, EMSGSIZE, "encode frame");
        unsigned char header[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                                   (unsigned char)(n >> 8), (unsigned char)n};
        double deadline = now_ms() + timeout_ms;
        size_t sent = 0, len = n + 4;
        bool eof = in == NULL; /* nothing to read into: wait only to write */
        while (sent < len) {
                /* MSG_NOSIGNAL: a guest that died must not take the engine down with SIGPIPE.
                 * The header and the body are sent apart (a stream: the guest reads them as
                 * one), so that a body of megabytes is not copied. */
                ssize_t k = sent < 4
                                    ? send(fd, header + sent, 4 - sent, MSG_NOSIGNAL | MSG_DONTWAIT)
                                    : send(fd, body + (sent - 4), len - sent,
                                           MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k >= 0) {
                        sent += (size_t)k;
                        continue;
                }
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN)
                        return err_sys(err, errno, "send frame");
                int left = deadline_poll_ms(deadline);
                if (left == 0)
                        return err_set(err, CODECELL_ERR_SYSTEM, ETIMEDOUT,
                                       "the guest did not read its frame in time");
                struct pollfd p = {.fd = fd, .events = POLLOUT | (eof ? 0 : POLLIN)};
                if (poll(&p, 1, left) <= 0 || !(p.revents & POLLIN))
                        continue;
                /* A guest still writing its calls reads their answers after: take what it
                 * writes meanwhile, so that neither side waits for the other. */
                int r = take_input(fd, in, in_cap, &eof);
                if (r < 0)
                        return err_set(err, CODECELL_ERR_SYSTEM, -r,
                                       "the guest wrote more than %zu bytes without reading "
                                       "its answers",
                                       in_cap);
        }
        return 0;
}
