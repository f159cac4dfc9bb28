/* Host RPC for one execution (DESIGN §5, §8): "call" frames from the guest, answered by the
 * cell's tools on a pool of worker threads, so that the engine keeps watching the wall clock
 * meanwhile and calls run at once. */
#ifndef CODECELL_RPC_H
#define CODECELL_RPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "call_record.h"
#include "tools.h"

struct rpc_limits {
        uint64_t calls, request_bytes, answer_bytes, call_ms;
        uint64_t concurrency; /* calls running at once; more wait in the engine */
        uint64_t approval_ms; /* the wait for approval of one call (approval.h) */
};

struct runner;

struct rpc {
        struct tool_table *tools;
        struct rpc_limits limits;
        double deadline;                  /* the execution's, on the now_ms() clock */
        uint64_t calls;                   /* made so far */
        int ctl_fd;                       /* the control socket, where replies go */
        struct runner *runner;            /* started at the first call */
        const struct tool_syntax *syntax; /* the guest's language, for SB.describe */
        void *run_userdata;               /* the run's options.userdata, for approvals */
        /* A session eval's journal of its calls, or NULL (a one-shot run): each call that
         * reaches a tool is noted with its reply; in replay the record answers instead. */
        struct call_record *record;
};

void rpc_init(struct rpc *rpc, struct tool_table *tools, const struct rpc_limits *limits,
              double deadline, int ctl_fd);
/* A "call" frame. Returns a reply frame to send now (new reference; through rpc_send), or NULL
 * when the call went to a tool, whose worker sends the reply itself, by the call's id. Up to
 * limits.concurrency calls run at once; more wait their turn, and beyond RPC_WAITING_MAX
 * waiting a call is refused with a ToolError. Sets *ret_protocol_error for a frame that is not
 * a valid call. */
json_t *rpc_call(struct rpc *rpc, const json_t *frame, const char **ret_protocol_error);
/* Sends a reply frame the engine made itself, never in the middle of one of the helper's.
 * What the guest writes meanwhile is read into in (at most in_cap bytes): the guest may be
 * sending many calls before it reads any answer. */
struct frame_reader;
int rpc_send(struct rpc *rpc, const json_t *reply, struct frame_reader *in, size_t in_cap,
             codecell_error *err);
/* What an MCP server last reported of a call in flight, into buf; false when nothing. */
bool rpc_progress(struct rpc *rpc, char *buf, size_t size);
/* The time the execution's clock was parked so far, waiting for approvals (approval.h): its
 * deadline moves by it. */
double rpc_parked_ms(struct rpc *rpc);
/* Ends the execution's calls: those waiting are dropped, command tools killed, MCP calls
 * cancelled, the workers joined (one held by a C handler past a short grace is left to finish
 * on its own). No reply reaches the socket after this returns. */
void rpc_end(struct rpc *rpc);

#endif
