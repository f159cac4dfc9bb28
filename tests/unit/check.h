/* A minimal assertion helper for the unit tests: report file:line and keep going; the exit
 * code says whether any check failed. */
#ifndef CODECELL_TEST_CHECK_H
#define CODECELL_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                                                \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
                        check_failures++;                                                          \
                }                                                                                  \
        } while (0)

#define CHECK_STR(a, b)                                                                            \
        do {                                                                                       \
                const char *_a = (a), *_b = (b);                                                   \
                if (!_a || !_b || strcmp(_a, _b) != 0) {                                           \
                        fprintf(stderr, "%s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__,           \
                                _a ? _a : "(null)", _b ? _b : "(null)");                           \
                        check_failures++;                                                          \
                }                                                                                  \
        } while (0)

#define CHECK_DONE()                                                                               \
        do {                                                                                       \
                if (check_failures)                                                                \
                        fprintf(stderr, "%d check(s) failed\n", check_failures);                   \
                return check_failures ? 1 : 0;                                                     \
        } while (0)

#endif
