/* The MCP methods, above the server's state (server.c) and the tools (cell_tools.c,
 * sessions.c): which revision a message speaks, initialize and server/discover, ping,
 * logging/setLevel, tools/list and tools/call routed to a cell or to the sessions tool, and
 * the guard that gives every request exactly one answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "server.h"

#define LATEST_PROTOCOL "2025-11-25"

static const char *const protocol_versions[] = {LATEST_PROTOCOL, "2025-06-18", "2025-03-26", NULL};

/* Errors of 2026-07-28 (basic/index.mdx, Error Codes). */
#define UNSUPPORTED_PROTOCOL_VERSION (-32022)
/* How long a client may keep tools/list and server/discover: the cells are fixed for the
 * server's life (a new configuration is a new process). */
#define LIST_TTL_MS 3600000

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

/* The server's state (server.c), then the tools/list of each era, built once: the cells are
 * fixed for the server's life. */
struct mcp_server *mcp_server_new(codecell_cellset *cells, const struct mcp_server_options *o)
{
        struct mcp_server *s = mcp_server_alloc(cells, o);
        if (!s)
                return NULL;
        s->tools = mcp_tools_build(s, false);
        s->tools_modern = s->tools ? mcp_tools_build(s, true) : NULL;
        if (!s->tools_modern) {
                mcp_server_free(s);
                return NULL;
        }
        return s;
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

static json_t *set_level(struct mcp_client *c, const json_t *id, const json_t *params)
{
        int l = mcp_log_level_named(json_string_value(json_object_get(params, "level")));
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
        call->log_level = level ? mcp_log_level_named(json_string_value(level)) : -1;
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
                if (strcmp(method, "notifications/cancelled") == 0 &&
                    json_object_get(params, "requestId"))
                        mcp_cancel_request(c, json_object_get(params, "requestId"));
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
