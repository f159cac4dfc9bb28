/* The MCP server's state and its methods: lifecycle, ping, logging, cancellation; tools live
 * in tools.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/util.h"
#include "server.h"

#define DEFAULT_MAX_RUNS 16
#define DEFAULT_MAX_CLIENTS 1024
#define LATEST_PROTOCOL "2025-11-25"

static const char *const protocol_versions[] = {LATEST_PROTOCOL, "2025-06-18", "2025-03-26", NULL};

/* Errors of 2026-07-28 (basic/index.mdx, Error Codes). */
#define UNSUPPORTED_PROTOCOL_VERSION (-32022)
/* How long a client may keep tools/list and server/discover: the cells are fixed for the
 * server's life (a new configuration is a new process). */
#define LIST_TTL_MS 3600000

static const char *const log_levels[] = {
        [LOG_DEBUG] = "debug",     [LOG_INFO] = "info",           [LOG_NOTICE] = "notice",
        [LOG_WARNING] = "warning", [LOG_ERROR] = "error",         [LOG_CRITICAL] = "critical",
        [LOG_ALERT] = "alert",     [LOG_EMERGENCY] = "emergency",
};

/* Until a client sets a level, it hears only of trouble. */
#define DEFAULT_LOG_LEVEL LOG_WARNING

bool mcp_protocol_supported(const char *version)
{
        for (size_t i = 0; version && protocol_versions[i]; i++)
                if (strcmp(version, protocol_versions[i]) == 0)
                        return true;
        return false;
}

bool mcp_message_modern(const json_t *msg)
{
        const json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
        return json_object_get(meta, MCP_META_VERSION) != NULL;
}

struct mcp_server *mcp_server_new(codecell_cellset *cells, const struct mcp_server_options *o)
{
        struct mcp_server *s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->cells = cells;
        s->o = *o;
        if (!s->o.max_runs)
                s->o.max_runs = DEFAULT_MAX_RUNS;
        if (!s->o.max_clients)
                s->o.max_clients = DEFAULT_MAX_CLIENTS;
        if (!s->o.transport)
                s->o.transport = "stdio";
        pthread_mutex_init(&s->lock, NULL);
        s->metrics = metrics_new(codecell_cellset_size(cells));
        for (size_t i = 0; i < codecell_cellset_size(cells) && !s->sessions_tool[0]; i++)
                if (codecell_cellset_sessions(cells, i))
                        /* Named apart from the cells: a cell may be called "sessions". */
                        snprintf(s->sessions_tool, sizeof(s->sessions_tool), "%s",
                                 codecell_cellset_find(cells, "sessions") < 0
                                         ? "sessions"
                                         : "codecell_sessions");
        s->tools = s->metrics ? mcp_tools_build(s, false) : NULL;
        s->tools_modern = s->tools ? mcp_tools_build(s, true) : NULL;
        if (!s->tools_modern) {
                mcp_server_free(s);
                return NULL;
        }
        return s;
}

void mcp_server_free(struct mcp_server *s)
{
        if (!s)
                return;
        json_decref(s->tools);
        json_decref(s->tools_modern);
        metrics_free(s->metrics);
        free(s->clients);
        pthread_mutex_destroy(&s->lock);
        free(s);
}

static void cancel_all(struct mcp_client *c)
{
        pthread_mutex_lock(&c->lock);
        for (struct inflight *f = c->inflight; f; f = f->next)
                codecell_cancel_trigger(f->cancel);
        pthread_mutex_unlock(&c->lock);
}

void mcp_server_stop(struct mcp_server *s)
{
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        for (size_t i = 0; i < s->n_clients; i++)
                cancel_all(s->clients[i]);
        pthread_mutex_unlock(&s->lock);
}

void mcp_server_drain(struct mcp_server *s)
{
        pthread_mutex_lock(&s->lock);
        s->draining = true;
        pthread_mutex_unlock(&s->lock);
}

bool mcp_server_draining(struct mcp_server *s)
{
        pthread_mutex_lock(&s->lock);
        bool v = s->draining;
        pthread_mutex_unlock(&s->lock);
        return v;
}

