/* The cells of a configuration file (codecell_cellset_load), created once the whole file has
 * been parsed and checked (config_file.c): its MCP servers are started, the tools the cells
 * take from them confirmed, then every cell is created and given its host tools. An error
 * then (a server that cannot be used, an interpreter that does not run) undoes all of it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cell.h"
#include "config_file.h"
#include "error.h"
#include "upstream_tools.h"

struct cellset_entry {
        struct cell_offer offer;
        codecell_cell *cell;
        json_t *mcp_all; /* names of the MCP servers whose every tool it takes ("NAME.*") */
};

struct codecell_cellset {
        struct cellset_entry *entries;
        size_t n;
        struct mcp_servers servers; /* the file's "mcp_servers", connected */
};

/* An MCP server's tool the file names, refused: the error names where. */
static int refuse_ref(const struct file_description *d, const struct tool_ref *ref,
                      const codecell_error *why, codecell_error *err)
{
        return err_set(err, CODECELL_ERR_INVALID, why->errno_value, "%s: %s: %s", d->path, ref->at,
                       why->message);
}

/* Every MCP server's tool the cells name is in its server's list: known only now that the
 * servers are started, and checked before any cell is created. */
static int check_server_tools(const struct file_description *d, codecell_error *err)
{
        for (size_t i = 0; i < d->n_cells; i++)
                for (size_t k = 0; k < d->cells[i].n_tools; k++) {
                        const struct tool_ref *ref = &d->cells[i].tools[k];
                        codecell_error e = {0};
                        if (ref->server && upstream_offers(ref->server, ref->which, &e) < 0)
                                return refuse_ref(d, ref, &e, err);
                }
        return 0;
}

static int create_cell(struct file_description *d, size_t i, struct cellset_entry *entry,
                       codecell_error *err)
{
        struct cell_description *c = &d->cells[i];
        codecell_error e = {0};
        entry->cell = codecell_cell_new(c->config, &e);
        /* An error that names the file already names the key too (an interpreter or library
         * folder, checked only now): it goes as it is. */
        if (!entry->cell && strncmp(e.message, d->path, strlen(d->path)) == 0)
                return err_set(err, e.kind, e.errno_value, "%s", e.message);
        if (!entry->cell)
                return err_set(err, e.kind, e.errno_value, "%s: cells[%zu]: %s", d->path, i,
                               e.message);
        entry->offer = c->offer; /* moved: the description's is freed */
        c->offer = (struct cell_offer){0};
        return 0;
}

/* Gives the cell the host tools its "tools" names: its own copy of each of the file's, and
 * the tools of its MCP servers. */
static int attach_tools(const struct file_description *d, const struct cell_description *c,
                        struct cellset_entry *entry, codecell_error *err)
{
        const json_t *defs = json_object_get(d->root, "tools");
        for (size_t k = 0; k < c->n_tools; k++) {
                const struct tool_ref *ref = &c->tools[k];
                int r = 0;
                if (!ref->server) {
                        struct tool *tool = NULL;
                        r = tool_from_json(json_array_get(defs, ref->host_tool), ref->host_tool,
                                           d->path, d->dir, TOOL_TIMEOUT_MAX_MS, &tool, err);
                        r = r ?: cell_add_tool(entry->cell, tool, err);
                        if (r < 0)
                                return r;
                        continue;
                }
                codecell_error e = {0};
                if (upstream_attach(entry->cell, ref->server, ref->which, &e) < 0)
                        return refuse_ref(d, ref, &e, err);
                if (strcmp(ref->which, "*") == 0) {
                        if (!entry->mcp_all && !(entry->mcp_all = json_array()))
                                return err_sys(err, ENOMEM, "cells");
                        json_array_append_new(entry->mcp_all,
                                              json_string(upstream_name(ref->server)));
                }
        }
        return 0;
}

/* After an MCP server's notifications/tools/list_changed: the cells that take all of its tools
 * get the new ones (and a new description). */
static void follow_tools(struct upstream *u, const json_t *tools, void *userdata)
{
        codecell_cellset *set = userdata;
        for (size_t i = 0; i < set->n; i++) {
                size_t k;
                const json_t *v;
                json_array_foreach(set->entries[i].mcp_all, k, v) {
                        if (strcmp(json_string_value(v), upstream_name(u)) == 0)
                                upstream_attach_new(set->entries[i].cell, u, tools);
                }
        }
}

