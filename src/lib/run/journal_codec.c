/* The stored form of a journal (journal_codec.h). Little-endian throughout:
 *   "CCJOURNAL" u32 version, str cell, str session, u64 seed, u64 n_evals, then per eval:
 *   str code, list argv, list env, opt-bytes stdin, u64 n_files {str name, bytes data},
 *   u8 ok, u64 n_calls {str name, str args, opt-str reply}; then u64 FNV-1a of all before.
 * str/bytes: u64 length then the bytes; list/opt: u8 present (0/1) first. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal_codec.h"

static const char magic[] = "CCJOURNAL";
#define MAGIC_LEN (sizeof magic - 1)

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
        uint64_t h = 14695981039346656037ull;
        for (size_t i = 0; i < n; i++)
                h = (h ^ p[i]) * 1099511628211ull;
        return h;
}

struct out {
        char *buf;
        size_t len, cap;
        bool failed;
};

static void put(struct out *o, const void *p, size_t n)
{
        if (o->failed)
                return;
        if (o->len + n > o->cap) {
                size_t cap = o->cap ? o->cap : 256;
                while (cap < o->len + n)
                        cap *= 2;
                char *b = realloc(o->buf, cap);
                if (!b) {
                        o->failed = true;
                        return;
                }
                o->buf = b;
                o->cap = cap;
        }
        if (n)
                memcpy(o->buf + o->len, p, n);
        o->len += n;
}

static void put_u64(struct out *o, uint64_t v)
{
        unsigned char b[8];
        for (int i = 0; i < 8; i++)
                b[i] = (unsigned char)(v >> (8 * i));
        put(o, b, 8);
}

static void put_u8(struct out *o, unsigned v)
{
        unsigned char b = (unsigned char)v;
        put(o, &b, 1);
}

static void put_bytes(struct out *o, const void *p, size_t n)
{
        put_u64(o, n);
        put(o, p, n);
}

static void put_str(struct out *o, const char *s)
{
        put_bytes(o, s, strlen(s));
}

static void put_list(struct out *o, char *const *list)
{
        put_u8(o, list != NULL);
        if (!list)
                return;
        size_t n = 0;
        while (list[n])
                n++;
        put_u64(o, n);
        for (size_t i = 0; i < n; i++)
                put_str(o, list[i]);
}

static void put_eval(struct out *o, const struct journal_eval *e)
{
        put_bytes(o, e->code, e->len);
        put_list(o, e->argv);
        put_list(o, e->env);
        put_u8(o, e->stdin_data != NULL);
        if (e->stdin_data)
                put_bytes(o, e->stdin_data, e->stdin_len);
        size_t nf = 0;
        while (e->files && e->files[nf].name)
                nf++;
        put_u8(o, e->files != NULL);
        put_u64(o, nf);
        for (size_t i = 0; i < nf; i++) {
                put_str(o, e->files[i].name);
                put_bytes(o, e->files[i].data, e->files[i].len);
        }
        put_u8(o, e->ok);
        put_u64(o, e->calls.n);
        for (size_t i = 0; i < e->calls.n; i++) {
                const struct recorded_call *c = &e->calls.calls[i];
                put_str(o, c->name);
                put_str(o, c->args);
                put_u8(o, c->reply_tail != NULL);
                if (c->reply_tail)
                        put_str(o, c->reply_tail);
        }
}

int journal_encode(const struct journal *j, const char *cell, const char *session, char **out,
                   size_t *out_len)
{
        if (j->over)
                return -1;
        struct out o = {0};
        put(&o, magic, MAGIC_LEN);
        unsigned char v[4] = {JOURNAL_CODEC_VERSION & 0xff, 0, 0, 0};
        put(&o, v, 4);
        put_str(&o, cell);
        put_str(&o, session);
        put_u64(&o, j->seed);
        put_u64(&o, j->n);
        for (size_t i = 0; i < j->n; i++)
                put_eval(&o, &j->evals[i]);
        if (!o.failed)
                put_u64(&o, fnv1a((const unsigned char *)o.buf, o.len));
        if (o.failed) {
                free(o.buf);
                return -1;
        }
        *out = o.buf;
        *out_len = o.len;
        return 0;
}

/* Reading: every getter fails (and stays failed) on a short input or a length past the end or
 * past the journal's bound, so one check at the end of each record is enough. */
struct in {
        const unsigned char *p;
        size_t len, at;
        size_t bytes, max_bytes; /* of what the journal would keep, as journal.c counts */
        const char *why;         /* NULL while fine */
};

static bool fail(struct in *in, const char *why)
{
        if (!in->why)
                in->why = why;
        return false;
}

static uint64_t get_u64(struct in *in)
{
        if (in->why || in->len - in->at < 8)
                return fail(in, "it ends before its last field (truncated)"), 0;
        uint64_t v = 0;
        for (int i = 0; i < 8; i++)
                v |= (uint64_t)in->p[in->at + i] << (8 * i);
        in->at += 8;
        return v;
}

static bool get_flag(struct in *in)
{
        if (in->why || in->at >= in->len)
                return fail(in, "it ends before its last field (truncated)");
        unsigned char b = in->p[in->at++];
        if (b > 1)
                return fail(in, "a flag byte is neither 0 nor 1 (corrupt)");
        return b == 1;
}

/* n counted items, each of at least min_item bytes: refuses a count the rest cannot hold (so a
 * corrupt count never makes a huge allocation). */
static size_t get_count(struct in *in, size_t min_item)
{
        uint64_t n = get_u64(in);
        if (!in->why && n > (in->len - in->at) / min_item)
                return fail(in, "a count is larger than what follows (corrupt)"), 0;
        return in->why ? 0 : (size_t)n;
}

