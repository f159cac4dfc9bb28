#include "journal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util.h"

static uint64_t new_seed(void)
{
        uint64_t seed = 0;
        if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
                seed = (uint64_t)(now_ms() * 1000.0);
        /* 48 bits: exact in every JSON reader and in both languages' literals. */
        return seed & ((1ULL << 48) - 1);
}

void journal_init(struct journal *j, size_t max_bytes)
{
        *j = (struct journal){.max_bytes = max_bytes, .seed = new_seed()};
}

static void free_strings(char **list)
{
        for (size_t i = 0; list && list[i]; i++)
                free(list[i]);
        free(list);
}

static void eval_free(struct journal_eval *e)
{
        free(e->code);
        free_strings(e->argv);
        free_strings(e->env);
        free(e->stdin_data);
        for (size_t i = 0; e->files && e->files[i].name; i++) {
                free((char *)e->files[i].name);
                free((void *)e->files[i].data);
        }
        free(e->files);
        call_record_free(&e->calls);
        *e = (struct journal_eval){0};
}

static void drop_all(struct journal *j)
{
        for (size_t i = 0; i < j->n; i++)
                eval_free(&j->evals[i]);
        free(j->evals);
        j->evals = NULL;
        j->n = j->cap = 0;
        j->bytes = 0;
}

void journal_reset(struct journal *j)
{
        drop_all(j);
        if (j->has_pending)
                eval_free(&j->pending);
        j->has_pending = false;
        j->over = false;
        j->seed = new_seed();
}

void journal_free(struct journal *j)
{
        journal_reset(j);
}

/* A copy of a NULL-terminated list of strings, adding their bytes to *bytes; false when out
 * of memory. */
static bool copy_strings(const char *const *from, char ***to, size_t *bytes)
{
        if (!from)
                return true;
        size_t n = 0;
        while (from[n])
                n++;
        if (!(*to = calloc(n + 1, sizeof(char *))))
                return false;
        for (size_t i = 0; i < n; i++) {
                if (!((*to)[i] = strdup(from[i])))
                        return false;
                *bytes += strlen(from[i]);
        }
        return true;
}

static bool copy_files(const codecell_file *from, codecell_file **to, size_t *bytes)
{
        if (!from)
                return true;
        size_t n = 0;
        while (from[n].name)
                n++;
        if (!(*to = calloc(n + 1, sizeof(codecell_file))))
                return false;
        for (size_t i = 0; i < n; i++) {
                char *name = strdup(from[i].name);
                void *data = malloc(from[i].len ? from[i].len : 1);
                if (!name || !data) {
                        free(name);
                        free(data);
                        return false;
                }
                memcpy(data, from[i].data, from[i].len);
                (*to)[i] = (codecell_file){.name = name, .data = data, .len = from[i].len};
                *bytes += strlen(name) + from[i].len;
        }
        return true;
}

bool journal_begin(struct journal *j, const char *code, size_t len, const codecell_run_options *o)
{
        if (j->over)
                return false;
        struct journal_eval *e = &j->pending;
        *e = (struct journal_eval){.len = len};
        size_t bytes = len;
        bool fine = (e->code = malloc(len + 1)) != NULL;
        if (fine) {
                memcpy(e->code, code, len);
                e->code[len] = '\0';
        }
        if (fine && o) {
                fine = copy_strings(o->argv, &e->argv, &bytes) &&
                       copy_strings(o->env, &e->env, &bytes) &&
                       copy_files(o->files, &e->files, &bytes);
                if (fine && o->stdin_data && o->stdin_len) {
                        fine = (e->stdin_data = malloc(o->stdin_len)) != NULL;
                        if (fine)
                                memcpy(e->stdin_data, o->stdin_data, o->stdin_len);
                        e->stdin_len = o->stdin_len;
                        bytes += o->stdin_len;
                }
        }
        size_t used = j->bytes + bytes;
        call_record_init(&e->calls, used < j->max_bytes ? j->max_bytes - used : 0);
        j->has_pending = true;
        if (!fine || used > j->max_bytes) {
                eval_free(e);
                j->has_pending = false;
                drop_all(j);
                j->over = true;
                return false;
        }
        j->bytes = used; /* the calls' bytes are added once the eval ends */
        return true;
}

bool journal_end(struct journal *j, bool completed, bool ok)
{
        if (!j->has_pending)
                return false;
        struct journal_eval *e = &j->pending;
        j->has_pending = false;
        size_t own = e->len; /* what journal_begin counted, less the calls */
        bool was_over = j->over;
        if (e->calls.over) {
                eval_free(e);
                drop_all(j);
                j->over = true;
                return !was_over;
        }
        if (!completed) {
                /* Its bytes were counted at its start: given back. */
                size_t counted = own;
                for (size_t i = 0; e->argv && e->argv[i]; i++)
                        counted += strlen(e->argv[i]);
                for (size_t i = 0; e->env && e->env[i]; i++)
                        counted += strlen(e->env[i]);
                for (size_t i = 0; e->files && e->files[i].name; i++)
                        counted += strlen(e->files[i].name) + e->files[i].len;
                counted += e->stdin_len;
                j->bytes = j->bytes > counted ? j->bytes - counted : 0;
                eval_free(e);
                return false;
        }
        if (j->n == j->cap) {
                size_t cap = j->cap ? 2 * j->cap : 16;
                struct journal_eval *grown = realloc(j->evals, cap * sizeof(*grown));
                if (!grown) {
                        eval_free(e);
                        drop_all(j);
                        j->over = true;
                        return !was_over;
                }
                j->evals = grown;
                j->cap = cap;
        }
        e->ok = ok;
        j->bytes += e->calls.bytes;
        j->evals[j->n++] = *e;
        *e = (struct journal_eval){0};
        return false;
}

codecell_run_options journal_eval_options(const struct journal_eval *e, codecell_cancel *cancel)
{
        return (codecell_run_options){.cancel = cancel,
                                      .argv = (const char *const *)e->argv,
                                      .env = (const char *const *)e->env,
                                      .stdin_data = e->stdin_data,
                                      .stdin_len = e->stdin_len,
                                      .files = e->files};
}

int journal_copy(struct journal *to, const struct journal *from)
{
        journal_init(to, from->max_bytes);
        to->seed = from->seed; /* the fork draws the numbers its source drew */
        if (from->n && !(to->evals = calloc(from->n, sizeof(*to->evals))))
                return -1;
        to->cap = from->n;
        for (size_t i = 0; i < from->n; i++) {
                const struct journal_eval *e = &from->evals[i];
                struct journal_eval *c = &to->evals[i];
                size_t bytes = 0;
                to->n = i + 1; /* freed with the rest, whatever it got */
                c->len = e->len;
                c->ok = e->ok;
                c->stdin_len = e->stdin_len;
                if (!(c->code = strndup(e->code, e->len)) ||
                    !copy_strings((const char *const *)e->argv, &c->argv, &bytes) ||
                    !copy_strings((const char *const *)e->env, &c->env, &bytes) ||
                    !copy_files(e->files, &c->files, &bytes) ||
                    (e->stdin_len && !(c->stdin_data = malloc(e->stdin_len))) ||
                    call_record_copy(&c->calls, &e->calls) < 0)
                        return -1;
                if (e->stdin_len)
                        memcpy(c->stdin_data, e->stdin_data, e->stdin_len);
        }
        to->bytes = from->bytes;
        return 0;
}
