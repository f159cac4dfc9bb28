/* The MCP methods, above the server's state (server.c) and the tools (cell_tools.c,
 * sessions.c): which revision a message speaks, the table of methods (methods.h) with their
 * handlers (initialize and server/discover, ping, logging/setLevel, tools/list, tools/call
 * routed to a cell or to the sessions tool, notifications/cancelled), and the guard that gives
 * every request exactly one answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "approvals.h"
#include "asks.h"
#include "methods.h"
#include "server.h"
#include "file_links.h"

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
        mcp_approvals_install(s);
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
        /* resources: the output files too large to embed are read back as resources. */
        return json_pack("{s:s, s:{s:{s:b}, s:{}, s:{}}, s:{s:s, s:s, s:s}, s:s}",
                         "protocolVersion", agreed, "capabilities", "tools", "listChanged", 0,
                         "logging", "resources", "serverInfo", "name", "codecell", "title",
                         "codecell sandboxes", "version", CODECELL_VERSION, "instructions",
                         instructions);
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
                          json_pack("{s:o, s:{s:{s:b}, s:{}, s:{}}, s:s, s:i, s:s}",
                                    "supportedVersions", supported_versions(), "capabilities",
                                    "tools", "listChanged", 0, "logging", "resources",
                                    "instructions", instructions, "ttlMs", LIST_TTL_MS,
                                    "cacheScope", "public"));
}

/* One message as its handler gets it. */
struct mcp_request {
        struct mcp_server *server;
        struct mcp_client *client;
        const struct mcp_call *call; /* NULL for a notification */
        const json_t *id;            /* NULL for a notification */
        const json_t *params;
        struct mcp_sink *sink; /* the request's answer guard; NULL for a notification */
};

static bool do_initialize(const struct mcp_request *r)
{
        if (!json_is_string(json_object_get(r->params, "protocolVersion")))
                mcp_answer(r->sink, jsonrpc_error(r->id, JSONRPC_INVALID_PARAMS,
                                                  "params.protocolVersion must be a string"));
        else {
                mcp_client_note_capabilities(r->client, r->params);
                mcp_answer(r->sink, jsonrpc_result(r->id, initialize(r->params)));
        }
        return true;
}

static bool do_discover(const struct mcp_request *r)
{
        mcp_answer(r->sink, discover(r->call, r->id));
        return true;
}

static bool do_ping(const struct mcp_request *r)
{
        mcp_answer(r->sink, jsonrpc_result(r->id, json_object()));
        return true;
}

static bool do_list_tools(const struct mcp_request *r)
{
        struct mcp_server *s = r->server;
        if (r->call->modern)
                mcp_answer(r->sink,
                           mcp_result(r->call, r->id,
                                      json_pack("{s:O, s:i, s:s}", "tools", s->tools_modern,
                                                "ttlMs", LIST_TTL_MS, "cacheScope", "public")));
        else
                mcp_answer(r->sink, jsonrpc_result(r->id, json_pack("{s:O}", "tools", s->tools)));
        return true;
}

/* tools/call: a cell, or the companion tool of sessions. */
static bool do_call_tool(const struct mcp_request *r)
{
        const char *name = json_string_value(json_object_get(r->params, "name"));
        const json_t *args = json_object_get(r->params, "arguments");
        if (!name || (args && !json_is_object(args))) {
                /* Not a CallToolRequest at all: a protocol error, not one for the model. */
                mcp_answer(r->sink, jsonrpc_error(r->id, JSONRPC_INVALID_PARAMS,
                                                  "params.name must be a string and "
                                                  "params.arguments an object"));
                return true;
        }
        if (r->server->sessions_tool[0] && strcmp(name, r->server->sessions_tool) == 0) {
                mcp_sessions_call(r->server, r->client, r->call, r->id, args, r->sink);
                return true;
        }
        return mcp_tools_call(r->server, r->client, r->call, r->id, r->params, r->sink);
}

/* resources/list: no resource is listed. The links of output files are given only in the tool
 * result they belong to, to the client that made the call; 2026-07-28 requires the list not to
 * vary by connection, and a list of them would be the one place a link could leak to. */
