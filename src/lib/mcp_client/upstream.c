/* The MCP client of one upstream server (upstream.h): JSON-RPC requests and their answers,
 * initialize with the revision fallback, tools/list with pagination and list_changed,
 * tools/call with cancellation, and the recovery of a server that died or hangs. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadline.h"
#include "error.h"
#include "exact_integers.h"
#include "upstream_internal.h"
#include "util.h"

/* The revisions codecell speaks, newest first: initialize asks for the first; an older
 * server answers with one of the others (or refuses, and is asked again with the next). */
static const char *const revisions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

/* How long a server has to answer the ping sent after a cancelled call before it is taken for
 * hung and restarted. */
#define PING_GRACE_MS 2000.0
/* A call that ends is checked this often for the execution's end (*stop). */
#define STOP_POLL_MS 20
/* Pages of tools/list taken at most (a server that pages without end). */
#define MAX_PAGES 100

struct pending {
        int64_t id;
        unsigned generation;
        json_t *response;              /* set by the reader */
        upstream_progress_fn progress; /* or NULL; the progressToken is the id */
        void *progress_data;
        struct pending *next;
};

struct upstream *upstream_new(struct upstream_spec *spec)
{
        struct upstream *u = calloc(1, sizeof(*u));
        if (!u)
                return NULL;
        u->spec = *spec;
        *spec = (struct upstream_spec){0};
        u->ops = u->spec.url ? &upstream_http_ops : &upstream_stdio_ops;
        atomic_init(&u->refs, 1);
        pthread_mutex_init(&u->connect_lock, NULL);
        pthread_mutex_init(&u->lock, NULL);
        pthread_mutex_init(&u->write_lock, NULL);
        cond_init_monotonic(&u->changed);
        u->next_id = 1;
        return u;
}

struct upstream *upstream_ref(struct upstream *u)
{
        if (u)
                atomic_fetch_add(&u->refs, 1);
        return u;
}

static void free_list(char **list)
{
        for (char **p = list; p && *p; p++)
                free(*p);
        free(list);
}

void upstream_unref(struct upstream *u)
{
        if (!u || atomic_fetch_sub(&u->refs, 1) != 1)
                return;
        pthread_mutex_lock(&u->connect_lock);
        if (u->open)
                u->ops->close(u, true);
        pthread_mutex_unlock(&u->connect_lock);
        free(u->spec.name);
        free_list(u->spec.argv);
        free_list(u->spec.env);
        free(u->spec.cwd);
        free(u->spec.url);
        free_list(u->spec.headers);
        free(u->down_reason);
        free(u->protocol);
        json_decref(u->tools);
        json_decref(u->refreshing);
        pthread_cond_destroy(&u->changed);
        pthread_mutex_destroy(&u->write_lock);
        pthread_mutex_destroy(&u->lock);
        pthread_mutex_destroy(&u->connect_lock);
        free(u);
}

const char *upstream_name(const struct upstream *u)
{
        return u->spec.name;
}

bool upstream_approval(const struct upstream *u)
{
        return u->spec.approval;
}

void upstream_set_listener(struct upstream *u, upstream_tools_listener fn, void *userdata)
{
        pthread_mutex_lock(&u->lock);
        /* Once this returns, the old listener is not running and will not be called. */
        while (u->listener_busy)
                pthread_cond_wait(&u->changed, &u->lock);
        u->listener = fn;
        u->listener_data = userdata;
        pthread_mutex_unlock(&u->lock);
}

json_t *upstream_tools(struct upstream *u)
{
        pthread_mutex_lock(&u->lock);
        json_t *tools = json_incref(u->tools);
        pthread_mutex_unlock(&u->lock);
        return tools;
}

const char *upstream_protocol(struct upstream *u)
{
        pthread_mutex_lock(&u->lock);
        const char *p = u->protocol;
        pthread_mutex_unlock(&u->lock);
        return p;
}

/* ---- messages ----------------------------------------------------------------------------- */

static int send_message(struct upstream *u, json_t *msg, double deadline, char **ret_error)
{
        char *text = json_dumps_exact(msg, JSON_COMPACT);
        if (!text) {
                *ret_error = str_printf("the message could not be encoded");
                return -1;
        }
        pthread_mutex_lock(&u->write_lock);
        int r = u->ops->send(u, text, deadline, ret_error);
        pthread_mutex_unlock(&u->write_lock);
        free(text);
        return r;
}

