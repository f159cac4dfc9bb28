/* The cells as MCP tools: what tools/list shows of each, and tools/call, which runs code in a
 * cell (fresh sandbox, or the client's named session) and answers with the DESIGN §6 result. */
#include <ctype.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "cleanup.h"
#include "util.h"
#include "approvals.h"
#include "call_log.h"
#include "file_contents.h"
#include "refusals.h"
#include "run_files.h"
#include "server.h"

/* The members of codecell_result_to_model_json beyond the engine's result, for
 * result_schema. */
static int add_model_view_members(json_t *props)
{
        int bad = 0;
        bad |= json_object_set_new(
                props, "exit_status",
                json_pack("{s:s, s:s}", "type", "integer", "description", "the code called exit"));
        bad |= json_object_set_new(props, "value_truncated",
                                   json_pack("{s:s, s:s}", "type", "boolean", "description",
                                             "the value was over its share: it is a string, "
                                             "the start and end of its JSON text"));
        bad |= json_object_set_new(props, "error_truncated", json_pack("{s:s}", "type", "boolean"));
        bad |= json_object_set_new(
                props, "images",
                json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s}, s:{s:s}}}}", "type", "array",
                          "description",
                          "the pictures the run handed back, as image content beside the text",
                          "items", "type", "object", "properties", "mime_type", "type", "string",
                          "bytes", "type", "integer"));
        bad |= json_object_set_new(
                props, "state_lost",
                json_pack("{s:s, s:s}", "type", "string", "description",
                          "with a session: why what it held was lost (define again what you "
                          "need)"));
        bad |= json_object_set_new(
                props, "restored",
                json_pack("{s:[{s:s, s:{s:{s:s}, s:{s:s}}}, {s:s}], s:s}", "anyOf", "type",
                          "object", "properties", "evals", "type", "integer", "ms", "type",
                          "integer", "type", "boolean", "description",
                          "with a session: it had been parked while idle and was restored first "
                          "({evals, ms}: its earlier calls ran again), or false when that "
                          "failed (state_lost says why)"));
        bad |= json_object_set_new(
                props, "not_restorable",
                json_pack("{s:s, s:s}", "type", "string", "description",
                          "with a session: it holds too much to be restored once idle"));
        bad |= json_object_set_new(
                props, "idle_interrupts",
                json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s}, s:{s:s}}}}", "type", "array",
                          "description",
                          "with a session: what your threads raised into its main thread or "
                          "signalled between calls; ignored, the state was kept",
                          "items", "type", "object", "properties", "class", "type", "string",
                          "message", "type", "string"));
        bad |= json_object_set_new(props, "images_omitted",
                                   json_pack("{s:s, s:{s:{s:s}, s:{s:s}}}", "type", "object",
                                             "properties", "count", "type", "integer", "reason",
                                             "type", "string"));
        bad |= json_object_set_new(
                props, "display",
                json_pack("{s:s, s:s}", "type", "object", "description",
                          "the last value's rich forms: markdown and html as {chars} (their text "
                          "is content beside this one), json as the value's own JSON, svg and "
                          "png as {bytes} (image content beside)"));
        bad |= json_object_set_new(props, "display_truncated",
                                   json_pack("{s:s, s:s}", "type", "boolean", "description",
                                             "a rich form was cut or left out for the budget"));
        bad |= json_object_set_new(
                props, "display_notes",
                json_pack("{s:s, s:s, s:{s:s}}", "type", "array", "description",
                          "why a rich form was left out or cut (a method that raised, ran too "
                          "long or returned the wrong type)",
                          "items", "type", "string"));
        /* Operator warnings are logged once by the server, never in a result. */
        bad |= json_object_del(props, "warnings");
        return bad ? -1 : 0;
}

/* Any JSON value, spelled out: a schema with no keyword at all is flagged by portability checks
 * (the MCP Inspector's --strict) as constraining nothing. */
static json_t *any_value(void)
{
        return json_pack("{s:[{s:s},{s:s},{s:s},{s:s},{s:s},{s:s}]}", "anyOf", "type", "null",
                         "type", "boolean", "type", "number", "type", "string", "type", "array",
                         "type", "object");
}

static json_t *result_schema(void)
{
        json_t *schema = json_pack(
                "{s:s, s:{s:{s:s, s:[s,s,s,s,s,s], s:s}, s:{s:s}, s:{s:[{s:s},{s:s}], s:s}, "
                "s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s, s:s}, s:{s:s, s:s}, s:{s:s}, "
                "s:{s:s, s:{s:s}}, s:{s:s, s:{s:s}}, s:{s:s}, "
                "s:{s:s, s:s, s:{s:{s:s}, s:{s:s}, s:{s:s, s:s}}, s:[s,s]}}, s:[s,s]}",
                "type", "object", "properties", "status", "type", "string", "enum", "ok", "error",
                "timeout", "fuel_exhausted", "memory_limit", "sandbox_error", "description",
                "ok: the code finished; the others say why it did not", "value", "description",
                "status ok: the value of the last expression, as JSON", "error", "anyOf", "type",
                "object", "type", "string", "description",
                "status error: {class, message, backtrace, and a hint when a wall of the "
                "sandbox stopped the code}; other statuses: what to change",
                "stdout", "type", "string", "stderr", "type", "string", "stdout_truncated", "type",
                "boolean", "stderr_truncated", "type", "boolean", "duration_ms", "type", "number",
                "description", "wall-clock time of the run", "cpu_ms", "type", "number",
                "description", "CPU time the code used", "memory_peak_bytes", "type", "integer",
                "sandbox", "type", "array", "items", "type", "string", "warnings", "type", "array",
                "items", "type", "string", "cancelled", "type", "boolean", "session", "type",
                "object", "description",
                "with a session: its name or handle (id), whether this call created it, and why "
                "its state was lost when it was",
                "properties", "id", "type", "string", "created", "type", "boolean", "lost", "type",
                "string", "description",
                "why what earlier calls put in the session is gone (its kernel was killed, it was "
                "closed to make room, or this call ended it): define again what you need",
                "required", "id", "created", "required", "status", "duration_ms");
        json_t *any = any_value();
        json_t *value = json_object_get(json_object_get(schema, "properties"), "value");
        if (!any || json_object_update(value, any) < 0) {
                json_decref(schema);
                schema = NULL;
        }
        json_decref(any);
        if (schema && add_model_view_members(json_object_get(schema, "properties")) < 0) {
                json_decref(schema);
                schema = NULL;
        }
        return schema;
}

