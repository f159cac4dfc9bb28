#include "file_links.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base64.h"
#include "util.h"

#define TOKEN_BYTES 16 /* 128 bits from the kernel's CSPRNG */

struct file_link {
        char token[TOKEN_BYTES * 2 + 1];
        char *owner, *name, *uri;
        const char *mime_type; /* static (the engine's) */
        unsigned char *data;
        size_t len;
        double expires_ms; /* monotonic */
};

struct file_links {
        double ttl_ms;
        size_t max_bytes;
        pthread_mutex_t lock;    /* guards what follows */
        struct file_link *items; /* oldest first */
        size_t n, bytes;
};

struct file_links *file_links_new(double ttl_ms, size_t max_bytes)
{
        struct file_links *l = calloc(1, sizeof(*l));
        if (!l)
                return NULL;
        l->ttl_ms = ttl_ms;
        l->max_bytes = max_bytes;
        pthread_mutex_init(&l->lock, NULL);
        return l;
}

static void link_free(struct file_link *k)
{
        free(k->owner);
        free(k->name);
        free(k->uri);
        free(k->data);
}

/* Removes item i, keeping the order. Under the lock. */
static void remove_at(struct file_links *l, size_t i)
{
        l->bytes -= l->items[i].len;
        link_free(&l->items[i]);
        memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof(l->items[0]));
        l->n--;
}

/* Drops what expired. Under the lock. */
static void sweep(struct file_links *l, double now)
{
        for (size_t i = l->n; i-- > 0;)
                if (l->items[i].expires_ms <= now)
                        remove_at(l, i);
}

void file_links_free(struct file_links *l)
{
        if (!l)
                return;
        for (size_t i = 0; i < l->n; i++)
                link_free(&l->items[i]);
        free(l->items);
        pthread_mutex_destroy(&l->lock);
        free(l);
}

char *file_link_segment(const char *name)
{
        static const char hex[] = "0123456789ABCDEF";
        char *out = malloc(strlen(name) * 3 + 1), *p = out;
        for (const unsigned char *c = (const unsigned char *)name; out && *c; c++) {
                if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                    (*c >= '0' && *c <= '9') || strchr("-._~", *c)) {
                        *p++ = (char)*c;
                } else {
                        *p++ = '%';
                        *p++ = hex[*c >> 4];
                        *p++ = hex[*c & 15];
                }
        }
        if (out)
                *p = '\0';
        return out;
}

char *file_links_add(struct file_links *l, const char *owner, const char *name,
                     const char *mime_type, const void *data, size_t len)
{
        if (len > l->max_bytes)
                return NULL;
        unsigned char raw[TOKEN_BYTES];
        if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
                return NULL;
        struct file_link k = {.mime_type = mime_type, .len = len};
        for (size_t i = 0; i < TOKEN_BYTES; i++)
                snprintf(k.token + 2 * i, 3, "%02x", raw[i]);
        char *segment = file_link_segment(name);
        k.owner = strdup(owner);
        k.name = strdup(name);
        k.uri = segment ? str_printf(FILE_LINK_SCHEME "%s/%s", k.token, segment) : NULL;
        k.data = malloc(len ? len : 1);
        free(segment);
        char *uri = k.uri ? strdup(k.uri) : NULL;
        if (!k.owner || !k.name || !k.uri || !k.data || !uri) {
                link_free(&k);
                free(uri);
                return NULL;
        }
        memcpy(k.data, data, len);
        pthread_mutex_lock(&l->lock);
        double now = now_ms();
        k.expires_ms = now + l->ttl_ms;
        sweep(l, now);
        /* The oldest links, of any client, make room: the store never grows past its bound. */
        while (l->n > 0 && l->bytes + len > l->max_bytes)
                remove_at(l, 0);
        struct file_link *grown = realloc(l->items, (l->n + 1) * sizeof(*grown));
        if (grown) {
                l->items = grown;
                l->items[l->n++] = k;
                l->bytes += len;
        }
        pthread_mutex_unlock(&l->lock);
        if (!grown) {
                link_free(&k);
                free(uri);
                return NULL;
        }
        return uri;
}

/* The live link of uri for owner, or NULL. Under the lock. */
static struct file_link *find(struct file_links *l, const char *owner, const char *uri)
{
        sweep(l, now_ms());
        for (size_t i = 0; uri && i < l->n; i++)
                if (strcmp(l->items[i].uri, uri) == 0 && strcmp(l->items[i].owner, owner) == 0)
                        return &l->items[i];
        return NULL;
}

static bool is_text(const char *mime_type)
{
        return strncmp(mime_type, "text/", 5) == 0 || strcmp(mime_type, "application/json") == 0;
}

json_t *file_links_read(struct file_links *l, const char *owner, const char *uri)
{
        json_t *result = NULL;
        pthread_mutex_lock(&l->lock);
        struct file_link *k = find(l, owner, uri);
        if (k) {
                json_t *item = json_pack("{s:s, s:s}", "uri", k->uri, "mimeType", k->mime_type);
                int bad = !item;
                if (item && is_text(k->mime_type)) {
                        /* The engine typed it text only when it is UTF-8 without NUL. */
                        bad |= json_object_set_new(item, "text",
                                                   json_stringn((const char *)k->data, k->len));
                } else if (item) {
                        size_t n = 0;
                        char *b64 = base64_encode(k->data, k->len, &n);
                        bad |= !b64 || json_object_set_new(item, "blob", json_stringn(b64, n));
                        free(b64);
                }
                result = bad ? NULL : json_pack("{s:[o]}", "contents", item);
                if (bad)
                        json_decref(item);
        }
        pthread_mutex_unlock(&l->lock);
        return result;
}

void file_links_drop_owner(struct file_links *l, const char *owner)
{
        pthread_mutex_lock(&l->lock);
        for (size_t i = l->n; i-- > 0;)
                if (strcmp(l->items[i].owner, owner) == 0)
                        remove_at(l, i);
        pthread_mutex_unlock(&l->lock);
}