const char *mcp_server_instance(const struct mcp_server *s)
{
        return s->o.instance ? s->o.instance : "";
}

static struct mcp_client *client_new(struct mcp_server *s, bool stateless)
{
        pthread_mutex_lock(&s->lock);
        struct mcp_client *c = NULL;
        struct mcp_client **grown = NULL;
        if ((!stateless && s->n_clients - s->n_stateless >= s->o.max_clients) || s->stopping)
                goto out;
        grown = realloc(s->clients, (s->n_clients + 1) * sizeof(*grown));
        if (!grown)
                goto out;
        s->clients = grown;
        c = calloc(1, sizeof(*c));
        if (!c)
                goto out;
        c->server = s;
        c->refs = 1;
        c->stateless = stateless;
        s->n_stateless += stateless;
        c->log_level = -1;
        pthread_mutex_init(&c->lock, NULL);
        /* A prefix the client cannot choose or change: no name it sends reaches another
         * client's sessions. */
        snprintf(c->prefix, sizeof(c->prefix), "m%llu-", ++s->next_client);
        s->clients[s->n_clients++] = c;
out:
        pthread_mutex_unlock(&s->lock);
        return c;
}

struct mcp_client *mcp_client_new(struct mcp_server *s)
{
        return client_new(s, false);
}

struct mcp_client *mcp_client_new_stateless(struct mcp_server *s, bool anonymous)
{
        struct mcp_client *c = client_new(s, true);
        if (c)
                c->anonymous = anonymous;
        return c;
}

struct mcp_client *mcp_client_ref(struct mcp_client *c)
{
        pthread_mutex_lock(&c->lock);
        c->refs++;
        pthread_mutex_unlock(&c->lock);
        return c;
}

void mcp_client_unref(struct mcp_client *c)
{
        if (!c)
                return;
        pthread_mutex_lock(&c->lock);
        bool last = --c->refs == 0;
        pthread_mutex_unlock(&c->lock);
        if (!last)
                return;
        mcp_client_end(c);
        struct mcp_server *s = c->server;
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n_clients; i++)
                if (s->clients[i] == c) {
                        s->clients[i] = s->clients[--s->n_clients];
                        s->n_stateless -= c->stateless;
                        break;
                }
        pthread_mutex_unlock(&s->lock);
        pthread_mutex_destroy(&c->lock);
        for (size_t i = 0; i < c->n_evicted; i++)
                free(c->evicted[i]);
        free(c->evicted);
        for (size_t i = 0; i < c->n_handles; i++)
                free(c->handles[i]);
        free(c->handles);
        free(c);
}

void mcp_client_end(struct mcp_client *c)
{
        pthread_mutex_lock(&c->lock);
        bool was = c->ended;
        c->ended = true;
        pthread_mutex_unlock(&c->lock);
        if (was)
                return;
        cancel_all(c);
        /* Its code sessions: closing one waits for an eval in progress (cancelled above). */
        codecell_cellset *cells = c->server->cells;
        size_t prefix_len = strlen(c->prefix);
        for (size_t i = 0; i < codecell_cellset_size(cells); i++) {
                codecell_cell *cell = codecell_cellset_cell(cells, i);
                char **names = codecell_session_list(cell);
                for (size_t k = 0; names && names[k]; k++) {
                        if (strncmp(names[k], c->prefix, prefix_len) == 0)
                                (void)codecell_session_close(cell, names[k], NULL);
                        free(names[k]);
                }
                free(names);
        }
}

bool mcp_client_busy(struct mcp_client *c)
{
        pthread_mutex_lock(&c->lock);
        bool v = c->refs > 1;
        pthread_mutex_unlock(&c->lock);
        return v;
}

bool mcp_client_wants_logs(struct mcp_client *c)
{
        pthread_mutex_lock(&c->lock);
        bool v = c->log_level >= 0;
        pthread_mutex_unlock(&c->lock);
        return v;
}