static void send_notification(struct upstream *u, const char *method, json_t *params)
{
        json_t *msg = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
        if (msg && params)
                json_object_set(msg, "params", params);
        char *error = NULL;
        if (msg)
                (void)send_message(u, msg, now_ms() + 1000, &error);
        free(error);
        json_decref(msg);
}

/* The reader's answer to a request of the server: ping is answered; codecell offers no
 * sampling, roots or elicitation, so anything else is "method not found". */
static void answer_server_request(struct upstream *u, const json_t *message)
{
        const char *method = json_string_value(json_object_get(message, "method"));
        json_t *id = json_object_get(message, "id");
        json_t *reply =
                method && strcmp(method, "ping") == 0
                        ? json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id, "result")
                        : json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
                                    "code", -32601, "message", "codecell does not offer this");
        char *error = NULL;
        if (reply)
                (void)send_message(u, reply, now_ms() + 1000, &error);
        free(error);
        json_decref(reply);
}

static int64_t take_id(struct upstream *u)
{
        return u->next_id++; /* under u->lock */
}

/* After list_changed: the next page of tools/list, sent by the reader itself (it cannot wait
 * for its own answers). Under u->lock; the lock is dropped for the write. */
static void request_tools_page(struct upstream *u, const char *cursor)
{
        int64_t id = take_id(u);
        u->refresh_id = id;
        json_t *msg = cursor ? json_pack("{s:s, s:I, s:s, s:{s:s}}", "jsonrpc", "2.0", "id",
                                         (json_int_t)id, "method", "tools/list", "params", "cursor",
                                         cursor)
                             : json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t)id,
                                         "method", "tools/list");
        pthread_mutex_unlock(&u->lock);
        char *error = NULL;
        int r = msg ? send_message(u, msg, now_ms() + 2000, &error) : -1;
        free(error);
        json_decref(msg);
        pthread_mutex_lock(&u->lock);
        if (r < 0 && u->refresh_id == id) {
                u->refresh_id = 0;
                json_decref(u->refreshing);
                u->refreshing = NULL;
        }
}

/* A page of the refresh arrived (under u->lock). Returns the finished list to hand to the
 * listener, or NULL. */
static json_t *refresh_page(struct upstream *u, const json_t *response)
{
        const json_t *result = json_object_get(response, "result");
        const json_t *tools = json_object_get(result, "tools");
        const char *cursor = json_string_value(json_object_get(result, "nextCursor"));
        u->refresh_id = 0;
        if (!json_is_array(tools) || !u->refreshing) {
                json_decref(u->refreshing);
                u->refreshing = NULL;
                return NULL;
        }
        json_array_extend(u->refreshing, (json_t *)tools);
        if (cursor && json_array_size(u->refreshing) < 100000) {
                request_tools_page(u, cursor);
                return NULL;
        }
        json_t *done = u->refreshing;
        u->refreshing = NULL;
        json_decref(u->tools);
        u->tools = json_incref(done);
        return done;
}

/* notifications/progress for a call of ours (its progressToken is the request's id): "3/10 …"
 * to whoever waits for that call. Under u->lock. */
static void pass_progress(struct upstream *u, const json_t *params)
{
        const json_t *token = json_object_get(params, "progressToken");
        const json_t *progress = json_object_get(params, "progress");
        const json_t *total = json_object_get(params, "total");
        const char *text = json_string_value(json_object_get(params, "message"));
        if (!json_is_integer(token) || !json_is_number(progress))
                return;
        for (struct pending *p = u->pending; p; p = p->next) {
                if (p->id != json_integer_value(token) || !p->progress)
                        continue;
                char line[300];
                if (json_is_number(total))
                        snprintf(line, sizeof(line), "%g/%g%s%.200s", json_number_value(progress),
                                 json_number_value(total), text ? " " : "", text ? text : "");
                else
                        snprintf(line, sizeof(line), "%g%s%.200s", json_number_value(progress),
                                 text ? " " : "", text ? text : "");
                utf8_trim_cut(line);
                p->progress(line, p->progress_data);
        }
}