static bool do_list_resources(const struct mcp_request *r)
{
        if (r->call->modern)
                mcp_answer(r->sink, mcp_result(r->call, r->id,
                                               json_pack("{s:[], s:i, s:s}", "resources", "ttlMs",
                                                         LIST_TTL_MS, "cacheScope", "public")));
        else
                mcp_answer(r->sink, jsonrpc_result(r->id, json_pack("{s:[]}", "resources")));
        return true;
}

/* resources/read: a link to an output file, only for the client it was given to, until it
 * expires. Any other URI, another client's link and an expired one read alike: not found
 * (-32602 in 2026-07-28, -32002 before it). */
static bool do_read_resource(const struct mcp_request *r)
{
        const json_t *uri = json_object_get(r->params, "uri");
        if (!json_is_string(uri)) {
                mcp_answer(r->sink, jsonrpc_error(r->id, JSONRPC_INVALID_PARAMS,
                                                  "params.uri must be a string"));
                return true;
        }
        json_t *found =
                file_links_read(r->server->links, r->client->prefix, json_string_value(uri));
        if (found) {
                /* 2026-07-28 caches a read: this one is the caller's alone, and not for
                 * longer than the link lives. */
                if (r->call->modern) {
                        json_object_set_new(found, "ttlMs", json_integer(0));
                        json_object_set_new(found, "cacheScope", json_string("private"));
                }
                mcp_answer(r->sink, r->call->modern ? mcp_result(r->call, r->id, found)
                                                    : jsonrpc_result(r->id, found));
                return true;
        }
        json_t *e = jsonrpc_error(r->id, r->call->modern ? JSONRPC_INVALID_PARAMS : -32002,
                                  "Resource not found");
        json_object_set_new(json_object_get(e, "error"), "data", json_pack("{s:O}", "uri", uri));
        mcp_answer(r->sink, e);
        return true;
}

static bool do_set_level(const struct mcp_request *r)
{
        mcp_answer(r->sink, set_level(r->client, r->id, r->params));
        return true;
}

static bool do_cancelled(const struct mcp_request *r)
{
        const json_t *request_id = json_object_get(r->params, "requestId");
        if (request_id)
                mcp_cancel_request(r->client, request_id);
        return true;
}

#define BOTH_ERAS (MCP_ERA_LEGACY | MCP_ERA_MODERN)

/* The order of the requests is the order "method not found" names them in. */
const struct mcp_method mcp_methods[] = {
        {.name = "initialize",
         .eras = MCP_ERA_LEGACY,
         .handle = do_initialize,
         .opens_session = true,
         .refused_while_draining = true},
        {.name = "server/discover", .eras = MCP_ERA_MODERN, .handle = do_discover},
        {.name = "ping", .eras = MCP_ERA_LEGACY, .handle = do_ping},
        {.name = "tools/list", .eras = BOTH_ERAS, .handle = do_list_tools},
        {.name = "tools/call",
         .eras = BOTH_ERAS,
         .handle = do_call_tool,
         .long_running = true,
         .refused_while_draining = true,
         .name_param = "name",
         .param_headers = true},
        {.name = "resources/list", .eras = BOTH_ERAS, .handle = do_list_resources},
        {.name = "resources/read",
         .eras = BOTH_ERAS,
         .handle = do_read_resource,
         .name_param = "uri"},
        {.name = "logging/setLevel", .eras = MCP_ERA_LEGACY, .handle = do_set_level},
        /* Nothing to do once initialize is answered. */
        {.name = "notifications/initialized", .eras = MCP_ERA_LEGACY, .notification = true},
        {.name = "notifications/cancelled",
         .eras = BOTH_ERAS,
         .notification = true,
         .handle = do_cancelled},
        /* Not offered, but of 2026-07-28's Mcp-Name header: a request for one is held to the
         * header before it is found missing, as a proxy in front routes on it. */
        {.name = "prompts/get", .name_param = "name"},
        {.name = NULL},
};

const struct mcp_method *mcp_method_find(const char *name)
{
        for (const struct mcp_method *m = mcp_methods; name && m->name; m++)
                if (strcmp(m->name, name) == 0)
                        return m;
        return NULL;
}

bool mcp_method_offered(const struct mcp_method *m, enum mcp_era era)
{
        return m && (m->eras & era);
}

