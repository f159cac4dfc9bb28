/* Parsing of sizes ("256M") and durations ("1.5s") given on the command line. */
#ifndef CODECELL_CLI_UNITS_H
#define CODECELL_CLI_UNITS_H

#include <stdint.h>

/* Bytes from "1048576", "512K", "256M", "2G" (binary units, optional "B"/"iB"). 0 or -EINVAL. */
int parse_size(const char *text, uint64_t *ret_bytes);
/* Milliseconds from "500ms", "2s", "1.5s", "1m"; a bare number is seconds. 0 or -EINVAL. */
int parse_duration_ms(const char *text, uint64_t *ret_ms);

#endif