/* The caps into every cell's configuration, before any cell exists: a cap only lowers. */
static int apply_caps(struct file_description *d, const codecell_cellset_caps *caps,
                      codecell_error *err)
{
        for (size_t i = 0; caps && i < d->n_cells; i++) {
                codecell_config *config = d->cells[i].config;
                for (int l = 0; l < CODECELL_LIMIT__COUNT; l++) {
                        uint64_t cap = caps->limits[l];
                        if (cap && cap < codecell_config_get_limit(config, (codecell_limit)l) &&
                            codecell_config_set_limit(config, (codecell_limit)l, cap, err) < 0)
                                return -EINVAL;
                }
                if (caps->raise_unsupported)
                        codecell_config_set_policy(config, CODECELL_POLICY_RAISE);
        }
        return 0;
}

codecell_cellset *codecell_cellset_load(const char *path, unsigned flags, codecell_error *err)
{
        return codecell_cellset_load_capped(path, flags, NULL, err);
}

codecell_cellset *codecell_cellset_load_capped(const char *path, unsigned flags,
                                               const codecell_cellset_caps *caps,
                                               codecell_error *err)
{
        struct file_description d;
        if (config_file_parse(path, flags, &d, err) < 0)
                return NULL;
        if (apply_caps(&d, caps, err) < 0) {
                file_description_free(&d);
                return NULL;
        }
        codecell_cellset *set = calloc(1, sizeof(*set));
        int r = set && (set->entries = calloc(d.n_cells, sizeof(*set->entries)))
                        ? 0
                        : err_sys(err, ENOMEM, "cells");
        if (r == 0) {
                /* The set holds the servers from now on, and stops them when it is freed. */
                set->servers = d.servers;
                d.servers = (struct mcp_servers){0};
                r = mcp_servers_start(&set->servers, d.path, err);
        }
        r = r ?: check_server_tools(&d, err);
        for (size_t i = 0; r == 0 && i < d.n_cells; i++) {
                set->n = i + 1;
                r = create_cell(&d, i, &set->entries[i], err);
        }
        for (size_t i = 0; r == 0 && i < set->n; i++)
                r = attach_tools(&d, &d.cells[i], &set->entries[i], err);
        for (size_t i = 0; r == 0 && i < set->servers.n; i++)
                upstream_set_listener(set->servers.list[i], follow_tools, set);
        file_description_free(&d);
        if (r < 0) {
                codecell_cellset_free(set);
                return NULL;
        }
        return set;
}
void codecell_cellset_free(codecell_cellset *set)
{
        if (!set)
                return;
        /* No list_changed reaches a cell being freed. */
        for (size_t i = 0; i < set->servers.n; i++)
                upstream_set_listener(set->servers.list[i], NULL, NULL);
        for (size_t i = 0; i < set->n; i++) {
                codecell_cell_free(set->entries[i].cell);
                free(set->entries[i].offer.name);
                free(set->entries[i].offer.summary);
                json_decref(set->entries[i].mcp_all);
        }
        free(set->entries);
        mcp_servers_free(&set->servers);
        free(set);
}

size_t codecell_cellset_size(const codecell_cellset *set)
{
        return set ? set->n : 0;
}

codecell_cell *codecell_cellset_cell(const codecell_cellset *set, size_t i)
{
        return set && i < set->n ? set->entries[i].cell : NULL;
}

const char *codecell_cellset_name(const codecell_cellset *set, size_t i)
{
        return set && i < set->n ? set->entries[i].offer.name : NULL;
}

const char *codecell_cellset_summary(const codecell_cellset *set, size_t i)
{
        return set && i < set->n ? set->entries[i].offer.summary : NULL;
}

bool codecell_cellset_sessions(const codecell_cellset *set, size_t i)
{
        return set && i < set->n && set->entries[i].offer.sessions;
}

bool codecell_cellset_default_session(const codecell_cellset *set, size_t i)
{
        return set && i < set->n && set->entries[i].offer.default_session;
}

int codecell_cellset_find(const codecell_cellset *set, const char *name)
{
        for (size_t i = 0; set && name && i < set->n; i++)
                if (strcmp(set->entries[i].offer.name, name) == 0)
                        return (int)i;
        return -1;
}
