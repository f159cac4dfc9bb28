#include "rpc.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "json_schema_check.h"
#include "upstream.h"
#include "util.h"

/* The helper thread of one execution. Owned by the execution; if it is ended while a handler
 * hangs, the thread owns it and frees it when the handler returns. */
struct runner {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        /* Its own duplicate of the control socket: after the execution ends, a late reply goes
         * to a closed peer, never to whatever the engine's descriptor number means by then. */
        int ctl_fd;
        atomic_bool have_request; /* a call is in flight: set by the engine, cleared here */
        bool quit, abandoned;
        /* Set when the execution ends: a call to an MCP server stops waiting and cancels. */
        atomic_bool stop;
        /* What an MCP server last reported of the call in flight ("memory.x: 3/10 …"), for the
         * run's progress reports; under lock. */
        char progress[256];
        /* request */
        const struct tool *tool;
        struct tool_table *table;
        json_t *id;
        char *args;
        double deadline;
        struct rpc_limits limits;
        const char *name; /* of the tool being called, or NULL; under lock */
};

static void runner_destroy(struct runner *r)
{
        close(r->ctl_fd);
        free(r->args);
        json_decref(r->id);
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->wake);
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

/* The reply frame for a tool's outcome. Takes json and error. */
static json_t *build_reply(const json_t *id, const char *name, int status, char *json, char *error,
                           uint64_t answer_bytes)
{
        json_t *reply = NULL;
        if (status < 0) {
                size_t len = 0;
                char *clean = error ? utf8_sanitize(error, strlen(error), &len) : NULL;
                reply = (clean && *clean) ? reply_error(id, "SB::ToolError", clean)
                                          : tool_error(id, "tool \"%s\" failed", name);
                free(clean);
        } else if (!json || json[strspn(json, " \t\r\n")] == '\0') {
                reply = tool_error(
                        id, "tool \"%s\" returned nothing (it must answer one JSON value)", name);
        } else if (strlen(json) > answer_bytes) {
                reply = tool_error(
                        id, "tool \"%s\": an answer of %zu bytes is over the %llu-byte limit", name,
                        strlen(json), (unsigned long long)answer_bytes);
        } else {
                json_error_t jerr;
                json_t *value = json_loads(
                        json, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
                if (!value)
                        reply = tool_error(id, "tool \"%s\" returned invalid JSON: %s", name,
                                           jerr.text);
                else
                        reply = json_pack("{s:s, s:O, s:b, s:o}", "t", "reply", "id", id, "ok", 1,
                                          "result", value);
        }
        free(json);
        free(error);
        return reply;
}

/* Calls come in bursts (a loop of SB.call): after answering one, wait briefly for the next
 * without sleeping, which saves the wake-up of a sleeping thread on each call. */
#define SPIN_NS 100000

static bool spin_for_request(struct runner *r)
{
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        do {
                if (atomic_load_explicit(&r->have_request, memory_order_acquire))
                        return true;
                clock_gettime(CLOCK_MONOTONIC, &now);
        } while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) <
                 SPIN_NS);
        return false;
}

static void note_progress(const char *message, void *userdata)
{
        struct runner *r = userdata;
        pthread_mutex_lock(&r->lock);
        snprintf(r->progress, sizeof(r->progress), "%s: %s", r->name ? r->name : "", message);
        utf8_trim_cut(r->progress);
        pthread_mutex_unlock(&r->lock);
}

static void *runner_main(void *arg)
{
        struct runner *r = arg;
        for (;;) {
                if (!spin_for_request(r)) {
                        pthread_mutex_lock(&r->lock);
                        while (!atomic_load(&r->have_request) && !r->quit)
                                pthread_cond_wait(&r->wake, &r->lock);
                        bool quit = r->quit && !atomic_load(&r->have_request);
                        pthread_mutex_unlock(&r->lock);
                        if (quit)
                                break;
                }
                pthread_mutex_lock(&r->lock);
                const struct tool *tool = r->tool;
                struct tool_table *table = r->table;
                char *args = r->args;
                json_t *id = r->id;
                r->args = NULL;
                r->id = NULL;
                double deadline = r->deadline;
                struct rpc_limits limits = r->limits;
                pthread_mutex_unlock(&r->lock);

                /* The tool belongs to the cell, which may be freed while a handler hangs: take
                 * what is needed, then let go of it (see tool_table.holds). */
                char *name = strdup(tool->name);
                pthread_mutex_lock(&r->lock);
                r->name = name;
                r->progress[0] = '\0';
                pthread_mutex_unlock(&r->lock);
                char *json = NULL, *error = NULL;
                int status;
                if (tool->upstream.server) {
                        struct upstream *server = upstream_ref(tool->upstream.server);
                        char *own = strdup(tool->upstream.tool);
                        tool_table_release(table);
                        double call_deadline = now_ms() + (double)limits.call_ms;
                        status = own ? upstream_call(server, own, args,
                                                     call_deadline < deadline ? call_deadline
                                                                              : deadline,
                                                     &r->stop, limits.answer_bytes, note_progress,
                                                     r, &json, &error)
                                     : -1;
                        free(own);
                        upstream_unref(server);
                } else if (tool->handler) {
                        codecell_tool_handler handler = tool->handler;
                        void *userdata = tool->userdata;
                        tool_table_release(table);
                        status = handler(args, &json, &error, userdata);
                } else {
                        uint64_t ms = tool->command.timeout_ms &&
                                                      tool->command.timeout_ms < limits.call_ms
                                              ? tool->command.timeout_ms
                                              : limits.call_ms;
                        status = command_tool_call(&tool->command, tool->name, args, deadline, ms,
                                                   limits.answer_bytes, &json, &error);
                        tool_table_release(table);
                }
                free(args);
                json_t *reply = build_reply(id, name ? name : "?", status, json, error,
                                            limits.answer_bytes);
                json_decref(id);
                pthread_mutex_lock(&r->lock);
                r->name = NULL;
                r->progress[0] = '\0';
                pthread_mutex_unlock(&r->lock);
                free(name);

                pthread_mutex_lock(&r->lock);
                bool abandoned = r->abandoned;
                /* Cleared before the reply leaves: the guest's next call may follow at once. */
                atomic_store_explicit(&r->have_request, false, memory_order_release);
                pthread_mutex_unlock(&r->lock);
                if (!abandoned) {
                        codecell_error e;
                        if (!reply || frame_send(r->ctl_fd, reply, 1000, &e) < 0)
                                shutdown(r->ctl_fd,
                                         SHUT_RDWR); /* the guest sees the channel close */
                }
                json_decref(reply);
                if (abandoned)
                        break;
        }
        pthread_mutex_lock(&r->lock);
        bool abandoned = r->abandoned;
        pthread_mutex_unlock(&r->lock);
        if (abandoned)
                runner_destroy(r);
        return NULL;
}

