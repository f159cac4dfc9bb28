/* bench/session: the round trip of `x += 1` in a warm session, from the call to the parsed
 * result, 5,000 evals per language in one run. Prints median and p99. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "codecell.h"

#define EVALS 5000

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

int main(void)
{
        const char *languages[] = {"ruby", "python"};
        printf("session round trip of `x += 1`, %d evals each, ms from the call to the parsed "
               "result\n",
               EVALS);
        printf("%-8s %10s %10s\n", "language", "median ms", "p99 ms");
        for (int l = 0; l < 2; l++) {
                codecell_error err;
                codecell_config *config = codecell_config_new(languages[l], &err);
                codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
                codecell_config_set_pool(config, 0, &err);
                codecell_cell *cell = codecell_cell_new(config, &err);
                codecell_config_free(config);
                if (!cell || eval(cell, "x = 0", NULL) < 0) {
                        fprintf(stderr, "session: cannot start (%s)\n",
                                cell ? "eval" : err.message);
                        return 2;
                }
                const char *code = l == 0 ? "x += 1" : "x += 1\nx";
                double *t = malloc(EVALS * sizeof(double));
                json_int_t value = 0;
                for (int i = 0; i < EVALS; i++) {
                        double start = now_ms();
                        if (eval(cell, code, &value) < 0)
                                return 2;
                        t[i] = now_ms() - start;
                }
                if (value != EVALS) {
                        fprintf(stderr, "session: x is %lld after %d evals\n", (long long)value,
                                EVALS);
                        return 2;
                }
                double p50 = percentile(t, EVALS, 0.5), p99 = percentile(t, EVALS, 0.99);
                printf("%-8s %10.3f %10.3f\n", languages[l], p50, p99);
                free(t);
                codecell_cell_free(cell);
        }
        return 0;
}