/* The pattern of a handle in the input schema: with an instance name, the handles of every
 * instance pass it (a call may reach a survivor with the handle of an instance that is gone,
 * and is told so). */
static const char *handle_pattern(const struct mcp_server *s)
{
        return *mcp_server_instance(s) ? "^(new|cs_[a-z0-9][a-z0-9-]{0,15}\\.[0-9a-f]{32})$"
                                       : "^(new|cs_[0-9a-f]{32})$";
}

json_t *mcp_session_argument(const struct mcp_server *s, const char *description)
{
        /* x-mcp-header (2026-07-28, SEP-2243): HTTP clients mirror the handle into the
         * Mcp-Param-Session header, where a proxy reads the instance that holds the session
         * without parsing the body. */
        return json_pack("{s:s, s:s, s:s, s:i, s:i, s:s}", "type", "string", "description",
                         description, "pattern", handle_pattern(s), "minLength", 3, "maxLength",
                         *mcp_server_instance(s) ? MCP_HANDLE_LEN : 35, "x-mcp-header",
                         MCP_SESSION_PARAM);
}

static json_t *input_schema(const struct mcp_server *s, bool sessions, bool modern)
{
        json_t *schema =
                json_pack("{s:s, s:{s:{s:s, s:s, s:i}}, s:[s], s:b}", "type", "object",
                          "properties", "code", "type", "string", "description",
                          "The whole program to run. The value of its last expression is returned.",
                          "minLength", 1, "required", "code", "additionalProperties", 0);
        if (schema)
                json_object_set_new(json_object_get(schema, "properties"), "files",
                                    run_files_schema());
        if (schema && sessions) {
                json_t *props = json_object_get(schema, "properties");
                json_object_set_new(
                        props, "session",
                        modern ? mcp_session_argument(
                                         s, "\"new\" to start a persistent session, or the "
                                            "handle (cs_…) a result gave you to run in that "
                                            "session: variables, definitions and /work files "
                                            "stay between calls with the same handle.")
                               : json_pack("{s:s, s:s, s:s, s:i, s:i}", "type", "string",
                                           "description",
                                           "Run in this persistent session instead of a fresh "
                                           "sandbox: variables, definitions and /work files stay "
                                           "for the next call with the same name.",
                                           "pattern", "^[A-Za-z0-9_.-]+$", "minLength", 1,
                                           "maxLength", MCP_SESSION_NAME_MAX));
                json_object_set_new(props, "reset",
                                    json_pack("{s:s, s:s}", "type", "boolean", "description",
                                              "With session: discard its state and start it "
                                              "afresh before running the code."));
        }
        return schema;
}

static char *tool_description(struct mcp_server *s, size_t i, const codecell_cell_info *info,
                              bool modern)
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
        unsigned long long idle_s = info->limits[CODECELL_LIMIT_SESSION_IDLE_MS] / 1000;
        unsigned long long max = info->limits[CODECELL_LIMIT_SESSIONS];
        unsigned long long kept_h = info->limits[CODECELL_LIMIT_SESSION_RETENTION_MS] / 3600000;
        if (codecell_cellset_sessions(s->cells, i) && modern)
                fprintf(f,
                        "\n\n## Sessions\n\n"
                        "Pass `session: \"new\"` to run in a persistent interpreter instead: the\n"
                        "result's `session.id` is a handle (cs_…) to pass as `session` in later\n"
                        "calls, which then use what earlier calls defined; its /work stays.\n"
                        "`reset: true` starts it afresh. After %llu s unused a session is\n"
                        "parked: the next call brings it back by running its earlier calls again\n"
                        "(the result says `restored`). It expires %llu h after its last use, or\n"
                        "when a call hits a limit (the result then says the state was lost);\n"
                        "a call with an expired handle answers an error, and `\"new\"` starts\n"
                        "another. At most %llu are open at once, shared fairly between clients.\n"
                        "The `%s` tool lists and closes yours.",
                        idle_s, kept_h, max, s->sessions_tool);
        else if (codecell_cellset_sessions(s->cells, i))
                fprintf(f,
                        "\n\n## Sessions\n\n"
                        "Pass `session` (a name you choose) to run in a persistent interpreter\n"
                        "instead: what one call defines, the next call with the same name can\n"
                        "use, and its /work stays. `reset: true` starts it afresh. A session\n"
                        "belongs to this %s only and ends with it, or when a call hits a\n"
                        "limit (the result then says the state was lost); after\n"
                        "%llu s unused it is parked, and the next call brings it back by running\n"
                        "its earlier calls again (the result says `restored`). Every result\n"
                        "says whether the call created the session. At most %llu are open at once. "
                        "They are shared\n"
                        "fairly: a client holding more than its share may see its least\n"
                        "recently used idle session parked to make room (it comes back with its\n"
                        "state once there is room).\n"
                        "The `%s` tool lists and closes yours.",
                        strcmp(s->o.transport, "http") == 0 ? "MCP session" : "MCP connection",
                        idle_s, max, s->sessions_tool);
        if (codecell_cellset_default_session(s->cells, i))
                fputs("\nWithout `session`, a call runs in your default session (it is created by "
                      "the first such call).",
                      f);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