void mcp_log(struct mcp_client *c, const struct mcp_call *call, struct mcp_sink *sink,
             enum mcp_log_level level, const char *fmt, ...)
{
        pthread_mutex_lock(&c->lock);
        int threshold = c->log_level >= 0 ? c->log_level : DEFAULT_LOG_LEVEL;
        pthread_mutex_unlock(&c->lock);
        /* 2026-07-28: only a request that named a level in its _meta hears anything. */
        if (call->modern)
                threshold = call->log_level >= 0 ? call->log_level : LOG_EMERGENCY + 1;
        if ((int)level < threshold)
                return;
        char text[1024];
        va_list ap;
        va_start(ap, fmt);
        jsonrpc_vformat(text, sizeof(text), fmt, ap);
        va_end(ap);
        (void)mcp_notify(
                sink, jsonrpc_notification("notifications/message",
                                           json_pack("{s:s, s:s, s:s}", "level", log_levels[level],
                                                     "logger", "codecell", "data", text)));
}

static int send_message(struct mcp_sink *sink, json_t *message, bool answer)
{
        char *text = jsonrpc_text(message);
        json_decref(message); /* before the text goes out: a large answer is not held twice */
        if (!text)
                return -1;
        return sink->send(sink, text, answer);
}

int mcp_answer(struct mcp_sink *sink, json_t *message)
{
        return send_message(sink, message, true);
}

int mcp_notify(struct mcp_sink *sink, json_t *message)
{
        return send_message(sink, message, false);
}

/* Stands between a request's handler and the transport: it counts the answer, so that a
 * request whose answer could not be built still gets one, and no request gets two. */
struct answer_guard {
        struct mcp_sink sink;
        struct mcp_sink *out;
        bool answered; /* only the handler's thread sends the answer */
};

static int guard_send(struct mcp_sink *sink, char *text, bool answer)
{
        struct answer_guard *g = (struct answer_guard *)sink;
        if (answer && g->answered) {
                free(text);
                return -1;
        }
        int r = g->out->send(g->out, text, answer);
        if (answer && r == 0)
                g->answered = true;
        return r;
}

/* The answer of last resort: an error that holds nothing but the id. */
static void answer_failure(struct mcp_sink *sink, const json_t *id)
{
        if (mcp_answer(sink, jsonrpc_error(id, JSONRPC_INTERNAL_ERROR,
                                           "internal error: the answer to this request could not "
                                           "be built")) == 0)
                return;
        /* Out of memory: a fixed text, when the id can be written without help. */
        char line[160];
        if (!json_is_integer(id))
                return;
        snprintf(line, sizeof(line),
                 "{\"jsonrpc\":\"2.0\",\"id\":%" JSON_INTEGER_FORMAT
                 ",\"error\":{\"code\":%d,\"message\":\"out of memory\"}}",
                 json_integer_value(id), JSONRPC_INTERNAL_ERROR);
        char *text = strdup(line);
        if (text)
                (void)sink->send(sink, text, true);
}

static const char instructions[] =
        "Each tool runs the code you pass in a fresh, isolated sandbox (no network, read-only "
        "host folders unless a folder is marked read-write) and returns a JSON result: status "
        "ok with the value of the last expression, or error, timeout, fuel_exhausted, "
        "memory_limit, sandbox_error with what to change. Pass \"session\" to keep variables "
        "between calls (a name you choose; in MCP 2026-07-28 \"new\", then the handle the result "
        "gives); a sessions tool, when offered, lists and closes them.";

static json_t *initialize(const json_t *params)
{
        const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
        /* A revision we speak is echoed; for any other we offer our newest, and the client
         * decides whether it can go on. */
        const char *agreed = mcp_protocol_supported(asked) ? asked : LATEST_PROTOCOL;
        return json_pack("{s:s, s:{s:{s:b}, s:{}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion",
                         agreed, "capabilities", "tools", "listChanged", 0, "logging", "serverInfo",
                         "name", "codecell", "title", "codecell sandboxes", "version",
                         CODECELL_VERSION, "instructions", instructions);
}

/* The level named, or -1. */
static int level_named(const char *level)
{
        for (int l = 0; level && l <= LOG_EMERGENCY; l++)
                if (strcmp(level, log_levels[l]) == 0)
                        return l;
        return -1;
}

