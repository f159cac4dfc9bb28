/* codecell describe: the cell's description exactly as the model will see it. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cell_flags.h"
#include "codecell.h"
#include "commands.h"

static const char usage[] =
        "Usage: codecell describe [--lang LANG] [--mount SRC:DST[:ro|rw]]... [--tools FILE]\n"
        "\n"
        "Prints the description a model sees for a cell with these mounts and tools:\n"
        "how to use it, the read-only and read-write folders, and each tool with its\n"
        "SB.call signature.\n"
        "\n"
        "Options:\n"
        "      --lang LANG          guest language: ruby (default) or python\n"
        "      --mount SRC:DST[:ro|rw]\n"
        "                           a host folder, as for codecell run; repeatable\n"
        "      --allow-subprocesses let the code run the system's programs (fork, exec\n"
        "                           of /usr); off by default\n"
        "      --tools FILE         host tools (docs/tools.md)\n"
        "  -h, --help               show this help\n"
        "\n"
        "Exit codes: 0 printed, 2 usage or configuration error.\n";

static const struct option options[] = {
        CELL_FLAG_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

int cmd_describe(int argc, char **argv)
{
        struct cell_flags f = {
                .who = "codecell describe", .lang = "ruby", .policy = CODECELL_POLICY_IGNORE};
        int c;
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
                if (cell_flags_take(&f, c, optarg))
                        continue;
                if (c == 'h') {
                        fputs(usage, stdout);
                        return EXIT_OK;
                }
                return bad_option(f.who, argv[optind - 1]);
        }
        if (optind < argc)
                return bad_option(f.who, argv[optind]);
        codecell_cell *cell = NULL;
        int exit_code = cell_from_flags(&f, &cell);
        if (exit_code == EXIT_OK)
                puts(codecell_cell_description(cell));
        codecell_cell_free(cell);
        return exit_code;
}