json_t *mcp_tools_build(struct mcp_server *s, bool modern)
{
        json_t *tools = json_array();
        for (size_t i = 0; tools && i < codecell_cellset_size(s->cells); i++) {
                codecell_cell_info info;
                codecell_cell_info_get(codecell_cellset_cell(s->cells, i), &info);
                char *description = tool_description(s, i, &info, modern);
                char title[128];
                snprintf(title, sizeof(title), "Run %s code (%s)", info.language,
                         codecell_cellset_name(s->cells, i));
                /* The truth about what a call can do: the network only as the cell's policy
                 * allows; the host's files only through read-write folders; anything a host
                 * tool does. */
                bool reaches_out = info.tools > 0 || info.network;
                json_t *tool =
                        json_pack("{s:s, s:s, s:s?, s:o, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name",
                                  codecell_cellset_name(s->cells, i), "title", title, "description",
                                  description, "inputSchema",
                                  input_schema(s, codecell_cellset_sessions(s->cells, i), modern),
                                  "outputSchema", result_schema(), "annotations", "title", title,
                                  "readOnlyHint", !info.writes_host && !reaches_out,
                                  "destructiveHint", info.writes_host || reaches_out,
                                  "idempotentHint", 0, "openWorldHint", reaches_out);
                free(description);
                if (!description || json_array_append_new(tools, tool) < 0) {
                        json_decref(tools);
                        return NULL;
                }
        }
        if (tools && s->sessions_tool[0] &&
            json_array_append_new(tools, mcp_sessions_tool(s, modern)) < 0) {
                json_decref(tools);
                return NULL;
        }
        return tools;
}

/* Whether a 2026-07-28 request's client can be asked by elicitation (form mode). */
static bool modern_elicits(const json_t *params)
{
        const json_t *e =
                json_object_get(json_object_get(json_object_get(params, "_meta"),
                                                "io.modelcontextprotocol/clientCapabilities"),
                                "elicitation");
        return json_is_object(e) && (json_object_get(e, "form") || !json_object_get(e, "url"));
}

/* notifications/progress while a run goes on, for a request that asked with a progressToken. */
static void report_progress(uint64_t elapsed_ms, const char *line, size_t len, void *userdata)
{
        const struct mcp_run *t = userdata;
        char *message = NULL;
        /* The end of the guest's last line, which the engine may have begun in the middle of a
         * character: from the next character on, at most 255 bytes, and never invalid. */
        for (unsigned k = 0; len && k < 3 && ((unsigned char)*line & 0xc0) == 0x80; k++)
                line++, len--;
        if (len)
                message = utf8_sanitize(line, utf8_cut(line, len, 255), NULL);
        else if (asprintf(&message, "running for %.1f s", (double)elapsed_ms / 1000) < 0)
                message = NULL;
        if (!message)
                return;
        (void)mcp_notify(t->sink, jsonrpc_notification("notifications/progress",
                                                       json_pack("{s:O, s:f, s:s}", "progressToken",
                                                                 t->progress_token, "progress",
                                                                 (double)elapsed_ms / 1000.0,
                                                                 "message", message)));
        free(message);
}

/* What is wrong with the arguments, written into why for the model to act on, or false. */
static bool bad_arguments(const json_t *args, bool sessions, bool modern, bool by_default,
                          char *why, size_t n)
{
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)args, key, value) {
                if (strcmp(key, "code") != 0 && strcmp(key, "files") != 0 &&
                    (!sessions || (strcmp(key, "session") != 0 && strcmp(key, "reset") != 0))) {
                        snprintf(why, n,
                                 "Unknown argument \"%.*s\": this tool takes \"code\", and "
                                 "optionally \"files\"%s. Put everything else the program "
                                 "needs inside the code.",
                                 utf8_prefix(key, 64), key,
                                 sessions ? ", \"session\" and \"reset\""
                                          : " (it has no sessions)");
                        return true;
                }
        }
        const json_t *code = json_object_get(args, "code");
        const json_t *session = json_object_get(args, "session");
        const json_t *reset = json_object_get(args, "reset");
        if (!code) {
                snprintf(why, n, "Missing argument \"code\": pass the program to run as a string.");
                return true;
        }
        if (!json_is_string(code) || json_string_length(code) == 0) {
                snprintf(why, n,
                         "\"code\" must be a non-empty string holding the whole program "
                         "(not %s).",
                         json_is_string(code) ? "an empty string" : "another JSON type");
                return true;
        }
        if (session) {
                const char *name = json_string_value(session);
                bool ok;
                if (modern) {
                        const char *instance;
                        size_t len;
                        ok = name &&
                             (strcmp(name, "new") == 0 || mcp_handle_parse(name, &instance, &len));
                } else {
                        ok = name && *name && strlen(name) <= MCP_SESSION_NAME_MAX;
                        for (const char *p = name; ok && *p; p++)
                                ok = isalnum((unsigned char)*p) || strchr("_.-", *p);
                }
                if (!ok && modern) {
                        snprintf(why, n,
                                 "\"session\" must be \"new\" (to start a session) or a handle "
                                 "a result gave you (\"cs_\", maybe an instance name and a dot, "
                                 "and 32 hex "
                                 "digits, as in "
                                 "structuredContent.session.id); leave it out to run in a "
                                 "fresh sandbox.");
                        return true;
                }
                if (!ok) {
                        snprintf(why, n,
                                 "\"session\" must be a name of 1 to %d letters, digits, '_', "
                                 "'.' or '-' (for example \"analysis\"); leave it out to run in "
                                 "a fresh sandbox.",
                                 MCP_SESSION_NAME_MAX);
                        return true;
                }
        }
        if (reset && !json_is_boolean(reset)) {
                snprintf(why, n, "\"reset\" must be true or false (not a string or number).");
                return true;
        }
        if (json_is_true(reset) && !session && !by_default) {
                snprintf(why, n,
                         "\"reset\": true needs \"session\": name the session to start "
                         "afresh, or leave out \"reset\" (a call without a session "
                         "always starts fresh).");
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

/* Bytes s takes as the inside of a JSON string; with out, writes them there. */
static size_t escape_json(const char *s, size_t len, char *out)
{
        static const char hex[] = "0123456789abcdef";
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                const char *e = c == '"'    ? "\\\""
                                : c == '\\' ? "\\\\"
                                : c == '\n' ? "\\n"
                                : c == '\r' ? "\\r"
                                : c == '\t' ? "\\t"
                                            : NULL;
                if (e) {
                        if (out)
                                memcpy(out + o, e, 2);
                        o += 2;
                } else if (c < 0x20) {
                        if (out) {
                                memcpy(out + o, "\\u00", 4);
                                out[o + 4] = hex[c >> 4];
                                out[o + 5] = hex[c & 15];
                        }
                        o += 6;
                } else {
                        if (out)
                                out[o] = (char)c;
                        o++;
                }
        }
        return o;
}

