/* The configuration object behind codecell_config, shared by cell.c and the sandbox. */
#ifndef CODECELL_CONFIG_H
#define CODECELL_CONFIG_H

#include <jansson.h>

#include "codecell.h"
#include "runtime.h"

struct cc_mount {
        char *source; /* canonical absolute host path of a directory */
        char *dest;   /* normalized absolute path inside the sandbox */
        bool read_write;
        bool exec;         /* read-only, and libraries on it may be mapped executable */
        char *description; /* never NULL; may be "" */
};

/* A library folder: read-only in the sandbox, at /codecell/lib/<index>, its load paths on the
 * interpreter's (interpreter.c finds them). */
struct cc_library {
        char *source; /* canonical absolute host path of a directory */
        bool exec;    /* native code on it may be loaded */
        char *where;  /* "cells.json: cells[0].libraries[1]" for errors, or NULL */
};

/* Library folders a cell takes at most. */
#define CONFIG_LIBRARIES_MAX 16
/* Names a cell's hand-written list of libraries holds at most. */
#define CONFIG_LISTED_LIBRARIES_MAX 64

struct codecell_config {
        const struct runtime *runtime;
        struct cc_mount *mounts;
        size_t n_mounts;
        uint64_t limits[CODECELL_LIMIT__COUNT];
        codecell_policy policy;
        size_t pool;          /* sandboxes standing by */
        bool subprocesses;    /* the guest may fork and exec the system's programs */
        codecell_start start; /* how sandboxes are made: copies of a zygote, or fresh execs */
        char *output_folder;  /* where files the code writes come back from, or NULL */
        /* The interpreter's canonical absolute host path, or NULL: runtime->interpreter; and
         * where it came from, for errors ("cells.json: cells[0].interpreter"), or NULL. */
        char *interpreter;
        char *interpreter_where;
        struct cc_library *libraries;
        size_t n_libraries;
        /* The libraries the description lists, by the names the code loads them by
         * ("numpy", "net/http"), as the configuration wrote them: an array of strings, or
         * NULL to list what the interpreter's probe finds. Each must load when the cell is
         * made (library_check.h). listed_where: "cells.json: cells[0].listed_libraries", for
         * errors, or NULL. */
        json_t *listed_libraries;
        char *listed_where;
        /* The cell's network policy (config_network.c), an object kept as written and checked
         * whole when it was set, and the proxy's parse of it; both NULL: no network, as every
         * cell had before. */
        json_t *network;
        struct egress_policy *network_policy;
};

/* Why name cannot be in a hand-written list of libraries ("must be ..."), or NULL when it can. */
const char *config_listed_library_problem(const char *name);

/* Whether the cell's sandboxes are forked from a zygote: CODECELL_START_FORK, and the fork
 * server was built into this library (a binding built without a compiler for it execs). */
bool config_forks(const codecell_config *c);

/* codecell_config_set_interpreter() and codecell_config_add_library(), with errors worded for
 * a configuration file when `where` names the JSON path ("cells[0].libraries[1]"). */
int config_set_interpreter(codecell_config *c, const char *path, const char *where,
                           codecell_error *err);
int config_add_library(codecell_config *c, const char *path, codecell_mount_mode mode,
                       const char *where, codecell_error *err);

/* codecell_config_add_mount(), with errors worded for a configuration file when `where` names
 * the mount's JSON path ("cells[0].mounts[1]"). */
int config_add_mount(codecell_config *c, const char *source, const char *dest,
                     codecell_mount_mode mode, const char *description, const char *where,
                     codecell_error *err);
/* What is wrong with value for a (valid) limit, or NULL; buf holds the text when needed. */
const char *config_limit_problem(codecell_limit limit, uint64_t value, char *buf, size_t size);

/* The cell's network policy, or NULL: a "network cell" has one (proxy_listener.h). */
const json_t *config_network(const codecell_config *c);
/* The same as the proxy reads it (egress_policy.h). */
const struct egress_policy *config_network_policy(const codecell_config *c);
/* codecell_config_set_network() with the object parsed already (copied), or NULL. */
int config_set_network_json(codecell_config *c, const json_t *policy, const char *where,
                            codecell_error *err);

/* A deep copy, for the cell to own. NULL when out of memory. */
codecell_config *config_copy(const codecell_config *config);

#endif
