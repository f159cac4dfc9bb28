/* The last value's rich forms (display.c) and their share of the model's budget
 * (model_view.c): the host checks what the guest sent, whatever it called it. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "display.h"
#include "result.h"
#include "util.h"

static json_t *frame_of(const char *display_json)
{
        /* As the frame reader takes them: a NUL in a string is JSON. */
        json_t *shown = json_loads(display_json, JSON_ALLOW_NUL, NULL);
        CHECK(shown);
        return json_pack("{s:b, s:o}", "ok", 1, "display", shown);
}

static const char *note_at(const struct result_display *d, size_t i)
{
        return json_string_value(json_array_get(d->notes, i));
}

static void what_the_guest_sent_is_checked(void)
{
        /* "€" is three bytes: a cut at 4 characters keeps 12, never half of one. */
        json_t *f = frame_of("{\"markdown\": \"€€€€€€\", \"html\": \"<b>\\u0000</b>\", "
                             "\"svg\": \"  <svg/>\", \"png\": \"R0lGODlh\", \"json\": [1]}");
        struct result_display d = {0};
        CHECK(display_take(&d, f, 4, 100) == 0);
        CHECK(d.markdown && d.markdown_len == 12 && strcmp(d.markdown, "€€€€") == 0);
        CHECK(!d.html); /* a NUL: C strings would end there */
        CHECK(d.svg && d.svg_len == 8);
        CHECK(!d.png); /* GIF bytes called a PNG */
        json_t *one = json_pack("[i]", 1);
        CHECK(json_equal(d.json, one));
        json_decref(one);
        CHECK_STR(note_at(&d, 0), "markdown: cut at 4 characters");
        CHECK_STR(note_at(&d, 1), "html: holds a NUL character (left out)");
        CHECK(strncmp(note_at(&d, 2), "png: its bytes are not a PNG", 28) == 0);
        CHECK(json_array_size(d.notes) == 3);
        display_free(&d);
        json_decref(f);

        /* Not strings, not SVG, over the byte cap: left out with notes, never a failure. */
        f = frame_of("{\"markdown\": 7, \"svg\": \"<html/>\", \"png\": \"iVBORw0KGgoAAAA=\"}");
        CHECK(display_take(&d, f, 100, 4) == 0);
        CHECK(!display_any(&d));
        CHECK_STR(note_at(&d, 0), "markdown: not a string (left out)");
        CHECK(strncmp(note_at(&d, 1), "svg: not SVG text", 17) == 0);
        CHECK(strncmp(note_at(&d, 2), "png: not base64 within", 22) == 0);
        display_free(&d);
        json_decref(f);

        /* The guest's notes: at most DISPLAY_MAX_NOTES, each cut on a character boundary. */
        json_t *notes = json_array();
        char long_note[2000] = "markdown: ";
        for (size_t i = strlen(long_note); i + 3 < sizeof(long_note); i += 3)
                memcpy(long_note + i, "€", 4);
        for (int i = 0; i < 30; i++)
                json_array_append_new(notes, json_string(long_note));
        f = json_pack("{s:o}", "display_notes", notes);
        CHECK(display_take(&d, f, 100, 100) == 0);
        CHECK(json_array_size(d.notes) == DISPLAY_MAX_NOTES);
        const char *n = note_at(&d, 0);
        CHECK(utf8_valid(n, strlen(n)) && utf8_chars(n, strlen(n)) == DISPLAY_NOTE_CHARS);
        display_free(&d);
        json_decref(f);
}

static void the_display_shares_the_budget(void)
{
        codecell_result *r = result_new();
        r->status = CODECELL_STATUS_OK;
        json_t *value = json_pack("{s:s}", "value_json", "1");
        CHECK(result_set_value(r, value) == 0);
        json_decref(value);
        size_t big = 5000;
        char *md = malloc(big * 3 + 1);
        for (size_t i = 0; i < big; i++)
                memcpy(md + 3 * i, "€", 3);
        md[big * 3] = '\0';
        r->display.markdown = md;
        r->display.markdown_len = big * 3;
        char *text = codecell_result_to_model_json(r, 1000, false);
        CHECK(text && utf8_chars(text, strlen(text)) <= 1000);
        CHECK(strstr(text, "\"display_truncated\":true"));
        free(text);
        char *markdown = NULL, *html = NULL;
        text = codecell_result_to_model_parts(r, 1000, true, &markdown, &html);
        CHECK(text && markdown && !html);
        CHECK(utf8_valid(markdown, strlen(markdown)));
        CHECK(utf8_chars(text, strlen(text)) + utf8_chars(markdown, strlen(markdown)) <= 1000);
        CHECK(strstr(text, "\"markdown\":{\"chars\":"));
        free(text);
        free(markdown);
        codecell_result_free(r);
}

int main(void)
{
        what_the_guest_sent_is_checked();
        the_display_shares_the_budget();
        CHECK_DONE();
}
