/* A client's code sessions as MCP sees them: the handles minted for 2026-07-28 clients, the
 * unscoped names of what a client holds, and the companion tool that lists and closes them
 * (docs/mcp.md, Sessions). The library knows sessions by scoped name (client prefix + the
 * name or handle); nothing here lets a client see or reach another client's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "util.h"
#include "server.h"

int mcp_session_handle_new(struct mcp_client *c, char ret[MCP_HANDLE_LEN + 1])
{
        unsigned char raw[16];
        /* For an unauthenticated server the handle is a bearer token: unguessable. */
        if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
                return -EIO;
        const char *instance = mcp_server_instance(c->server);
        int at = snprintf(ret, MCP_HANDLE_LEN + 1, *instance ? "cs_%s." : "cs_", instance);
        for (size_t i = 0; i < sizeof(raw); i++)
                snprintf(ret + at + 2 * i, 3, "%02x", raw[i]);
        char *copy = strdup(ret);
        if (!copy)
                return -ENOMEM;
        pthread_mutex_lock(&c->lock);
        if (c->n_handles == MCP_HANDLES_KEPT) {
                /* The oldest is forgotten: it then reads as unknown rather than expired. */
                free(c->handles[0]);
                memmove(c->handles, c->handles + 1, (c->n_handles - 1) * sizeof(char *));
                c->n_handles--;
        }
        char **grown = realloc(c->handles, (c->n_handles + 1) * sizeof(char *));
        if (grown) {
                c->handles = grown;
                c->handles[c->n_handles++] = copy;
        }
        pthread_mutex_unlock(&c->lock);
        if (!grown) {
                free(copy);
                return -ENOMEM;
        }
        return 0;
}

