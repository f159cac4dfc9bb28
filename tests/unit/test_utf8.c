/* UTF-8 checks on the code the engine accepts and on the output it returns. */
#include <stdlib.h>

#include "check.h"
#include "util.h"

int main(void)
{
        CHECK(utf8_valid("plain", 5));
        CHECK(utf8_valid("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 16));
        CHECK(!utf8_valid("\xff", 1));
        CHECK(!utf8_valid("\xc0\xaf", 2));         /* overlong "/" */
        CHECK(!utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
        CHECK(!utf8_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
        CHECK(!utf8_valid("\xe2\x82", 2));         /* cut short */
        size_t n;
        char *s = utf8_sanitize("a\xff"
                                "b\0c",
                                5, &n);
        CHECK_STR(s, "a\xef\xbf\xbd"
                     "b\xef\xbf\xbd"
                     "c");
        CHECK(n == 9);
        free(s);
        CHECK_DONE();
}
