#include "approvals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "asks.h"
#include "deadline.h"
#include "oplog.h"
#include "util.h"

/* Arguments shown to the person at most this long (cut on a character): the rest is
 * elided, never the tool's name. */
#define ARGS_SHOWN 4000

static void note(const struct mcp_run *run, const codecell_approval_request *req,
                 const char *decision, double ms)
{
        /* The client as the call lines name it: its prefix without the dash ("m1"). */
        const char *prefix = run ? run->client->prefix : "";
        char who[24];
        snprintf(who, sizeof(who), "%.*s", (int)strcspn(prefix, "-"), prefix);
        oplog_event(decision[0] == 'a' ? OPLOG_INFO : OPLOG_WARNING, "approval",
                    json_pack("{s:s, s:s, s:s, s:s, s:f}", "cell",
                              run && run->cell ? run->cell : "", "client", who, "tool", req->tool,
                              "decision", decision, "wait_ms", ms));
}

/* The elicitation/create params: a form with no fields, so that the person's choice is the
 * action itself (accept or decline), and a message that names the tool and its arguments. */
static json_t *question(const struct mcp_run *run, const codecell_approval_request *req)
{
        /* Re-encoded compactly, so the guest's whitespace cannot lay out the message the
         * person reads; arguments jansson cannot hold (integers beyond 64 bits) as sent. */
        json_t *read = json_loads(req->args_json, JSON_ALLOW_NUL, NULL);
        char *compact = read ? json_dumps(read, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        json_decref(read);
        const char *args = compact ? compact : req->args_json;
        size_t len = strlen(args);
        size_t shown = utf8_cut(args, len, ARGS_SHOWN);
        char *message = str_printf("Code running in \"%s\" wants to call the host tool \"%s\" "
                                   "with these arguments:\n%.*s%s\nAccept to let this one call "
                                   "run; decline to refuse it.",
                                   run->cell ? run->cell : "", req->tool, (int)shown, args,
                                   shown < len ? " …(cut)" : "");
        free(compact);
        json_t *params =
                message ? json_pack("{s:s, s:s, s:{s:s, s:{}}}", "mode", "form", "message", message,
                                    "requestedSchema", "type", "object", "properties")
                        : NULL;
        free(message);
        return params;
}

/* The client's answer as a decision: accepted only for a result whose action is "accept". */
static int decide(const json_t *answer, char **ret_reason, const char **ret_decision)
{
        const json_t *result = json_object_get(answer, "result");
        const char *action = json_string_value(json_object_get(result, "action"));
        if (action && strcmp(action, "accept") == 0) {
                *ret_decision = "accepted";
                return CODECELL_APPROVAL_ACCEPT;
        }
        if (action && (strcmp(action, "decline") == 0 || strcmp(action, "cancel") == 0)) {
                *ret_decision = action[0] == 'd' ? "declined" : "cancelled";
                *ret_reason = strdup(action[0] == 'd' ? "the person declined it"
                                                      : "the person dismissed the question");
                return CODECELL_APPROVAL_DECLINE;
        }
        *ret_decision = "error";
        const char *error =
                json_string_value(json_object_get(json_object_get(answer, "error"), "message"));
        *ret_reason =
                error ? str_printf("the client could not ask: %.*s", utf8_prefix(error, 200), error)
                      : strdup("the client's answer was not an elicitation result");
        return -1;
}

/* ---- 2026-07-28: input_required and the retry (MRTR) -------------------------------------- */

/* The runs whose question is out, found by the retry's requestState. One server per process. */
static pthread_mutex_t parked_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mcp_run *parked;

#define STATE_PREFIX "cc-approval-"

void mcp_run_init(struct mcp_run *run, const json_t *id)
{
        pthread_mutex_init(&run->lock, NULL);
        cond_init_monotonic(&run->changed);
        run->answer_sink = run->sink;
        run->answer_id = json_incref((json_t *)id);
}

bool mcp_run_target(struct mcp_run *run, struct mcp_sink **ret_sink, json_t **ret_id)
{
        pthread_mutex_lock(&run->lock);
        bool any = !run->answered;
        *ret_sink = run->answer_sink;
        *ret_id = run->answer_id;
        pthread_mutex_unlock(&run->lock);
        return any;
}

void mcp_run_finish(struct mcp_run *run)
{
        pthread_mutex_lock(&run->lock);
        run->answered = true;
        pthread_cond_broadcast(&run->changed);
        /* A retry that waits holds its sink, on its own stack: it leaves before run goes. */
        while (run->adopters)
                pthread_cond_wait(&run->changed, &run->lock);
        pthread_mutex_unlock(&run->lock);
        json_decref(run->answer_id);
        pthread_cond_destroy(&run->changed);
        pthread_mutex_destroy(&run->lock);
}

static void unpark(struct mcp_run *run)
{
        pthread_mutex_lock(&parked_lock);
        for (struct mcp_run **p = &parked; *p; p = &(*p)->next)
                if (*p == run) {
                        *p = run->next;
                        break;
                }
        pthread_mutex_unlock(&parked_lock);
}

/* Answers the request the run answers now with input_required (the question and a fresh
 * token as requestState) and waits for a retry to bring the person's answer. */
static int ask_by_retry_alone(struct mcp_run *run, const codecell_approval_request *req,
                              double deadline, char **ret_reason, const char **ret_decision)
{
        unsigned char raw[16];
        if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
                *ret_decision = "error";
                *ret_reason = strdup("no random bytes for the request state");
                return -1;
        }
        char state[sizeof(STATE_PREFIX) + 32];
        pthread_mutex_lock(&run->lock);
        for (size_t i = 0; i < sizeof(raw); i++)
                snprintf(run->token + 2 * i, 3, "%02x", raw[i]);
        run->decided = false;
        snprintf(state, sizeof(state), STATE_PREFIX "%s", run->token);
        struct mcp_sink *sink = run->answer_sink;
        json_t *id = json_incref(run->answer_id);
        bool answered = run->answered;
        pthread_mutex_unlock(&run->lock);
        if (answered) { /* its answer went out and nobody retried: nobody to ask */
                json_decref(id);
                *ret_decision = "unavailable";
                *ret_reason = strdup("the client did not retry the call that asked before");
                return -1;
        }
        pthread_mutex_lock(&parked_lock);
        run->next = parked;
        parked = run;
        pthread_mutex_unlock(&parked_lock);
        json_t *result = json_pack("{s:{s:{s:s, s:o}}, s:s}", "inputRequests", "approval", "method",
                                   "elicitation/create", "params", question(run, req),
                                   "requestState", state);
        json_t *message = mcp_result(run->call, id, result);
        json_object_set_new(json_object_get(message, "result"), "resultType",
                            json_string("input_required"));
        json_decref(id);
        pthread_mutex_lock(&run->lock);
        (void)mcp_answer(sink, message);
        run->answered = true; /* that request is done: the retry waiting on it goes */
        pthread_cond_broadcast(&run->changed);
        while (!run->decided && now_ms() < deadline && !codecell_cancel_triggered(run->cancel))
                (void)cond_wait_until(&run->changed, &run->lock,
                                      deadline < now_ms() + 50 ? deadline : now_ms() + 50);
        bool decided = run->decided;
        int decision = run->decision;
        pthread_mutex_unlock(&run->lock);
        unpark(run);
        if (!decided) {
                *ret_decision = "timeout";
                *ret_reason = str_printf("nobody answered within %llu ms",
                                         (unsigned long long)req->wait_ms);
                return -1;
        }
        if (decision == CODECELL_APPROVAL_ACCEPT) {
                *ret_decision = "accepted";
                return decision;
        }
        *ret_decision = decision == CODECELL_APPROVAL_DECLINE ? "declined" : "error";
        *ret_reason = strdup(decision == CODECELL_APPROVAL_DECLINE
                                     ? "the person declined it"
                                     : "the retry did not carry an answer to the question");
        return decision;
}

