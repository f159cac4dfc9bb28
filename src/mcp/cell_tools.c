/* The cells as MCP tools: what tools/list shows of each, and tools/call, which runs code in a
 * cell (fresh sandbox, or the client's named session) and answers with the DESIGN §6 result. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server.h"

static json_t *result_schema(void)
{
        return json_pack(
                "{s:s, s:{s:{s:s, s:[s,s,s,s,s,s], s:s}, s:{s:s}, s:{s:[s,s], s:s}, "
                "s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s}, "
                "s:{s:s, s:{s:s}}, s:{s:s, s:{s:s}}, s:{s:s}}, s:[s,s]}",
                "type", "object", "properties", "status", "type", "string", "enum", "ok", "error",
                "timeout", "fuel_exhausted", "memory_limit", "sandbox_error", "description",
                "ok: the code finished; the others say why it did not", "value", "description",
                "status ok: the value of the last expression, as JSON", "error", "type", "object",
                "string", "description",
                "status error: {class, message, backtrace}; other statuses: what to change",
                "stdout", "type", "string", "stderr", "type", "string", "stdout_truncated", "type",
                "boolean", "stderr_truncated", "type", "boolean", "duration_ms", "type", "number",
                "description", "wall-clock time of the run", "cpu_ms", "type", "number",
                "description", "CPU time the code used", "memory_peak_bytes", "type", "integer",
                "sandbox", "type", "array", "items", "type", "string", "warnings", "type", "array",
                "items", "type", "string", "cancelled", "type", "boolean", "required", "status",
                "duration_ms");
}

static json_t *input_schema(bool sessions)
{
        json_t *schema =
                json_pack("{s:s, s:{s:{s:s, s:s, s:i}}, s:[s], s:b}", "type", "object",
                          "properties", "code", "type", "string", "description",
                          "The whole program to run. The value of its last expression is returned.",
                          "minLength", 1, "required", "code", "additionalProperties", 0);
        if (schema && sessions) {
                json_t *props = json_object_get(schema, "properties");
                json_object_set_new(
                        props, "session",
                        json_pack("{s:s, s:s, s:s, s:i, s:i}", "type", "string", "description",
                                  "Run in this persistent session instead of a fresh sandbox: "
                                  "variables, definitions and /work files stay for the next call "
                                  "with the same name.",
                                  "pattern", "^[A-Za-z0-9_.-]+$", "minLength", 1, "maxLength",
                                  MCP_SESSION_NAME_MAX));
                json_object_set_new(props, "reset",
                                    json_pack("{s:s, s:s}", "type", "boolean", "description",
                                              "With session: discard its state and start it "
                                              "afresh before running the code."));
        }
        return schema;
}

static char *tool_description(struct mcp_server *s, size_t i, const codecell_cell_info *info)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        const char *summary = codecell_cellset_summary(s->cells, i);
        if (summary && *summary)
                fprintf(f, "%s\n\n", summary);
        fputs(codecell_cell_description(codecell_cellset_cell(s->cells, i)), f);
        if (codecell_cellset_sessions(s->cells, i))
                fprintf(f,
                        "\n\n## Sessions\n\n"
                        "Pass `session` (a name you choose) to run in a persistent interpreter\n"
                        "instead: what one call defines, the next call with the same name can\n"
                        "use, and its /work stays. `reset: true` starts it afresh. A session\n"
                        "belongs to this %s only and ends with it, after\n"
                        "%llu s unused, or when a call hits a limit (the result then says the\n"
                        "state was lost). At most %llu are open at once.",
                        strcmp(s->o.transport, "http") == 0 ? "MCP session" : "MCP connection",
                        (unsigned long long)(info->limits[CODECELL_LIMIT_SESSION_IDLE_MS] / 1000),
                        (unsigned long long)info->limits[CODECELL_LIMIT_SESSIONS]);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

json_t *mcp_tools_build(struct mcp_server *s)
{
        json_t *tools = json_array();
        for (size_t i = 0; tools && i < codecell_cellset_size(s->cells); i++) {
                codecell_cell_info info;
                codecell_cell_info_get(codecell_cellset_cell(s->cells, i), &info);
                char *description = tool_description(s, i, &info);
                char title[128];
                snprintf(title, sizeof(title), "Run %s code (%s)", info.language,
                         codecell_cellset_name(s->cells, i));
                /* The truth about what a call can do: never the network; the host's files
                 * only through read-write folders; anything a host tool does. */
                bool reaches_out = info.tools > 0;
                json_t *tool = json_pack("{s:s, s:s, s:s?, s:o, s:o, s:{s:s, s:b, s:b, s:b, s:b}}",
                                         "name", codecell_cellset_name(s->cells, i), "title", title,
                                         "description", description, "inputSchema",
                                         input_schema(codecell_cellset_sessions(s->cells, i)),
                                         "outputSchema", result_schema(), "annotations", "title",
                                         title, "readOnlyHint", !info.writes_host && !reaches_out,
                                         "destructiveHint", info.writes_host || reaches_out,
                                         "idempotentHint", 0, "openWorldHint", reaches_out);
                free(description);
                if (!description || json_array_append_new(tools, tool) < 0) {
                        json_decref(tools);
                        return NULL;
                }
        }
        return tools;
}

