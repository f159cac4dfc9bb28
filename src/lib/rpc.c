#include "rpc.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util.h"

/* The helper thread of one execution. Owned by the execution; if it is ended while a handler
 * hangs, the thread owns it and frees it when the handler returns. */
struct runner {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        int done_fd; /* eventfd: an answer is ready */
        /* request */
        const struct tool *tool;
        char *args;
        double deadline;
        uint64_t call_ms, answer_bytes;
        bool have_request, quit, abandoned;
        /* answer */
        int status;
        char *json, *error;
};

static void runner_destroy(struct runner *r)
{
        close(r->done_fd);
        free(r->args);
        free(r->json);
        free(r->error);
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->wake);
        free(r);
}

static void *runner_main(void *arg)
{
        struct runner *r = arg;
        pthread_mutex_lock(&r->lock);
        for (;;) {
                while (!r->have_request && !r->quit)
                        pthread_cond_wait(&r->wake, &r->lock);
                if (r->quit)
                        break;
                const struct tool *tool = r->tool;
                char *args = r->args;
                r->args = NULL;
                double deadline = r->deadline;
                uint64_t call_ms = r->call_ms, answer_bytes = r->answer_bytes;
                pthread_mutex_unlock(&r->lock);

                char *json = NULL, *error = NULL;
                int status;
                if (tool->handler) {
                        status = tool->handler(args, &json, &error, tool->userdata);
                } else {
                        uint64_t ms = tool->command.timeout_ms && tool->command.timeout_ms < call_ms
                                              ? tool->command.timeout_ms
                                              : call_ms;
                        status = command_tool_call(&tool->command, tool->name, args, deadline, ms,
                                                   answer_bytes, &json, &error);
                }
                free(args);

                pthread_mutex_lock(&r->lock);
                r->have_request = false;
                r->status = status;
                r->json = json;
                r->error = error;
                if (r->abandoned)
                        break;
                uint64_t one = 1;
                (void)!write(r->done_fd, &one, sizeof(one));
        }
        bool abandoned = r->abandoned;
        pthread_mutex_unlock(&r->lock);
        if (abandoned)
                runner_destroy(r);
        return NULL;
}

static struct runner *runner_start(void)
{
        struct runner *r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        r->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->wake, NULL);
        if (r->done_fd < 0 || pthread_create(&r->thread, NULL, runner_main, r) != 0) {
                if (r->done_fd >= 0)
                        close(r->done_fd);
                free(r);
                return NULL;
        }
        return r;
}

void rpc_init(struct rpc *rpc, struct tool_table *tools, const struct rpc_limits *limits,
              double deadline)
{
        *rpc = (struct rpc){.tools = tools, .limits = *limits, .deadline = deadline};
}

static json_t *reply_error(const json_t *id, const char *cls, const char *message)
{
        return json_pack("{s:s, s:O, s:b, s:{s:s, s:s}}", "t", "reply", "id", id, "ok", 0, "error",
                         "class", cls, "message", message);
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
        return reply_error(id, "SB::ToolError", message);
}

json_t *rpc_call(struct rpc *rpc, const json_t *frame, const char **ret_protocol_error)
{
        *ret_protocol_error = NULL;
        const json_t *id = json_object_get(frame, "id");
        const char *name = json_string_value(json_object_get(frame, "name"));
        const json_t *args = json_object_get(frame, "args");
        if (!json_is_integer(id) || !name || (args && !json_is_object(args)) ||
            json_object_size(frame) != (args ? 4u : 3u)) {
                *ret_protocol_error = "a call frame holds exactly \"t\", an integer \"id\", a "
                                      "string \"name\" and an object \"args\"";
                return NULL;
        }
        if (rpc->pending_id) {
                *ret_protocol_error = "a second call while one is in flight";
                return NULL;
        }
        if (++rpc->calls > rpc->limits.calls)
                return tool_error(id, "too many tool calls: the limit is %llu per execution",
                                  (unsigned long long)rpc->limits.calls);
        const struct tool *tool = tool_table_find(rpc->tools, name);
        if (!tool) {
                char message[300];
                snprintf(message, sizeof(message), "unknown tool \"%.200s\"", name);
                return reply_error(id, "SB::UnknownTool", message);
        }
        char *text = json_dumps(args ? args : json_object(), JSON_COMPACT);
        if (!text)
                return tool_error(id, "tool \"%s\": the arguments could not be encoded", name);
        size_t size = strlen(text);
        if (size > rpc->limits.request_bytes) {
                free(text);
                return tool_error(id,
                                  "tool \"%s\": arguments of %zu bytes are over the %llu-byte "
                                  "limit",
                                  name, size, (unsigned long long)rpc->limits.request_bytes);
        }
        if (!rpc->runner && !(rpc->runner = runner_start())) {
                free(text);
                return tool_error(id, "tool \"%s\" could not be called: out of resources", name);
        }
        struct runner *r = rpc->runner;
        pthread_mutex_lock(&r->lock);
        r->tool = tool;
        r->args = text;
        r->deadline = rpc->deadline;
        r->call_ms = rpc->limits.call_ms;
        r->answer_bytes = rpc->limits.answer_bytes;
        r->have_request = true;
        pthread_cond_signal(&r->wake);
        pthread_mutex_unlock(&r->lock);
        rpc->pending_id = json_incref((json_t *)id);
        return NULL;
}

int rpc_fd(const struct rpc *rpc)
{
        return rpc->pending_id && rpc->runner ? rpc->runner->done_fd : -1;
}

json_t *rpc_answer(struct rpc *rpc)
{
        struct runner *r = rpc->runner;
        uint64_t n;
        (void)!read(r->done_fd, &n, sizeof(n));
        pthread_mutex_lock(&r->lock);
        int status = r->status;
        char *json = r->json, *error = r->error;
        r->json = r->error = NULL;
        const char *name = r->tool->name;
        pthread_mutex_unlock(&r->lock);

        json_t *id = rpc->pending_id;
        rpc->pending_id = NULL;
        json_t *reply = NULL;
        if (status < 0) {
                size_t len = 0;
                char *clean = error ? utf8_sanitize(error, strlen(error), &len) : NULL;
                reply = (clean && *clean) ? reply_error(id, "SB::ToolError", clean)
                                          : tool_error(id, "tool \"%s\" failed", name);
                free(clean);
        } else if (!json) {
                reply = tool_error(id, "tool \"%s\" returned nothing", name);
        } else if (strlen(json) > rpc->limits.answer_bytes) {
                reply = tool_error(id,
                                   "tool \"%s\": an answer of %zu bytes is over the %llu-byte "
                                   "limit",
                                   name, strlen(json),
                                   (unsigned long long)rpc->limits.answer_bytes);
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
        json_decref(id);
        return reply;
}

void rpc_end(struct rpc *rpc)
{
        struct runner *r = rpc->runner;
        json_decref(rpc->pending_id);
        rpc->pending_id = NULL;
        rpc->runner = NULL;
        if (!r)
                return;
        pthread_mutex_lock(&r->lock);
        bool busy = r->have_request;
        if (busy)
                r->abandoned = true; /* the thread frees it when its handler returns */
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
