/* The MCP server's state, below everything that answers a request: the server and its
 * clients (lifecycle, references, stopping and draining), cancellation, log messages, the shapes
 * of answers that every method and tool uses, and /metrics. The tools are in cell_tools.c and
 * sessions.c, the methods in dispatch.c, above both. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "server.h"
#include "file_links.h"

#define DEFAULT_MAX_RUNS 16
#define DEFAULT_MAX_CLIENTS 1024

static const char *const log_levels[] = {
        [LOG_DEBUG] = "debug",     [LOG_INFO] = "info",           [LOG_NOTICE] = "notice",
        [LOG_WARNING] = "warning", [LOG_ERROR] = "error",         [LOG_CRITICAL] = "critical",
        [LOG_ALERT] = "alert",     [LOG_EMERGENCY] = "emergency",
};

/* Until a client sets a level, it hears only of trouble. */
#define DEFAULT_LOG_LEVEL LOG_WARNING

struct mcp_server *mcp_server_alloc(codecell_cellset *cells, const struct mcp_server_options *o)
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
        if (!s->o.file_inline_bytes)
                s->o.file_inline_bytes = 256 * 1024;
        if (!s->o.file_link_ms)
                s->o.file_link_ms = 600000;
        if (!s->o.file_links_bytes)
                s->o.file_links_bytes = 64u << 20;
        pthread_mutex_init(&s->lock, NULL);
        s->metrics = metrics_new(codecell_cellset_size(cells));
        s->links = file_links_new(s->o.file_link_ms, s->o.file_links_bytes);
        if (!s->metrics || !s->links) {
                mcp_server_free(s);
                return NULL;
        }
        for (size_t i = 0; i < codecell_cellset_size(cells) && !s->sessions_tool[0]; i++)
                if (codecell_cellset_sessions(cells, i))
                        /* Named apart from the cells: a cell may be called "sessions". */
                        snprintf(s->sessions_tool, sizeof(s->sessions_tool), "%s",
                                 codecell_cellset_find(cells, "sessions") < 0
                                         ? "sessions"
                                         : "codecell_sessions");
        return s;
}

void mcp_server_free(struct mcp_server *s)
{
        if (!s)
                return;
        json_decref(s->tools);
        json_decref(s->tools_modern);
        metrics_free(s->metrics);
        file_links_free(s->links);
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
        pthread_cond_init(&c->answered, NULL);
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
        pthread_cond_destroy(&c->answered);
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
        pthread_cond_broadcast(&c->answered); /* what we asked it will not be answered */
        pthread_mutex_unlock(&c->lock);
        if (was)
                return;
        cancel_all(c);
        /* Its links: a file handed to this client is for it alone. */
        file_links_drop_owner(c->server->links, c->prefix);
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

int mcp_log_level_named(const char *level)
{
        for (int l = 0; level && l <= LOG_EMERGENCY; l++)
                if (strcmp(level, log_levels[l]) == 0)
                        return l;
        return -1;
}

void mcp_cancel_answering(struct mcp_client *c, const struct mcp_sink *sink)
{
        pthread_mutex_lock(&c->lock);
        for (struct inflight *f = c->inflight; f; f = f->next)
                if (sink && f->origin == sink)
                        codecell_cancel_trigger(f->cancel);
        pthread_mutex_unlock(&c->lock);
}

void mcp_cancel_request(struct mcp_client *c, const json_t *id)
{
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