void upstream_receive(struct upstream *u, json_t *message)
{
        if (!json_is_object(message)) {
                json_decref(message);
                return;
        }
        const char *method = json_string_value(json_object_get(message, "method"));
        const json_t *id = json_object_get(message, "id");
        if (method && id) {
                answer_server_request(u, message);
                json_decref(message);
                return;
        }
        json_t *finished = NULL;
        upstream_tools_listener listener = NULL;
        void *listener_data = NULL;
        pthread_mutex_lock(&u->lock);
        if (method && strcmp(method, "notifications/progress") == 0) {
                pass_progress(u, json_object_get(message, "params"));
        } else if (method) {
                /* A new list while one is being read: start over, the newest counts. */
                if (strcmp(method, "notifications/tools/list_changed") == 0 && u->connected) {
                        json_decref(u->refreshing);
                        u->refreshing = json_array();
                        if (u->refreshing)
                                request_tools_page(u, NULL);
                }
        } else if (json_is_integer(id)) {
                int64_t n = json_integer_value(id);
                if (n == u->ping_id) {
                        u->ping_id = 0;
                } else if (n == u->refresh_id) {
                        finished = refresh_page(u, message);
                        listener = finished ? u->listener : NULL;
                        listener_data = u->listener_data;
                        if (listener)
                                u->listener_busy++;
                } else {
                        for (struct pending *p = u->pending; p; p = p->next)
                                if (p->id == n && !p->response) {
                                        p->response = json_incref(message);
                                        pthread_cond_broadcast(&u->changed);
                                }
                }
        }
        pthread_mutex_unlock(&u->lock);
        if (listener) {
                listener(u, finished, listener_data);
                pthread_mutex_lock(&u->lock);
                u->listener_busy--;
                pthread_cond_broadcast(&u->changed);
                pthread_mutex_unlock(&u->lock);
        }
        json_decref(finished);
        json_decref(message);
}

void upstream_lost(struct upstream *u, const char *reason)
{
        pthread_mutex_lock(&u->lock);
        u->connected = false;
        u->generation++;
        free(u->down_reason);
        u->down_reason = strdup(reason);
        u->ping_id = u->refresh_id = 0;
        json_decref(u->refreshing);
        u->refreshing = NULL;
        pthread_cond_broadcast(&u->changed);
        pthread_mutex_unlock(&u->lock);
}

/* Waits for the answer to p until deadline or *stop (under u->lock). 1 answered, 0 not
 * (timed out or stopped), -1 the connection was lost. */
static int wait_answer(struct upstream *u, struct pending *p, double deadline,
                       const atomic_bool *stop)
{
        for (;;) {
                if (p->response)
                        return 1;
                if (p->generation != u->generation)
                        return -1;
                double now = now_ms();
                if (deadline <= now || (stop && atomic_load(stop)))
                        return 0;
                /* A call that can be stopped looks at *stop every STOP_POLL_MS. */
                double until =
                        stop && deadline > now + STOP_POLL_MS ? now + STOP_POLL_MS : deadline;
                (void)cond_wait_until(&u->changed, &u->lock, until);
        }
}

static void unlink_pending(struct upstream *u, struct pending *p)
{
        for (struct pending **q = &u->pending; *q; q = &(*q)->next)
                if (*q == p) {
                        *q = p->next;
                        break;
                }
}

enum outcome { ANSWERED, TIMED_OUT, STOPPED, LOST, SEND_FAILED };

