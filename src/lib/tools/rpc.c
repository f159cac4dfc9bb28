#include "rpc.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "approval.h"
#include "cleanup.h"
#include "frame.h"
#include "json_schema_check.h"
#include "result.h"
#include "upstream.h"
#include "deadline.h"
#include "error.h"
#include "util.h"

/* One call handed to the workers. */
struct request {
        const struct tool *tool;
        struct tool_table *table;
        json_t *id;
        char *args;
        double deadline;
        struct rpc_limits limits;
        void *run_userdata;
        /* The eval's journal and this call's place in it (-1: not kept); or the reply the
         * journal gave in replay (then no tool runs). */
        struct call_record *record;
        long record_index;
        char *canned;
};

/* Calls taken beyond those running wait here, in the order the guest made them. The guest may
 * send calls faster than the tools answer (asyncio.gather over hundreds of them): they wait
 * rather than fail, up to this many and this many bytes of arguments; beyond, a call is
 * refused with a ToolError, so that a guest that floods the channel cannot grow the engine
 * without bound (docs/tools.md). */
#define RPC_WAITING_MAX 1024
#define RPC_WAITING_BYTES (32ULL * 1024 * 1024)

/* How long the end of an execution waits for its workers once they were told to stop: a
 * command tool is killed and an MCP call cancelled within milliseconds, so only a C handler
 * that ignores the end keeps a worker past it, and that worker is then left to finish alone. */
#define RPC_JOIN_GRACE_MS 500.0

struct runner;

/* One thread of the pool; its fields under the runner's lock. */
struct worker {
        struct runner *r;
        pthread_t thread;
        const char *name; /* of the tool it calls, or NULL */
};

/* The worker pool of one execution: up to limits.concurrency threads, started as calls come,
 * each taking the next waiting call. Owned by the execution; if the execution ends while a
 * handler hangs, the last worker to leave frees it.
 *
 * Lock order: send_lock, then lock. */
struct runner {
        pthread_mutex_t lock;
        pthread_cond_t wake; /* a call is waiting, or the pool is to end */
        pthread_cond_t left; /* a worker left */
        /* Held while a reply frame is written, by the workers and by the engine (rpc_send):
         * two frames on the socket at once would interleave their bytes. */
        pthread_mutex_t send_lock;
        /* Its own duplicate of the control socket: after the execution ends, a late reply goes
         * to a closed peer, never to whatever the engine's descriptor number means by then. */
        int ctl_fd;
        /* Readable once the execution ends: command tools poll it and are killed. */
        int stop_fd;
        /* Calls taken and not yet answered (waiting or running): raised by the engine,
         * lowered by the workers. */
        atomic_uint pending;
        /* Of those, the ones waiting; under lock, read without it to spin. */
        atomic_uint queued;
        struct request *queue; /* RPC_WAITING_MAX entries, queued ones from head; under lock */
        unsigned head;
        uint64_t queued_bytes; /* their arguments' bytes; under lock */
        unsigned max_workers;
        struct worker *workers;        /* max_workers entries, started of them in use; under lock */
        unsigned started, alive, idle; /* under lock */
        bool quit, abandoned;          /* under lock; abandoned is set under send_lock too */
        bool orphaned;                 /* the execution left: the last worker frees; under lock */
        /* Set when the execution ends: a call to an MCP server stops waiting and cancels. */
        atomic_bool stop;
        /* What an MCP server last reported of a call in flight ("memory.x: 3/10 …"), for the
         * run's progress reports; under lock. */
        char progress[256];
        struct approval_clock clock; /* its own lock */
};

/* Lets go of the calls still waiting, unanswered (the execution is over). Under lock. */
static void drop_queued(struct runner *r)
{
        for (; r->queued > 0; r->queued--) {
                struct request *q = &r->queue[r->head];
                r->head = (r->head + 1) % RPC_WAITING_MAX;
                tool_table_release(q->table);
                free(q->args);
                free(q->canned);
                json_decref(q->id);
                atomic_fetch_sub(&r->pending, 1);
        }
        r->queued_bytes = 0;
}

static void runner_destroy(struct runner *r)
{
        if (r->ctl_fd >= 0)
                close(r->ctl_fd);
        if (r->stop_fd >= 0)
                close(r->stop_fd);
        drop_queued(r);
        pthread_mutex_destroy(&r->lock);
        pthread_mutex_destroy(&r->send_lock);
        pthread_cond_destroy(&r->wake);
        pthread_cond_destroy(&r->left);
        approval_clock_destroy(&r->clock);
        free(r->queue);
        free(r->workers);
        free(r);
}

