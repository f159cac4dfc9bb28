#include "file_contents.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "file_links.h"
#include "server.h"
#include "util.h"

static bool is_text(const char *mime_type)
{
        return strncmp(mime_type, "text/", 5) == 0 || strcmp(mime_type, "application/json") == 0;
}

/* An embedded resource: text for UTF-8 text (the engine typed it so only when it is), else a
 * base64 blob. Its URI names the file but is not for resources/read: the content is here. */
static json_t *embedded(const char *name, const char *mime, const void *data, size_t len)
{
        char *segment = file_link_segment(name);
        char *uri = segment ? str_printf("codecell://output/%s", segment) : NULL;
        free(segment);
        json_t *resource = uri ? json_pack("{s:s, s:s}", "uri", uri, "mimeType", mime) : NULL;
        free(uri);
        int bad = !resource;
        if (resource && is_text(mime)) {
                bad |= json_object_set_new(resource, "text", json_stringn(data, len));
        } else if (resource) {
                size_t n = 0;
                char *b64 = base64_encode(data, len, &n);
                bad |= !b64 || json_object_set_new(resource, "blob", json_stringn(b64, n));
                free(b64);
        }
        if (bad) {
                json_decref(resource);
                return NULL;
        }
        return json_pack("{s:s, s:o}", "type", "resource", "resource", resource);
}

/* What the model reads instead of a file larger than the whole store of links. */
static json_t *too_large(const char *name, size_t len)
{
        char text[384];
        snprintf(text, sizeof(text), "The output file %s (%zu bytes) is too large to hand back.",
                 name, len);
        return json_pack("{s:s, s:s}", "type", "text", "text", text);
}

char *mcp_file_contents(struct mcp_server *s, struct mcp_client *c, const codecell_result *res)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        bool bad = false;
        for (size_t i = 0; !bad && i < codecell_result_file_count(res); i++) {
                const char *name = NULL, *mime = NULL;
                size_t len = 0;
                const void *data = codecell_result_file(res, i, &name, &mime, &len);
                json_t *item = NULL;
                if (len <= s->o.file_inline_bytes) {
                        item = embedded(name, mime, data, len);
                } else {
                        char *uri = file_links_add(s->links, c->prefix, name, mime, data, len);
                        item = uri ? json_pack("{s:s, s:s, s:s, s:s, s:I, s:s}", "type",
                                               "resource_link", "uri", uri, "name", name,
                                               "mimeType", mime, "size", (json_int_t)len,
                                               "description",
                                               "a file of the run's output folder; read it "
                                               "with resources/read before the link expires")
                                   : too_large(name, len);
                        free(uri);
                }
                char *dump = item ? json_dumps(item, JSON_COMPACT) : NULL;
                json_decref(item);
                bad = !dump;
                if (dump)
                        fprintf(f, ",%s", dump);
                free(dump);
        }
        if (fclose(f) != 0 || bad) {
                free(text);
                return NULL;
        }
        return text;
}
