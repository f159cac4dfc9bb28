#include "output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static bool continuation(unsigned char c)
{
        return (c & 0xC0) == 0x80;
}

size_t utf8_chars(const char *s, size_t len)
{
        size_t n = 0;
        for (size_t i = 0; i < len; i += utf8_char_len(s + i, len - i))
                n++;
        return n;
}

static uint64_t count_newlines(const char *s, size_t len)
{
        uint64_t n = 0;
        for (const char *p = s, *end = s + len; (p = memchr(p, '\n', (size_t)(end - p))); p++)
                n++;
        return n;
}

void output_init(struct output_buffer *b, size_t cap)
{
        *b = (struct output_buffer){.cap = cap};
}

void output_free(struct output_buffer *b)
{
        free(b->data);
        free(b->ring);
        b->data = b->ring = NULL;
        b->len = b->ring_len = b->allocated = 0;
}

/* Room for want bytes of head: doubled, so that output written a line at a time costs a few
 * reallocations and copies, not one per write (quadratic where realloc cannot grow in place,
 * as under a sanitizer's allocator); never more than the cap. -ENOMEM. */
static int head_reserve(struct output_buffer *b, size_t want)
{
        if (want <= b->allocated)
                return 0;
        size_t size = b->allocated ? b->allocated : 4096;
        while (size < want)
                size = size > SIZE_MAX / 2 ? want : size * 2;
        if (size > b->cap)
                size = want > b->cap ? want : b->cap;
        char *grown = realloc(b->data, size);
        if (!grown)
                return -ENOMEM;
        b->data = grown;
        b->allocated = size;
        return 0;
}

static size_t ring_cap(const struct output_buffer *b)
{
        return b->cap - b->cap / 2;
}

/* Keeps the last ring_cap bytes ever pushed; ring_pos is the oldest. */
static void ring_push(struct output_buffer *b, const char *p, size_t n)
{
        size_t rc = ring_cap(b);
        if (rc == 0 || n == 0)
                return;
        if (n >= rc) {
                memcpy(b->ring, p + n - rc, rc);
                b->ring_pos = 0;
                b->ring_len = rc;
                return;
        }
        size_t end = (b->ring_pos + b->ring_len) % rc;
        size_t first = n < rc - end ? n : rc - end;
        memcpy(b->ring + end, p, first);
        memcpy(b->ring, p + first, n - first);
        size_t grown = b->ring_len + n;
        if (grown > rc) {
                b->ring_pos = (b->ring_pos + grown - rc) % rc;
                b->ring_len = rc;
        } else {
                b->ring_len = grown;
        }
}

int output_append(struct output_buffer *b, const char *data, size_t n)
{
        if (n == 0 || b->finished)
                return 0;
        b->total += n;
        b->lines += count_newlines(data, n);
        if (!b->truncated && n <= b->cap - b->len) {
                if (head_reserve(b, b->len + n) < 0)
                        return -ENOMEM;
                memcpy(b->data + b->len, data, n);
                b->len += n;
                return 0;
        }
        if (!b->truncated) {
                /* Over the cap for the first time: the first half stays the head, and what
                 * came after it starts the tail. */
                size_t half = b->cap / 2, rc = ring_cap(b);
                if (rc > 0 && !(b->ring = malloc(rc)))
                        return -ENOMEM;
                b->truncated = true;
                if (b->len > half) {
                        ring_push(b, b->data + half, b->len - half);
                        b->len = half;
                } else if (b->len < half) {
                        /* The head is filled first from what came now. */
                        size_t take = half - b->len;
                        if (head_reserve(b, half) < 0)
                                return -ENOMEM;
                        memcpy(b->data + b->len, data, take);
                        b->len = half;
                        data += take;
                        n -= take;
                }
        }
        ring_push(b, data, n);
        return 0;
}

int output_finish(struct output_buffer *b)
{
        if (b->finished)
                return 0;
        b->finished = true;
        if (!b->truncated) {
                b->head = b->len;
                return 0;
        }
        char *tail = malloc(b->ring_len + 1);
        if (!tail)
                return -ENOMEM;
        size_t rc = ring_cap(b);
        for (size_t i = 0; i < b->ring_len; i++)
                tail[i] = b->ring[(b->ring_pos + i) % rc];
        size_t len = 0;
        char *kept =
                excerpt_make(b->data ? b->data : "", b->len, tail, b->ring_len, b->total, b->lines,
                             b->cap, EXCERPT_BYTES, &len, &b->head, &b->tail, &(bool){0});
        free(tail);
        if (!kept)
                return -ENOMEM;
        free(b->data);
        free(b->ring);
        b->ring = NULL;
        b->data = kept;
        b->len = len;
        b->allocated = len;
        return 0;
}

/* The bytes of the longest start of s[0..n) within budget units, ending between characters. */
static size_t prefix_within(const char *s, size_t n, size_t budget, enum excerpt_unit unit)
{
        if (unit == EXCERPT_BYTES) {
                /* Back to a character's first byte: at most 3 bytes (a run of stray
                 * continuation bytes is not one character). */
                size_t k = n < budget ? n : budget, cut = k;
                while (k > 0 && k < n && cut - k < 3 && continuation((unsigned char)s[k]))
                        k--;
                return k < n && continuation((unsigned char)s[k]) ? cut : k;
        }
        size_t i = 0;
        for (size_t chars = 0; i < n && chars < budget; chars++)
                i += utf8_char_len(s + i, n - i);
        return i;
}