/* One question at a time per run: a call that asks while another's question is out waits its
 * turn, within its own wait_ms. */
static int ask_by_retry(struct mcp_run *run, const codecell_approval_request *req,
                        char **ret_reason, const char **ret_decision)
{
        double deadline = now_ms() + (double)req->wait_ms;
        pthread_mutex_lock(&run->lock);
        while (run->asking && now_ms() < deadline && !codecell_cancel_triggered(run->cancel))
                (void)cond_wait_until(&run->changed, &run->lock,
                                      deadline < now_ms() + 50 ? deadline : now_ms() + 50);
        bool turn = !run->asking, refused = run->refused;
        if (turn && !refused)
                run->asking = true;
        pthread_mutex_unlock(&run->lock);
        if (refused) {
                *ret_decision = "declined";
                *ret_reason = strdup("an earlier call of this run was refused approval, so it "
                                     "was not asked about");
                return CODECELL_APPROVAL_DECLINE;
        }
        if (!turn) {
                *ret_decision = "timeout";
                *ret_reason = str_printf("nobody answered within %llu ms (another call of the "
                                         "run was being asked about)",
                                         (unsigned long long)req->wait_ms);
                return -1;
        }
        int verdict = ask_by_retry_alone(run, req, deadline, ret_reason, ret_decision);
        pthread_mutex_lock(&run->lock);
        run->asking = false;
        run->refused |= verdict != CODECELL_APPROVAL_ACCEPT;
        pthread_cond_broadcast(&run->changed);
        pthread_mutex_unlock(&run->lock);
        return verdict;
}