/* Results past this size give their memory back to the system once answered. */
#define LARGE_RESULT_BYTES (1u << 20)

/* The run's pictures as MCP image content: `,{"type":"image",…}` for each, or "" when none;
 * NULL when out of memory. */
static char *image_contents(const codecell_result *res)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < codecell_result_image_count(res); i++) {
                size_t len = 0;
                const char *mime = NULL;
                const void *data = codecell_result_image(res, i, &len, &mime);
                char *b64 = base64_encode(data, len, NULL);
                if (!b64) {
                        fclose(f);
                        free(text);
                        return NULL;
                }
                fprintf(f, ",{\"type\":\"image\",\"data\":\"%s\",\"mimeType\":\"%s\"}", b64, mime);
                free(b64);
        }
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

/* The last value's rich forms as MCP content (docs/results.md, "Rich values"): its markdown
 * as text, its HTML as an embedded text/html resource (both cut within the model's budget by
 * codecell_result_to_model_parts), its SVG and PNG as image content (the engine checked their
 * bytes). `,{…}` for each, "" when none; NULL when out of memory. */
static char *display_contents(const codecell_result *res, const char *markdown, const char *html)
{
        json_t *items = json_array();
        if (items && markdown)
                json_array_append_new(items,
                                      json_pack("{s:s, s:s}", "type", "text", "text", markdown));
        if (items && html)
                json_array_append_new(items,
                                      json_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "resource",
                                                "resource", "uri", "codecell://result/display.html",
                                                "mimeType", "text/html", "text", html));
        static const char *const pictures[][2] = {{"svg", "image/svg+xml"}, {"png", "image/png"}};
        for (size_t i = 0; items && i < sizeof(pictures) / sizeof(pictures[0]); i++) {
                size_t len = 0;
                const void *data = codecell_result_display(res, pictures[i][0], &len);
                char *b64 = data ? base64_encode(data, len, NULL) : NULL;
                if (b64)
                        json_array_append_new(items,
                                              json_pack("{s:s, s:s, s:s}", "type", "image", "data",
                                                        b64, "mimeType", pictures[i][1]));
                free(b64);
        }
        char *text = items ? json_dumps(items, JSON_COMPACT) : NULL;
        json_decref(items);
        /* [a,b] less its brackets, each item after a comma: ",a,b". */
        size_t n = text ? strlen(text) : 0;
        if (n >= 2) {
                text[0] = n > 2 ? ',' : '\0';
                text[n - 1] = '\0';
        }
        return text;
}

/* A network cell's connections (NULL: none), counted for /metrics; the caller logs them too. */
static json_t *record_network(struct metrics *m, size_t cell, const codecell_result *res)
{
        _cleanup_free_ char *text = codecell_result_network_json(res);
        json_t *list = text ? json_loads(text, 0, NULL) : NULL;
        size_t n = json_array_size(list), refused = 0;
        for (size_t k = 0; k < n; k++)
                refused += json_object_get(json_array_get(list, k), "refused") != NULL;
        if (n)
                metrics_record_network(m, cell, n - refused, refused);
        return list;
}

/* Answers a finished call with what the model acts on (codecell_result_to_model_json, within
 * the cell's model_chars) as the text content, then the last value's rich forms
 * (display_contents) and the run's pictures as image content, and
 * the same with the sandbox's layers and timings as structuredContent (with the session member
 * first, when there is one). Both are spliced around the guest's value text, which is never
 * parsed again (its numbers stay exact). Takes res. */