/* One request and its response (a new reference in *ret_response when ANSWERED). */
static enum outcome request(struct upstream *u, const char *method, json_t *params, double deadline,
                            const atomic_bool *stop, upstream_progress_fn progress,
                            void *progress_data, int64_t *ret_id, json_t **ret_response,
                            char **ret_error)
{
        struct pending p = {.progress = progress, .progress_data = progress_data};
        pthread_mutex_lock(&u->lock);
        p.id = take_id(u);
        /* Progress of this request comes back under its id. */
        if (progress && json_is_object(params)) {
                json_t *meta = json_pack("{s:I}", "progressToken", (json_int_t)p.id);
                if (meta)
                        json_object_set_new(params, "_meta", meta);
        }
        p.generation = u->generation;
        p.next = u->pending;
        u->pending = &p;
        pthread_mutex_unlock(&u->lock);
        *ret_id = p.id;
        *ret_response = NULL;
        json_t *msg = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t)p.id,
                                "method", method);
        if (msg && params)
                json_object_set(msg, "params", params);
        int sent = msg ? send_message(u, msg, deadline, ret_error) : -1;
        json_decref(msg);
        pthread_mutex_lock(&u->lock);
        int r = sent < 0 ? -2 : wait_answer(u, &p, deadline, stop);
        unlink_pending(u, &p);
        pthread_mutex_unlock(&u->lock);
        if (r == 1) {
                *ret_response = p.response;
                return ANSWERED;
        }
        json_decref(p.response);
        if (r == -2) {
                if (!*ret_error)
                        *ret_error = str_printf("the request could not be sent");
                return SEND_FAILED;
        }
        if (r == -1)
                return LOST;
        return stop && atomic_load(stop) ? STOPPED : TIMED_OUT;
}

/* The text of a JSON-RPC error response, for a message. */
static char *rpc_error_text(const json_t *response)
{
        const json_t *error = json_object_get(response, "error");
        const char *message = json_string_value(json_object_get(error, "message"));
        json_int_t code = json_integer_value(json_object_get(error, "code"));
        if (!error)
                return NULL;
        return str_printf("%s (code %lld)", message ? message : "error", (long long)code);
}

/* The reason the connection is down, for the guest (under u->lock). */
static char *down_text(struct upstream *u)
{
        return str_printf("upstream MCP server \"%s\" is unavailable: %s", u->spec.name,
                          u->down_reason ? u->down_reason : "not connected");
}

/* ---- connecting --------------------------------------------------------------------------- */

static int initialize(struct upstream *u, double deadline, char **ret_error)
{
        for (size_t k = 0; k < sizeof(revisions) / sizeof(revisions[0]); k++) {
                json_t *params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion",
                                           revisions[k], "capabilities", "clientInfo", "name",
                                           "codecell", "version", CODECELL_VERSION);
                int64_t id;
                json_t *response = NULL;
                enum outcome o = request(u, "initialize", params, deadline, NULL, NULL, NULL, &id,
                                         &response, ret_error);
                json_decref(params);
                if (o == TIMED_OUT) {
                        *ret_error = str_printf("no answer to initialize in time");
                        return -1;
                }
                if (o != ANSWERED) {
                        if (!*ret_error) {
                                pthread_mutex_lock(&u->lock);
                                *ret_error = str_printf("%s", u->down_reason ? u->down_reason
                                                                             : "connection lost");
                                pthread_mutex_unlock(&u->lock);
                        }
                        return -1;
                }
                const json_t *result = json_object_get(response, "result");
                const char *agreed = json_string_value(json_object_get(result, "protocolVersion"));
                if (!result) {
                        /* Refused: perhaps a server that knows only an older revision. */
                        char *why = rpc_error_text(response);
                        json_decref(response);
                        if (k + 1 < sizeof(revisions) / sizeof(revisions[0])) {
                                free(why);
                                continue;
                        }
                        *ret_error = str_printf("initialize refused: %s", why ? why : "?");
                        free(why);
                        return -1;
                }
                bool known = false;
                for (size_t j = 0; agreed && j < sizeof(revisions) / sizeof(revisions[0]); j++)
                        known |= strcmp(agreed, revisions[j]) == 0;
                if (!known) {
                        *ret_error = str_printf("the server speaks MCP %s, codecell speaks "
                                                "2025-11-25, 2025-06-18 and 2025-03-26",
                                                agreed ? agreed : "(no protocolVersion)");
                        json_decref(response);
                        return -1;
                }
                pthread_mutex_lock(&u->lock);
                free(u->protocol);
                u->protocol = strdup(agreed);
                pthread_mutex_unlock(&u->lock);
                json_decref(response);
                send_notification(u, "notifications/initialized", NULL);
                return 0;
        }
        return -1;
}

