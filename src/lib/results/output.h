/* What a run wrote to stdout or stderr, kept within a cap as its head and its tail, and
 * excerpts of a text cut in the middle for a reader with a budget (the model). A script that
 * prints 200,000 lines and then fails keeps its first lines and its error, with a marker
 * between them that says how much was left out. */
#ifndef CODECELL_OUTPUT_H
#define CODECELL_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct output_buffer {
        /* While writing: the head. After output_finish: what is kept, i.e. all of it, or the
         * head, a marker and the tail. */
        char *data;
        size_t len;
        size_t allocated; /* data's size while writing: grown by doubling, never past cap */
        size_t cap;       /* bytes kept at most, the marker aside */
        char *ring;       /* once the head is full: the last bytes, circular */
        size_t ring_len, ring_pos;
        uint64_t total; /* bytes written */
        uint64_t lines; /* newlines written */
        bool truncated; /* more was written than kept */
        bool finished;
        /* After output_finish of a truncated buffer: data[0..head) is the head and
         * data[len - tail..len) the tail; the marker is between them. */
        size_t head, tail;
};

void output_init(struct output_buffer *b, size_t cap);
/* Keeps what fits under the cap: the first half, and the last bytes written. -ENOMEM. */
int output_append(struct output_buffer *b, const char *data, size_t n);
/* Puts the head, the marker and the tail together in data (cut on line and character
 * boundaries). Idempotent. -ENOMEM. */
int output_finish(struct output_buffer *b);
void output_free(struct output_buffer *b);

/* How a budget is counted. */
enum excerpt_unit { EXCERPT_BYTES, EXCERPT_CHARS };

/* The piece of a text that a reader with `budget` units gets: all of it when it fits, else
 * its start and its end (each about half the budget, cut after a newline when one is near,
 * never inside a UTF-8 character) joined by "[… 199,700 lines, 3.4 MB omitted …]".
 * head[0..head_len) and tail[0..tail_len) are the known start and end of the text (the same
 * bytes when the text is whole); total and lines describe the whole text. Returns the
 * excerpt (NUL-terminated, *ret_len bytes; *ret_cut says whether anything was left out) and,
 * in *ret_head and *ret_tail, the bytes of the text it kept on each side; NULL when out of
 * memory. */
char *excerpt_make(const char *head, size_t head_len, const char *tail, size_t tail_len,
                   uint64_t total, uint64_t lines, size_t budget, enum excerpt_unit unit,
                   size_t *ret_len, size_t *ret_head, size_t *ret_tail, bool *ret_cut);

/* An excerpt of a finished buffer for a reader with budget characters. */
char *output_excerpt(const struct output_buffer *b, size_t budget, size_t *ret_len, bool *ret_cut);

/* Characters in s[0..len) as the model reads them: a byte utf8_sanitize replaces is one. */
size_t utf8_chars(const char *s, size_t len);

#endif
