#include "session_restore.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "execution.h"
#include "result.h"
#include "util.h"

bool session_seed(struct cell_plan *plan, struct tool_table *tools, struct standby *kernel,
                  uint64_t seed, char *why, size_t n)
{
        char code[96];
        /* Python's hash seed is fixed as its interpreter starts (and -I ignores
         * PYTHONHASHSEED): a kernel forked from the cell's zygote shares the zygote's. */
        if (strcmp(plan->config->runtime->name, "ruby") == 0)
                snprintf(code, sizeof(code), "srand(%" PRIu64 "); nil", seed);
        else
                snprintf(code, sizeof(code), "__import__('random').seed(%" PRIu64 ")", seed);
        codecell_result *res = result_new();
        if (!res) {
                snprintf(why, n, "out of memory");
                return false;
        }
        res->layers = json_incref(plan->layers);
        bool alive =
                execution_on(plan, tools, kernel, code, strlen(code), true, NULL, NULL, res, NULL);
        bool fine = alive && res->status == CODECELL_STATUS_OK;
        if (!fine)
                snprintf(why, n, "the session's kernel did not take its seeds (%s)",
                         codecell_status_name(res->status));
        codecell_result_free(res);
        return fine;
}

/* What an eval came to, for the model: its status, and its error's class. */
static void describe_status(const codecell_result *res, char *buf, size_t n)
{
        const char *cls = json_string_value(json_object_get(res->error, "class"));
        snprintf(buf, n, "%s%s%s", codecell_status_name(res->status), cls ? " " : "",
                 cls ? cls : "");
}

bool session_replay(struct cell_plan *plan, struct tool_table *tools, struct standby *kernel,
                    struct journal *j, codecell_cancel *cancel, struct replay_outcome *out)
{
        uint64_t budget = plan->config->limits[CODECELL_LIMIT_RESTORE_MS];
        double start = now_ms();
        *out = (struct replay_outcome){0};
        for (size_t i = 0; i < j->n; i++) {
                struct journal_eval *e = &j->evals[i];
                double left = (double)budget - (now_ms() - start);
                out->stopped = i + 1;
                if (left < 1) {
                        snprintf(out->why, sizeof(out->why),
                                 "restoring took longer than the cell's restore_ms (%" PRIu64
                                 " ms) before eval %zu of %zu",
                                 budget, i + 1, j->n);
                        return false;
                }
                codecell_run_options o = journal_eval_options(e, cancel);
                o.timeout_ms = (size_t)left;
                codecell_result *res = result_new();
                if (!res) {
                        snprintf(out->why, sizeof(out->why), "out of memory");
                        return false;
                }
                res->layers = json_incref(plan->layers);
                e->calls.replaying = true;
                e->calls.next = 0;
                e->calls.diverged[0] = '\0';
                bool alive = execution_on(plan, tools, kernel, e->code, e->len, true, &e->calls, &o,
                                          res, NULL);
                e->calls.replaying = false;
                bool ended_as_before =
                        res->status == (e->ok ? CODECELL_STATUS_OK : CODECELL_STATUS_ERROR);
                char status[128];
                describe_status(res, status, sizeof(status));
                if (e->calls.diverged[0]) {
                        snprintf(out->why, sizeof(out->why),
                                 "eval %zu of %zu went another way than when it first ran: %s",
                                 i + 1, j->n, e->calls.diverged);
                } else if (res->status == CODECELL_STATUS_TIMEOUT &&
                           (double)budget - (now_ms() - start) < 1) {
                        snprintf(out->why, sizeof(out->why),
                                 "restoring took longer than the cell's restore_ms (%" PRIu64
                                 " ms), in eval %zu of %zu",
                                 budget, i + 1, j->n);
                } else if (res->cancelled) {
                        snprintf(out->why, sizeof(out->why),
                                 "the call was cancelled while eval %zu of %zu was replayed", i + 1,
                                 j->n);
                } else if (!ended_as_before || !alive) {
                        snprintf(out->why, sizeof(out->why),
                                 "eval %zu of %zu ended otherwise than when it first ran (%s, "
                                 "then %s)",
                                 i + 1, j->n, status, e->ok ? "ok" : "error");
                }
                codecell_result_free(res);
                if (out->why[0])
                        return false;
        }
        out->restored = true;
        out->evals = j->n;
        out->stopped = 0;
        out->ms = now_ms() - start;
        return true;
}
