/* Sizes and durations from the command line. */
#include <stdint.h>

#include "check.h"
#include "units.h"

int main(void)
{
        uint64_t v = 0;
        CHECK(parse_size("256M", &v) == 0 && v == 256ULL << 20);
        CHECK(parse_size("1G", &v) == 0 && v == 1ULL << 30);
        CHECK(parse_size("512k", &v) == 0 && v == 512ULL << 10);
        CHECK(parse_size("1.5MiB", &v) == 0 && v == 3ULL << 19);
        CHECK(parse_size("4096", &v) == 0 && v == 4096);
        CHECK(parse_size("", &v) < 0);
        CHECK(parse_size("-1M", &v) < 0);
        CHECK(parse_size("12X", &v) < 0);
        CHECK(parse_size("M", &v) < 0);
        CHECK(parse_size("0", &v) < 0);
        CHECK(parse_size("nan", &v) < 0);
        CHECK(parse_duration_ms("500ms", &v) == 0 && v == 500);
        CHECK(parse_duration_ms("2s", &v) == 0 && v == 2000);
        CHECK(parse_duration_ms("1.5", &v) == 0 && v == 1500);
        CHECK(parse_duration_ms("1m", &v) == 0 && v == 60000);
        CHECK(parse_duration_ms("2h", &v) == 0 && v == 7200000);
        CHECK(parse_duration_ms("25h", &v) < 0); /* over a day */
        CHECK(parse_duration_ms("5d", &v) < 0);
        CHECK(parse_duration_ms("0", &v) < 0);
        CHECK(parse_duration_ms(" 5", &v) < 0);
        CHECK_DONE();
}