static int answer_result(struct mcp_sink *sink, const struct mcp_call *call, const json_t *id,
                         codecell_result *res, size_t model_chars, const char *note,
                         const char *session_member, char *files)
{
        bool is_error = codecell_result_status(res) != CODECELL_STATUS_OK;
        char *markdown = NULL, *html = NULL, *spare_markdown = NULL, *spare_html = NULL;
        char *lean = codecell_result_to_model_parts(res, model_chars, false, &markdown, &html);
        char *detailed = codecell_result_to_model_parts(res, model_chars, true, &spare_markdown,
                                                        &spare_html);
        free(spare_markdown);
        free(spare_html);
        char *shown = display_contents(res, markdown, html);
        char *pictures = image_contents(res);
        char *images = shown && pictures ? malloc(strlen(shown) + strlen(pictures) + 1) : NULL;
        if (images)
                stpcpy(stpcpy(images, shown), pictures);
        free(markdown);
        free(html);
        free(shown);
        free(pictures);
        const char *value = codecell_result_value(res);
        bool large = value && strlen(value) >= LARGE_RESULT_BYTES;
        codecell_result_free(res);
        char *id_text = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
        char *text = NULL;
        if (lean && detailed && images && files && id_text) {
                static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
                static const char content[] =
                        ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"";
                static const char more[] = "\"},{\"type\":\"text\",\"text\":\"";
                static const char text_end[] = "\"}";
                static const char structured_end[] = "],\"structuredContent\":";
                const char *tail = is_error ? ",\"isError\":true" : ",\"isError\":false";
                const char *fields = mcp_result_fields(call);
                size_t id_len = strlen(id_text), n = strlen(lean), d = strlen(detailed);
                size_t note_len = note ? strlen(note) : 0;
                /* The session member goes first inside structuredContent: {"session":…,…}. */
                size_t member_len = session_member && d > 2 ? strlen(session_member) + 1 : 0;
                size_t size = sizeof(head) - 1 + id_len + sizeof(content) - 1 +
                              escape_json(lean, n, NULL) + sizeof(text_end) - 1 + strlen(images) +
                              strlen(files) + sizeof(structured_end) - 1 + d + member_len +
                              strlen(tail) + strlen(fields) + 3;
                if (note)
                        size += sizeof(more) - 1 + escape_json(note, note_len, NULL);
                text = malloc(size);
                if (text) {
                        char *p = text;
                        p = mempcpy(p, head, sizeof(head) - 1);
                        p = mempcpy(p, id_text, id_len);
                        p = mempcpy(p, content, sizeof(content) - 1);
                        p += escape_json(lean, n, p);
                        if (note) {
                                p = mempcpy(p, more, sizeof(more) - 1);
                                p += escape_json(note, note_len, p);
                        }
                        p = mempcpy(p, text_end, sizeof(text_end) - 1);
                        p = stpcpy(p, images);
                        p = stpcpy(p, files);
                        p = mempcpy(p, structured_end, sizeof(structured_end) - 1);
                        if (member_len) {
                                *p++ = '{';
                                p = stpcpy(p, session_member);
                                *p++ = ',';
                                p = mempcpy(p, detailed + 1, d - 1);
                        } else {
                                p = mempcpy(p, detailed, d);
                        }
                        p = stpcpy(p, tail);
                        p = stpcpy(p, fields);
                        p = stpcpy(p, "}}");
                }
        }
        free(id_text);
        free(lean);
        free(detailed);
        free(images);
        free(files);
        int r = text ? sink->send(sink, text, true) : -1;
        if (large)
                /* The guest's frame was parsed into many small blocks, now free: without this
                 * the server keeps their pages (glibc trims only the top of each arena). */
                (void)malloc_trim(0);
        return r;
}

/* ---- fair shares of a cell's sessions ----------------------------------------------------- */

/* The length of the owner part of a scoped session name ("m12-"), or 0. */
static size_t owner_len(const char *scoped)
{
        const char *dash = strchr(scoped, '-');
        return scoped[0] == 'm' && dash ? (size_t)(dash - scoped) + 1 : 0;
}

/* Remembers that the session scoped was closed to make room, for the client it belongs to. */
static void note_evicted(struct mcp_server *s, char *scoped)
{
        size_t n = owner_len(scoped);
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n_clients && scoped; i++) {
                struct mcp_client *c = s->clients[i];
                if (strlen(c->prefix) != n || strncmp(c->prefix, scoped, n) != 0)
                        continue;
                pthread_mutex_lock(&c->lock);
                char **grown = realloc(c->evicted, (c->n_evicted + 1) * sizeof(*grown));
                if (grown) {
                        c->evicted = grown;
                        c->evicted[c->n_evicted++] = scoped;
                        scoped = NULL;
                }
                pthread_mutex_unlock(&c->lock);
        }
        pthread_mutex_unlock(&s->lock);
        free(scoped);
}

/* Whether the client's session scoped was closed to make room since its last use (and forgets
 * it: the client is told once). */
static bool was_evicted(struct mcp_client *c, const char *scoped)
{
        bool found = false;
        pthread_mutex_lock(&c->lock);
        for (size_t i = 0; i < c->n_evicted && !found; i++)
                if (strcmp(c->evicted[i], scoped) == 0) {
                        free(c->evicted[i]);
                        c->evicted[i] = c->evicted[--c->n_evicted];
                        found = true;
                }
        pthread_mutex_unlock(&c->lock);
        return found;
}

/* The cell's sessions that run (have a kernel): a parked one holds no room. NULL-terminated,
 * or NULL. */
static char **running_sessions(codecell_cell *cell)
{
        char **names = codecell_session_list(cell);
        size_t kept = 0;
        for (size_t k = 0; names && names[k]; k++)
                if (codecell_session_parked(cell, names[k]))
                        free(names[k]);
                else
                        names[kept++] = names[k];
        if (names)
                names[kept] = NULL;
        return names;
}

/* The cell's sessions are all in use. A client that runs at least two more than this one gives
 * up its least recently used idle session (the one running the most first), so that clients
 * converge on equal shares and none can lock the others out; one at or under its share keeps
 * what it has. The session given up is parked, to come back on its next call (or closed when
 * it cannot be restored, which its owner is told). True when room was made. */
static bool make_room(struct mcp_server *s, struct mcp_client *c, codecell_cell *cell)
{
        char **names = running_sessions(cell);
        if (!names)
                return false;
        size_t mine = 0;
        for (size_t k = 0; names[k]; k++)
                if (strncmp(names[k], c->prefix, strlen(c->prefix)) == 0)
                        mine++;
        bool closed = false;
        for (;;) {
                /* The owner with the most sessions not yet tried. */
                const char *top = NULL;
                size_t top_n = 0, top_len = 0;
                for (size_t k = 0; names[k]; k++) {
                        size_t len = owner_len(names[k]), n = 0;
                        if (!len || strncmp(names[k], c->prefix, strlen(c->prefix)) == 0)
                                continue;
                        for (size_t m = 0; names[m]; m++)
                                n += strncmp(names[m], names[k], len) == 0;
                        if (n > top_n) {
                                top = names[k];
                                top_n = n;
                                top_len = len;
                        }
                }
                if (!top || top_n < mine + 2)
                        break;
                char owner[32];
                snprintf(owner, sizeof(owner), "%.*s", (int)top_len, top);
                char *victim = NULL;
                bool parked = false;
                if (codecell_session_park_idle(cell, owner, &victim, &parked, NULL) == 0) {
                        if (parked)
                                free(victim);
                        else
                                note_evicted(s, victim);
                        closed = true;
                        break;
                }
                /* All of that owner's sessions are busy: the next owner down. */
                for (size_t k = 0; names[k]; k++)
                        if (strncmp(names[k], owner, top_len) == 0)
                                names[k][0] = '\0';
        }
        for (size_t k = 0; names[k]; k++)
                free(names[k]);
        free(names);
        return closed;
}

