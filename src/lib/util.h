/* Small helpers shared by the engine: clocks, files, UTF-8. */
#ifndef CODECELL_UTIL_H
#define CODECELL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* CLOCK_MONOTONIC in milliseconds (fractional). */
double now_ms(void);

/* Writes the whole string to an existing file (cgroupfs control files). 0 or -errno. */
int write_file(const char *path, const char *text);
/* Reads at most size-1 bytes of a file into buf, NUL-terminated. Bytes read or -errno. */
ssize_t read_file(const char *path, char *buf, size_t size);

bool utf8_valid(const char *s, size_t len);
/* A copy of s in which every invalid UTF-8 sequence and every NUL byte becomes U+FFFD, so the
 * bytes can go into a JSON string. NULL when out of memory. */
char *utf8_sanitize(const char *s, size_t len, size_t *ret_len);

#endif
