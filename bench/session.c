/* bench/session: the round trip of `x += 1` in a warm session, from the call to the parsed
 * result, 5,000 evals per language in one run, in a session that keeps its journal (the
 * default) beside one that does not (session_journal_bytes 1: over it from the first eval), in
 * alternating rounds. Prints median and p99 of each, the journal's cost, and the time a
 * restore of the journaled session takes per eval replayed (docs/sessions.md). */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "codecell.h"

#define EVALS 5000
#define ROUND 500

static int eval(codecell_cell *cell, const char *code, json_int_t *ret_value)
{
        codecell_result *res = NULL;
        codecell_error err;
        if (codecell_session_eval(cell, "bench", code, strlen(code), &res, &err) < 0) {
                fprintf(stderr, "session: %s\n", err.message);
                return -1;
        }
        char *text = codecell_result_to_json(res, false);
        json_t *obj = text ? json_loads(text, 0, NULL) : NULL;
        int ok = codecell_result_status(res) == CODECELL_STATUS_OK ? 0 : -1;
        if (ret_value)
                *ret_value = json_integer_value(json_object_get(obj, "value"));
        json_decref(obj);
        free(text);
        codecell_result_free(res);
        return ok;
}

static codecell_cell *session_cell(const char *language, uint64_t journal_bytes)
{
        codecell_error err;
        codecell_config *config = codecell_config_new(language, &err);
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        codecell_config_set_pool(config, 0, &err);
        if (journal_bytes)
                codecell_config_set_limit(config, CODECELL_LIMIT_SESSION_JOURNAL_BYTES,
                                          journal_bytes, &err);
        codecell_cell *cell = codecell_cell_new(config, &err);
        codecell_config_free(config);
        if (!cell || eval(cell, "x = 0", NULL) < 0) {
                fprintf(stderr, "session: cannot start (%s)\n", cell ? "eval" : err.message);
                return NULL;
        }
        return cell;
}

/* One round of ROUND evals into t from at; false on a failed eval. */
static bool round_of(codecell_cell *cell, const char *code, double *t, int at)
{
        for (int i = 0; i < ROUND; i++) {
                double start = now_ms();
                if (eval(cell, code, NULL) < 0)
                        return false;
                t[at + i] = now_ms() - start;
        }
        return true;
}

int main(void)
{
        const char *languages[] = {"ruby", "python"};
        printf("session round trip of `x += 1`, %d evals each, ms from the call to the parsed "
               "result; journaled (the default) and not, in alternating rounds of %d\n",
               EVALS, ROUND);
        printf("%-8s %12s %10s %14s %10s %9s %16s\n", "language", "journal p50", "p99",
               "no journal p50", "p99", "cost", "restore ms/eval");
        for (int l = 0; l < 2; l++) {
                codecell_cell *journaled = session_cell(languages[l], 0);
                codecell_cell *plain = session_cell(languages[l], 1);
                if (!journaled || !plain)
                        return 2;
                const char *code = l == 0 ? "x += 1" : "x += 1\nx";
                double *tj = malloc(EVALS * sizeof(double)), *tp = malloc(EVALS * sizeof(double));
                for (int at = 0; at < EVALS; at += ROUND)
                        if (!round_of(journaled, code, tj, at) || !round_of(plain, code, tp, at))
                                return 2;
                json_int_t value = 0;
                if (eval(journaled, "x", &value) < 0 || value != EVALS) {
                        fprintf(stderr, "session: x is %lld after %d evals\n", (long long)value,
                                EVALS);
                        return 2;
                }
                /* The journaled session parked and brought back: every eval replayed. */
                codecell_error err;
                codecell_result *res = NULL;
                size_t evals = 0;
                double ms = 0;
                if (codecell_session_park(journaled, "bench", &err) < 0 ||
                    codecell_session_eval(journaled, "bench", "x", 1, &res, &err) < 0 ||
                    codecell_result_restored(res, &evals, &ms) != 1 ||
                    strcmp(codecell_result_value(res), "5000") != 0) {
                        fprintf(stderr, "session: the restore failed (%s)\n",
                                res ? codecell_result_state_lost(res) : err.message);
                        return 2;
                }
                codecell_result_free(res);
                double j50 = percentile(tj, EVALS, 0.5), p50 = percentile(tp, EVALS, 0.5);
                printf("%-8s %12.3f %10.3f %14.3f %10.3f %8.1f%% %16.3f\n", languages[l], j50,
                       percentile(tj, EVALS, 0.99), p50, percentile(tp, EVALS, 0.99),
                       (j50 - p50) / p50 * 100.0, evals ? ms / (double)evals : 0);
                free(tj);
                free(tp);
                codecell_cell_free(journaled);
                codecell_cell_free(plain);
        }
        return 0;
}
