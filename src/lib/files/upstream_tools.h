/* The configuration's "mcp_servers" (config_mcp.c) and how their tools become a cell's host tools
 * (upstream_tools.c). */
#ifndef CODECELL_UPSTREAM_TOOLS_H
#define CODECELL_UPSTREAM_TOOLS_H

#include <jansson.h>
#include <stddef.h>

#include "codecell.h"
#include "upstream.h"

struct mcp_servers {
        struct upstream **list; /* a reference each */
        size_t n;
};

/* Every server of the file's "mcp_servers" object (NULL: none), checked whole, none started;
 * errors name the JSON path (path: the file, for them; dir: its folder, for relative commands
 * and cwd). Nothing is left on error. */
int mcp_servers_define(const json_t *obj, const char *path, const char *dir,
                       struct mcp_servers *ret, codecell_error *err);
/* Starts and lists each server before its deadline. On error the servers are left to
 * mcp_servers_free. */
int mcp_servers_start(struct mcp_servers *s, const char *path, codecell_error *err);
/* mcp_servers_define, then mcp_servers_start. */
int mcp_servers_load(const json_t *obj, const char *path, const char *dir, struct mcp_servers *ret,
                     codecell_error *err);
void mcp_servers_free(struct mcp_servers *s);
/* The server named by the first len bytes of name, or NULL. */
struct upstream *mcp_servers_find(const struct mcp_servers *s, const char *name, size_t len);

/* NULL, or what is wrong with the tools of u's last list (two names equal after sanitising),
 * written into buf. */
const char *upstream_collision(struct upstream *u, char *buf, size_t size);

/* 0 when u's last list has the tool which names ("*": any list), else < 0 with err. */
int upstream_offers(struct upstream *u, const char *which, codecell_error *err);
/* Adds to cell the tools of u named by which ("*" for all, else one sanitised tool name).
 * < 0 with err when which names no tool of u. */
int upstream_attach(codecell_cell *cell, struct upstream *u, const char *which,
                    codecell_error *err);
/* After list_changed: adds the tools of the new list that the cell does not have yet (a
 * removed tool stays listed; calling it gives the server's own error). */
void upstream_attach_new(codecell_cell *cell, struct upstream *u, const json_t *tools);

#endif