void mcp_approval_resume(struct mcp_client *c, const struct mcp_call *call, const json_t *id,
                         const json_t *params, struct mcp_sink *sink)
{
        const char *state = json_string_value(json_object_get(params, "requestState"));
        const char *name = json_string_value(json_object_get(params, "name"));
        const json_t *answer =
                json_object_get(json_object_get(params, "inputResponses"), "approval");
        size_t prefix = strlen(STATE_PREFIX);
        pthread_mutex_lock(&parked_lock);
        struct mcp_run *run = NULL;
        for (struct mcp_run *r = parked; r && state && !strncmp(state, STATE_PREFIX, prefix);
             r = r->next) {
                /* The state is a secret of the client it went to, and of its call. */
                pthread_mutex_lock(&r->lock);
                bool match = r->client == c && !r->decided && name && r->cell &&
                             strcmp(r->cell, name) == 0 && strcmp(r->token, state + prefix) == 0;
                pthread_mutex_unlock(&r->lock);
                if (match) {
                        run = r;
                        break;
                }
        }
        if (run) {
                pthread_mutex_lock(&run->lock);
                const char *action = json_string_value(json_object_get(answer, "action"));
                run->decision = !action                         ? -1
                                : strcmp(action, "accept") == 0 ? CODECELL_APPROVAL_ACCEPT
                                                                : CODECELL_APPROVAL_DECLINE;
                run->decided = true;
                json_decref(run->answer_id);
                run->answer_id = json_incref((json_t *)id);
                run->answer_sink = sink;
                run->answered = false;
                run->adopters++;
                pthread_cond_broadcast(&run->changed);
                pthread_mutex_unlock(&run->lock);
        }
        pthread_mutex_unlock(&parked_lock);
        if (!run) {
                mcp_answer(sink, mcp_tool_error(call, id,
                                                "This retry's requestState names no call that "
                                                "waits for approval (it was answered, timed out "
                                                "or is not this client's): call the tool again."));
                return;
        }
        /* Until the run answers this request: its result, or its next question. */
        pthread_mutex_lock(&run->lock);
        while (!run->answered)
                pthread_cond_wait(&run->changed, &run->lock);
        run->adopters--;
        pthread_cond_broadcast(&run->changed);
        pthread_mutex_unlock(&run->lock);
}

static int approve(const codecell_approval_request *req, char **ret_reason, void *userdata)
{
        (void)userdata;
        struct mcp_run *run = req->run_userdata;
        double start = now_ms();
        if (run && run->mrtr) {
                const char *decision = "error";
                int verdict = ask_by_retry(run, req, ret_reason, &decision);
                note(run, req, decision, now_ms() - start);
                return verdict;
        }
        if (!run || run->call->modern || !mcp_client_elicits(run->client)) {
                /* 2026-07-28 asks through input_required results, over stdio only: over
                 * HTTP the first request's answer would wait for the run. Those clients are
                 * told what the legacy ones without the capability are told. */
                *ret_reason = strdup("the MCP client cannot ask a person (it did not declare "
                                     "the elicitation capability)");
                note(run, req, "unavailable", 0);
                return -1;
        }
        json_t *answer = NULL;
        enum mcp_ask_outcome outcome =
                mcp_client_ask(run->client, run->sink, "elicitation/create", question(run, req),
                               start + (double)req->wait_ms, run->cancel, &answer);
        const char *decision = "error";
        int verdict = -1;
        switch (outcome) {
        case MCP_ASK_ANSWERED:
                verdict = decide(answer, ret_reason, &decision);
                break;
        case MCP_ASK_TIMEOUT:
                decision = "timeout";
                *ret_reason = str_printf("nobody answered within %llu ms",
                                         (unsigned long long)req->wait_ms);
                break;
        case MCP_ASK_CANCELLED:
                decision = "cancelled";
                *ret_reason = strdup("the call was cancelled while it waited");
                break;
        case MCP_ASK_GONE:
                decision = "unavailable";
                *ret_reason = strdup("the MCP client went away before it answered");
                break;
        }
        json_decref(answer);
        note(run, req, decision, now_ms() - start);
        return verdict;
}

void mcp_approvals_install(struct mcp_server *s)
{
        for (size_t i = 0; i < codecell_cellset_size(s->cells); i++)
                codecell_cell_set_approval(codecell_cellset_cell(s->cells, i), approve, s);
}
