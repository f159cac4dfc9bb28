#include "display.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "images.h"
#include "util.h"

void display_free(struct result_display *d)
{
        free(d->markdown);
        free(d->html);
        free(d->svg);
        json_decref(d->json);
        free(d->png);
        json_decref(d->notes);
        *d = (struct result_display){0};
}

bool display_any(const struct result_display *d)
{
        return d->markdown || d->html || d->svg || d->json || d->png;
}

static int note_n(struct result_display *d, const char *kind, const char *what, size_t what_len)
{
        char text[DISPLAY_NOTE_CHARS * 4 + 1];
        int n = snprintf(text, sizeof(text), "%s: %.*s", kind, (int)what_len, what);
        size_t len = n < 0 ? 0 : (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1;
        len = utf8_complete_len(text, len);
        /* A guest's note is cut to DISPLAY_NOTE_CHARS characters, on a character boundary. */
        size_t at = 0;
        for (size_t chars = 0; at < len && chars < DISPLAY_NOTE_CHARS; chars++)
                at += utf8_char_len(text + at, len - at);
        size_t clean_len = 0;
        char *clean = utf8_sanitize(text, at, &clean_len);
        if (!clean)
                return -ENOMEM;
        if (!d->notes)
                d->notes = json_array();
        int r = d->notes && json_array_size(d->notes) < DISPLAY_MAX_NOTES
                        ? json_array_append_new(d->notes, json_stringn(clean, clean_len))
                        : 0;
        free(clean);
        return d->notes && r == 0 ? 0 : -ENOMEM;
}

static int note(struct result_display *d, const char *kind, const char *what)
{
        return note_n(d, kind, what, strlen(what));
}

/* The guest's text of kind, within max_chars characters (cut on a character boundary), or NULL
 * when there is none; a NUL in it (JSON carries one, C strings do not) leaves it out. */
static int take_text(struct result_display *d, const json_t *shown, const char *kind,
                     size_t max_chars, char **ret, size_t *ret_len)
{
        const json_t *v = json_object_get(shown, kind);
        if (!v)
                return 0;
        if (!json_is_string(v))
                return note(d, kind, "not a string (left out)");
        const char *s = json_string_value(v);
        size_t len = json_string_length(v); /* jansson took it as valid UTF-8 */
        if (memchr(s, '\0', len))
                return note(d, kind, "holds a NUL character (left out)");
        size_t at = 0, chars = 0;
        while (at < len && chars < max_chars) {
                at += utf8_char_len(s + at, len - at);
                chars++;
        }
        if (at < len) {
                char what[96];
                int n = snprintf(what, sizeof(what), "cut at %zu characters", max_chars);
                if (note_n(d, kind, what, (size_t)n) < 0)
                        return -ENOMEM;
        }
        *ret = strndup(s, at);
        *ret_len = at;
        return *ret ? 0 : -ENOMEM;
}

/* SVG comes back as an image: its bytes must be XML text that starts as an SVG document does
 * (after a byte-order mark and white space), whatever the guest called it. */
static bool svg_like(const char *s, size_t len)
{
        if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) {
                s += 3;
                len -= 3;
        }
        while (len > 0 && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) {
                s++;
                len--;
        }
        return (len >= 5 && memcmp(s, "<?xml", 5) == 0) || (len >= 4 && memcmp(s, "<svg", 4) == 0);
}

static int take_png(struct result_display *d, const json_t *shown, size_t max_bytes)
{
        const json_t *v = json_object_get(shown, "png");
        if (!v)
                return 0;
        size_t text_len = json_string_length(v);
        if (!json_is_string(v) || text_len / 4 * 3 > max_bytes + 2)
                return note(d, "png", "not base64 within the image size limit (left out)");
        unsigned char *bytes = NULL;
        size_t len = 0;
        int r = base64_decode(json_string_value(v), text_len, &bytes, &len);
        if (r == -ENOMEM)
                return r;
        const char *kind = r < 0 ? NULL : image_kind(bytes, len);
        if (!kind || strcmp(kind, "image/png") != 0 || len > max_bytes) {
                free(bytes);
                return note(d, "png",
                            "its bytes are not a PNG image within the size limit "
                            "(left out)");
        }
        d->png = bytes;
        d->png_len = len;
        return 0;
}

int display_take(struct result_display *d, const json_t *frame, size_t max_chars, size_t max_bytes)
{
        const json_t *shown = json_object_get(frame, "display");
        const json_t *said = json_object_get(frame, "display_notes");
        size_t i;
        const json_t *item;
        int r = 0;
        json_array_foreach(said, i, item) {
                if (json_is_string(item) && r == 0) {
                        /* The guest's notes already name their kind: "markdown: …". */
                        const char *s = json_string_value(item);
                        const char *colon = memchr(s, ':', json_string_length(item));
                        size_t kind_len = colon ? (size_t)(colon - s) : 0;
                        if (colon && kind_len < 16) {
                                char kind[16];
                                memcpy(kind, s, kind_len);
                                kind[kind_len] = '\0';
                                size_t skip = kind_len + 1 + (colon[1] == ' ');
                                r = note_n(d, kind, s + skip, json_string_length(item) - skip);
                        }
                }
        }
        if (r < 0 || !json_is_object(shown))
                return r;
        r = take_text(d, shown, "markdown", max_chars, &d->markdown, &d->markdown_len);
        r = r ?: take_text(d, shown, "html", max_chars, &d->html, &d->html_len);
        if (r == 0 && json_object_get(shown, "svg")) {
                const json_t *svg = json_object_get(shown, "svg");
                size_t len = json_string_length(svg);
                if (!json_is_string(svg) || !svg_like(json_string_value(svg), len) ||
                    memchr(json_string_value(svg), '\0', len))
                        r = note(d, "svg", "not SVG text starting with <svg or <?xml (left out)");
                else if (len > max_bytes)
                        r = note(d, "svg", "over the image size limit (left out)");
                else if (!(d->svg = strndup(json_string_value(svg), len)))
                        r = -ENOMEM;
                else
                        d->svg_len = len;
        }
        r = r ?: take_png(d, shown, max_bytes);
        const json_t *data = json_object_get(shown, "json");
        if (r == 0 && data)
                d->json = json_incref((json_t *)data);
        return r;
}

static json_t *size_of(size_t n)
{
        return json_pack("{s:I}", "bytes", (json_int_t)n);
}

int display_set_full(json_t *obj, const struct result_display *d)
{
        int bad = 0;
        if (display_any(d)) {
                json_t *shown = json_object();
                if (d->markdown)
                        bad |= json_object_set_new(shown, "markdown",
                                                   json_stringn(d->markdown, d->markdown_len));
                if (d->html)
                        bad |= json_object_set_new(shown, "html",
                                                   json_stringn(d->html, d->html_len));
                if (d->json)
                        bad |= json_object_set(shown, "json", d->json);
                if (d->svg)
                        bad |= json_object_set_new(shown, "svg", size_of(d->svg_len));
                if (d->png)
                        bad |= json_object_set_new(shown, "png", size_of(d->png_len));
                bad |= json_object_set_new(obj, "display", shown);
        }
        if (d->notes && json_array_size(d->notes) > 0)
                bad |= json_object_set(obj, "display_notes", d->notes);
        return bad ? -ENOMEM : 0;
}
