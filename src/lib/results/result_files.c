/* The files a run handed back, in its JSON and through the C API. */
#include <string.h>

#include "base64.h"
#include "result.h"

/* Text the model or a person can read as it is; anything else goes as base64. */
static bool is_text(const char *mime_type)
{
        return strncmp(mime_type, "text/", 5) == 0 || strcmp(mime_type, "application/json") == 0;
}

static json_t *file_json(const struct result_file *f, bool content)
{
        json_t *o = json_pack("{s:s, s:s, s:I}", "name", f->name, "mime_type", f->mime_type, "size",
                              (json_int_t)f->len);
        if (!o || !content)
                return o;
        int bad = 0;
        if (is_text(f->mime_type)) {
                /* file_kind typed it text only when the bytes are valid UTF-8 without NUL. */
                bad = json_object_set_new(o, "text", json_stringn((const char *)f->data, f->len));
        } else {
                size_t len = 0;
                char *b64 = base64_encode(f->data, f->len, &len);
                bad = !b64 || json_object_set_new(o, "base64", json_stringn(b64, len));
                free(b64);
        }
        if (bad) {
                json_decref(o);
                return NULL;
        }
        return o;
}

int result_set_files(json_t *obj, const codecell_result *r, bool content)
{
        const struct file_list *l = &r->files;
        int bad = 0;
        if (l->n > 0) {
                json_t *list = json_array();
                for (size_t i = 0; list && i < l->n; i++)
                        bad |= json_array_append_new(list, file_json(&l->items[i], content));
                bad |= json_object_set_new(obj, "files", list);
        }
        if (l->omitted > 0) {
                json_t *named = json_array();
                for (size_t i = 0; named && i < l->n_omissions; i++)
                        bad |= json_array_append_new(
                                named, json_pack("{s:s, s:s}", "name", l->omissions[i].name,
                                                 "reason", l->omissions[i].reason));
                bad |= json_object_set_new(
                        obj, "files_omitted",
                        json_pack("{s:I, s:o*}", "count", (json_int_t)l->omitted, "files", named));
        }
        return bad ? -1 : 0;
}

size_t codecell_result_file_count(const codecell_result *r)
{
        return r->files.n;
}

const void *codecell_result_file(const codecell_result *r, size_t i, const char **ret_name,
                                 const char **ret_mime_type, size_t *ret_len)
{
        if (i >= r->files.n)
                return NULL;
        const struct result_file *f = &r->files.items[i];
        if (ret_name)
                *ret_name = f->name;
        if (ret_mime_type)
                *ret_mime_type = f->mime_type;
        if (ret_len)
                *ret_len = f->len;
        return f->data;
}

const char *codecell_result_image_name(const codecell_result *r, size_t i)
{
        return i < r->images.n ? r->images.items[i].name : NULL;
}
