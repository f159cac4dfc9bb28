/* The last value's rich forms (docs/results.md, "Rich values"): what the guest's value said it
 * looks like (IPython's _repr_markdown_ and the others in Python, to_markdown and to_html in
 * Ruby), taken from the result frame and checked by the host, never trusted for their kind. */
#ifndef CODECELL_DISPLAY_H
#define CODECELL_DISPLAY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define DISPLAY_MAX_NOTES 10
#define DISPLAY_NOTE_CHARS 300

struct result_display {
        char *markdown, *html, *svg; /* valid UTF-8 without NUL, or NULL */
        size_t markdown_len, html_len, svg_len;
        json_t *json;       /* the value's own JSON (_repr_json_), or NULL */
        unsigned char *png; /* bytes that start as a PNG does, or NULL */
        size_t png_len;
        json_t *notes; /* array of strings: what was left out or cut, and why; or NULL */
};

void display_free(struct result_display *d);
/* Takes a result frame's "display" ({markdown, html, svg, json, png: base64}) and
 * "display_notes". Text over max_chars characters is cut on a character boundary, an SVG that
 * is not XML text starting with <svg or <?xml and a PNG whose bytes are not one (or over
 * max_bytes) are left out, each with a note. Never fails the run; -ENOMEM only. */
int display_take(struct result_display *d, const json_t *frame, size_t max_chars, size_t max_bytes);
bool display_any(const struct result_display *d);
/* "display" (markdown, html and json as they are; svg and png as {"bytes": n}) and
 * "display_notes" into obj, when there are. */
int display_set_full(json_t *obj, const struct result_display *d);

#endif
