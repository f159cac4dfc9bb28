#include "call_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void call_record_init(struct call_record *r, size_t max_bytes)
{
        *r = (struct call_record){.max_bytes = max_bytes};
        pthread_mutex_init(&r->lock, NULL);
}

void call_record_free(struct call_record *r)
{
        for (size_t i = 0; i < r->n; i++) {
                free(r->calls[i].name);
                free(r->calls[i].args);
                free(r->calls[i].reply_tail);
        }
        free(r->calls);
        pthread_mutex_destroy(&r->lock);
        *r = (struct call_record){0};
}

long call_record_note(struct call_record *r, const char *name, const char *args)
{
        size_t size = strlen(name) + strlen(args);
        long index = -1;
        pthread_mutex_lock(&r->lock);
        if (r->over || r->bytes + size > r->max_bytes) {
                r->over = true;
                goto out;
        }
        if (r->n == r->cap) {
                size_t cap = r->cap ? 2 * r->cap : 4;
                struct recorded_call *grown = realloc(r->calls, cap * sizeof(*grown));
                if (!grown) {
                        r->over = true;
                        goto out;
                }
                r->calls = grown;
                r->cap = cap;
        }
        struct recorded_call *c = &r->calls[r->n];
        *c = (struct recorded_call){.name = strdup(name), .args = strdup(args)};
        if (!c->name || !c->args) {
                free(c->name);
                free(c->args);
                r->over = true;
                goto out;
        }
        r->bytes += size;
        index = (long)r->n++;
out:
        pthread_mutex_unlock(&r->lock);
        return index;
}

/* The reply's text after its id: every reply the engine builds begins {"t":"reply","id":N
 * (rpc.c), so the rest is the same whatever id a later guest gives the same call. */
static const char *after_id(const char *reply)
{
        const char *at = strstr(reply, "\"id\":");
        if (!at)
                return NULL;
        at += 5;
        at += strspn(at, "-0123456789");
        return at;
}

void call_record_answer(struct call_record *r, long index, const char *reply)
{
        const char *tail = reply ? after_id(reply) : NULL;
        if (index < 0 || !tail)
                return;
        pthread_mutex_lock(&r->lock);
        size_t size = strlen(tail);
        struct recorded_call *c = (size_t)index < r->n ? &r->calls[index] : NULL;
        if (c && !c->reply_tail) {
                if (r->over || r->bytes + size > r->max_bytes || !(c->reply_tail = strdup(tail)))
                        r->over = true;
                else
                        r->bytes += size;
        }
        pthread_mutex_unlock(&r->lock);
}

char *call_record_replay(struct call_record *r, const json_t *id, const char *name,
                         const char *args)
{
        char *reply = NULL;
        pthread_mutex_lock(&r->lock);
        const struct recorded_call *c = r->next < r->n ? &r->calls[r->next] : NULL;
        if (r->diverged[0]) {
                /* Stopped already: every later call is refused too. */
        } else if (!c) {
                snprintf(r->diverged, sizeof(r->diverged),
                         "it called tool \"%.*s\", a call the journal does not have (the eval "
                         "made %zu tool call%s when it first ran)",
                         utf8_prefix(name, 64), name, r->n, r->n == 1 ? "" : "s");
        } else if (strcmp(c->name, name) != 0) {
                snprintf(r->diverged, sizeof(r->diverged),
                         "its tool call %zu was to \"%.*s\", where it first called \"%.*s\"",
                         r->next + 1, utf8_prefix(name, 64), name, utf8_prefix(c->name, 64),
                         c->name);
        } else if (strcmp(c->args, args) != 0) {
                snprintf(r->diverged, sizeof(r->diverged),
                         "its tool call %zu to \"%.*s\" had other arguments than when it first "
                         "ran (%.*s, then %.*s)",
                         r->next + 1, utf8_prefix(name, 64), name, utf8_prefix(args, 80), args,
                         utf8_prefix(c->args, 80), c->args);
        } else if (!c->reply_tail) {
                snprintf(r->diverged, sizeof(r->diverged),
                         "its tool call %zu to \"%.*s\" was never answered when it first ran",
                         r->next + 1, utf8_prefix(name, 64), name);
        } else {
                r->next++;
                reply = str_printf("{\"t\":\"reply\",\"id\":%" JSON_INTEGER_FORMAT "%s",
                                   json_integer_value(id), c->reply_tail);
        }
        /* The reason is a fixed buffer, which snprintf may have cut inside a character. */
        utf8_trim_cut(r->diverged);
        pthread_mutex_unlock(&r->lock);
        return reply;
}

int call_record_copy(struct call_record *to, const struct call_record *from)
{
        call_record_init(to, from->max_bytes);
        for (size_t i = 0; i < from->n; i++) {
                const struct recorded_call *c = &from->calls[i];
                long k = call_record_note(to, c->name, c->args);
                if (k < 0)
                        return -1;
                char *tail = c->reply_tail ? strdup(c->reply_tail) : NULL;
                if (c->reply_tail && !tail)
                        return -1;
                to->calls[k].reply_tail = tail;
        }
        to->bytes = from->bytes;
        return 0;
}