bool mcp_instance_name_valid(const char *name)
{
        size_t n = name ? strlen(name) : 0;
        return n >= 1 && n <= MCP_INSTANCE_MAX && name[0] != '-' &&
               strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

bool mcp_handle_parse(const char *text, const char **ret_instance, size_t *ret_len)
{
        if (strncmp(text, "cs_", 3) != 0)
                return false;
        const char *digits = text + 3, *dot = strchr(digits, '.');
        *ret_instance = "";
        *ret_len = 0;
        if (dot) {
                char name[MCP_INSTANCE_MAX + 1];
                size_t n = (size_t)(dot - digits);
                if (n > MCP_INSTANCE_MAX)
                        return false;
                memcpy(name, digits, n);
                name[n] = '\0';
                if (!mcp_instance_name_valid(name))
                        return false;
                *ret_instance = digits;
                *ret_len = n;
                digits = dot + 1;
        }
        return strlen(digits) == 32 && strspn(digits, "0123456789abcdef") == 32;
}

bool mcp_session_handle_known(struct mcp_client *c, const char *handle)
{
        bool found = false;
        pthread_mutex_lock(&c->lock);
        for (size_t i = 0; i < c->n_handles && !found; i++)
                found = strcmp(c->handles[i], handle) == 0;
        pthread_mutex_unlock(&c->lock);
        return found;
}

char **mcp_session_names(struct mcp_client *c, codecell_cell *cell)
{
        char **names = codecell_session_list(cell);
        size_t prefix_len = strlen(c->prefix), kept = 0;
        for (size_t k = 0; names && names[k]; k++) {
                if (strncmp(names[k], c->prefix, prefix_len) == 0) {
                        memmove(names[k], names[k] + prefix_len, strlen(names[k]) - prefix_len + 1);
                        names[kept++] = names[k];
                } else {
                        free(names[k]);
                }
        }
        if (names)
                names[kept] = NULL;
        return names;
}

static void free_names(char **names)
{
        for (size_t k = 0; names && names[k]; k++)
                free(names[k]);
        free(names);
}

bool mcp_session_open(struct mcp_client *c, codecell_cell *cell, const char *name)
{
        char **names = mcp_session_names(c, cell);
        bool found = false;
        for (size_t k = 0; names && names[k] && !found; k++)
                found = strcmp(names[k], name) == 0;
        free_names(names);
        return found;
}

/* ---- the companion tool ------------------------------------------------------------------ */

static json_t *session_list_schema(void)
{
        return json_pack("{s:s, s:{s:s, s:{s:{s:s}, s:{s:s}}, s:[s,s], s:b}}", "type", "array",
                         "items", "type", "object", "properties", "tool", "type", "string",
                         "session", "type", "string", "required", "tool", "session",
                         "additionalProperties", 0);
}

json_t *mcp_sessions_tool(struct mcp_server *s, bool modern)
{
        json_t *cells = json_array();
        for (size_t i = 0; cells && i < codecell_cellset_size(s->cells); i++)
                if (codecell_cellset_sessions(s->cells, i))
                        json_array_append_new(cells,
                                              json_string(codecell_cellset_name(s->cells, i)));
        char description[1024];
        snprintf(description, sizeof(description),
                 "Lists or closes your persistent code sessions of the other tools (those you "
                 "opened with their `session` argument). `action: \"list\"` gives each open "
                 "session as {tool, session}. `action: \"close\"` ends `session` (%s) in `tool`, "
                 "or in every tool when `tool` is omitted; without `session` it ends all of your "
                 "sessions (of `tool` only, when given). A closed session's variables, "
                 "definitions and /work files are gone. You only ever see and close your own.",
                 modern ? "the handle a result gave you" : "the name you chose");
        json_t *tool = json_pack(
                "{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:[s,s], s:s}, s:{s:s, s:s}, s:{s:s, s:o, "
                "s:s}}, s:[s], s:b}, s:{s:s, s:{s:o, s:o}}, s:{s:s, s:b, s:b, s:b, s:b}}",
                "name", s->sessions_tool, "title", "Code sessions", "description", description,
                "inputSchema", "type", "object", "properties", "action", "type", "string", "enum",
                "list", "close", "description", "list: show your open sessions; close: end them",
                "session", "type", "string", "description",
                modern ? "With close: the session handle to end (omit to end all of yours)"
                       : "With close: the session name to end (omit to end all of yours)",
                "tool", "type", "string", "enum", cells, "description",
                "Only the sessions of this tool", "required", "action", "additionalProperties", 0,
                "outputSchema", "type", "object", "properties", "sessions", session_list_schema(),
                "closed", session_list_schema(), "annotations", "title", "Code sessions",
                "readOnlyHint", 0, "destructiveHint", 1, "idempotentHint", 1, "openWorldHint", 0);
        /* Closing one handle goes, through a proxy, to the instance that holds it. */
        json_t *session = json_object_get(
                json_object_get(json_object_get(tool, "inputSchema"), "properties"), "session");
        if (modern && session &&
            json_object_set_new(session, "x-mcp-header", json_string(MCP_SESSION_PARAM)) < 0) {
                json_decref(tool);
                tool = NULL;
        }
        return tool;
}

/* What is wrong with the companion tool's arguments, written into why, or false; sets *ret_cell
 * to the tool named (-1 for all). */
static bool bad_sessions_arguments(struct mcp_server *s, const json_t *args, int *ret_cell,
                                   char *why, size_t n)
{
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)args, key, value) {
                if (strcmp(key, "action") && strcmp(key, "session") && strcmp(key, "tool")) {
                        snprintf(why, n,
                                 "Unknown argument \"%.*s\": this tool takes \"action\" (\"list\" "
                                 "or \"close\"), and with close \"session\" and \"tool\".",
                                 utf8_prefix(key, 64), key);
                        return true;
                }
        }
        const char *action = json_string_value(json_object_get(args, "action"));
        const json_t *session = json_object_get(args, "session");
        const json_t *tool = json_object_get(args, "tool");
        *ret_cell = -1;
        if (!action || (strcmp(action, "list") && strcmp(action, "close"))) {
                snprintf(why, n,
                         "Pass \"action\": \"list\" to see your sessions, or \"action\": "
                         "\"close\" to end them.");
                return true;
        }
        if (session && (!json_is_string(session) || json_string_length(session) == 0)) {
                snprintf(why, n,
                         "\"session\" must be the non-empty name or handle of one of your "
                         "sessions (see \"action\": \"list\"), or left out to mean all.");
                return true;
        }
        if (tool) {
                const char *name = json_string_value(tool);
                *ret_cell = codecell_cellset_find(s->cells, name);
                if (*ret_cell < 0 || !codecell_cellset_sessions(s->cells, (size_t)*ret_cell)) {
                        snprintf(why, n,
                                 "\"tool\" must name a tool that has sessions (\"%.*s\" is not "
                                 "one): leave it out to mean every tool.",
                                 name ? utf8_prefix(name, 64) : 0, name ? name : "");
                        return true;
                }
        }
        return false;
}

