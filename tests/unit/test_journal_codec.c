/* The stored form of a journal (run/journal_codec.h): every field comes back; a truncated,
 * corrupt, foreign or oversize form is refused whole, leaving the journal empty. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

/* The checksum journal_codec.c ends a form with (FNV-1a 64), to re-seal a form changed here so
 * that its fields, not only the checksum, are what is tested. */
static void reseal(char *buf, size_t len)
{
        uint64_t h = 14695981039346656037ull;
        for (size_t i = 0; i < len - 8; i++)
                h = (h ^ (unsigned char)buf[i]) * 1099511628211ull;
        for (int i = 0; i < 8; i++)
                buf[len - 8 + i] = (char)(h >> (8 * i));
}
#include "journal_codec.h"

/* A journal of two evals: one with every option and two host-tool calls (one never answered),
 * one bare that failed. */
static void fill(struct journal *j)
{
        journal_init(j, 1 << 20);
        char *argv[] = {"a", "", NULL}, *env[] = {"K=v", NULL};
        codecell_file files[] = {{"in.txt", "x\0y", 3}, {"empty", "", 0}, {NULL, NULL, 0}};
        codecell_run_options o = {.argv = (const char *const *)argv,
                                  .env = (const char *const *)env,
                                  .stdin_data = "in\0put",
                                  .stdin_len = 6,
                                  .files = files};
        CHECK(journal_begin(j, "x = 1\0!", 7, &o));
        long c = call_record_note(&j->pending.calls, "count", "{\"n\":1}");
        call_record_answer(&j->pending.calls, c, "{\"id\":1,\"ok\":true}");
        call_record_note(&j->pending.calls, "never", "{}");
        journal_end(j, true, true);
        CHECK(journal_begin(j, "raise", 5, NULL));
        journal_end(j, true, false);
}

int main(void)
{
        struct journal j, back;
        char *buf, *cell, *session, why[256];
        size_t len;
        fill(&j);
        CHECK(j.n == 2);
        CHECK(journal_encode(&j, "py", "tok:work", &buf, &len) == 0);

        journal_init(&back, 1 << 20);
        CHECK(journal_decode(buf, len, &back, &cell, &session, why, sizeof why) == 0);
        CHECK_STR(cell, "py");
        CHECK_STR(session, "tok:work");
        CHECK(back.seed == j.seed && back.n == 2);
        if (back.n == 2) {
                struct journal_eval *e = &back.evals[0];
                CHECK(e->len == 7 && memcmp(e->code, "x = 1\0!", 7) == 0 && e->ok);
                CHECK_STR(e->argv[0], "a");
                CHECK_STR(e->argv[1], "");
                CHECK(e->argv[2] == NULL);
                CHECK_STR(e->env[0], "K=v");
                CHECK(e->env[1] == NULL);
                CHECK(e->stdin_len == 6 && memcmp(e->stdin_data, "in\0put", 6) == 0);
                CHECK_STR(e->files[0].name, "in.txt");
                CHECK(e->files[0].len == 3 && memcmp(e->files[0].data, "x\0y", 3) == 0);
                CHECK_STR(e->files[1].name, "empty");
                CHECK(e->files[1].len == 0 && e->files[2].name == NULL);
                CHECK(e->calls.n == 2);
                CHECK_STR(e->calls.calls[0].name, "count");
                CHECK_STR(e->calls.calls[0].args, "{\"n\":1}");
                CHECK(e->calls.calls[0].reply_tail != NULL);
                CHECK(e->calls.calls[1].reply_tail == NULL);
                struct journal_eval *f = &back.evals[1];
                CHECK(!f->ok && f->argv == NULL && f->env == NULL && f->files == NULL &&
                      f->stdin_data == NULL && f->calls.n == 0);
                /* Encoding what was read gives the same bytes. */
                char *again;
                size_t again_len;
                CHECK(journal_encode(&back, cell, session, &again, &again_len) == 0);
                CHECK(again_len == len && memcmp(again, buf, len) == 0);
                free(again);
        }
        free(cell);
        free(session);
        journal_free(&back);

        /* Every truncation and every flipped byte is refused, and leaves the journal empty. */
        for (size_t cut = 0; cut < len; cut++) {
                journal_init(&back, 1 << 20);
                CHECK(journal_decode(buf, cut, &back, &cell, &session, why, sizeof why) == -1);
                CHECK(back.n == 0 && back.evals == NULL && cell == NULL && session == NULL);
                journal_free(&back);
        }
        for (size_t at = 0; at < len; at++) {
                buf[at] ^= 0x5a;
                journal_init(&back, 1 << 20);
                CHECK(journal_decode(buf, len, &back, &cell, &session, why, sizeof why) == -1);
                CHECK(back.n == 0 && cell == NULL);
                journal_free(&back);
                buf[at] ^= 0x5a;
        }
        /* Re-sealed, a changed byte passes the checksum: the fields are then read strictly
         * (a flipped length, count or flag is refused; a flipped content byte reads back as
         * it is; either way the form read encodes back to itself, or nothing is kept). */
        size_t refused = 0;
        for (size_t at = 0; at + 8 < len; at++) {
                char *changed = malloc(len);
                memcpy(changed, buf, len);
                changed[at] ^= 0x5a;
                reseal(changed, len);
                journal_init(&back, 1 << 20);
                if (journal_decode(changed, len, &back, &cell, &session, why, sizeof why) == 0) {
                        char *again;
                        size_t again_len;
                        CHECK(journal_encode(&back, cell, session, &again, &again_len) == 0);
                        CHECK(again_len == len && memcmp(again, changed, len) == 0);
                        free(again);
                        free(cell);
                        free(session);
                } else {
                        CHECK(back.n == 0 && back.evals == NULL && cell == NULL);
                        refused++;
                }
                journal_free(&back);
                free(changed);
        }
        CHECK(refused > 0);
        /* A version this codecell does not read. */
        buf[9] = 2;
        reseal(buf, len);
        journal_init(&back, 1 << 20);
        CHECK(journal_decode(buf, len, &back, &cell, &session, why, sizeof why) == -1);
        CHECK(strstr(why, "format version") != NULL);
        journal_free(&back);
        buf[9] = 1;
        reseal(buf, len);

        journal_init(&back, 1 << 20);
        CHECK(journal_decode(buf, len - 1, &back, &cell, &session, why, sizeof why) == -1);
        CHECK(strstr(why, "checksum") != NULL);
        CHECK(journal_decode("hello, world, not a journal", 27, &back, &cell, &session, why,
                             sizeof why) == -1);
        CHECK(strstr(why, "not a codecell journal") != NULL);
        journal_free(&back);

        /* A journal larger than this server's session_journal_bytes is refused, not cut. */
        journal_init(&back, 8);
        CHECK(journal_decode(buf, len, &back, &cell, &session, why, sizeof why) == -1);
        CHECK(strstr(why, "session_journal_bytes") != NULL);
        journal_free(&back);

        /* A journal over its bound has nothing to store. */
        j.over = true;
        char *none;
        size_t none_len;
        CHECK(journal_encode(&j, "py", "s", &none, &none_len) == -1);
        free(buf);
        journal_free(&j);
        CHECK_DONE();
}
