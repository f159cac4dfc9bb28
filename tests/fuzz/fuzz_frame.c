/* libFuzzer: the frame reader (what a hostile guest writes on fd 3), fed in two pieces. */
#include <stddef.h>
#include <stdint.h>

#include "frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct frame_reader r;
        frame_reader_init(&r, 1 << 16);
        size_t half = size / 2;
        codecell_error err;
        json_t *f = NULL;
        (void)frame_reader_feed(&r, data, half);
        while (frame_reader_next(&r, &f, &err) == 1)
                json_decref(f);
        (void)frame_reader_feed(&r, data + half, size - half);
        while (frame_reader_next(&r, &f, &err) == 1)
                json_decref(f);
        frame_reader_free(&r);
        return 0;
}