void mcp_sessions_call(struct mcp_server *s, struct mcp_client *c, const struct mcp_call *call,
                       const json_t *id, const json_t *args, struct mcp_sink *sink)
{
        json_t *empty = NULL;
        if (!args)
                args = empty = json_object();
        int only = -1;
        char why[512];
        if (bad_sessions_arguments(s, args, &only, why, sizeof(why))) {
                json_decref(empty);
                mcp_answer(sink, mcp_tool_error(call, id, "%s", why));
                return;
        }
        bool close = strcmp(json_string_value(json_object_get(args, "action")), "close") == 0;
        const char *session = json_string_value(json_object_get(args, "session"));
        if (c->anonymous && !(close && session)) {
                /* Listing would hand one client the handles of all the others. */
                json_decref(empty);
                mcp_answer(sink,
                           mcp_tool_error(call, id, "%s",
                                          "This server takes no bearer token, so it cannot tell "
                                          "its clients apart: it lists no session handles and "
                                          "closes none but the one you name (a handle is the "
                                          "secret of the client it was given to). Close a "
                                          "session with \"action\": \"close\" and its "
                                          "\"session\" handle."));
                return;
        }
        json_t *found = json_array();
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        for (size_t i = 0; found && f && i < codecell_cellset_size(s->cells); i++) {
                if (!codecell_cellset_sessions(s->cells, i) || (only >= 0 && (size_t)only != i))
                        continue;
                codecell_cell *cell = codecell_cellset_cell(s->cells, i);
                const char *tool = codecell_cellset_name(s->cells, i);
                char **names = mcp_session_names(c, cell);
                for (size_t k = 0; names && names[k]; k++) {
                        if (close && session && strcmp(session, names[k]) != 0)
                                continue;
                        if (close) {
                                char scoped[128];
                                snprintf(scoped, sizeof(scoped), "%s%s", c->prefix, names[k]);
                                /* Waits for an eval in progress of that session. */
                                if (codecell_session_close(cell, scoped, NULL) < 0)
                                        continue;
                        }
                        json_array_append_new(
                                found, json_pack("{s:s, s:s}", "tool", tool, "session", names[k]));
                        fprintf(f, "\n- %s: %s", tool, names[k]);
                }
                free_names(names);
        }
        json_decref(empty);
        if (!f || fclose(f) != 0 || !found) {
                free(text);
                json_decref(found);
                mcp_answer(sink, NULL); /* the guard answers "could not be built" */
                return;
        }
        char *head = NULL;
        size_t n = json_array_size(found);
        int r;
        if (close && session && n == 0)
                r = asprintf(&head,
                             "Nothing closed: you have no open session \"%.*s\"%s (it may have "
                             "expired already). \"action\": \"list\" shows the ones you have.",
                             utf8_prefix(session, 64), session, only >= 0 ? " in that tool" : "");
        else if (close)
                r = asprintf(&head, "Closed %zu session%s%s", n, n == 1 ? "" : "s",
                             n ? ":" : " (you had none open).");
        else
                r = asprintf(&head, "%zu open session%s%s", n, n == 1 ? "" : "s",
                             n ? ":" : " (a tool call with \"session\" opens one).");
        json_t *result = r < 0 ? NULL
                               : json_pack("{s:[{s:s, s:s+}], s:{s:o}, s:b}", "content", "type",
                                           "text", "text", head, text, "structuredContent",
                                           close ? "closed" : "sessions", found, "isError",
                                           close && session && n == 0);
        if (r < 0)
                json_decref(found);
        free(head);
        free(text);
        mcp_answer(sink, result ? mcp_result(call, id, result) : NULL);
}