static int list_tools(struct upstream *u, double deadline, char **ret_error)
{
        json_t *all = json_array();
        char *cursor = NULL;
        int r = -1;
        for (int page = 0; all && page < MAX_PAGES; page++) {
                json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : NULL;
                int64_t id;
                json_t *response = NULL;
                enum outcome o = request(u, "tools/list", params, deadline, NULL, NULL, NULL, &id,
                                         &response, ret_error);
                json_decref(params);
                free(cursor);
                cursor = NULL;
                if (o != ANSWERED) {
                        if (!*ret_error)
                                *ret_error = str_printf(o == TIMED_OUT
                                                                ? "no answer to tools/list in time"
                                                                : "connection lost in tools/list");
                        goto out;
                }
                const json_t *result = json_object_get(response, "result");
                const json_t *tools = json_object_get(result, "tools");
                if (!json_is_array(tools)) {
                        char *why = rpc_error_text(response);
                        *ret_error = str_printf("tools/list failed: %s",
                                                why ? why : "the answer has no \"tools\" array");
                        free(why);
                        json_decref(response);
                        goto out;
                }
                json_array_extend(all, (json_t *)tools);
                const char *next = json_string_value(json_object_get(result, "nextCursor"));
                cursor = next && *next ? strdup(next) : NULL;
                json_decref(response);
                if (!cursor) {
                        pthread_mutex_lock(&u->lock);
                        json_decref(u->tools);
                        u->tools = all;
                        all = NULL;
                        pthread_mutex_unlock(&u->lock);
                        r = 0;
                        goto out;
                }
        }
        if (!*ret_error)
                *ret_error = str_printf("tools/list gave more than %d pages", MAX_PAGES);
out:
        free(cursor);
        json_decref(all);
        return r;
}

/* Opens, initialises and lists; with connect_lock held. */
static int connect_locked(struct upstream *u, double deadline, char **ret_error)
{
        if (u->open)
                u->ops->close(u, false);
        pthread_mutex_lock(&u->lock);
        u->open = false;
        u->connected = false;
        u->ping_id = 0;
        pthread_mutex_unlock(&u->lock);
        if (u->ops->open(u, deadline, ret_error) < 0)
                return -1;
        pthread_mutex_lock(&u->lock);
        u->open = true;
        pthread_mutex_unlock(&u->lock);
        if (initialize(u, deadline, ret_error) < 0 || list_tools(u, deadline, ret_error) < 0) {
                u->ops->close(u, false);
                pthread_mutex_lock(&u->lock);
                u->open = false;
                free(u->down_reason);
                u->down_reason = strdup(*ret_error ? *ret_error : "could not connect");
                pthread_mutex_unlock(&u->lock);
                return -1;
        }
        pthread_mutex_lock(&u->lock);
        u->connected = true;
        free(u->down_reason);
        u->down_reason = NULL;
        pthread_mutex_unlock(&u->lock);
        return 0;
}

int upstream_connect(struct upstream *u, double deadline, codecell_error *err)
{
        char *error = NULL;
        pthread_mutex_lock(&u->connect_lock);
        int r = connect_locked(u, deadline, &error);
        pthread_mutex_unlock(&u->connect_lock);
        if (r < 0)
                r = err_set(err, CODECELL_ERR_INVALID, EHOSTDOWN, "%s",
                            error ? error : "could not connect");
        free(error);
        return r;
}

/* Before a call: a connection that is up and answers. A server that did not answer the ping
 * sent after a cancelled call within PING_GRACE_MS is taken for hung: killed, started again. */
static int ensure_connected(struct upstream *u, double deadline, char **ret_error)
{
        pthread_mutex_lock(&u->lock);
        if (u->ping_id) {
                double until = u->ping_sent_ms + PING_GRACE_MS;
                if (until > deadline)
                        until = deadline;
                struct pending none = {.generation = u->generation};
                while (u->ping_id && none.generation == u->generation && now_ms() < until) {
                        (void)cond_wait_until(&u->changed, &u->lock, now_ms() + STOP_POLL_MS);
                }
                if (u->ping_id && u->connected) {
                        u->connected = false;
                        free(u->down_reason);
                        u->down_reason = strdup("it stopped answering (no answer to a ping)");
                }
        }
        bool up = u->connected;
        pthread_mutex_unlock(&u->lock);
        if (up)
                return 0;
        pthread_mutex_lock(&u->connect_lock);
        pthread_mutex_lock(&u->lock);
        up = u->connected; /* another caller may have reconnected meanwhile */
        pthread_mutex_unlock(&u->lock);
        int r = 0;
        char *error = NULL;
        if (!up && (r = connect_locked(u, deadline, &error)) < 0)
                *ret_error = str_printf("upstream MCP server \"%s\" is unavailable: %s",
                                        u->spec.name, error ? error : "could not connect");
        free(error);
        pthread_mutex_unlock(&u->connect_lock);
        return r;
}

