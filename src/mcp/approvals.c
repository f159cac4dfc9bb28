#include "approvals.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asks.h"
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
                    json_pack("{s:s, s:s, s:s, s:s, s:f}", "cell", run && run->cell ? run->cell : "",
                              "client", who, "tool", req->tool, "decision", decision, "wait_ms",
                              ms));
}

/* The elicitation/create params: a form with no fields, so that the person's choice is the
 * action itself (accept or decline), and a message that names the tool and its arguments. */
static json_t *question(const struct mcp_run *run, const codecell_approval_request *req)
{
        size_t len = strlen(req->args_json);
        size_t shown = utf8_cut(req->args_json, len, ARGS_SHOWN);
        char *message = str_printf("Code running in \"%s\" wants to call the host tool \"%s\" "
                                   "with these arguments:\n%.*s%s\nAccept to let this one call "
                                   "run; decline to refuse it.",
                                   run->cell ? run->cell : "", req->tool, (int)shown,
                                   req->args_json, shown < len ? " …(cut)" : "");
        json_t *params = message ? json_pack("{s:s, s:s, s:{s:s, s:{}}}", "mode", "form", "message",
                                             message, "requestedSchema", "type", "object",
                                             "properties")
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
        const char *error = json_string_value(json_object_get(json_object_get(answer, "error"),
                                                               "message"));
        *ret_reason = error ? str_printf("the client could not ask: %.*s", utf8_prefix(error, 200),
                                         error)
                            : strdup("the client's answer was not an elicitation result");
        return -1;
}

static int approve(const codecell_approval_request *req, char **ret_reason, void *userdata)
{
        (void)userdata;
        const struct mcp_run *run = req->run_userdata;
        double start = now_ms();
        if (!run || run->call->modern || !mcp_client_elicits(run->client)) {
                /* 2026-07-28 asks through input_required results, which this server does not
                 * send yet: its clients are told what the legacy ones without the capability
                 * are told. */
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
