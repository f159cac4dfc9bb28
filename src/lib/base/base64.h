/* Base64 (RFC 4648, standard alphabet, padded): how images cross the guest protocol and MCP. */
#ifndef CODECELL_BASE64_H
#define CODECELL_BASE64_H

#include <stddef.h>

/* NUL-terminated text of data[0..len), malloc'd; NULL when out of memory. */
char *base64_encode(const void *data, size_t len, size_t *ret_len);
/* The bytes of text[0..len), malloc'd, in *ret (*ret_len bytes). Strict: only the alphabet,
 * padding to a multiple of 4, no spaces. -EINVAL for anything else, -ENOMEM. */
int base64_decode(const char *text, size_t len, unsigned char **ret, size_t *ret_len);

#endif
