/* A configuration file of cells and host tools (docs/configuration.md), parsed whole into a
 * plain description before anything is created: every error, with the JSON path of the bad
 * key, is found while no cell exists, no MCP server runs and no interpreter was probed.
 * cellset.c then creates what the description says. */
#ifndef CODECELL_CONFIG_FILE_H
#define CODECELL_CONFIG_FILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "codecell.h"
#include "config.h"
#include "tools.h"
#include "upstream_tools.h"

/* One entry of a cell's "tools": a host tool of the file, or tools of one of its MCP servers
 * (which of them only the server's list, once started, can confirm). */
struct tool_ref {
        size_t host_tool;        /* its index in the file's "tools" (server NULL) */
        struct upstream *server; /* the MCP server's, held by the description's servers */
        char *which;             /* the server's tool, sanitised, or "*" for all of them */
        char at[64];             /* where the file names it: "cells[0].tools[2]" */
};

/* How the file offers a cell to the model, besides its configuration. */
struct cell_offer {
        char *name;           /* also its MCP tool name */
        char *summary;        /* the cell's "description" key, or "" */
        bool sessions;        /* the cell offers persistent sessions */
        bool default_session; /* a call without a session name runs in "default" */
};

struct cell_description {
        struct cell_offer offer;
        codecell_config *config;
        struct tool_ref *tools;
        size_t n_tools;
};

struct file_description {
        char *path;
        char *dir;                  /* the file's folder: relative commands resolve against it */
        json_t *root;               /* the file: each cell makes its own copies of host tools */
        struct mcp_servers servers; /* defined, not started */
        struct cell_description *cells;
        size_t n_cells;
};

/* Parses and checks the whole file at path (flags as codecell_cellset_load's). < 0 with err
 * naming the file and the JSON path of the first bad key; nothing is left then. */
int config_file_parse(const char *path, unsigned flags, struct file_description *ret,
                      codecell_error *err);
/* Accepts a zeroed description. */
void file_description_free(struct file_description *d);

#endif