static json_t *set_level(struct mcp_client *c, const json_t *id, const json_t *params)
{
        int l = level_named(json_string_value(json_object_get(params, "level")));
        if (l >= 0) {
                pthread_mutex_lock(&c->lock);
                c->log_level = l;
                pthread_mutex_unlock(&c->lock);
                return jsonrpc_result(id, json_object());
        }
        return jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
                             "params.level must be one of debug, info, notice, warning, error, "
                             "critical, alert, emergency");
}

void mcp_cancel_answering(struct mcp_client *c, const struct mcp_sink *sink)
{
        pthread_mutex_lock(&c->lock);
        for (struct inflight *f = c->inflight; f; f = f->next)
                if (sink && f->origin == sink)
                        codecell_cancel_trigger(f->cancel);
        pthread_mutex_unlock(&c->lock);
}

static void cancelled(struct mcp_client *c, const json_t *params)
{
        const json_t *id = json_object_get(params, "requestId");
        if (!id)
                return;
        pthread_mutex_lock(&c->lock);
        for (struct inflight *f = c->inflight; f; f = f->next)
                if (json_equal(f->id, id))
                        codecell_cancel_trigger(f->cancel);
        pthread_mutex_unlock(&c->lock);
}

#define SERVER_INFO_JSON                                                                           \
        "{\"name\":\"codecell\",\"title\":\"codecell sandboxes\",\"version\":\"" CODECELL_VERSION  \
        "\"}"

const char *mcp_result_fields(const struct mcp_call *call)
{
        return call && call->modern ? ",\"resultType\":\"complete\",\"_meta\":{"
                                      "\"io.modelcontextprotocol/serverInfo\":" SERVER_INFO_JSON "}"
                                    : "";
}

json_t *mcp_result(const struct mcp_call *call, const json_t *id, json_t *result)
{
        if (result && call && call->modern) {
                /* Every 2026-07-28 result says what it is, and who answered. */
                json_t *meta = json_object_get(result, "_meta");
                if (!meta)
                        json_object_set_new(result, "_meta", meta = json_object());
                json_object_set_new(result, "resultType", json_string("complete"));
                json_object_set_new(meta, "io.modelcontextprotocol/serverInfo",
                                    json_loads(SERVER_INFO_JSON, 0, NULL));
        }
        return jsonrpc_result(id, result);
}

json_t *mcp_tool_error(const struct mcp_call *call, const json_t *id, const char *fmt, ...)
{
        char text[1024];
        va_list ap;
        va_start(ap, fmt);
        jsonrpc_vformat(text, sizeof(text), fmt, ap);
        va_end(ap);
        /* What the client sent is quoted cut on a character boundary, so the text is valid
         * UTF-8 and the result can be built. */
        return mcp_result(call, id,
                          json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
                                    text, "isError", 1));
}

/* The versions a client may ask for: 2026-07-28 per request, the others by initialize. */
static json_t *supported_versions(void)
{
        json_t *list = json_pack("[s]", MCP_MODERN_PROTOCOL);
        for (size_t i = 0; list && protocol_versions[i]; i++)
                json_array_append_new(list, json_string(protocol_versions[i]));
        return list;
}

/* What is wrong with a 2026-07-28 request's _meta, as its error, or NULL; sets the request's
 * log level. */
static json_t *modern_problem(const json_t *id, const json_t *params, struct mcp_call *call)
{
        const json_t *meta = json_object_get(params, "_meta");
        const json_t *version = json_object_get(meta, MCP_META_VERSION);
        const json_t *level = json_object_get(meta, "io.modelcontextprotocol/logLevel");
        if (!json_is_string(version))
                return jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
                                     "params._meta[\"" MCP_META_VERSION "\"] must be a string");
        if (strcmp(json_string_value(version), MCP_MODERN_PROTOCOL) != 0) {
                json_t *e = jsonrpc_error(
                        id, UNSUPPORTED_PROTOCOL_VERSION,
                        "Unsupported protocol version \"%.*s\" (this server "
                        "speaks " MCP_MODERN_PROTOCOL " per request, and " LATEST_PROTOCOL
                        ", 2025-06-18, 2025-03-26 after "
                        "initialize)",
                        utf8_prefix(json_string_value(version), 40), json_string_value(version));
                json_object_set_new(json_object_get(e, "error"), "data",
                                    json_pack("{s:o, s:O}", "supported", supported_versions(),
                                              "requested", version));
                return e;
        }
        if (!json_is_object(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities")))
                return jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
                                     "params._meta[\"io.modelcontextprotocol/clientCapabilities\"] "
                                     "must be an object (2026-07-28 requests carry it every time)");
        call->log_level = level ? level_named(json_string_value(level)) : -1;
        if (level && call->log_level < 0)
                return jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
                                     "params._meta[\"io.modelcontextprotocol/logLevel\"] must be "
                                     "one of debug, info, notice, warning, error, critical, "
                                     "alert, emergency");
        return NULL;
}