/* A malloc'd copy of the next length-prefixed bytes, NUL-ended; NULL on failure. text: refuse
 * a NUL inside (names, arguments, code read as C strings elsewhere). */
static char *get_bytes(struct in *in, size_t *len, bool text, bool counted)
{
        uint64_t n = get_u64(in);
        if (in->why)
                return NULL;
        if (n > in->len - in->at)
                return fail(in, "a length runs past the end (truncated or corrupt)"), NULL;
        if (counted && (n > in->max_bytes || in->bytes + n > in->max_bytes))
                return fail(in, "it is larger than session_journal_bytes allows"), NULL;
        if (text && memchr(in->p + in->at, '\0', n))
                return fail(in, "a text field holds a NUL byte (corrupt)"), NULL;
        char *s = malloc(n + 1);
        if (!s)
                return fail(in, "out of memory"), NULL;
        memcpy(s, in->p + in->at, n);
        s[n] = '\0';
        in->at += n;
        if (counted)
                in->bytes += n;
        if (len)
                *len = n;
        return s;
}

static char **get_list(struct in *in)
{
        if (!get_flag(in))
                return NULL;
        size_t n = get_count(in, 8);
        if (in->why)
                return NULL;
        char **list = calloc(n + 1, sizeof(char *));
        if (!list)
                return fail(in, "out of memory"), NULL;
        for (size_t i = 0; i < n && !in->why; i++)
                list[i] = get_bytes(in, NULL, true, true);
        return list; /* on failure freed with the eval */
}

static void get_eval(struct in *in, struct journal_eval *e)
{
        if (!(e->code = get_bytes(in, &e->len, false, true)))
                return;
        e->argv = get_list(in);
        e->env = get_list(in);
        if (get_flag(in))
                e->stdin_data = get_bytes(in, &e->stdin_len, false, true);
        bool has_files = get_flag(in);
        size_t nf = get_count(in, 16);
        if (in->why)
                return;
        if (!has_files && nf)
                return (void)fail(in, "files are counted where none were given (corrupt)");
        if (has_files) {
                if (!(e->files = calloc(nf + 1, sizeof(codecell_file))))
                        return (void)fail(in, "out of memory");
                for (size_t i = 0; i < nf && !in->why; i++) {
                        size_t len = 0;
                        char *name = get_bytes(in, NULL, true, true);
                        char *data = name ? get_bytes(in, &len, false, true) : NULL;
                        if (!data) {
                                free(name);
                                return;
                        }
                        e->files[i] = (codecell_file){.name = name, .data = data, .len = len};
                }
        }
        e->ok = get_flag(in);
        size_t nc = get_count(in, 17);
        for (size_t i = 0; i < nc && !in->why; i++) {
                char *name = get_bytes(in, NULL, true, true);
                char *args = name ? get_bytes(in, NULL, true, true) : NULL;
                char *reply = NULL;
                if (args && get_flag(in))
                        reply = get_bytes(in, NULL, true, true);
                if (in->why) {
                        free(name);
                        free(args);
                        free(reply);
                        return;
                }
                /* Appended the way call_record_note does, without its bound (ours is above). */
                struct call_record *r = &e->calls;
                if (r->n == r->cap) {
                        size_t cap = r->cap ? r->cap * 2 : 4;
                        struct recorded_call *c = realloc(r->calls, cap * sizeof *c);
                        if (!c) {
                                free(name);
                                free(args);
                                free(reply);
                                return (void)fail(in, "out of memory");
                        }
                        r->calls = c;
                        r->cap = cap;
                }
                r->calls[r->n++] = (struct recorded_call){name, args, reply};
        }
}

int journal_decode(const void *buf, size_t len, struct journal *j, char **cell, char **session,
                   char *why, size_t why_len)
{
        struct in in = {.p = buf, .len = len, .max_bytes = j->max_bytes};
        *cell = *session = NULL;
        if (len < MAGIC_LEN + 4 + 8 || memcmp(buf, magic, MAGIC_LEN) != 0) {
                in.why = "it is not a codecell journal (no CCJOURNAL header)";
        } else {
                /* The checksum first: no work on garbage. */
                in.at = len - 8;
                if (fnv1a(buf, len - 8) != get_u64(&in))
                        in.why = "its checksum does not match (truncated or corrupt)";
        }
        if (!in.why) {
                in.len = len - 8;
                in.at = MAGIC_LEN;
                const unsigned char *v = in.p + in.at;
                uint32_t version =
                        v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 24;
                in.at += 4;
                if (version != JOURNAL_CODEC_VERSION)
                        in.why = "its format version is not one this codecell reads";
        }
        if (!in.why) {
                *cell = get_bytes(&in, NULL, true, false);
                *session = get_bytes(&in, NULL, true, false);
                uint64_t seed = get_u64(&in);
                size_t n = get_count(&in, 8 + 1 + 1 + 1 + 1 + 8 + 1 + 8);
                if (!in.why && n && !(j->evals = calloc(n, sizeof *j->evals)))
                        fail(&in, "out of memory");
                for (size_t i = 0; i < n && !in.why; i++) {
                        call_record_init(&j->evals[i].calls, j->max_bytes);
                        j->n = i + 1; /* freed with the journal on failure */
                        get_eval(&in, &j->evals[i]);
                }
                j->cap = n;
                j->seed = seed;
                j->bytes = in.bytes;
                if (!in.why && in.at != in.len)
                        fail(&in, "it has bytes after its last eval (corrupt)");
        }
        if (!in.why)
                return 0;
        snprintf(why, why_len, "the stored journal is refused: %s", in.why);
        size_t max = j->max_bytes;
        journal_free(j);
        journal_init(j, max);
        free(*cell);
        free(*session);
        *cell = *session = NULL;
        return -1;
}
