/* Small helpers shared by the engine: clocks, files, UTF-8. */
#ifndef CODECELL_UTIL_H
#define CODECELL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A malloc'd string from a printf format, or NULL when out of memory. */
char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* CLOCK_MONOTONIC in milliseconds (fractional). */
double now_ms(void);

/* Writes the whole string to an existing file (cgroupfs control files). 0 or -errno. */
int write_file(const char *path, const char *text);
/* Writes all n bytes to fd, again after EINTR and short writes. 0, or -1 with errno. */
int write_all(int fd, const void *data, size_t n);
/* Reads at most size-1 bytes of a file into buf, NUL-terminated. Bytes read or -errno. */
ssize_t read_file(const char *path, char *buf, size_t size);

bool utf8_valid(const char *s, size_t len);
/* The bytes of the character at s (left > 0) as a reader of utf8_sanitize's text counts it: a
 * valid sequence's, else 1 (an invalid byte, which becomes one U+FFFD, or a NUL). */
size_t utf8_char_len(const char *s, size_t left);
/* A copy of s in which every invalid UTF-8 sequence and every NUL byte becomes U+FFFD, so the
 * bytes can go into a JSON string. NULL when out of memory. */
char *utf8_sanitize(const char *s, size_t len, size_t *ret_len);
/* The same, but NUL bytes stay: they are valid UTF-8, and JSON carries them as \u0000. For
 * json_stringn and other counted strings only, never where a C string is read. */
char *utf8_sanitize_keep_nul(const char *s, size_t len, size_t *ret_len);
/* The length of the longest prefix of s[0..len) that is at most max bytes long and does not end
 * inside a UTF-8 character. */
size_t utf8_cut(const char *s, size_t len, size_t max);
/* The same for the NUL-terminated s that is at most max bytes long and
 * does not end inside a UTF-8 character: the precision to give "%.*s" in place of "%.Ns", which
 * counts bytes and would cut a character in half (and a JSON string with it). */
int utf8_prefix(const char *s, size_t max);
/* Drops an incomplete UTF-8 character from the end of the NUL-terminated s: what snprintf into a
 * fixed buffer leaves when it truncates in the middle of one. */
void utf8_trim_cut(char *s);
/* The length of s[0..len) without an incomplete UTF-8 character at its end. */
size_t utf8_complete_len(const char *s, size_t len);

#endif
