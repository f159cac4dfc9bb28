/* codecell describe: the cell's description exactly as the model will see it. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cell_flags.h"
#include "codecell.h"
#include "commands.h"
#include "config_cell.h"
#include "option_errors.h"
#include "mcp.h"

/* The MCP tools of a configuration file, as tools/list shows them; only cell's when one is
 * named (the tool of a cell has the cell's name). */
static int describe_config(const char *who, const char *path, const char *cell, bool as_json)
{
        codecell_error err = {0};
        codecell_cellset *cells = NULL;
        size_t index = 0;
        if (cell) {
                int r = cell_from_config(who, path, cell, NULL, &cells, &index);
                if (r != EXIT_OK)
                        return r;
        } else if (!(cells = codecell_cellset_load(path, CODECELL_CELLSET_NO_POOL, &err))) {
                fprintf(stderr, "%s: %s\n", who, err.message);
                return err.kind == CODECELL_ERR_INVALID ? EXIT_USAGE : EXIT_SANDBOX;
        }
        struct mcp_server_options o = {.transport = "stdio"};
        struct mcp_server *server = mcp_server_new(cells, &o);
        json_t *tools = server ? mcp_server_tools(server) : NULL;
        int exit_code = tools ? EXIT_OK : EXIT_SANDBOX;
        for (size_t i = 0; cell && i < json_array_size(tools);) {
                const char *name =
                        json_string_value(json_object_get(json_array_get(tools, i), "name"));
                if (strcmp(name, codecell_cellset_name(cells, index)) == 0)
                        i++;
                else
                        json_array_remove(tools, i);
        }
        if (tools && as_json) {
                char *text = json_dumps(tools, JSON_INDENT(2));
                if (text)
                        puts(text);
                free(text);
        } else if (tools) {
                for (size_t i = 0; i < json_array_size(tools); i++) {
                        const json_t *t = json_array_get(tools, i);
                        printf("%s# tool \"%s\"\n\n%s\n", i ? "\n" : "",
                               json_string_value(json_object_get(t, "name")),
                               json_string_value(json_object_get(t, "description")));
                }
        }
        mcp_server_free(server);
        codecell_cellset_free(cells);
        return exit_code;
}

static const char usage[] =
        "Usage: codecell describe [--lang LANG] [--mount SRC:DST[:ro|rw|exec]]... [--tools FILE]\n"
        "                         [--interpreter PATH] [--library DIR[:ro|exec]]...\n"
        "       codecell describe --config FILE [--cell NAME] [--json]\n"
        "\n"
        "Prints the description a model sees for a cell with these mounts and tools:\n"
        "how to use it, the read-only and read-write folders, and each tool with its\n"
        "signature. With --config, the MCP tools of every cell of FILE exactly as\n"
        "codecell serve lists them (--json: the tools/list entries, schemas included);\n"
        "with --cell, only the tool of the cell NAME.\n"
        "\n"
        "Options:\n"
        "      --config FILE        cells, host tools and MCP servers (docs/configuration.md)\n"
        "      --cell NAME          with --config: only the cell NAME\n"
        "      --json               with --config: print the tools as JSON\n"
        "      --lang LANG          guest language: ruby (default) or python\n"
        "      --mount SRC:DST[:ro|rw|exec]\n"
        "                           a host folder, as for codecell run; repeatable\n"
        "      --allow-subprocesses let the code run the system's programs (fork, exec\n"
        "                           of /usr); off by default\n" CELL_FLAGS_HELP_ALLOW_NET
                CELL_FLAGS_HELP_INTERPRETER CELL_FLAGS_HELP_START
        "      --tools FILE         host tools and MCP servers (docs/tools.md)\n"
        "  -h, --help               show this help\n"
        "\n"
        "Exit codes: 0 printed, 2 usage or configuration error.\n";

enum { OPT_CONFIG = 0x300, OPT_JSON, OPT_CELL };

static const struct option options[] = {
        CELL_FLAG_OPTIONS,
        {"config", required_argument, NULL, OPT_CONFIG},
        {"json", no_argument, NULL, OPT_JSON},
        {"cell", required_argument, NULL, OPT_CELL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

int cmd_describe(int argc, char **argv)
{
        struct cell_flags f = {
                .who = "codecell describe", .lang = "ruby", .policy = CODECELL_POLICY_IGNORE};
        const char *config = NULL, *cell_name = NULL;
        bool as_json = false;
        int c;
        optind = 1;
        opterr = 0;
        for (int at = optind; (c = getopt_long(argc, argv, "+:h", options, NULL)) != -1;
             at = optind) {
                if (cell_flags_take(&f, c, optarg))
                        continue;
                if (c == OPT_CONFIG) {
                        config = optarg;
                        continue;
                }
                if (c == OPT_CELL) {
                        cell_name = optarg;
                        continue;
                }
                if (c == OPT_JSON) {
                        as_json = true;
                        continue;
                }
                if (c == 'h') {
                        fputs(usage, stdout);
                        return EXIT_OK;
                }
                return option_refused(f.who, c, argv[at]);
        }
        if (optind < argc)
                return extra_argument(f.who, argv[optind]);
        if (config && (f.n_mounts || f.tools || f.subprocesses || f.interpreter || f.n_libraries ||
                       strcmp(f.lang, "ruby") != 0)) {
                fprintf(stderr,
                        "%s: --config takes the cells from the file: no --lang, --mount, "
                        "--tools, --allow-subprocesses, --interpreter or --library with it\n",
                        f.who);
                return EXIT_USAGE;
        }
        if (cell_name && !config) {
                fprintf(stderr, "%s: --cell NAME needs --config FILE\n", f.who);
                return EXIT_USAGE;
        }
        if (config)
                return describe_config(f.who, config, cell_name, as_json);
        if (as_json) {
                fprintf(stderr, "%s: --json needs --config\n", f.who);
                return EXIT_USAGE;
        }
        codecell_cell *cell = NULL;
        int exit_code = cell_from_flags(&f, &cell);
        if (exit_code == EXIT_OK)
                puts(codecell_cell_description(cell));
        codecell_cell_free(cell);
        return exit_code;
}
