/* The host tools of a cell (DESIGN §8) and their table (tools.c): each tool a C handler, a host
 * command run outside the sandbox (its spec and its call: command_tool.h, in base/) or a tool of
 * an upstream MCP server; the rules for their names and input schemas; their descriptions for
 * the guest. The table only grows, so a tool found once stays valid for the cell's life. A
 * command tool read from its JSON (tool_from_json and the two after it) is files/tools_file.c's
 * work, declared here beside the tool it makes. */
#ifndef CODECELL_TOOLS_H
#define CODECELL_TOOLS_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "codecell.h"
#include "command_tool.h"
#include "runtime.h"

struct upstream;

/* A tool of an upstream MCP server (upstream.h): where calls go, and what its tools/list said
 * beyond the name and the input schema. */
struct upstream_link {
        struct upstream *server; /* a reference */
        char *tool;              /* the server's own name of the tool ("get-sum") */
        char *binding;           /* the name in the guest's bindings ("get_sum") */
        json_t *output_schema;   /* or NULL */
        json_t *annotations;     /* or NULL: readOnlyHint, destructiveHint … */
};

struct tool {
        char *name;
        char *description;             /* never NULL */
        json_t *input_schema;          /* a JSON Schema object */
        codecell_tool_handler handler; /* or NULL for a command or upstream tool */
        void *userdata;
        struct command_spec command;
        struct upstream_link upstream; /* .server NULL: not an upstream tool */
        /* Each call waits for the cell's approval callback first (approval.c). Set once,
         * never cleared: read without the table's lock. */
        atomic_bool approval;
};

struct tool_table {
        pthread_mutex_t lock;
        pthread_cond_t idle;
        struct tool **tools;
        size_t n;
        /* Calls handed to a helper thread that has not yet let go of the tool's data. A helper
         * may outlive its execution (a hanging handler), so freeing the table waits for this
         * to reach 0: a C handler lets go before it is called, a command once it returns. */
        unsigned holds;
        /* SB.call calls that reached the cell, and those refused before any tool ran (unknown
         * name, over the per-run count, arguments too large): codecell_cell_info. */
        atomic_ullong calls, refused;
        json_t *bindings; /* of the MCP tools, or NULL: tool_table_bindings() */
        /* Asked before a marked tool runs (codecell_cell_set_approval); under lock. */
        codecell_approval_fn approval_fn;
        void *approval_userdata;
};

void tool_table_init(struct tool_table *t);
void tool_table_free(struct tool_table *t);
/* Takes ownership of tool (freed on failure). */
int tool_table_add(struct tool_table *t, struct tool *tool, codecell_error *err);
const struct tool *tool_table_find(struct tool_table *t, const char *name);
void tool_table_hold(struct tool_table *t);
void tool_table_release(struct tool_table *t);

/* NULL when name is a valid tool name, else what is wrong with it. */
const char *tool_name_problem(const char *name);
/* The schema's "required" names key. */
bool tool_schema_requires(const json_t *schema, const char *key);
/* Checks that a schema is a JSON Schema object for arguments, and each property's schema one
 * the host can check and the model can read (a known type, "items" and "properties" schemas,
 * "required" naming defined properties); NULL, or what is wrong (in buf, or static). */
const char *tool_schema_problem(const json_t *schema, char *buf, size_t size);
void tool_free(struct tool *tool);
/* The "approval" key of a tool or an MCP server in a file: absent or "never" (false), "always"
 * (true). NULL, or what is wrong with it. */
const char *tool_approval_from_json(const json_t *value, bool *ret);
/* Marks the tool named as needing approval; false when the table has none of that name. */
bool tool_table_require_approval(struct tool_table *t, const char *name);

/* A tool's own timeout may not exceed this, nor the tool_call_ms of a cell that takes it. */
#define TOOL_TIMEOUT_MAX_MS 3600000ULL

/* One command tool from its JSON object (docs/tools.md), tools[i] of the file at path (for
 * errors); a relative command resolves against dir. */
int tool_from_json(const json_t *obj, size_t i, const char *path, const char *dir,
                   uint64_t max_call_ms, struct tool **ret, codecell_error *err);
/* Every tool of a "tools" array, checked whole (names unique). *ret is a calloc'd array of
 * *ret_n tools, freed with tools_free_list(). */
int tools_from_json(const json_t *list, const char *path, const char *dir, uint64_t max_call_ms,
                    struct tool ***ret, size_t *ret_n, codecell_error *err);
void tools_free_list(struct tool **tools, size_t n);

/* tool_descriptions.c: appends the "## Tools" section for every tool to the description f
 * (description.c). */
void tools_describe(struct tool_table *t, const struct tool_syntax *syntax, uint64_t concurrency,
                    FILE *f);

/* The description of one tool (its "### name" entry), for SB.describe; NULL if none. */
char *tool_describe_text(struct tool_table *t, const struct tool_syntax *syntax, const char *name);
/* What the guest's prelude binds for MCP tools: {"server": {"binding": "server.binding"}}, a
 * new reference, or NULL when the cell has none. */
json_t *tool_table_bindings(struct tool_table *t);

#endif
