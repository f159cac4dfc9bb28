/* The frame reader: split and joined frames, oversize, corrupt and non-object frames. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "frame.h"

static void feed_text(struct frame_reader *r, const char *json)
{
        size_t n = strlen(json);
        unsigned char hdr[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                                (unsigned char)(n >> 8), (unsigned char)n};
        frame_reader_feed(r, hdr, 4);
        frame_reader_feed(r, json, n);
}

int main(void)
{
        struct frame_reader r;
        codecell_error err = {0};
        json_t *f = NULL;

        /* A frame arriving byte by byte is returned once, whole. */
        frame_reader_init(&r, 1024);
        json_t *obj = json_pack("{s:s, s:i}", "t", "ready", "id", 7);
        char *buf;
        size_t len;
        CHECK(frame_encode(obj, &buf, &len) == 0);
        for (size_t i = 0; i < len; i++) {
                CHECK(frame_reader_next(&r, &f, &err) == 0);
                frame_reader_feed(&r, buf + i, 1);
        }
        CHECK(frame_reader_next(&r, &f, &err) == 1);
        CHECK_STR(json_string_value(json_object_get(f, "t")), "ready");
        json_decref(f);
        free(buf);
        json_decref(obj);

        /* Two frames in one read come out in order. */
        feed_text(&r, "{\"t\":\"a\"}");
        feed_text(&r, "{\"t\":\"b\"}");
        CHECK(frame_reader_next(&r, &f, &err) == 1);
        CHECK_STR(json_string_value(json_object_get(f, "t")), "a");
        json_decref(f);
        CHECK(frame_reader_next(&r, &f, &err) == 1);
        CHECK_STR(json_string_value(json_object_get(f, "t")), "b");
        json_decref(f);
        CHECK(frame_reader_next(&r, &f, &err) == 0);
        frame_reader_free(&r);

        /* Over the cap: refused from the header alone, before the body arrives. */
        frame_reader_init(&r, 16);
        unsigned char big[4] = {0, 0, 1, 0};
        frame_reader_feed(&r, big, 4);
        CHECK(frame_reader_next(&r, &f, &err) == -EMSGSIZE);
        CHECK(strstr(err.message, "over the 16-byte limit") != NULL);
        frame_reader_free(&r);

        const char *bad[] = {
                "{\"t\":",         "[1,2]", "{\"x\":1}", "{\"t\":1}", "{\"t\":\"a\",\"t\":\"b\"}",
                "{\"t\":\"\xff\"}"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                frame_reader_init(&r, 1024);
                feed_text(&r, bad[i]);
                CHECK(frame_reader_next(&r, &f, &err) == -EBADMSG);
                CHECK(f == NULL);
                frame_reader_free(&r);
        }
        frame_reader_init(&r, 1024);
        unsigned char zero[4] = {0};
        frame_reader_feed(&r, zero, 4);
        CHECK(frame_reader_next(&r, &f, &err) == -EBADMSG);
        frame_reader_free(&r);
        CHECK_DONE();
}
