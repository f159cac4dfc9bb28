/* Flags shared by the verbs that build a cell. */
#ifndef CODECELL_CLI_CELL_FLAGS_H
#define CODECELL_CLI_CELL_FLAGS_H

#include <stdbool.h>
#include <stdint.h>

#include "codecell.h"

/* SRC:DST[:ro|rw] → a mount on config. Prints one line naming the problem (prefixed by who)
 * and returns < 0 when it is bad. */
int add_mount_flag(const char *who, codecell_config *config, const char *spec, codecell_error *err);
/* What the verbs that build a cell take from their flags. */
struct cell_flags {
        const char *who; /* "codecell run": the prefix of every error line */
        const char *lang;
        const char *mounts[64];
        size_t n_mounts;
        const char *tools;
        const char *interpreter;
        const char *libraries[17]; /* DIR[:ro|exec]; one more than the library takes */
        size_t n_libraries;
        /* --allow-net HOST[:PORT]: the cell's network allowlist (docs/network.md); one more
         * than the cap, so that the library's own check words the refusal. */
        const char *allow_net[65];
        size_t n_allow_net;
        bool subprocesses;
        const char *start;         /* "fork" or "exec"; NULL: exec (one sandbox per process) */
        const char *output_folder; /* in the sandbox, or NULL */
        const char *output_flag;   /* as given: "--output-folder" or "--image-folder" */
        codecell_policy policy;
        uint64_t limits[CODECELL_LIMIT__COUNT];        /* 0: the default */
        const char *limit_text[CODECELL_LIMIT__COUNT]; /* as given, for error lines */
};

/* The options every cell-building verb takes, for its getopt_long table. */
enum {
        CELL_OPT_LANG = 200,
        CELL_OPT_MOUNT,
        CELL_OPT_TOOLS,
        CELL_OPT_SUBPROCESSES,
        CELL_OPT_INTERPRETER,
        CELL_OPT_LIBRARY,
        CELL_OPT_START,
        CELL_OPT_ALLOW_NET
};
/* clang-format off */
#define CELL_FLAG_OPTIONS                                                                          \
        {"lang", required_argument, NULL, CELL_OPT_LANG},                                          \
        {"mount", required_argument, NULL, CELL_OPT_MOUNT},                                        \
        {"tools", required_argument, NULL, CELL_OPT_TOOLS},                                        \
        {"allow-subprocesses", no_argument, NULL, CELL_OPT_SUBPROCESSES},                          \
        {"interpreter", required_argument, NULL, CELL_OPT_INTERPRETER},                            \
        {"library", required_argument, NULL, CELL_OPT_LIBRARY},                                    \
        {"start", required_argument, NULL, CELL_OPT_START},                                        \
        {"allow-net", required_argument, NULL, CELL_OPT_ALLOW_NET}
/* clang-format on */

/* The help lines of --allow-net, the same in every verb that builds a cell. */
#define CELL_FLAGS_HELP_ALLOW_NET                                                                  \
        "      --allow-net HOST[:PORT]\n"                                                          \
        "                           let the code reach HOST over HTTP and HTTPS through\n"         \
        "                           the engine's proxy (port 80 and 443 without PORT;\n"           \
        "                           *.DOMAIN for its subdomains); repeatable; without it,\n"       \
        "                           no network (docs/network.md)\n"

/* The help lines of --interpreter and --library, the same in every verb that builds a cell. */
#define CELL_FLAGS_HELP_INTERPRETER                                                                \
        "      --interpreter PATH   the interpreter that runs the code (default\n"                 \
        "                           /usr/bin/ruby or /usr/bin/python3); checked to be\n"           \
        "                           that language\n"                                               \
        "      --library DIR[:ro|exec]\n"                                                          \
        "                           a library folder, read-only on the load path (a\n"             \
        "                           virtualenv, site-packages, gem home, .rb folder;\n"            \
        "                           :exec, its C extensions may load); repeatable\n"

/* The help lines of --start, the same in every verb that builds a cell. */
#define CELL_FLAGS_HELP_START                                                                      \
        "      --start fork|exec    how the sandbox is made: exec (the default here) boots\n"      \
        "                           a fresh interpreter; fork copies one the cell booted\n"        \
        "                           once (what serve's cells do), the faster way when one\n"       \
        "                           cell makes many sandboxes\n"

/* A limit flag's value into f: a duration ("5s") when duration, else a size ("256M"). < 0 when
 * it does not parse (the caller words the error). */
int cell_flags_limit(struct cell_flags *f, codecell_limit limit, bool duration, const char *arg);
/* Takes --lang, --mount, --tools, --allow-subprocesses, --interpreter or --library into f;
 * false for any other option. */
bool cell_flags_take(struct cell_flags *f, int opt, const char *arg);

/* Builds the cell the flags describe, without a pool (the command-line verbs run and exit).
 * On failure prints one line naming the bad input and returns the exit code (2 for bad input,
 * 4 when the host cannot make the sandbox); 0 with *ret on success. */
int cell_from_flags(const struct cell_flags *f, codecell_cell **ret);

/* The guest language for a script file, from its extension; ruby when it has none we know. */
const char *language_of(const char *path);

#endif