static json_t *reply_error(const json_t *id, const char *cls, const char *message)
{
        /* Never NULL for a message that is not UTF-8: the guest waits for this reply. */
        char *clean = utf8_sanitize(message, strlen(message), NULL);
        json_t *reply =
                json_pack("{s:s, s:O, s:b, s:{s:s, s:s}}", "t", "reply", "id", id, "ok", 0, "error",
                          "class", cls, "message", clean ? clean : "out of memory");
        free(clean);
        return reply;
}

static json_t *tool_error(const json_t *id, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static json_t *tool_error(const json_t *id, const char *fmt, ...)
{
        char message[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        utf8_trim_cut(message);
        return reply_error(id, "SB::ToolError", message);
}

/* A reply frame's text: its JSON, or NULL when out of memory. Takes reply. */
static char *reply_text(json_t *reply)
{
        char *text = reply ? json_dumps(reply, JSON_COMPACT) : NULL;
        json_decref(reply);
        return text;
}

/* The success reply, with the tool's answer spliced in as it is: re-encoding through jansson
 * would refuse integers beyond 64 bits, which the guest's languages hold exactly. */
static char *splice_reply(const json_t *id, const char *answer)
{
        return str_printf("{\"t\":\"reply\",\"id\":%" JSON_INTEGER_FORMAT
                          ",\"ok\":true,\"result\":%s}",
                          json_integer_value(id), answer);
}

/* Why an answer is no JSON value for the guest, or NULL when it is one. Integers of any size
 * pass; duplicate keys do not (jansson stops at an integer it cannot hold, so a duplicate
 * after it goes by unseen: the guest's parser keeps the last). */
static const char *answer_problem(const char *answer, json_error_t *jerr)
{
        enum json_text check = json_text_check(answer, strlen(answer));
        if (check == JSON_TEXT_TOO_DEEP)
                return "answered a value " JSON_TOO_DEEP;
        json_t *value =
                json_loads(answer, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, jerr);
        json_decref(value);
        if (check == JSON_TEXT_OK &&
            (value || json_error_code(jerr) == json_error_numeric_overflow))
                return NULL;
        return "returned invalid JSON";
}

/* The reply frame's text for a tool's outcome. Takes json and error. */
static char *build_reply(const json_t *id, const char *name, int status, char *json, char *error,
                         uint64_t answer_bytes)
{
        char *reply = NULL;
        json_error_t jerr = {0};
        const char *problem = NULL;
        if (status < 0) {
                size_t len = 0;
                char *clean = error ? utf8_sanitize(error, strlen(error), &len) : NULL;
                reply = reply_text((clean && *clean) ? reply_error(id, "SB::ToolError", clean)
                                                     : tool_error(id, "tool \"%s\" failed", name));
                free(clean);
        } else if (!json || json[strspn(json, " \t\r\n")] == '\0') {
                reply = reply_text(tool_error(
                        id, "tool \"%s\" returned nothing (it must answer one JSON value)", name));
        } else if (strlen(json) > answer_bytes) {
                reply = reply_text(tool_error(
                        id, "tool \"%s\": an answer of %zu bytes is over the %llu-byte limit", name,
                        strlen(json), (unsigned long long)answer_bytes));
        } else if ((problem = answer_problem(json, &jerr))) {
                reply = reply_text(
                        *jerr.text ? tool_error(id, "tool \"%s\" %s: %s", name, problem, jerr.text)
                                   : tool_error(id, "tool \"%s\" %s", name, problem));
        } else {
                reply = splice_reply(id, json);
        }
        free(json);
        free(error);
        return reply;
}

/* Calls come in bursts (a loop of SB.call): after answering one, wait briefly for the next
 * without sleeping, which saves the wake-up of a sleeping thread on each call. */
#define SPIN_MS 0.1

static void spin_for_request(struct runner *r)
{
        double until = now_ms() + SPIN_MS;
        do {
                if (atomic_load_explicit(&r->queued, memory_order_acquire))
                        return;
        } while (now_ms() < until);
}

static void note_progress(const char *message, void *userdata)
{
        struct worker *w = userdata;
        struct runner *r = w->r;
        pthread_mutex_lock(&r->lock);
        snprintf(r->progress, sizeof(r->progress), "%s: %s", w->name ? w->name : "", message);
        utf8_trim_cut(r->progress);
        pthread_mutex_unlock(&r->lock);
}

/* The one point where a call of a marked tool waits for approval before it reaches its tool
 * (approval.c). The run's clock is parked meanwhile, so the call's deadline moves by the wait.
 * NULL to go on, else the refusal for the guest (malloc'd). */
static char *approve(struct runner *r, const struct request *q, const char *name, double *deadline)
{
        if (!atomic_load(&q->tool->approval))
                return NULL;
        double waited = 0;
        bool refused = false;
        char *why = approval_ask(q->table, &r->clock, name, q->args, q->limits.approval_ms,
                                 q->run_userdata, &waited, &refused);
        *deadline += waited;
        if (refused && !why)
                why = strdup("approval needed: out of memory");
        return why;
}

/* Runs one call's tool and returns its reply frame's text (NULL when out of memory). Takes
 * q's arguments and id. */
static char *run_request(struct worker *w, struct request *q)
{
        struct runner *r = w->r;
        const struct tool *tool = q->tool;
        struct tool_table *table = q->table;
        char *args = q->args;
        json_t *id = q->id;
        double deadline = q->deadline;
        struct rpc_limits limits = q->limits;
        if (q->canned) { /* answered from the journal: the tool is not called again */
                tool_table_release(table);
                free(q->args);
                json_decref(q->id);
                return q->canned;
        }

        /* The tool belongs to the cell, which may be freed while a handler hangs: take
         * what is needed, then let go of it (see tool_table.holds). */
        char *name = strdup(tool->name);
        pthread_mutex_lock(&r->lock);
        w->name = name;
        pthread_mutex_unlock(&r->lock);
        char *json = NULL, *error = approve(r, q, name ? name : tool->name, &deadline);
        int status = -1;
        if (error) {
                tool_table_release(table); /* refused: the tool never runs */
        } else if (tool->upstream.server) {
                /* The client multiplexes calls on one connection by their JSON-RPC ids
                 * (upstream.c), so workers call the same server at once. */
                struct upstream *server = upstream_ref(tool->upstream.server);
                char *own = strdup(tool->upstream.tool);
                tool_table_release(table);
                double call_deadline = now_ms() + (double)limits.call_ms;
                status = own ? upstream_call(server, own, args,
                                             call_deadline < deadline ? call_deadline : deadline,
                                             &r->stop, limits.answer_bytes, note_progress, w, &json,
                                             &error)
                             : -1;
                free(own);
                upstream_unref(server);
        } else if (tool->handler) {
                codecell_tool_handler handler = tool->handler;
                void *userdata = tool->userdata;
                tool_table_release(table);
                status = handler(args, &json, &error, userdata);
        } else {
                uint64_t ms = tool->command.timeout_ms && tool->command.timeout_ms < limits.call_ms
                                      ? tool->command.timeout_ms
                                      : limits.call_ms;
                status = command_tool_call(&tool->command, tool->name, args, deadline, ms,
                                           limits.answer_bytes, r->stop_fd, &json, &error);
                tool_table_release(table);
        }
        free(args);
        char *reply = build_reply(id, name ? name : "?", status, json, error, limits.answer_bytes);
        json_decref(id);
        pthread_mutex_lock(&r->lock);
        w->name = NULL;
        r->progress[0] = '\0'; /* an older report of another call is stale by now */
        pthread_mutex_unlock(&r->lock);
        free(name);
        return reply;
}

/* Sends a call's reply, unless the execution is over; returns whether it is. Takes reply. The
 * journal keeps only replies that reached the guest while its eval ran. */
static bool deliver(struct runner *r, const struct request *q, char *reply)
{
        pthread_mutex_lock(&r->send_lock);
        pthread_mutex_lock(&r->lock);
        bool abandoned = r->abandoned;
        /* Lowered before the reply leaves: the guest's next call may follow at once. */
        atomic_fetch_sub_explicit(&r->pending, 1, memory_order_release);
        pthread_mutex_unlock(&r->lock);
        if (!abandoned) {
                codecell_error e;
                if (q->record && !q->canned)
                        call_record_answer(q->record, q->record_index, reply);
                /* A guest that stops reading fills the socket: after the timeout the channel
                 * is shut, the guest sees it close, and no worker blocks for longer. */
                if (!reply || frame_send_text(r->ctl_fd, reply, strlen(reply), 1000, &e) < 0)
                        shutdown(r->ctl_fd, SHUT_RDWR);
        }
        pthread_mutex_unlock(&r->send_lock);
        free(reply);
        return abandoned;
}

/* The next call to run, into *q; false when the worker is to leave. */
static bool next_request(struct runner *r, struct request *q)
{
        spin_for_request(r);
        pthread_mutex_lock(&r->lock);
        while (!r->queued && !r->quit) {
                r->idle++;
                pthread_cond_wait(&r->wake, &r->lock);
                r->idle--;
        }
        bool any = r->queued && !r->abandoned;
        if (any) {
                *q = r->queue[r->head];
                r->head = (r->head + 1) % RPC_WAITING_MAX;
                r->queued_bytes -= strlen(q->args);
                atomic_fetch_sub(&r->queued, 1);
        }
        pthread_mutex_unlock(&r->lock);
        return any;
}

static void *worker_main(void *arg)
{
        struct worker *w = arg;
        struct runner *r = w->r;
        struct request q;
        while (next_request(r, &q))
                if (deliver(r, &q, run_request(w, &q)))
                        break;
        pthread_mutex_lock(&r->lock);
        bool last = --r->alive == 0 && r->orphaned;
        pthread_cond_broadcast(&r->left);
        pthread_mutex_unlock(&r->lock);
        if (last)
                runner_destroy(r);
        return NULL;
}

static struct runner *runner_start(int ctl_fd, unsigned max_workers)
{
        struct runner *r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        r->max_workers = max_workers ? max_workers : 1;
        r->queue = calloc(RPC_WAITING_MAX, sizeof(*r->queue));
        r->workers = calloc(r->max_workers, sizeof(*r->workers));
        r->ctl_fd = fcntl(ctl_fd, F_DUPFD_CLOEXEC, 3);
        r->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        pthread_mutex_init(&r->lock, NULL);
        pthread_mutex_init(&r->send_lock, NULL);
        pthread_cond_init(&r->wake, NULL);
        pthread_cond_init(&r->left, NULL);
        approval_clock_init(&r->clock);
        if (!r->queue || !r->workers || r->ctl_fd < 0 || r->stop_fd < 0) {
                runner_destroy(r);
                return NULL;
        }
        return r;
}

/* A worker for a call just queued, unless an idle one will take it or the pool is full. Under
 * lock. False when no thread could be started and none is there to take the call. */
static bool staff(struct runner *r)
{
        if (r->idle >= r->queued || r->started >= r->max_workers)
                return true;
        struct worker *w = &r->workers[r->started];
        w->r = r;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
                return r->alive > 0;
        r->started++;
        r->alive++;
        return true;
}

void rpc_init(struct rpc *rpc, struct tool_table *tools, const struct rpc_limits *limits,
              double deadline, int ctl_fd)
{
        *rpc = (struct rpc){
                .tools = tools, .limits = *limits, .deadline = deadline, .ctl_fd = ctl_fd};
}

/* A call refused before any tool ran, counted for the cell (codecell_cell_info). */
static json_t *refused(struct rpc *rpc, json_t *reply)
{
        atomic_fetch_add(&rpc->tools->refused, 1);
        return reply;
}

/* SB.describe("memory.create_entities"): a tool's full entry of the description, answered by
 * the engine itself. Its name cannot be a tool's (those start with a letter). */
#define DESCRIBE "$describe"
/* A name is a whole string: "echo\0x" is no tool, not "echo". */
#define NUL_IN_NAME "unknown tool: a tool's name holds no NUL byte"

static json_t *describe(struct rpc *rpc, const json_t *id, const json_t *args)
{
        const char *which = frame_string(args, "name");
        if (json_is_string(json_object_get(args, "name")) && !which)
                return reply_error(id, "SB::UnknownTool", NUL_IN_NAME);
        if (!which || json_object_size(args) != 1)
                return tool_error(id, "describe takes one argument: the tool's name (a string)");
        char *text = rpc->syntax ? tool_describe_text(rpc->tools, rpc->syntax, which) : NULL;
        if (!text) {
                char message[300];
                snprintf(message, sizeof(message), "unknown tool \"%.*s\"", utf8_prefix(which, 200),
                         which);
                return reply_error(id, "SB::UnknownTool", message);
        }
        json_t *reply =
                json_pack("{s:s, s:O, s:b, s:s}", "t", "reply", "id", id, "ok", 1, "result", text);
        free(text);
        return reply ? reply : tool_error(id, "describe: the description could not be encoded");
}

/* JSON text (valid) with each integer beyond 64 bits written as a real ("…0.0"), which jansson
 * reads as a double: the schema check sees an integral number of that size (the type
 * "integer", minimum and maximum hold), where jansson refuses the integer. NULL when out of
 * memory. */
static char *with_big_integers_as_reals(const char *text, size_t len)
{
        char *out = malloc(len * 3 + 1); /* a digit at most adds ".0" */
        if (!out)
                return NULL;
        size_t o = 0;
        for (size_t i = 0; i < len;) {
                if (text[i] == '"') { /* a string, copied whole */
                        size_t j = i + 1;
                        while (text[j] != '"')
                                j += text[j] == '\\' ? 2 : 1;
                        memcpy(out + o, text + i, j + 1 - i);
                        o += j + 1 - i;
                        i = j + 1;
                        continue;
                }
                if (text[i] != '-' && (text[i] < '0' || text[i] > '9')) {
                        out[o++] = text[i++];
                        continue;
                }
                size_t j = i + (text[i] == '-');
                while (j < len && text[j] >= '0' && text[j] <= '9')
                        j++;
                bool integer = j == len || !strchr(".eE", text[j]) || !text[j];
                while (j < len && strchr("0123456789.eE+-", text[j]) && text[j])
                        j++;
                memcpy(out + o, text + i, j - i);
                o += j - i;
                char digits[32];
                if (integer && j - i < sizeof(digits)) {
                        memcpy(digits, text + i, j - i);
                        digits[j - i] = '\0';
                        errno = 0;
                        (void)strtoll(digits, NULL, 10);
                        integer = errno == ERANGE;
                }
                if (integer) {
                        memcpy(out + o, ".0", 2);
                        o += 2;
                }
                i = j;
        }
        out[o] = '\0';
        return out;
}

/* Checked here, so that a tool never sees arguments its schema refuses. Arguments that hold an
 * integer beyond 64 bits (value NULL) are checked with it as a double. */
static bool off_schema(const struct tool *tool, const json_t *value, const char *text,
                       char *problem, size_t size)
{
        if (value)
                return json_schema_check(tool->input_schema, value, problem, size);
        _cleanup_free_ char *reals = with_big_integers_as_reals(text, strlen(text));
        json_t *read = reals ? json_loads(reals, JSON_ALLOW_NUL, NULL) : NULL;
        if (!read) {
                snprintf(problem, size,
                         "an integer of more digits than a double holds cannot be checked "
                         "against the tool's schema (pass it as a string)");
                return true;
        }
        bool off = json_schema_check(tool->input_schema, read, problem, size);
        json_decref(read);
        return off;
}

/* The call, once its arguments are read: to the engine's own describe, or to a tool's helper
 * thread (then NULL: the thread replies). Takes *text. */
static json_t *send_call(struct rpc *rpc, const json_t *id, const char *name, char **text,
                         const json_t *value)
{
        if (strcmp(name, DESCRIBE) == 0)
                return describe(rpc, id, value);
        const struct tool *tool = tool_table_find(rpc->tools, name);
        if (!tool) {
                atomic_fetch_add(&rpc->tools->refused, 1);
                char message[300];
                snprintf(message, sizeof(message), "unknown tool \"%.*s\"", utf8_prefix(name, 200),
                         name);
                return reply_error(id, "SB::UnknownTool", message);
        }
        char problem[700];
        if (off_schema(tool, value, *text, problem, sizeof(problem)))
                return refused(rpc, tool_error(id, "tool \"%s\": arguments: %s", name, problem));
        size_t size = strlen(*text);
        if (size > rpc->limits.request_bytes)
                return refused(
                        rpc,
                        tool_error(id,
                                   "tool \"%s\": arguments of %zu bytes are over the %llu-byte "
                                   "limit",
                                   name, size, (unsigned long long)rpc->limits.request_bytes));
        if (!rpc->runner &&
            !(rpc->runner = runner_start(rpc->ctl_fd, (unsigned)rpc->limits.concurrency)))
                return tool_error(id, "tool \"%s\" could not be called: out of resources", name);
        struct runner *r = rpc->runner;
        pthread_mutex_lock(&r->lock);
        if (r->queued >= RPC_WAITING_MAX || r->queued_bytes + size > RPC_WAITING_BYTES) {
                pthread_mutex_unlock(&r->lock);
                return refused(rpc, tool_error(id,
                                               "tool \"%s\": too many calls waiting (%u, the "
                                               "limit is %d): await some before making more",
                                               name, (unsigned)r->queued, RPC_WAITING_MAX));
        }
        char *canned = NULL;
        long record_index = -1;
        if (rpc->record && rpc->record->replaying) {
                if (!(canned = call_record_replay(rpc->record, id, name, *text))) {
                        pthread_mutex_unlock(&r->lock);
                        return tool_error(id,
                                          "tool \"%s\": the session's replay stopped here: this "
                                          "call is not the one its journal holds",
                                          name);
                }
        } else if (rpc->record) {
                record_index = call_record_note(rpc->record, name, *text);
        }
        tool_table_hold(rpc->tools); /* released by the worker once done with the tool */
        r->queue[(r->head + r->queued) % RPC_WAITING_MAX] = (struct request){
                .tool = tool,
                .table = rpc->tools,
                .args = *text,
                .id = json_incref((json_t *)id),
                .deadline = rpc->deadline,
                .limits = rpc->limits,
                .run_userdata = rpc->run_userdata,
                .record = rpc->record,
                .record_index = record_index,
                .canned = canned,
        };
        *text = NULL;
        r->queued_bytes += size;
        atomic_fetch_add(&r->pending, 1);
        atomic_fetch_add_explicit(&r->queued, 1, memory_order_release);
        bool staffed = staff(r);
        if (!staffed) { /* no thread could take it: answered here, and never again */
                r->queued--;
                r->queued_bytes -= size;
                atomic_fetch_sub(&r->pending, 1);
                struct request *q = &r->queue[(r->head + r->queued) % RPC_WAITING_MAX];
                tool_table_release(q->table);
                free(q->args);
                free(q->canned);
                json_decref(q->id);
        }
        pthread_cond_signal(&r->wake);
        pthread_mutex_unlock(&r->lock);
        return staffed ? NULL
                       : tool_error(id, "tool \"%s\" could not be called: out of threads", name);
}

/* Arguments arrive as "args_json", the text the preludes send (integers of any size, as the
 * guest's languages hold them), or as an "args" object (a hand-written frame). Either way the
 * tool gets text, and *ret_value is the arguments read by jansson, or NULL when they hold an
 * integer beyond 64 bits. Returns why they are refused, or NULL. */
static const char *take_arguments(const json_t *args, const json_t *args_json, char **ret_text,
                                  json_t **ret_value)
{
        *ret_text = NULL;
        *ret_value = NULL;
        if (!args_json) {
                char *text = args ? json_dumps(args, JSON_COMPACT) : strdup("{}");
                if (!text)
                        return "the arguments could not be encoded";
                *ret_text = text;
                if (json_text_check(text, strlen(text)) == JSON_TEXT_TOO_DEEP)
                        return "arguments are " JSON_TOO_DEEP;
                *ret_value = args ? json_incref((json_t *)args) : json_object();
                return *ret_value ? NULL : "the arguments could not be encoded";
        }
        const char *text = json_string_value(args_json);
        size_t len = json_string_length(args_json);
        switch (json_text_check(text, len)) {
        case JSON_TEXT_TOO_DEEP:
                return "arguments are " JSON_TOO_DEEP;
        case JSON_TEXT_INVALID:
                return "the arguments are not one JSON value";
        case JSON_TEXT_OK:
                break;
        }
        if (text[strspn(text, " \t\r\n")] != '{')
                return "the arguments must be an object";
        if (!(*ret_text = strndup(text, len)))
                return "the arguments could not be encoded";
        json_error_t jerr;
        *ret_value = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (!*ret_value && json_error_code(&jerr) != json_error_numeric_overflow)
                return "the arguments hold a duplicate key";
        return NULL;
}

json_t *rpc_call(struct rpc *rpc, const json_t *frame, const char **ret_protocol_error)
{
        *ret_protocol_error = NULL;
        const json_t *id = json_object_get(frame, "id");
        const char *name = json_string_value(json_object_get(frame, "name"));
        const json_t *args = json_object_get(frame, "args");
        const json_t *args_json = json_object_get(frame, "args_json");
        bool whole = name && frame_string(frame, "name");
        if (!json_is_integer(id) || !name || (args && !json_is_object(args)) ||
            (args_json && !json_is_string(args_json)) || (args && args_json) ||
            json_object_size(frame) != (args || args_json ? 4u : 3u)) {
                *ret_protocol_error = "a call frame holds exactly \"t\", an integer \"id\", a "
                                      "string \"name\" and an object \"args\" (or its text, "
                                      "\"args_json\")";
                return NULL;
        }
        atomic_fetch_add(&rpc->tools->calls, 1);
        if (++rpc->calls > rpc->limits.calls)
                return refused(rpc, tool_error(id,
                                               "too many tool calls: the limit is %llu per "
                                               "execution",
                                               (unsigned long long)rpc->limits.calls));
        if (!whole) {
                atomic_fetch_add(&rpc->tools->refused, 1);
                return reply_error(id, "SB::UnknownTool", NUL_IN_NAME);
        }
        _cleanup_free_ char *text = NULL;
        json_t *value = NULL;
        const char *bad = take_arguments(args, args_json, &text, &value);
        json_t *reply = bad ? refused(rpc, tool_error(id, "tool \"%.*s\": %s",
                                                      utf8_prefix(name, 200), name, bad))
                            : send_call(rpc, id, name, &text, value);
        json_decref(value);
        return reply;
}

bool rpc_progress(struct rpc *rpc, char *buf, size_t size)
{
        struct runner *r = rpc->runner;
        if (!r)
                return false;
        pthread_mutex_lock(&r->lock);
        bool any = r->progress[0] != '\0';
        if (any)
                snprintf(buf, size, "%s", r->progress);
        pthread_mutex_unlock(&r->lock);
        if (any)
                utf8_trim_cut(buf);
        return any;
}

int rpc_send(struct rpc *rpc, const json_t *reply, struct frame_reader *in, size_t in_cap,
             codecell_error *err)
{
        _cleanup_free_ char *body = json_dumps(reply, JSON_COMPACT);
        if (!body)
                return err_sys(err, ENOMEM, "encode frame");
        struct runner *r = rpc->runner;
        if (r)
                pthread_mutex_lock(&r->send_lock);
        int ret = frame_send_text_reading(rpc->ctl_fd, body, strlen(body), 1000, in, in_cap, err);
        if (r)
                pthread_mutex_unlock(&r->send_lock);
        return ret;
}

double rpc_parked_ms(struct rpc *rpc)
{
        return rpc && rpc->runner ? approval_clock_parked(&rpc->runner->clock) : 0;
}

void rpc_end(struct rpc *rpc)
{
        struct runner *r = rpc->runner;
        rpc->runner = NULL;
        if (!r)
                return;
        /* An approval callback may hold the run's userdata, which is the caller's once this
         * execution returns. */
        approval_clock_settle(&r->clock);
        /* Under send_lock: once this returns, no late reply reaches the socket, which the
         * session's next execution uses. */
        pthread_mutex_lock(&r->send_lock);
        pthread_mutex_lock(&r->lock);
        r->abandoned = true;
        r->quit = true;
        atomic_store(&r->stop, true);
        (void)eventfd_write(r->stop_fd, 1); /* command tools in flight are killed */
        drop_queued(r);
        pthread_cond_broadcast(&r->wake);
        pthread_mutex_unlock(&r->lock);
        pthread_mutex_unlock(&r->send_lock);
        /* Every worker is joined unless a C handler holds it past the grace; those left are
         * detached, and the last of them frees the pool. */
        double until = now_ms() + RPC_JOIN_GRACE_MS;
        pthread_mutex_lock(&r->lock);
        while (r->alive > 0 && now_ms() < until)
                (void)cond_wait_until(&r->left, &r->lock, until);
        unsigned started = r->started;
        pthread_t threads[started ? started : 1];
        for (unsigned i = 0; i < started; i++)
                threads[i] = r->workers[i].thread;
        bool all_left = r->alive == 0;
        r->orphaned = !all_left;
        pthread_mutex_unlock(&r->lock);
        for (unsigned i = 0; i < started; i++)
                if (all_left)
                        pthread_join(threads[i], NULL);
                else
                        pthread_detach(threads[i]);
        if (all_left)
                runner_destroy(r);
}