/* The refusal when no session can be opened, worded for the model: what it holds, and what it
 * can do instead. */
static char *refusal(struct mcp_client *c, codecell_cell *cell, size_t limit, const char *evicted,
                     const char *parked)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        char **names = running_sessions(cell);
        size_t prefix_len = strlen(c->prefix), mine = 0;
        for (size_t k = 0; names && names[k]; k++)
                if (strncmp(names[k], c->prefix, prefix_len) == 0)
                        fprintf(f, "%s\"%s\"", mine++ ? ", " : " (", names[k] + prefix_len);
        fputs(mine ? ")" : "", f);
        for (size_t k = 0; names && names[k]; k++)
                free(names[k]);
        free(names);
        char *held = NULL;
        size_t held_size = 0;
        if (fclose(f) != 0 || !(f = open_memstream(&held, &held_size))) {
                free(text);
                return NULL;
        }
        /* The session asked for was one of the client's, closed to make room: that first, so
         * the model knows what it held is gone (told once). */
        if (evicted)
                fprintf(f,
                        "Session \"%s\" was closed to make room for another client (you held "
                        "more sessions than your share and it was your least recently used), "
                        "so what it held was lost. ",
                        evicted);
        /* One parked to make room (or while idle) keeps its state for a later call. */
        if (parked)
                fprintf(f,
                        "Session \"%s\" is parked (it was idle): what it held is kept, and it "
                        "comes back with it on a call once one of the sessions below is free. ",
                        parked);
        if (mine)
                fprintf(f,
                        "No new session can be opened: all %zu sessions of this tool are in use, "
                        "%zu of them yours%s. Reuse one of your sessions (pass \"reset\": true to "
                        "start it afresh), close one with the %s tool, or run this code without "
                        "\"session\" in a fresh sandbox.",
                        limit, mine, text, c->server->sessions_tool);
        else
                fprintf(f,
                        "No new session can be opened: all %zu sessions of this tool are in use "
                        "by other clients, none of them over its share. Run this code without "
                        "\"session\" in a fresh sandbox, or try the session again later.",
                        limit);
        free(text);
        if (fclose(f) != 0) {
                free(held);
                return NULL;
        }
        return held;
}

/* Takes the internal prefix out of a message from the library ("session \"m5-x\"" becomes
 * "session \"x\""): clients never see it. */
static void hide_prefix(char *message, const char *prefix)
{
        size_t n = strlen(prefix);
        for (char *p = message; (p = strstr(p, prefix));) {
                if (p > message && p[-1] == '"')
                        memmove(p, p + n, strlen(p + n) + 1);
                else
                        p += n;
        }
}

/* Runs code in the client's session, making room by the fair-share rule when the cell's
 * sessions are all open. */
static int session_eval(struct mcp_server *s, struct mcp_client *c, codecell_cell *cell,
                        const char *scoped, const json_t *code, const codecell_run_options *options,
                        codecell_result **res, codecell_error *err)
{
        for (unsigned tries = 0;; tries++) {
                int r = codecell_session_eval_with(cell, scoped, json_string_value(code),
                                                   json_string_length(code), options, res, err);
                /* Another client may take the room made before this one does: a few tries. */
                if (r >= 0 || err->errno_value != EMFILE || tries == 8 || !make_room(s, c, cell))
                        return r;
        }
}

static const char evicted_note[] =
        "Note: this session had been closed to make room for another client (you held more "
        "sessions than your share and it was your least recently used), so what it held was "
        "lost; this call ran in a fresh session.";

/* Whether the client's handle was closed to make room (told once). */
static bool evicted_handle(struct mcp_client *c, const char *handle)
{
        char scoped[128];
        snprintf(scoped, sizeof(scoped), "%s%s", c->prefix, handle);
        return was_evicted(c, scoped);
}

static const char respawned_note[] =
        "Note: this session's interpreter had ended since your last call (it was killed, or "
        "your code's own thread ended it), so what it held was lost; this call ran in a fresh "
        "session. Define again what you need.";

/* The session a call runs in, resolved from its arguments: the name the client chose, a handle
 * (minted now for "new"), or the cell's default; "" for a fresh sandbox. NULL when the
 * handle is not one the client can use, with the reason for the model in why. */