/* notifications/progress while a run goes on, for a request that asked with a progressToken. */
struct progress_target {
        struct mcp_sink *sink;
        const json_t *token;
};

static void report_progress(uint64_t elapsed_ms, const char *line, size_t len, void *userdata)
{
        struct progress_target *t = userdata;
        char message[256];
        if (len)
                snprintf(message, sizeof(message), "%.*s", (int)len, line);
        else
                snprintf(message, sizeof(message), "running for %.1f s", (double)elapsed_ms / 1000);
        json_t *note = jsonrpc_notification("notifications/progress",
                                            json_pack("{s:O, s:f, s:s}", "progressToken", t->token,
                                                      "progress", (double)elapsed_ms / 1000.0,
                                                      "message", message));
        if (note)
                t->sink->send(t->sink, note);
        json_decref(note);
}

/* What is wrong with the arguments, written into why, or false. */
static bool bad_arguments(const json_t *args, bool sessions, char *why, size_t n)
{
        if (!json_is_object(args)) {
                snprintf(why, n, "arguments must be an object with \"code\"");
                return true;
        }
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)args, key, value)
        {
                if (strcmp(key, "code") != 0 &&
                    (!sessions || (strcmp(key, "session") != 0 && strcmp(key, "reset") != 0))) {
                        snprintf(why, n, "arguments.%.64s: unknown argument (known: code%s)", key,
                                 sessions ? ", session, reset" : "");
                        return true;
                }
        }
        const json_t *code = json_object_get(args, "code");
        const json_t *session = json_object_get(args, "session");
        const json_t *reset = json_object_get(args, "reset");
        if (!json_is_string(code) || json_string_length(code) == 0) {
                snprintf(why, n, "arguments.code: must be a non-empty string");
                return true;
        }
        if (session) {
                const char *name = json_string_value(session);
                bool ok = name && *name && strlen(name) <= MCP_SESSION_NAME_MAX;
                for (const char *p = name; ok && *p; p++)
                        ok = isalnum((unsigned char)*p) || strchr("_.-", *p);
                if (!ok) {
                        snprintf(why, n,
                                 "arguments.session: must be 1 to %d letters, digits, '_', '.' "
                                 "or '-'",
                                 MCP_SESSION_NAME_MAX);
                        return true;
                }
        }
        if (reset && !json_is_boolean(reset)) {
                snprintf(why, n, "arguments.reset: must be true or false");
                return true;
        }
        if (json_is_true(reset) && !session) {
                snprintf(why, n, "arguments.reset: needs arguments.session (the session to reset)");
                return true;
        }
        return false;
}

/* Takes a run slot, or says why not. */
static const char *take_slot(struct mcp_server *s)
{
        const char *why = NULL;
        pthread_mutex_lock(&s->lock);
        if (s->stopping)
                why = "the server is shutting down";
        else if (s->runs >= s->o.max_runs)
                why = "too many runs at once";
        else
                s->runs++;
        pthread_mutex_unlock(&s->lock);
        return why;
}

static void give_slot(struct mcp_server *s)
{
        pthread_mutex_lock(&s->lock);
        s->runs--;
        pthread_mutex_unlock(&s->lock);
}

static void track(struct mcp_client *c, struct inflight *f)
{
        pthread_mutex_lock(&c->lock);
        f->next = c->inflight;
        c->inflight = f;
        /* A client that ended (or a server that stops) while this call waited gets no run. */
        if (c->ended)
                codecell_cancel_trigger(f->cancel);
        pthread_mutex_unlock(&c->lock);
}