/* The call ended without an answer: the server is told (notifications/cancelled), and asked
 * for a ping, which tells at the next call whether it still answers. */
static void give_up(struct upstream *u, int64_t id, const char *reason)
{
        json_t *params = json_pack("{s:I, s:s}", "requestId", (json_int_t)id, "reason", reason);
        send_notification(u, "notifications/cancelled", params);
        json_decref(params);
        pthread_mutex_lock(&u->lock);
        if (u->ping_id || !u->connected) {
                pthread_mutex_unlock(&u->lock);
                return;
        }
        int64_t ping = take_id(u);
        u->ping_id = ping;
        u->ping_sent_ms = now_ms();
        pthread_mutex_unlock(&u->lock);
        json_t *msg = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t)ping,
                                "method", "ping");
        char *error = NULL;
        if (msg)
                (void)send_message(u, msg, now_ms() + 1000, &error);
        free(error);
        json_decref(msg);
}

int upstream_call(struct upstream *u, const char *tool, const char *args_json, double deadline,
                  const atomic_bool *stop, size_t max_answer, upstream_progress_fn progress,
                  void *progress_data, char **ret_json, char **ret_error)
{
        *ret_json = *ret_error = NULL;
        json_error_t jerr;
        json_t *args = json_loads_exact(args_json, 0, &jerr);
        json_t *params = args ? json_pack("{s:s, s:o}", "name", tool, "arguments", args) : NULL;
        if (!params) {
                *ret_error = str_printf("the arguments could not be encoded");
                return -1;
        }
        if (ensure_connected(u, deadline, ret_error) < 0) {
                json_decref(params);
                return -1;
        }
        int64_t id;
        json_t *response = NULL;
        enum outcome o = request(u, "tools/call", params, deadline, stop, progress, progress_data,
                                 &id, &response, ret_error);
        json_decref(params);
        switch (o) {
        case ANSWERED:
                break;
        case TIMED_OUT:
        case STOPPED:
                give_up(u, id,
                        o == STOPPED ? "the execution ended" : "the call's time limit was reached");
                free(*ret_error);
                *ret_error = str_printf(o == STOPPED ? "upstream tool \"%s.%s\" was cancelled: "
                                                       "the execution ended"
                                                     : "upstream tool \"%s.%s\" did not answer in "
                                                       "time (it was sent notifications/cancelled)",
                                        u->spec.name, tool);
                return -1;
        case LOST:
        case SEND_FAILED:
                pthread_mutex_lock(&u->lock);
                free(*ret_error);
                *ret_error = down_text(u);
                if (u->connected && o == SEND_FAILED)
                        u->connected = false; /* started again at the next call */
                pthread_mutex_unlock(&u->lock);
                return -1;
        }
        const json_t *result = json_object_get(response, "result");
        int r = -1;
        if (!result) {
                char *why = rpc_error_text(response);
                *ret_error = str_printf("upstream tool \"%s.%s\" failed: %s", u->spec.name, tool,
                                        why ? why : "malformed response");
                free(why);
        } else {
                json_t *value = NULL;
                char *error = NULL;
                if (mcp_result_unwrap(result, &value, &error) < 0) {
                        *ret_error = error;
                } else {
                        *ret_json = json_dumps_exact(value, JSON_ENCODE_ANY | JSON_COMPACT);
                        json_decref(value);
                        if (!*ret_json)
                                *ret_error = str_printf("the answer could not be encoded");
                        else if (strlen(*ret_json) > max_answer) {
                                *ret_error = str_printf("upstream tool \"%s.%s\": an answer of "
                                                        "%zu bytes is over the %zu-byte limit",
                                                        u->spec.name, tool, strlen(*ret_json),
                                                        max_answer);
                                free(*ret_json);
                                *ret_json = NULL;
                        } else
                                r = 0;
                }
        }
        json_decref(response);
        return r;
}