static struct runner *runner_start(int ctl_fd)
{
        struct runner *r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        r->ctl_fd = fcntl(ctl_fd, F_DUPFD_CLOEXEC, 3);
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->wake, NULL);
        if (r->ctl_fd < 0 || pthread_create(&r->thread, NULL, runner_main, r) != 0) {
                if (r->ctl_fd >= 0)
                        close(r->ctl_fd);
                free(r);
                return NULL;
        }
        return r;
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

json_t *rpc_call(struct rpc *rpc, const json_t *frame, const char **ret_protocol_error)
{
        *ret_protocol_error = NULL;
        const json_t *id = json_object_get(frame, "id");
        const char *name = json_string_value(json_object_get(frame, "name"));
        const json_t *args = json_object_get(frame, "args");
        bool whole = name && frame_string(frame, "name");
        if (!json_is_integer(id) || !name || (args && !json_is_object(args)) ||
            json_object_size(frame) != (args ? 4u : 3u)) {
                *ret_protocol_error = "a call frame holds exactly \"t\", an integer \"id\", a "
                                      "string \"name\" and an object \"args\"";
                return NULL;
        }
        if (rpc->runner && atomic_load(&rpc->runner->have_request)) {
                *ret_protocol_error = "a second call while one is in flight";
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
        if (strcmp(name, DESCRIBE) == 0)
                return describe(rpc, id, args);
        const struct tool *tool = tool_table_find(rpc->tools, name);
        if (!tool) {
                atomic_fetch_add(&rpc->tools->refused, 1);
                char message[300];
                snprintf(message, sizeof(message), "unknown tool \"%.*s\"", utf8_prefix(name, 200),
                         name);
                return reply_error(id, "SB::UnknownTool", message);
        }
        /* Checked here, so that a tool never sees arguments its schema refuses. */
        char problem[700];
        json_t *empty = args ? NULL : json_object();
        bool off_schema = json_schema_check(tool->input_schema, args ? args : empty, problem,
                                            sizeof(problem));
        json_decref(empty);
        if (off_schema)
                return refused(rpc, tool_error(id, "tool \"%s\": arguments: %s", name, problem));
        char *text = args ? json_dumps(args, JSON_COMPACT) : strdup("{}");
        if (!text)
                return tool_error(id, "tool \"%s\": the arguments could not be encoded", name);
        size_t size = strlen(text);
        if (size > rpc->limits.request_bytes) {
                free(text);
                return refused(
                        rpc,
                        tool_error(id,
                                   "tool \"%s\": arguments of %zu bytes are over the %llu-byte "
                                   "limit",
                                   name, size, (unsigned long long)rpc->limits.request_bytes));
        }
        if (!rpc->runner && !(rpc->runner = runner_start(rpc->ctl_fd))) {
                free(text);
                return tool_error(id, "tool \"%s\" could not be called: out of resources", name);
        }
        struct runner *r = rpc->runner;
        pthread_mutex_lock(&r->lock);
        tool_table_hold(rpc->tools); /* released by the helper once done with the tool */
        r->tool = tool;
        r->table = rpc->tools;
        r->args = text;
        r->id = json_incref((json_t *)id);
        r->deadline = rpc->deadline;
        r->limits = rpc->limits;
        atomic_store_explicit(&r->have_request, true, memory_order_release);
        pthread_cond_signal(&r->wake);
        pthread_mutex_unlock(&r->lock);
        return NULL;
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

void rpc_end(struct rpc *rpc)
{
        struct runner *r = rpc->runner;
        rpc->runner = NULL;
        if (!r)
                return;
        pthread_mutex_lock(&r->lock);
        bool busy = atomic_load(&r->have_request);
        if (busy)
                r->abandoned = true; /* the thread frees it when its handler returns */
        atomic_store(&r->stop, true);
        r->quit = true;
        pthread_cond_signal(&r->wake);
        pthread_mutex_unlock(&r->lock);
        if (busy) {
                pthread_detach(r->thread);
                return;
        }
        pthread_join(r->thread, NULL);
        runner_destroy(r);
}