static const char *resolve_session(struct mcp_server *s, struct mcp_client *c,
                                   const struct mcp_call *call, size_t i, const json_t *args,
                                   char handle[MCP_HANDLE_LEN + 1], char *why, size_t n)
{
        const char *session = json_string_value(json_object_get(args, "session"));
        codecell_cell *cell = codecell_cellset_cell(s->cells, i);
        if (!session)
                return codecell_cellset_default_session(s->cells, i) ? "default" : "";
        if (!call->modern)
                return session;
        if (strcmp(session, "new") == 0) {
                if (mcp_session_handle_new(c, handle) < 0) {
                        snprintf(why, n,
                                 "No session could be started (out of memory): run this "
                                 "code without \"session\", or try again shortly.");
                        return NULL;
                }
                return handle;
        }
        if (mcp_session_open(c, cell, session))
                return session;
        codecell_cell_info info;
        codecell_cell_info_get(cell, &info);
        const char *mine = mcp_server_instance(s), *home;
        size_t home_len;
        (void)mcp_handle_parse(session, &home, &home_len);
        if (home_len && (strlen(mine) != home_len || strncmp(mine, home, home_len) != 0))
                /* The proxy sends a handle to the instance named in it, and elsewhere only
                 * when that instance does not answer: it is gone, and so is the session. */
                snprintf(why, n,
                         "Session %s was lost: it lived on the codecell instance \"%.*s\", which "
                         "no longer serves it (it stopped, crashed or was replaced), and what the "
                         "session held (variables, definitions, /work files) is gone. Start a new "
                         "one with \"session\": \"new\" and define again what you need, or "
                         "leave out \"session\" to run in a fresh sandbox.",
                         session, (int)home_len, home);
        else if (evicted_handle(c, session))
                snprintf(why, n,
                         "Session %s was closed to make room for another client (you held more "
                         "sessions than your share and it was your least recently used), and "
                         "what it held (variables, definitions, /work files) is gone. Start a "
                         "new one with \"session\": \"new\" and define again what you need, "
                         "or leave out \"session\" to run in a fresh sandbox.",
                         session);
        else if (mcp_session_handle_known(c, session))
                snprintf(why, n,
                         "Session %s has expired: sessions end %llu h after their last use "
                         "(parked after %llu s unused, they come back until then), when a call "
                         "hits a limit, when closed, or to make room for another client when "
                         "all are in use, and what it held is gone. Start a new "
                         "one with \"session\": \"new\" (and define again what you need), or "
                         "leave out \"session\" to run in a fresh sandbox.",
                         session,
                         (unsigned long long)(info.limits[CODECELL_LIMIT_SESSION_RETENTION_MS] /
                                              3600000),
                         (unsigned long long)(info.limits[CODECELL_LIMIT_SESSION_IDLE_MS] / 1000));
        else if (*mine)
                snprintf(why, n,
                         "Session %s is not one this server gave you, or it was lost when the "
                         "codecell instance \"%s\" restarted (what it held is gone). Pass "
                         "\"session\": \"new\" to start one and use the handle its result gives, "
                         "or leave out \"session\" to run in a fresh sandbox.",
                         session, mine);
        else
                snprintf(why, n,
                         "Session %s is not one this server gave you (or it ended long ago). Pass "
                         "\"session\": \"new\" to start one and use the handle its result gives, "
                         "or leave out \"session\" to run in a fresh sandbox.",
                         session);
        return NULL;
}

/* Why an evicted session's state is gone, for its "lost" member. */
static const char evicted_lost[] =
        "the session was closed to make room for another client (you held more sessions than "
        "your share and it was your least recently used)";

/* The structured member that tells a session call's answer apart: "session":{"id", "created",
 * and "lost" (why what earlier calls put in it is gone) when it is}. It goes into
 * structuredContent as it is (answer_result). NULL when out of memory. */
static char *session_member(const char *session, bool created, const char *lost)
{
        json_t *m = json_pack("{s:{s:s, s:b}}", "session", "id", session, "created", created);
        if (m && lost &&
            json_object_set_new(json_object_get(m, "session"), "lost", json_string(lost)) < 0) {
                json_decref(m);
                m = NULL;
        }
        char *text = m ? json_dumps(m, JSON_COMPACT) : NULL;
        json_decref(m);
        /* {"session":{…}} less its braces: a member. */
        size_t n = text ? strlen(text) : 0;
        if (n >= 2) {
                memmove(text, text + 1, n - 2);
                text[n - 2] = '\0';
        }
        return text;
}

/* The note that tells a session call's answer apart: whether this call created it. */
static void describe_session(const struct mcp_call *call, const char *session, bool by_default,
                             bool created, bool evicted, char *note, size_t note_size)
{
        if (evicted)
                snprintf(note, note_size, "%s", evicted_note);
        else if (created && by_default)
                snprintf(note, note_size,
                         "Your default session was created by this call: nothing from earlier "
                         "calls is in it; later calls without \"session\" run in it.");
        else if (created && call->modern)
                snprintf(note, note_size,
                         "Session %s was created by this call. Pass \"session\": \"%s\" to later "
                         "calls to use what this call defined.",
                         session, session);
        else if (created)
                snprintf(note, note_size,
                         "Session \"%s\" was created by this call: nothing from earlier calls is "
                         "in it.",
                         session);
        else
                note[0] = '\0';
}