/* The names of the requests offered in the eras `in` and in none of `not_in`, as "a, b, c". */
static void requests_offered(char *buf, size_t size, unsigned in, unsigned not_in)
{
        size_t at = 0;
        buf[0] = '\0';
        for (const struct mcp_method *m = mcp_methods; m->name && at < size; m++)
                if (!m->notification && (m->eras & in) && !(m->eras & not_in))
                        at += (size_t)snprintf(buf + at, size - at, "%s%s", at ? ", " : "",
                                               m->name);
}

/* "Method not found", with the requests the client may send in its era instead. */
static json_t *method_not_found(const json_t *id, const char *method, enum mcp_era era)
{
        char offered[256], modern_only[256];
        if (era == MCP_ERA_MODERN) {
                requests_offered(offered, sizeof(offered), MCP_ERA_MODERN, 0);
                return jsonrpc_error(id, JSONRPC_METHOD_NOT_FOUND,
                                     "method \"%.*s\" not found (" MCP_MODERN_PROTOCOL
                                     " requests may call %s)",
                                     utf8_prefix(method, 100), method, offered);
        }
        requests_offered(offered, sizeof(offered), MCP_ERA_LEGACY, 0);
        requests_offered(modern_only, sizeof(modern_only), MCP_ERA_MODERN, MCP_ERA_LEGACY);
        return jsonrpc_error(id, JSONRPC_METHOD_NOT_FOUND,
                             "method \"%.*s\" not found (this server offers %s%s%s)",
                             utf8_prefix(method, 100), method, offered,
                             modern_only[0] ? "; and, with _meta[\"" MCP_META_VERSION
                                              "\"] = \"" MCP_MODERN_PROTOCOL "\", "
                                            : "",
                             modern_only);
}

/* A request: in 2026-07-28 its _meta is checked first, then its method is looked up in its
 * era. Sets *ret_silent when it was cancelled (no answer). */
static void handle_request(struct mcp_server *s, struct mcp_client *c, const json_t *msg,
                           struct mcp_sink *sink, const struct mcp_sink *origin, bool *ret_silent)
{
        static const struct mcp_call legacy = {.modern = false, .log_level = -1};
        struct mcp_call modern = {.modern = true, .log_level = -1, .origin = origin};
        enum mcp_era era = mcp_message_modern(msg) ? MCP_ERA_MODERN : MCP_ERA_LEGACY;
        struct mcp_request r = {.server = s,
                                .client = c,
                                .call = era == MCP_ERA_MODERN ? &modern : &legacy,
                                .id = json_object_get(msg, "id"),
                                .params = json_object_get(msg, "params"),
                                .sink = sink};
        const char *method = json_string_value(json_object_get(msg, "method"));
        if (era == MCP_ERA_MODERN) {
                json_t *problem = modern_problem(r.id, r.params, &modern);
                if (problem) {
                        mcp_answer(sink, problem);
                        return;
                }
        }
        const struct mcp_method *m = mcp_method_find(method);
        if (!mcp_method_offered(m, era) || m->notification || !m->handle)
                mcp_answer(sink, method_not_found(r.id, method, era));
        else
                *ret_silent = !m->handle(&r);
}

/* A notification: handled when its method is offered in its client's era, else dropped (a
 * notification is never answered, not even to say it is unknown). */
static void handle_notification(struct mcp_server *s, struct mcp_client *c, const json_t *msg)
{
        const struct mcp_method *m =
                mcp_method_find(json_string_value(json_object_get(msg, "method")));
        enum mcp_era era = c->stateless ? MCP_ERA_MODERN : MCP_ERA_LEGACY;
        struct mcp_request r = {.server = s, .client = c, .params = json_object_get(msg, "params")};
        if (mcp_method_offered(m, era) && m->notification && m->handle)
                (void)m->handle(&r);
}

void mcp_handle(struct mcp_server *s, struct mcp_client *c, const json_t *msg,
                enum jsonrpc_kind kind, struct mcp_sink *sink)
{
        if (kind == JSONRPC_RESPONSE) {
                mcp_client_take_answer(c, msg); /* to the approval that asked (asks.c) */
                return;
        }
        if (kind == JSONRPC_NOTIFICATION) {
                handle_notification(s, c, msg);
                return;
        }
        struct answer_guard guard = {.sink.send = guard_send, .out = sink};
        bool silent = false;
        handle_request(s, c, msg, &guard.sink, sink, &silent);
        if (!guard.answered && !silent)
                answer_failure(sink, json_object_get(msg, "id"));
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