/* Where the longest end of s[0..n) within budget units starts, on a character. */
static size_t suffix_within(const char *s, size_t n, size_t budget, enum excerpt_unit unit)
{
        if (unit == EXCERPT_BYTES) {
                size_t st = n > budget ? n - budget : 0, cut = st;
                while (st < n && st - cut < 3 && continuation((unsigned char)s[st]))
                        st++;
                return st < n && continuation((unsigned char)s[st]) ? cut : st;
        }
        /* Characters are found from the start: an invalid byte is one (utf8_char_len). */
        size_t chars = utf8_chars(s, n), st = 0;
        for (size_t skip = chars > budget ? chars - budget : 0; skip > 0; skip--)
                st += utf8_char_len(s + st, n - st);
        return st;
}

static size_t units(const char *s, size_t n, enum excerpt_unit unit)
{
        return unit == EXCERPT_BYTES ? n : utf8_chars(s, n);
}

/* 199700 -> "199,700". */
static void grouped(char *out, size_t size, uint64_t n)
{
        char digits[24];
        int len = snprintf(digits, sizeof(digits), "%" PRIu64, n);
        size_t o = 0;
        for (int i = 0; i < len && o + 2 < size; i++) {
                if (i > 0 && (len - i) % 3 == 0)
                        out[o++] = ',';
                out[o++] = digits[i];
        }
        out[o] = '\0';
}

static void human_bytes(char *out, size_t size, uint64_t n)
{
        if (n < 1000)
                snprintf(out, size, "%" PRIu64 " byte%s", n, n == 1 ? "" : "s");
        else if (n < 1000 * 1000)
                snprintf(out, size, "%.1f kB", (double)n / 1e3);
        else if (n < 1000ULL * 1000 * 1000)
                snprintf(out, size, "%.1f MB", (double)n / 1e6);
        else
                snprintf(out, size, "%.1f GB", (double)n / 1e9);
}

char *excerpt_make(const char *head, size_t head_len, const char *tail, size_t tail_len,
                   uint64_t total, uint64_t lines, size_t budget, enum excerpt_unit unit,
                   size_t *ret_len, size_t *ret_head, size_t *ret_tail, bool *ret_cut)
{
        bool whole = head_len == total;
        if (whole && units(head, head_len, unit) <= budget) {
                char *copy = malloc(head_len + 1);
                if (copy) {
                        memcpy(copy, head, head_len);
                        copy[head_len] = '\0';
                        *ret_len = *ret_head = head_len;
                        *ret_tail = 0;
                        *ret_cut = false;
                }
                return copy;
        }
        /* The head: half the budget, ending after a newline in its second half if any. */
        size_t h = prefix_within(head, head_len, budget / 2, unit);
        /* A head that is only the start of the text (the buffer kept the first half of its
         * cap, wherever that fell) may end inside a character whose rest was not kept. */
        if (!whole && h == head_len)
                h = utf8_complete_len(head, h);
        if (h < total) {
                const char *nl = h ? memrchr(head, '\n', h) : NULL;
                if (nl && (size_t)(nl - head + 1) * 2 >= h)
                        h = (size_t)(nl - head) + 1;
        }
        /* The tail: the rest of the budget (the end is where the error is), starting after a
         * newline in its first half if any. */
        size_t rest = budget - units(head, h, unit);
        size_t st = suffix_within(tail, tail_len, rest, unit);
        if (whole && st < h)
                st = h;
        if ((st > 0 || !whole) && st < tail_len) {
                const char *nl = memchr(tail + st, '\n', tail_len - st);
                if (nl && (size_t)(nl - (tail + st) + 1) * 2 <= tail_len - st)
                        st = (size_t)(nl - tail) + 1;
        }
        size_t t = tail_len - st;
        uint64_t omitted = total - h - t;
        uint64_t omitted_lines = lines - count_newlines(head, h) - count_newlines(tail + st, t);
        char size_text[32], lines_text[48] = "";
        human_bytes(size_text, sizeof(size_text), omitted);
        if (omitted_lines > 0) {
                char n[32];
                grouped(n, sizeof(n), omitted_lines);
                snprintf(lines_text, sizeof(lines_text), "%s line%s, ", n,
                         omitted_lines == 1 ? "" : "s");
        }
        char marker[128];
        int m = snprintf(marker, sizeof(marker), "%s[… %s%s omitted …]\n",
                         h > 0 && head[h - 1] != '\n' ? "\n" : "", lines_text, size_text);
        char *out = malloc(h + (size_t)m + t + 1);
        if (!out)
                return NULL;
        memcpy(out, head, h);
        memcpy(out + h, marker, (size_t)m);
        memcpy(out + h + (size_t)m, tail + st, t);
        out[h + (size_t)m + t] = '\0';
        *ret_len = h + (size_t)m + t;
        *ret_head = h;
        *ret_tail = t;
        *ret_cut = true;
        return out;
}

char *output_excerpt(const struct output_buffer *b, size_t budget, size_t *ret_len, bool *ret_cut)
{
        const char *data = b->data ? b->data : "";
        size_t head, tail;
        if (!b->truncated)
                return excerpt_make(data, b->len, data, b->len, b->len, b->lines, budget,
                                    EXCERPT_CHARS, ret_len, &head, &tail, ret_cut);
        char *text = excerpt_make(data, b->head, data + b->len - b->tail, b->tail, b->total,
                                  b->lines, budget, EXCERPT_CHARS, ret_len, &head, &tail, ret_cut);
        if (text)
                *ret_cut = true;
        return text;
}
