/* Images handed back by a run: base64 both ways, and the host's checks of an "image" frame
 * (images.c, base64.c). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "check.h"
#include "images.h"

static void base64_both_ways(void)
{
        static const char *const cases[][2] = {
                {"", ""},
                {"f", "Zg=="},
                {"fo", "Zm8="},
                {"foo", "Zm9v"},
                {"foob", "Zm9vYg=="},
                {"fooba", "Zm9vYmE="},
                {"foobar", "Zm9vYmFy"}, /* RFC 4648 §10 */
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *text = base64_encode(cases[i][0], strlen(cases[i][0]), NULL);
                CHECK_STR(text, cases[i][1]);
                free(text);
                unsigned char *bytes = NULL;
                size_t len = 0;
                CHECK(base64_decode(cases[i][1], strlen(cases[i][1]), &bytes, &len) == 0);
                CHECK(len == strlen(cases[i][0]) && memcmp(bytes, cases[i][0], len) == 0);
                free(bytes);
        }
        static const char *const bad[] = {"Zg=",      "Z===", "Zm9v\n", "Zm 9",
                                          "Zg==Zg==", "=Zg=", "Zm9*"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                unsigned char *bytes = NULL;
                size_t len = 0;
                CHECK(base64_decode(bad[i], strlen(bad[i]), &bytes, &len) < 0);
        }
}

static json_t *frame_of(const void *data, size_t len)
{
        char *text = base64_encode(data, len, NULL);
        json_t *frame = json_pack("{s:s, s:s}", "t", "image", "data", text);
        free(text);
        return frame;
}

static void the_host_checks_every_image(void)
{
        static const unsigned char png[] = "\x89PNG\r\n\x1a\n....";
        static const unsigned char gif[] = "GIF89a....";
        struct image_list l;
        image_list_init(&l, 2, 16);
        json_t *f = frame_of(png, 12);
        CHECK(image_list_take(&l, f) == 0 && l.n == 1);
        CHECK_STR(l.items[0].mime_type, "image/png");
        json_decref(f);
        /* The guest's word for the type is never taken: the bytes say it. */
        f = frame_of("<svg onload=x>", 14);
        CHECK(image_list_take(&l, f) == 0 && l.n == 1 && l.omitted == 1);
        CHECK_STR(l.why_omitted, "a file that is not a PNG, JPEG, GIF or WebP image");
        json_decref(f);
        /* Over the size cap, with or without the bytes. */
        static const unsigned char big[32] = "\x89PNG\r\n\x1a\n";
        f = frame_of(big, sizeof(big));
        CHECK(image_list_take(&l, f) == 0 && l.n == 1 && l.omitted == 2);
        json_decref(f);
        f = json_pack("{s:s, s:I}", "t", "image", "size", (json_int_t)1 << 40);
        CHECK(image_list_take(&l, f) == 0 && l.n == 1 && l.omitted == 3);
        json_decref(f);
        f = frame_of(gif, 10);
        CHECK(image_list_take(&l, f) == 0 && l.n == 2);
        CHECK_STR(l.items[1].mime_type, "image/gif");
        json_decref(f);
        /* Over the count. */
        f = frame_of(png, 12);
        CHECK(image_list_take(&l, f) == 0 && l.n == 2 && l.omitted == 4);
        json_decref(f);
        /* Not base64, or neither data nor size: the guest broke the protocol. */
        f = json_pack("{s:s, s:s}", "t", "image", "data", "!!!!");
        struct image_list fresh;
        image_list_init(&fresh, 2, 12);
        CHECK(image_list_take(&fresh, f) == -EBADMSG);
        json_decref(f);
        f = json_pack("{s:s}", "t", "image");
        CHECK(image_list_take(&fresh, f) == -EBADMSG);
        json_decref(f);
        CHECK_STR(l.why_omitted, "a file that is not a PNG, JPEG, GIF or WebP image");
        image_list_free(&l);
        image_list_free(&fresh);
}

int main(void)
{
        base64_both_ways();
        the_host_checks_every_image();
        CHECK_DONE();
}
