#include "out_files.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base64.h"
#include "util.h"

void file_list_init(struct file_list *l, size_t max_count, size_t max_bytes)
{
        *l = (struct file_list){.max_count = max_count, .max_bytes = max_bytes};
        snprintf(l->too_big, sizeof(l->too_big), "over %zu bytes", max_bytes);
        snprintf(l->too_many, sizeof(l->too_many), "more than %zu files", max_count);
}

void file_list_free(struct file_list *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].name);
                free(l->items[i].data);
        }
        free(l->items);
        l->items = NULL;
        l->n = 0;
        for (size_t i = 0; i < l->n_omissions; i++)
                free(l->omissions[i].name);
        l->n_omissions = 0;
}

/* Formats whose first bytes say what they are. Anything else is text or octets: a guest's
 * file is never typed as something a client would render or run (no HTML, no SVG). */
static const struct {
        const char *magic;
        size_t len;
        const char *mime_type;
} magics[] = {
        {"%PDF-", 5, "application/pdf"},
        {"PK\x03\x04", 4, "application/zip"},
        {"PK\x05\x06", 4, "application/zip"}, /* an empty archive */
        {"\x1f\x8b", 2, "application/gzip"},
};

static bool ends_with(const char *name, const char *suffix)
{
        size_t n = strlen(name), s = strlen(suffix);
        return n > s && strcasecmp(name + n - s, suffix) == 0;
}

const char *file_kind(const char *name, const unsigned char *data, size_t len)
{
        const char *image = image_kind(data, len);
        if (image)
                return image;
        for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++)
                if (len >= magics[i].len && memcmp(data, magics[i].magic, magics[i].len) == 0)
                        return magics[i].mime_type;
        /* A NUL is valid UTF-8, but no text file holds one. */
        if (!utf8_valid((const char *)data, len) || memchr(data, 0, len))
                return "application/octet-stream";
        if (ends_with(name, ".csv"))
                return "text/csv";
        if (ends_with(name, ".json"))
                return "application/json";
        return "text/plain";
}

/* A control character beyond ASCII at p: a C1 control (U+0080..U+009F, which a terminal that
 * reads UTF-8 may obey: U+009B is a CSI) or a bidirectional embedding, override or isolate
 * (U+202A..U+202E, U+2066..U+2069), which shows a person another name than the file's
 * ("evil\u202Egnp.exe" reads "evilexe.png"). The name is valid UTF-8 (it came through JSON). */
static bool wide_control(const unsigned char *p, size_t left)
{
        if (left >= 2 && p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
                return true;
        if (left >= 3 && p[0] == 0xe2 && p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xae)
                return true;
        return left >= 3 && p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9;
}

/* A name the host can show, save and link to: one path component of printable UTF-8. The
 * prelude reads it from the folder, but the frame is the guest's word like any other. */
static bool plain_name(const char *name, size_t len)
{
        if (len == 0 || len > 255 || strlen(name) != len || strcmp(name, ".") == 0 ||
            strcmp(name, "..") == 0 || strchr(name, '/'))
                return false;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f ||
                    wide_control((const unsigned char *)name + i, len - i))
                        return false;
        return true;
}

static int omit(struct file_list *l, const char *name, const char *reason)
{
        l->omitted++;
        if (l->n_omissions >= FILE_OMISSIONS_NAMED)
                return 0;
        char *copy = strdup(name);
        if (!copy)
                return -ENOMEM;
        l->omissions[l->n_omissions++] = (struct file_omission){.name = copy, .reason = reason};
        return 0;
}

/* The prelude's word for a folder entry it would not open, worded by the host: the guest
 * chooses at most which of these sentences is shown. */
static const char *refusal(const char *kind)
{
        static const struct {
                const char *kind, *reason;
        } kinds[] = {
                {"link", "a symbolic link (not followed)"}, {"fifo", "a FIFO (not read)"},
                {"device", "a device (not read)"},          {"socket", "a socket (not read)"},
                {"changed", "changed while it was read"},
        };
        for (size_t i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i++)
                if (strcmp(kind, kinds[i].kind) == 0)
                        return kinds[i].reason;
        return "not a regular file";
}

static bool taken(const struct file_list *l, const struct image_list *images, const char *name)
{
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->items[i].name, name) == 0)
                        return true;
        for (size_t i = 0; i < images->n; i++)
                if (images->items[i].name && strcmp(images->items[i].name, name) == 0)
                        return true;
        return false;
}

static int add(struct file_list *l, const char *name, unsigned char *bytes, size_t len,
               const char *kind)
{
        char *copy = strdup(name);
        struct result_file *grown = copy ? realloc(l->items, (l->n + 1) * sizeof(*grown)) : NULL;
        if (!grown) {
                free(copy);
                free(bytes);
                return -ENOMEM;
        }
        l->items = grown;
        l->items[l->n++] =
                (struct result_file){.name = copy, .mime_type = kind, .data = bytes, .len = len};
        return 0;
}

int file_list_take(struct file_list *l, struct image_list *images, const json_t *frame)
{
        const json_t *jname = json_object_get(frame, "name");
        const json_t *data = json_object_get(frame, "data");
        if (!json_is_string(jname))
                return -EBADMSG;
        const char *name = json_string_value(jname);
        if (!plain_name(name, json_string_length(jname)))
                return omit(l, "(a name that is not one printable path component)",
                            "a name that cannot be shown or saved");
        if (taken(l, images, name))
                return omit(l, name, "sent twice");
        if (!json_is_string(data)) {
                const char *kind = json_string_value(json_object_get(frame, "kind"));
                if (json_is_integer(json_object_get(frame, "size")))
                        return omit(l, name, l->too_big);
                if (kind && strcmp(kind, "count") == 0)
                        return omit(l, name, l->too_many);
                return omit(l, name, refusal(kind));
        }
        size_t text_len = json_string_length(data);
        /* Base64 is 4/3 of the bytes: a text that long cannot fit, whatever it holds. */
        size_t cap = l->max_bytes > images->max_bytes ? l->max_bytes : images->max_bytes;
        if (text_len / 4 * 3 > cap + 2)
                return omit(l, name, l->too_big);
        unsigned char *bytes = NULL;
        size_t len = 0;
        int r = base64_decode(json_string_value(data), text_len, &bytes, &len);
        if (r < 0)
                return r == -EINVAL ? -EBADMSG : r;
        const char *kind = file_kind(name, bytes, len);
        if (image_kind(bytes, len))
                return image_list_add(images, name, bytes, len, kind);
        if (len > l->max_bytes) {
                free(bytes);
                return omit(l, name, l->too_big);
        }
        if (l->n >= l->max_count) {
                free(bytes);
                return omit(l, name, l->too_many);
        }
        return add(l, name, bytes, len, kind);
}
