#include "asks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

/* One request waiting for its answer; on the asking thread's stack, in the client's list
 * while it waits. Guarded by the client's lock. */
struct mcp_ask {
        struct mcp_ask *next;
        long long id;
        json_t *answer; /* set once, by mcp_client_take_answer */
};

/* A cancel is a flag, not a wake-up: the waiter looks at it this often. */
#define ASK_POLL_MS 50

void mcp_client_note_capabilities(struct mcp_client *c, const json_t *params)
{
        const json_t *e = json_object_get(json_object_get(params, "capabilities"), "elicitation");
        /* An empty object is form mode (2025-06-18 had no modes); one naming only "url" is
         * not. */
        bool form = json_is_object(e) && (json_object_get(e, "form") || !json_object_get(e, "url"));
        pthread_mutex_lock(&c->lock);
        c->elicits = form;
        pthread_mutex_unlock(&c->lock);
}

bool mcp_client_elicits(struct mcp_client *c)
{
        pthread_mutex_lock(&c->lock);
        bool v = c->elicits && !c->ended;
        pthread_mutex_unlock(&c->lock);
        return v;
}

static void unlink_ask(struct mcp_client *c, struct mcp_ask *a)
{
        for (struct mcp_ask **p = &c->asks; *p; p = &(*p)->next)
                if (*p == a) {
                        *p = a->next;
                        return;
                }
}

/* Waits, under the client's lock, for a's answer, the deadline, a cancel or the client's end. */
static enum mcp_ask_outcome wait_answer(struct mcp_client *c, struct mcp_ask *a, double deadline,
                                        const codecell_cancel *cancel)
{
        /* The condition variable uses the realtime clock; the slices are short, and the
         * deadline is checked on the monotonic one. */
        for (;;) {
                if (a->answer)
                        return MCP_ASK_ANSWERED;
                if (c->ended)
                        return MCP_ASK_GONE;
                if (cancel && codecell_cancel_triggered(cancel))
                        return MCP_ASK_CANCELLED;
                double left = deadline - now_ms();
                if (left <= 0)
                        return MCP_ASK_TIMEOUT;
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                double slice = left < ASK_POLL_MS ? left : ASK_POLL_MS;
                long long ns = until.tv_nsec + (long long)(slice * 1e6);
                until.tv_sec += ns / 1000000000LL;
                until.tv_nsec = ns % 1000000000LL;
                (void)pthread_cond_timedwait(&c->answered, &c->lock, &until);
        }
}

enum mcp_ask_outcome mcp_client_ask(struct mcp_client *c, struct mcp_sink *sink, const char *method,
                                    json_t *params, double deadline, const codecell_cancel *cancel,
                                    json_t **ret_answer)
{
        *ret_answer = NULL;
        struct mcp_ask a = {0};
        pthread_mutex_lock(&c->lock);
        a.id = ++c->next_ask;
        a.next = c->asks;
        c->asks = &a;
        bool ended = c->ended;
        pthread_mutex_unlock(&c->lock);
        json_t *request = ended || !params
                                  ? NULL
                                  : json_pack("{s:s, s:I, s:s, s:O}", "jsonrpc", "2.0", "id",
                                              (json_int_t)a.id, "method", method, "params", params);
        json_decref(params);
        /* Sent as a notification is: beside the answer of the request it belongs to. */
        bool sent = request && mcp_notify(sink, request) == 0;
        pthread_mutex_lock(&c->lock);
        enum mcp_ask_outcome outcome = sent ? wait_answer(c, &a, deadline, cancel) : MCP_ASK_GONE;
        unlink_ask(c, &a);
        *ret_answer = a.answer;
        bool gone = c->ended;
        pthread_mutex_unlock(&c->lock);
        if (outcome == MCP_ASK_ANSWERED)
                return outcome;
        json_decref(a.answer);
        *ret_answer = NULL;
        /* The client may still be showing the question: take it back. */
        if (sent && !gone)
                (void)mcp_notify(
                        sink,
                        jsonrpc_notification(
                                "notifications/cancelled",
                                json_pack("{s:I, s:s}", "requestId", (json_int_t)a.id, "reason",
                                          outcome == MCP_ASK_TIMEOUT ? "no answer in time"
                                                                     : "the call was cancelled")));
        return outcome;
}

void mcp_client_take_answer(struct mcp_client *c, const json_t *response)
{
        const json_t *id = json_object_get(response, "id");
        if (!json_is_integer(id))
                return; /* ours are integers: this answers nothing we asked */
        pthread_mutex_lock(&c->lock);
        for (struct mcp_ask *a = c->asks; a; a = a->next)
                if (a->id == json_integer_value(id) && !a->answer) {
                        a->answer = json_incref((json_t *)response);
                        pthread_cond_broadcast(&c->answered);
                        break;
                }
        pthread_mutex_unlock(&c->lock);
}
