/* Approval of host-tool calls by the MCP client (docs/mcp.md, "Approval"): the approval
 * callback of every cell of the server asks the client whose tools/call runs the code, by
 * elicitation in form mode, and records each decision in the operator's log. */
#ifndef CODECELL_MCP_APPROVALS_H
#define CODECELL_MCP_APPROVALS_H

#include <jansson.h>
#include <pthread.h>

#include "mcp.h"
#include "server.h"

/* One tools/call's run, as the engine hands it back to its callbacks (the run's
 * options.userdata): where its notifications and questions go. Lives on the call's stack for
 * the run's length; the engine calls nothing with it after the run returns. */
struct mcp_run {
        struct mcp_sink *sink;
        const json_t *progress_token; /* or NULL: no progress reports */
        struct mcp_client *client;
        const struct mcp_call *call;
        const codecell_cancel *cancel;
        const char *cell; /* the MCP tool's name */
        /* 2026-07-28 over stdio, from a client whose request declared elicitation: approval
         * is asked by an input_required answer, and the client's retry (with requestState)
         * carries the person's answer and then gets the run's own answer (MRTR). */
        bool mrtr;
        /* Guarded by lock, for MRTR: the request the run answers now (the first, or the
         * retry that took it over), whether that one got an answer already (input_required),
         * and the retries waiting for theirs. */
        pthread_mutex_t lock;
        pthread_cond_t changed;
        struct mcp_sink *answer_sink;
        json_t *answer_id;
        bool answered;
        unsigned adopters;
        /* A question is out (or being sent). Calls of one run ask at once (tool_concurrency),
         * but a request has one answer: they take turns, each question on the retry of the
         * one before. */
        bool asking;
        /* A question of this run was refused (declined, unanswered, failed): the calls that
         * still wait for their turn are refused without asking, as the engine refuses the
         * calls made after it (tools.md: at most one refusal per run). */
        bool refused;
        /* A question out: its token (the requestState), and the answer a retry brought. */
        char token[33];
        bool decided;
        int decision;
        struct mcp_run *next; /* in the table of runs waiting for a retry (approvals.c) */
};

/* Sets the approval callback of every cell of the server. */
void mcp_approvals_install(struct mcp_server *server);

/* For the run's call: before it starts, and after its answer (which goes to the request
 * mcp_run_target names: false when none is left, the client never retried). */
void mcp_run_init(struct mcp_run *run, const json_t *id);
bool mcp_run_target(struct mcp_run *run, struct mcp_sink **ret_sink, json_t **ret_id);
/* After the answer went to the target: lets the retry that waits for it go, then frees. */
void mcp_run_finish(struct mcp_run *run);
/* A 2026-07-28 tools/call whose params hold a requestState: the retry of a call whose run
 * waits for approval. Takes the person's answer to it, then waits for the run's answer (or
 * its next input_required) on sink. Answers an error when no run waits under that state. */
void mcp_approval_resume(struct mcp_client *client, const struct mcp_call *call, const json_t *id,
                         const json_t *params, struct mcp_sink *sink);

#endif