static json_t *discover(const struct mcp_call *call, const json_t *id)
{
        return mcp_result(call, id,
                          json_pack("{s:o, s:{s:{s:b}, s:{}}, s:s, s:i, s:s}", "supportedVersions",
                                    supported_versions(), "capabilities", "tools", "listChanged", 0,
                                    "logging", "instructions", instructions, "ttlMs", LIST_TTL_MS,
                                    "cacheScope", "public"));
}

/* tools/call: a cell, or the companion tool of sessions. */
static bool call_tool(struct mcp_server *s, struct mcp_client *c, const struct mcp_call *call,
                      const json_t *id, const json_t *params, struct mcp_sink *sink)
{
        const char *name = json_string_value(json_object_get(params, "name"));
        const json_t *args = json_object_get(params, "arguments");
        if (!name || (args && !json_is_object(args))) {
                /* Not a CallToolRequest at all: a protocol error, not one for the model. */
                mcp_answer(sink, jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
                                               "params.name must be a string and "
                                               "params.arguments an object"));
                return true;
        }
        if (s->sessions_tool[0] && strcmp(name, s->sessions_tool) == 0) {
                mcp_sessions_call(s, c, call, id, args, sink);
                return true;
        }
        return mcp_tools_call(s, c, call, id, params, sink);
}

static void handle_modern(struct mcp_server *s, struct mcp_client *c, const json_t *msg,
                          struct mcp_sink *sink, const struct mcp_sink *origin, bool *ret_silent)
{
        const char *method = json_string_value(json_object_get(msg, "method"));
        const json_t *params = json_object_get(msg, "params");
        const json_t *id = json_object_get(msg, "id");
        struct mcp_call call = {.modern = true, .log_level = -1, .origin = origin};
        json_t *problem = modern_problem(id, params, &call);
        if (problem)
                mcp_answer(sink, problem);
        else if (strcmp(method, "server/discover") == 0)
                mcp_answer(sink, discover(&call, id));
        else if (strcmp(method, "tools/list") == 0)
                mcp_answer(sink,
                           mcp_result(&call, id,
                                      json_pack("{s:O, s:i, s:s}", "tools", s->tools_modern,
                                                "ttlMs", LIST_TTL_MS, "cacheScope", "public")));
        else if (strcmp(method, "tools/call") == 0)
                *ret_silent = !call_tool(s, c, &call, id, params, sink);
        else
                mcp_answer(sink, jsonrpc_error(id, JSONRPC_METHOD_NOT_FOUND,
                                               "method \"%.*s\" not found (" MCP_MODERN_PROTOCOL
                                               " requests may call server/discover, tools/list, "
                                               "tools/call)",
                                               utf8_prefix(method, 100), method));
}

