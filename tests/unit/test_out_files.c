/* The host's checks of the "file" frames of an output folder (out_files.c): the MIME type from
 * the bytes, the names it refuses, the refusals it words itself, the caps. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "check.h"
#include "out_files.h"

static void kinds(void)
{
        static const struct {
                const char *name, *bytes;
                size_t len;
                const char *mime;
        } cases[] = {
                {"a.csv", "x,y\n1,2\n", 8, "text/csv"},
                {"A.CSV", "x", 1, "text/csv"},
                {"r.json", "{}", 2, "application/json"},
                {"notes", "caf\xc3\xa9", 5, "text/plain"},
                {"page.html", "<script>", 8, "text/plain"}, /* never rendered as HTML */
                {"t.csv", "a\0b", 3, "application/octet-stream"},
                {"t.csv", "\xff\xfe", 2, "application/octet-stream"},
                {"x.txt", "%PDF-1.7", 8, "application/pdf"},
                {"x", "PK\x03\x04rest", 8, "application/zip"},
                {"x", "\x1f\x8b\x08", 3, "application/gzip"},
                {"x.csv", "\x89PNG\r\n\x1a\n", 8, "image/png"},
                {"empty", "", 0, "text/plain"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                CHECK_STR(file_kind(cases[i].name, (const unsigned char *)cases[i].bytes,
                                    cases[i].len),
                          cases[i].mime);
}

static json_t *frame(const char *name, const char *bytes)
{
        json_t *f = json_pack("{s:s, s:i}", "t", "file", "id", 1);
        if (name)
                json_object_set_new(f, "name", json_string(name));
        if (bytes) {
                char *b64 = base64_encode(bytes, strlen(bytes), NULL);
                json_object_set_new(f, "data", json_string(b64));
                free(b64);
        }
        return f;
}

static int take(struct file_list *l, struct image_list *images, json_t *f)
{
        int r = file_list_take(l, images, f);
        json_decref(f);
        return r;
}

static void names_refusals_and_caps(void)
{
        struct file_list l;
        struct image_list images;
        file_list_init(&l, 2, 10);
        image_list_init(&images, 1, 100);
        CHECK(take(&l, &images, frame("a.txt", "hello")) == 0);
        CHECK(take(&l, &images, frame("a.txt", "again")) == 0); /* sent twice */
        CHECK(take(&l, &images, frame("../x", "no")) == 0);     /* not one component */
        CHECK(take(&l, &images, frame("..", "no")) == 0);
        CHECK(take(&l, &images, frame("bell\a", "no")) == 0);                 /* a control byte */
        CHECK(take(&l, &images, frame("big", "eleven char")) == 0);           /* over 10 bytes */
        CHECK(take(&l, &images, frame("p.bin", "\x89PNG\r\n\x1a\nxx")) == 0); /* an image */
        json_t *fifo = frame("pipe", NULL);
        json_object_set_new(fifo, "kind", json_string("fifo"));
        CHECK(take(&l, &images, fifo) == 0);
        json_t *made_up = frame("odd", NULL);
        json_object_set_new(made_up, "kind", json_string("<b>trust me</b>"));
        CHECK(take(&l, &images, made_up) == 0);
        CHECK(take(&l, &images, frame("b", "x")) == 0);
        CHECK(take(&l, &images, frame("c", "y")) == 0); /* over the count */
        CHECK(take(&l, &images, frame(NULL, "x")) == -EBADMSG);
        json_t *bad = frame("d", NULL);
        json_object_set_new(bad, "data", json_string("!!!"));
        CHECK(take(&l, &images, bad) == -EBADMSG);

        CHECK(l.n == 2 && strcmp(l.items[0].name, "a.txt") == 0 &&
              strcmp(l.items[1].name, "b") == 0);
        CHECK(images.n == 1 && strcmp(images.items[0].name, "p.bin") == 0);
        static const char *const reasons[][2] = {
                {"a.txt", "sent twice"},
                {"(a name that is not one printable path component)",
                 "a name that cannot be shown or saved"},
                {"(a name that is not one printable path component)",
                 "a name that cannot be shown or saved"},
                {"(a name that is not one printable path component)",
                 "a name that cannot be shown or saved"},
                {"big", "over 10 bytes"},
                {"pipe", "a FIFO (not read)"},
                {"odd", "not a regular file"}, /* the guest's word is never shown */
                {"c", "more than 2 files"},
        };
        CHECK(l.omitted == 8 && l.n_omissions == 8);
        for (size_t i = 0; i < l.n_omissions && i < 8; i++) {
                CHECK_STR(l.omissions[i].name, reasons[i][0]);
                CHECK_STR(l.omissions[i].reason, reasons[i][1]);
        }
        file_list_free(&l);
        image_list_free(&images);
}

/* Printable means more than no C0 byte: a C1 control (U+0080..U+009F; U+009B is a CSI to a
 * terminal that reads UTF-8) or a bidirectional override (U+202E shows "evil\u202Egnp.exe" as
 * "evilexe.png") in a name would reach the CLI's stderr and a person's file list as it is. */
static void names_that_only_look_printable(void)
{
        static const char *const names[] = {
                "csi\xc2\x9b"
                "31mred",
                "nel\xc2\x85",
                "c1\xc2\x80",
                "evil\xe2\x80\xae"
                "gnp.exe",
                "iso\xe2\x81\xa6x",
                "pdi\xe2\x81\xa9",
        };
        struct file_list l;
        struct image_list images;
        file_list_init(&l, 16, 100);
        image_list_init(&images, 1, 100);
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                CHECK(take(&l, &images, frame(names[i], "x")) == 0);
        /* Printable letters beyond ASCII still pass. */
        CHECK(take(&l, &images, frame("caf\xc3\xa9 \xe2\x80\x94 \xe6\x97\xa5.txt", "x")) == 0);
        CHECK(l.n == 1 && l.omitted == sizeof(names) / sizeof(names[0]));
        for (size_t i = 0; i < l.n_omissions; i++)
                CHECK_STR(l.omissions[i].reason, "a name that cannot be shown or saved");
        file_list_free(&l);
        image_list_free(&images);
}

int main(void)
{
        kinds();
        names_refusals_and_caps();
        names_that_only_look_printable();
        CHECK_DONE();
}