bool mcp_tools_call(struct mcp_server *s, struct mcp_client *c, const struct mcp_call *call,
                    const json_t *id, const json_t *params, struct mcp_sink *sink)
{
        const char *name = json_string_value(json_object_get(params, "name"));
        if (call->modern && json_object_get(params, "requestState")) {
                /* The retry of a call whose run waits for approval (MRTR, approvals.c). */
                mcp_approval_resume(c, call, id, params, sink);
                return true;
        }
        int i = codecell_cellset_find(s->cells, name);
        if (i < 0) {
                mcp_answer(sink, jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
                                               "unknown tool \"%.*s\" (see tools/list)",
                                               name ? utf8_prefix(name, 64) : 0, name ? name : ""));
                return true;
        }
        json_t *empty = json_object();
        const json_t *args = json_object_get(params, "arguments") ?: empty;
        char why[512];
        bool sessions = codecell_cellset_sessions(s->cells, (size_t)i);
        char handle[MCP_HANDLE_LEN + 1];
        const char *session = NULL;
        /* SEP-1303: what is wrong with the arguments is for the model to fix, so it is a
         * result with isError, not a protocol error. */
        __attribute__((cleanup(run_files_free))) struct run_files files = {0};
        if (bad_arguments(args, sessions, call->modern,
                          codecell_cellset_default_session(s->cells, (size_t)i), why,
                          sizeof(why)) ||
            !run_files_read(json_object_get(args, "files"), &files, why, sizeof(why)) ||
            !(session = resolve_session(s, c, call, (size_t)i, args, handle, why, sizeof(why)))) {
                json_decref(empty);
                mcp_answer(sink, mcp_tool_error(call, id, "%s", why));
                return true;
        }
        if (!*session)
                session = NULL;
        bool by_default = session && !json_object_get(args, "session");
        const char *busy = take_slot(s);
        if (busy) {
                refusal_note(REFUSAL_BUSY, busy);
                json_decref(empty);
                mcp_answer(sink, jsonrpc_error(id, JSONRPC_SERVER_BUSY,
                                               "%s (at most %zu runs at once: retry shortly)", busy,
                                               s->o.max_runs));
                return true;
        }
        codecell_cell *cell = codecell_cellset_cell(s->cells, (size_t)i);
        const json_t *code = json_object_get(args, "code");
        char scoped[128] = "";
        if (session)
                snprintf(scoped, sizeof(scoped), "%s%s", c->prefix, session);
        codecell_error err = {0};
        struct inflight f = {
                .id = (json_t *)id, .cancel = codecell_cancel_new(&err), .origin = call->origin};
        if (!f.cancel) {
                give_slot(s);
                json_decref(empty);
                mcp_answer(sink, jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "%s", err.message));
                return true;
        }
        track(c, &f);
        const json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
        /* Its progress reports and the approvals of its tool calls (approvals.c). */
        struct mcp_run run __attribute__((cleanup(mcp_run_finish))) = {
                .sink = sink,
                .client = c,
                .call = call,
                .cancel = f.cancel,
                .cell = name,
                .mrtr = call->modern && modern_elicits(params)};
        mcp_run_init(&run, id);
        codecell_run_options options = {.cancel = f.cancel, .files = files.list, .userdata = &run};
        if (json_is_string(token) || json_is_integer(token)) {
                options.progress = report_progress;
                run.progress_token = token;
        }
        bool reset = session && json_is_true(json_object_get(args, "reset"));
        /* Whether this call creates the session: it did not exist, or it is reset. */
        bool created = session && (reset || !mcp_session_open(c, cell, session));
        if (reset)
                (void)codecell_session_close(cell, scoped, NULL);
        codecell_result *res = NULL;
        double start = now_ms();
        int r = session ? session_eval(s, c, cell, scoped, code, &options, &res, &err)
                        : codecell_cell_run_with(cell, json_string_value(code),
                                                 json_string_length(code), &options, &res, &err);
        double ms = now_ms() - start;
        json_decref(empty);
        untrack(c, &f);
        give_slot(s);
        bool was_cancelled = codecell_cancel_triggered(f.cancel);
        codecell_cancel_free(f.cancel);
        /* After an approval asked by input_required, the answer goes to the retry that took
         * the call over, or nowhere when the client did not retry. */
        json_t *asked_id = NULL;
        if (!mcp_run_target(&run, &sink, &asked_id)) {
                codecell_result_free(res);
                return true;
        }
        id = asked_id; /* the run's until the function returns (run's cleanup) */
        if (r < 0) {
                /* The cell refused the code or the session (a cap): the model can act on it. */
                char *text = NULL;
                if (session && err.errno_value == EMFILE) {
                        codecell_cell_info info;
                        codecell_cell_info_get(cell, &info);
                        text = refusal(c, cell, (size_t)info.limits[CODECELL_LIMIT_SESSIONS],
                                       was_evicted(c, scoped) ? session : NULL,
                                       codecell_session_parked(cell, scoped) ? session : NULL);
                }
                hide_prefix(err.message, c->prefix);
                refusal_note(err.errno_value == EMFILE ? REFUSAL_BUSY : REFUSAL_BAD_REQUEST,
                             err.message);
                mcp_answer(sink, mcp_tool_error(call, id, "%s", text ? text : err.message));
                free(text);
                return true;
        }
        /* Told once, when the name runs again, and not when the client asked for a fresh start
         * anyway. */
        bool evicted = session && was_evicted(c, scoped) && !reset;
        codecell_status status = codecell_result_status(res);
        /* The session's kernel had ended since the last call (killed, or by the code's own
         * thread): this call ran in a fresh one, which it created. */
        bool respawned = session && !created && codecell_result_state_lost(res) &&
                         (status == CODECELL_STATUS_OK || status == CODECELL_STATUS_ERROR);
        metrics_record(s->metrics, (size_t)i, status, ms);
        json_t *network = record_network(s->metrics, (size_t)i, res);
        call_log(c->prefix, name, session, code, res, network, ms);
        json_decref(network);
        mcp_log(c, call, sink, status == CODECELL_STATUS_SANDBOX_ERROR ? LOG_WARNING : LOG_INFO,
                "%s%s%s: %s", name, session ? " session " : "", session ? session : "",
                codecell_status_name(status));
        /* A cancelled request gets no answer (the client has given up on it). */
        if (was_cancelled) {
                codecell_result_free(res);
                return false;
        }
        char note[512];
        _cleanup_free_ char *member = NULL;
        if (session) {
                /* What the session held before this call is gone: why, for the client. */
                const char *lost = evicted ? evicted_lost : codecell_result_state_lost(res);
                describe_session(call, session, by_default, created || evicted || respawned,
                                 evicted, note, sizeof(note));
                member = session_member(session, created || evicted || respawned, lost);
        }
        if (respawned && !evicted)
                snprintf(note, sizeof(note), "%s", respawned_note);
        if (session && status != CODECELL_STATUS_OK && status != CODECELL_STATUS_ERROR) {
                /* A limit or a dead interpreter ended the session (the result says its state
                 * was lost): it is closed now, so that the next call under the name says it
                 * created a session, and a handle reads as expired instead of quietly
                 * starting afresh. */
                (void)codecell_session_close(cell, scoped, NULL);
                if (call->modern)
                        snprintf(note, sizeof(note),
                                 "Session %s ended with this call and its handle has expired: "
                                 "pass \"session\": \"new\" to start another.",
                                 session);
        }
        codecell_cell_info info;
        codecell_cell_info_get(cell, &info);
        /* The output folder's files, with their links owned by this client. */
        char *out_files = mcp_file_contents(s, c, res);
        (void)answer_result(sink, call, id, res, (size_t)info.limits[CODECELL_LIMIT_MODEL_CHARS],
                            session && note[0] ? note : NULL, session ? member : NULL, out_files);
        return true;
}