static void handle_request(struct mcp_server *s, struct mcp_client *c, const json_t *msg,
                           struct mcp_sink *sink, const struct mcp_sink *origin, bool *ret_silent)
{
        const char *method = json_string_value(json_object_get(msg, "method"));
        const json_t *params = json_object_get(msg, "params");
        const json_t *id = json_object_get(msg, "id");
        static const struct mcp_call legacy = {.modern = false, .log_level = -1};
        if (mcp_message_modern(msg)) {
                handle_modern(s, c, msg, sink, origin, ret_silent);
        } else if (strcmp(method, "initialize") == 0) {
                if (!json_is_string(json_object_get(params, "protocolVersion")))
                        mcp_answer(sink, jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
                                                       "params.protocolVersion must be a string"));
                else
                        mcp_answer(sink, jsonrpc_result(id, initialize(params)));
        } else if (strcmp(method, "ping") == 0) {
                mcp_answer(sink, jsonrpc_result(id, json_object()));
        } else if (strcmp(method, "tools/list") == 0) {
                mcp_answer(sink, jsonrpc_result(id, json_pack("{s:O}", "tools", s->tools)));
        } else if (strcmp(method, "tools/call") == 0) {
                *ret_silent = !call_tool(s, c, &legacy, id, params, sink);
        } else if (strcmp(method, "logging/setLevel") == 0) {
                mcp_answer(sink, set_level(c, id, params));
        } else {
                mcp_answer(sink,
                           jsonrpc_error(id, JSONRPC_METHOD_NOT_FOUND,
                                         "method \"%.*s\" not found (this server offers "
                                         "initialize, ping, tools/list, tools/call, "
                                         "logging/setLevel; and, with "
                                         "_meta[\"" MCP_META_VERSION "\"] = \"" MCP_MODERN_PROTOCOL
                                         "\", server/discover)",
                                         utf8_prefix(method, 100), method));
        }
}

void mcp_handle(struct mcp_server *s, struct mcp_client *c, const json_t *msg,
                enum jsonrpc_kind kind, struct mcp_sink *sink)
{
        if (kind == JSONRPC_RESPONSE)
                return; /* we never ask the client anything */
        const char *method = json_string_value(json_object_get(msg, "method"));
        const json_t *params = json_object_get(msg, "params");
        const json_t *id = json_object_get(msg, "id");
        if (kind == JSONRPC_NOTIFICATION) {
                if (strcmp(method, "notifications/cancelled") == 0)
                        cancelled(c, params);
                /* notifications/initialized and the rest need nothing from us. */
                return;
        }
        struct answer_guard guard = {.sink.send = guard_send, .out = sink};
        bool silent = false;
        handle_request(s, c, msg, &guard.sink, sink, &silent);
        if (!guard.answered && !silent)
                answer_failure(sink, id);
}

void mcp_handle_text(struct mcp_server *s, struct mcp_client *c, const char *text, size_t len,
                     struct mcp_sink *sink)
{
        enum jsonrpc_kind kind;
        json_t *error = NULL;
        json_t *msg = jsonrpc_parse(text, len, &kind, &error);
        if (!msg) {
                mcp_answer(sink, error);
                return;
        }
        mcp_handle(s, c, msg, kind, sink);
        json_decref(msg);
}

char *mcp_server_metrics(struct mcp_server *s)
{
        pthread_mutex_lock(&s->lock);
        size_t clients = s->n_clients - s->n_stateless, runs = s->runs;
        bool draining = s->draining;
        pthread_mutex_unlock(&s->lock);
        char *text = metrics_render(s->metrics, s->cells, clients, runs);
        char *all = NULL;
        /* Which instance this is, and whether it drains: what a dashboard of several needs. */
        if (text && asprintf(&all,
                             "%s# HELP codecell_instance_info The instance name (--instance).\n"
                             "# TYPE codecell_instance_info gauge\n"
                             "codecell_instance_info{instance=\"%s\"} 1\n"
                             "# HELP codecell_draining 1 while the server drains (SIGTERM).\n"
                             "# TYPE codecell_draining gauge\n"
                             "codecell_draining %d\n",
                             text, mcp_server_instance(s), draining) < 0)
                all = NULL;
        free(text);
        return all;
}

bool mcp_tool_mirrors_session(struct mcp_server *s, const char *tool)
{
        if (s->sessions_tool[0] && strcmp(tool, s->sessions_tool) == 0)
                return true;
        int i = codecell_cellset_find(s->cells, tool);
        return i >= 0 && codecell_cellset_sessions(s->cells, (size_t)i);
}

json_t *mcp_server_tools(struct mcp_server *s)
{
        return s->tools;
}
