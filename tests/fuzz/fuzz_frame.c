/* libFuzzer: the frame reader (what a hostile guest writes on fd 3), fed in two pieces, and
 * the check of the value text a result frame carries (result_set_value), against jansson. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "result.h"

/* What both readers must agree on: jansson takes every text json_text_valid takes, but for
 * integers too big for a double (it reads them as one here); json_text_valid takes every text
 * jansson takes that is at most 1000 deep (2000 bytes cannot be deeper). */
static void compare_with_jansson(const uint8_t *data, size_t size)
{
        bool ours = json_text_valid((const char *)data, size);
        size_t digits = 0, longest = 0;
        for (size_t i = 0; i < size; i++) {
                digits = data[i] >= '0' && data[i] <= '9' ? digits + 1 : 0;
                longest = digits > longest ? digits : longest;
        }
        json_t *theirs =
                json_loadb((const char *)data, size,
                           JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, NULL);
        /* Nor does it take \u0000 in an object key, which JSON allows. */
        if (ours && !theirs && longest < 300 && !memmem(data, size, "u0000", 5))
                abort();
        json_decref(theirs);
        theirs = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        /* jansson reads a NUL byte as the end of the text: "true\0" is true to it. */
        if (theirs && !ours && size <= 2000 && !memchr(data, '\0', size))
                abort();
        json_decref(theirs);
}

/* A frame as the engine takes a result's value from it. */
static void take(json_t *frame)
{
        codecell_result *res = result_new();
        if (res)
                (void)result_set_value(res, frame);
        codecell_result_free(res);
        json_decref(frame);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct frame_reader r;
        frame_reader_init(&r, 1 << 16);
        size_t half = size / 2;
        codecell_error err;
        json_t *f = NULL;
        (void)frame_reader_feed(&r, data, half);
        while (frame_reader_next(&r, &f, &err) == 1)
                take(f);
        (void)frame_reader_feed(&r, data + half, size - half);
        while (frame_reader_next(&r, &f, &err) == 1)
                take(f);
        frame_reader_free(&r);
        compare_with_jansson(data, size);
        return 0;
}
