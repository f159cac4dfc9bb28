/* Text shortened to fit (a byte limit, a fixed buffer) ends on a character boundary: a cut
 * inside a UTF-8 character made the text invalid, and the JSON answer that held it was never
 * built (issue 14). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "error.h"
#include "util.h"

#define EURO "\xe2\x82\xac"

int main(void)
{
        /* utf8_cut: the longest prefix within max that ends between characters. */
        const char *s = "ab" EURO "c";
        CHECK(utf8_cut(s, 6, 10) == 6);
        CHECK(utf8_cut(s, 6, 5) == 5);
        CHECK(utf8_cut(s, 6, 4) == 2);
        CHECK(utf8_cut(s, 6, 3) == 2);
        CHECK(utf8_cut(s, 6, 2) == 2);
        CHECK(utf8_cut(s, 6, 0) == 0);
        CHECK(utf8_cut("\xf0\x9f\x98\x80", 4, 3) == 0); /* a 4-byte character goes whole */
        for (size_t max = 0; max < 40; max++) {
                char euros[64] = "";
                for (int i = 0; i < 12; i++)
                        strcat(euros, EURO);
                size_t n = utf8_cut(euros, strlen(euros), max);
                CHECK(n <= max && n % 3 == 0 && utf8_valid(euros, n));
        }
        /* utf8_prefix: the precision for "%.*s" on a NUL-terminated string. */
        char out[64];
        snprintf(out, sizeof(out), "[%.*s]", utf8_prefix(EURO EURO EURO, 7), EURO EURO EURO);
        CHECK_STR(out, "[" EURO EURO "]");
        CHECK(utf8_prefix("short", 64) == 5);
        CHECK(utf8_prefix("", 3) == 0);

        /* utf8_trim_cut: what snprintf left in a buffer too small for the last character. */
        char buf[8];
        snprintf(buf, sizeof(buf), "%s", "a" EURO EURO "b"); /* 7 bytes fit: a € € */
        utf8_trim_cut(buf);
        CHECK_STR(buf, "a" EURO EURO);
        snprintf(buf, sizeof(buf), "%s", "ab" EURO EURO); /* "ab€" and 2 bytes of the next */
        utf8_trim_cut(buf);
        CHECK_STR(buf, "ab" EURO);
        CHECK(utf8_complete_len("ab" EURO, 4) == 2);
        CHECK(utf8_complete_len("ab" EURO, 5) == 5);
        CHECK(utf8_complete_len("\x80\x80", 2) == 2); /* no lead byte: left as it is */
        char whole[] = "ok" EURO;
        utf8_trim_cut(whole);
        CHECK_STR(whole, "ok" EURO);

        /* Error messages, which quote the bad input, cut the same way at their buffer's end. */
        char name[2000] = "";
        for (int i = 0; i < 600; i++)
                strcat(name, EURO);
        codecell_error err;
        err_set(&err, CODECELL_ERR_INVALID, EINVAL, "x%s", name);
        CHECK(utf8_valid(err.message, strlen(err.message)));
        err_sys(&err, EIO, "%s", name);
        CHECK(utf8_valid(err.message, strlen(err.message)));
        err_set(&err, CODECELL_ERR_INVALID, EINVAL, "%s", "tail");
        err_prefix(&err, "xy%s: ", name);
        CHECK(utf8_valid(err.message, strlen(err.message)));
        CHECK_DONE();
}
