#include "images.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"

void image_list_init(struct image_list *l, size_t max_count, size_t max_bytes)
{
        *l = (struct image_list){.max_count = max_count, .max_bytes = max_bytes};
}

void image_list_free(struct image_list *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].name);
                free(l->items[i].data);
        }
        free(l->items);
        l->items = NULL;
        l->n = 0;
}

const char *image_kind(const unsigned char *d, size_t len)
{
        if (len >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0)
                return "image/png";
        if (len >= 3 && memcmp(d, "\xff\xd8\xff", 3) == 0)
                return "image/jpeg";
        if (len >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0))
                return "image/gif";
        if (len >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0)
                return "image/webp";
        return NULL;
}

static void omit(struct image_list *l, const char *why)
{
        if (l->omitted++ == 0)
                snprintf(l->why_omitted, sizeof(l->why_omitted), "%s", why);
}

int image_list_take(struct image_list *l, const json_t *frame)
{
        const json_t *data = json_object_get(frame, "data");
        const json_t *size = json_object_get(frame, "size");
        if (!json_is_string(data) && !json_is_integer(size))
                return -EBADMSG;
        /* Without its bytes (the prelude keeps what cannot pass a cap), only the reason. */
        size_t text_len = json_is_string(data) ? json_string_length(data)
                                               : ((size_t)json_integer_value(size) + 2) / 3 * 4;
        if (l->n >= l->max_count) {
                char why[96];
                snprintf(why, sizeof(why), "more than %zu images", l->max_count);
                omit(l, why);
                return 0;
        }
        /* Base64 is 4/3 of the bytes: a text that long cannot fit, whatever it holds. */
        if (text_len / 4 * 3 > l->max_bytes + 2 || !json_is_string(data)) {
                char why[96];
                snprintf(why, sizeof(why), "an image over %zu bytes", l->max_bytes);
                omit(l, why);
                return 0;
        }
        unsigned char *bytes = NULL;
        size_t len = 0;
        int r = base64_decode(json_string_value(data), text_len, &bytes, &len);
        if (r < 0)
                return r == -EINVAL ? -EBADMSG : r;
        const char *kind = image_kind(bytes, len);
        if (!kind) {
                omit(l, "a file that is not a PNG, JPEG, GIF or WebP image");
                free(bytes);
                return 0;
        }
        return image_list_add(l, NULL, bytes, len, kind);
}

int image_list_add(struct image_list *l, const char *name, unsigned char *bytes, size_t len,
                   const char *kind)
{
        char why[96];
        if (l->n >= l->max_count || len > l->max_bytes) {
                if (l->n >= l->max_count)
                        snprintf(why, sizeof(why), "more than %zu images", l->max_count);
                else
                        snprintf(why, sizeof(why), "an image over %zu bytes", l->max_bytes);
                omit(l, why);
                free(bytes);
                return 0;
        }
        char *copy = name ? strdup(name) : NULL;
        struct result_image *grown =
                !name || copy ? realloc(l->items, (l->n + 1) * sizeof(*grown)) : NULL;
        if (!grown) {
                free(copy);
                free(bytes);
                return -ENOMEM;
        }
        l->items = grown;
        l->items[l->n++] =
                (struct result_image){.name = copy, .mime_type = kind, .data = bytes, .len = len};
        return 0;
}

/* text onto f, broken into lines of at most 80 columns between words. */
static void wrap(FILE *f, const char *text)
{
        size_t column = 0;
        for (const char *p = text; *p;) {
                size_t word = strcspn(p, " ");
                if (column > 0 && column + 1 + word > 80) {
                        fputc('\n', f);
                        column = 0;
                } else if (column > 0) {
                        fputc(' ', f);
                        column++;
                }
                fwrite(p, 1, word, f);
                column += word;
                p += word;
                p += strspn(p, " ");
        }
}

void images_describe(FILE *f, const char *own, const char *folder, size_t max_count,
                     size_t max_bytes)
{
        if (!own && !folder)
                return;
        char text[1024];
        int n = snprintf(text, sizeof(text), "%s", own ? own : "");
        if (folder)
                n += snprintf(text + n, sizeof(text) - (size_t)n,
                              "%sImage files (PNG, JPEG, GIF, WebP) the code writes to `%s` "
                              "during the run come back too.",
                              own ? " " : "", folder);
        snprintf(text + n, sizeof(text) - (size_t)n,
                 " At most %zu images of up to %zu KiB each come back; the result says what "
                 "was left out.",
                 max_count, max_bytes >> 10);
        fputs("\n\n## Pictures\n\n", f);
        wrap(f, text);
}

void files_describe(FILE *f, const char *folder, size_t max_count, size_t max_bytes)
{
        if (!folder)
                return;
        char text[512];
        snprintf(text, sizeof(text),
                 "Other files the code writes to `%s` during the run (a CSV, a report, an "
                 "archive) come back to you as files beside the result: text as text, anything "
                 "else as data, typed from their bytes. At most %zu files of up to %zu KiB each; "
                 "links, FIFOs and subfolders are left out, and the result says which.",
                 folder, max_count, max_bytes >> 10);
        fputs("\n\n## Files out\n\n", f);
        wrap(f, text);
}
