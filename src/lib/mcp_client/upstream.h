/* An upstream MCP server of the configuration's "mcp_servers" (DESIGN §8, docs/tools.md): codecell
 * is its client. One connection per server, shared by every cell and every execution that calls
 * its tools; JSON-RPC ids keep concurrent calls apart. A server that exits is started again at the
 * next call; one that stops answering is killed and started again. */
#ifndef CODECELL_UPSTREAM_H
#define CODECELL_UPSTREAM_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "codecell.h"

/* How to reach the server: a program speaking MCP on its stdin/stdout (argv), or a Streamable
 * HTTP endpoint (url). The secrets (env values, headers) live here, on the host, only. */
struct upstream_spec {
        char *name;     /* the configuration's key, e.g. "memory" */
        char **argv;    /* NULL-terminated, argv[0] absolute; or NULL */
        char **env;     /* "NAME=value", NULL-terminated: the whole environment of the server */
        char *cwd;      /* or NULL: codecell's own */
        char *url;      /* or NULL */
        char **headers; /* "Name: value", NULL-terminated */
        bool approval;  /* each of its tools waits for approval ("approval": "always") */
};

struct upstream;

/* Called (on the client's reader thread, no lock of the client held) after a
 * notifications/tools/list_changed, with the new list of tool objects as tools/list gave it. */
typedef void (*upstream_tools_listener)(struct upstream *u, const json_t *tools, void *userdata);

/* Takes the spec's contents (freed with the client). */
struct upstream *upstream_new(struct upstream_spec *spec);
struct upstream *upstream_ref(struct upstream *u);
/* The last reference shuts the server down (stdio: stdin closed, then SIGTERM, then SIGKILL). */
void upstream_unref(struct upstream *u);
const char *upstream_name(const struct upstream *u);
/* Whether its tools are marked for approval (the spec's approval). */
bool upstream_approval(const struct upstream *u);
void upstream_set_listener(struct upstream *u, upstream_tools_listener fn, void *userdata);

/* Starts and initialises the server and lists its tools, before deadline (now_ms() clock). */
int upstream_connect(struct upstream *u, double deadline, codecell_error *err);
/* The tools of the last tools/list (a new reference to an array of Tool objects), or NULL. */
json_t *upstream_tools(struct upstream *u);
/* The protocol revision the server agreed to, or NULL before the first connection. */
const char *upstream_protocol(struct upstream *u);

/* One tools/call of the upstream tool `tool` with arguments args_json. Ends by deadline, or
 * soon after *stop becomes true (the execution ended): then the server is sent
 * notifications/cancelled. Returns 0 with *ret_json (the unwrapped result, docs/tools.md), or
 * < 0 with *ret_error (both malloc'd). */
/* What a server reports of a call in progress (notifications/progress), on the client's reader
 * thread: "3/10 indexing" is the message. */
typedef void (*upstream_progress_fn)(const char *message, void *userdata);

int upstream_call(struct upstream *u, const char *tool, const char *args_json, double deadline,
                  const atomic_bool *stop, size_t max_answer, upstream_progress_fn progress,
                  void *progress_data, char **ret_json, char **ret_error);

/* The guest's value of a CallToolResult (docs/tools.md, "Results"): 0 with *ret_value (a new
 * reference), or < 0 with *ret_error (malloc'd) for isError and malformed results. */
int mcp_result_unwrap(const json_t *result, json_t **ret_value, char **ret_error);

#endif