static void untrack(struct mcp_client *c, struct inflight *f)
{
        pthread_mutex_lock(&c->lock);
        for (struct inflight **p = &c->inflight; *p; p = &(*p)->next)
                if (*p == f) {
                        *p = f->next;
                        break;
                }
        pthread_mutex_unlock(&c->lock);
}

static json_t *call_result(const codecell_result *res)
{
        char *text = codecell_result_to_json(res, false);
        /* The text is exact; structuredContent goes through jansson, which cannot hold an
         * integer beyond 64 bits (read as a double) or one beyond a double (then left out). */
        json_t *structured = text ? json_loads(text, JSON_DECODE_INT_AS_REAL, NULL) : NULL;
        bool is_error = codecell_result_status(res) != CODECELL_STATUS_OK;
        json_t *out = !text        ? NULL
                      : structured ? json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type",
                                               "text", "text", text, "structuredContent",
                                               structured, "isError", is_error)
                                   : json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text",
                                               "text", text, "isError", is_error);
        free(text);
        return out;
}

void mcp_tools_call(struct mcp_server *s, struct mcp_client *c, const json_t *id,
                    const json_t *params, struct mcp_sink *sink)
{
        const char *name = json_string_value(json_object_get(params, "name"));
        int i = codecell_cellset_find(s->cells, name);
        if (i < 0) {
                mcp_answer(sink, jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
                                               "unknown tool \"%.64s\" (see tools/list)",
                                               name ? name : ""));
                return;
        }
        const json_t *args = json_object_get(params, "arguments");
        char why[256];
        if (bad_arguments(args, codecell_cellset_sessions(s->cells, (size_t)i), why, sizeof(why))) {
                mcp_answer(sink, jsonrpc_error(id, JSONRPC_INVALID_PARAMS, "%s", why));
                return;
        }
        const char *busy = take_slot(s);
        if (busy) {
                mcp_answer(sink, jsonrpc_error(id, JSONRPC_SERVER_BUSY,
                                               "%s (at most %zu runs at once: retry shortly)", busy,
                                               s->o.max_runs));
                return;
        }
        codecell_cell *cell = codecell_cellset_cell(s->cells, (size_t)i);
        const json_t *code = json_object_get(args, "code");
        const char *session = json_string_value(json_object_get(args, "session"));
        char scoped[96] = "";
        if (session)
                snprintf(scoped, sizeof(scoped), "%s%s", c->prefix, session);
        codecell_error err = {0};
        struct inflight f = {.id = (json_t *)id, .cancel = codecell_cancel_new(&err)};
        if (!f.cancel) {
                give_slot(s);
                mcp_answer(sink, jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "%s", err.message));
                return;
        }
        track(c, &f);
        const json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
        struct progress_target target = {.sink = sink, .token = token};
        codecell_run_options options = {.cancel = f.cancel};
        if (json_is_string(token) || json_is_integer(token)) {
                options.progress = report_progress;
                options.userdata = &target;
        }
        if (session && json_is_true(json_object_get(args, "reset")))
                (void)codecell_session_close(cell, scoped, NULL);
        codecell_result *res = NULL;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int r = session ? codecell_session_eval_with(cell, scoped, json_string_value(code),
                                                     json_string_length(code), &options, &res, &err)
                        : codecell_cell_run_with(cell, json_string_value(code),
                                                 json_string_length(code), &options, &res, &err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        untrack(c, &f);
        give_slot(s);
        bool was_cancelled = codecell_cancel_triggered(f.cancel);
        codecell_cancel_free(f.cancel);
        if (r < 0) {
                /* The cell refused the code or the session (a cap): the model can act on it. */
                mcp_answer(sink, jsonrpc_result(id, json_pack("{s:[{s:s, s:s}], s:b}", "content",
                                                              "type", "text", "text", err.message,
                                                              "isError", 1)));
                return;
        }
        codecell_status status = codecell_result_status(res);
        metrics_record(s->metrics, (size_t)i, status,
                       (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                               (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
        mcp_log(c, sink, status == CODECELL_STATUS_SANDBOX_ERROR ? LOG_WARNING : LOG_INFO,
                "%s%s%s: %s", name, session ? " session " : "", session ? session : "",
                codecell_status_name(status));
        /* A cancelled request gets no answer (the client has given up on it). */
        if (!was_cancelled)
                mcp_answer(sink, jsonrpc_result(id, call_result(res)));
        codecell_result_free(res);
}
