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
        "      --tools FILE         host tools (docs/tools.md)\n"
        "  -h, --help               show this help\n"
        "\n"
        "Exit codes: 0 printed, 2 usage or configuration error.\n";

enum { OPT_LANG = 256, OPT_MOUNT, OPT_TOOLS };

static const struct option options[] = {
        {"lang", required_argument, NULL, OPT_LANG},
        {"mount", required_argument, NULL, OPT_MOUNT},
        {"tools", required_argument, NULL, OPT_TOOLS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

int cmd_describe(int argc, char **argv)
{
        const char *lang = "ruby", *tools = NULL;
        const char *mounts[64];
        size_t n_mounts = 0;
        int c;
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
                switch (c) {
                case OPT_LANG:
                        lang = optarg;
                        break;
                case OPT_MOUNT:
                        if (n_mounts < sizeof(mounts) / sizeof(mounts[0]))
                                mounts[n_mounts++] = optarg;
                        break;
                case OPT_TOOLS:
                        tools = optarg;
                        break;
                case 'h':
                        fputs(usage, stdout);
                        return EXIT_OK;
                default:
                        fprintf(stderr,
                                "codecell describe: unknown option or missing value \"%s\" "
                                "(see codecell describe --help)\n",
                                argv[optind - 1]);
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "codecell describe: unexpected argument \"%s\"\n", argv[optind]);
                return EXIT_USAGE;
        }
        int exit_code = EXIT_USAGE;
        codecell_error err = {0};
        codecell_cell *cell = NULL;
        codecell_config *config = codecell_config_new(lang, &err);
        if (!config) {
                fprintf(stderr, "codecell describe: --lang: %s\n", err.message);
                return EXIT_USAGE;
        }
        codecell_config_set_policy(config, CODECELL_POLICY_IGNORE);
        (void)codecell_config_set_pool(config, 0, &err);
        for (size_t i = 0; i < n_mounts; i++)
                if (add_mount_flag("codecell describe", config, mounts[i], &err) < 0)
                        goto out;
        cell = codecell_cell_new(config, &err);
        if (!cell) {
                fprintf(stderr, "codecell describe: %s\n", err.message);
                exit_code = err.kind == CODECELL_ERR_INVALID ? EXIT_USAGE : EXIT_SANDBOX;
                goto out;
        }
        if (tools && codecell_cell_load_tools(cell, tools, &err) < 0) {
                fprintf(stderr, "codecell describe: --tools %s\n", err.message);
                goto out;
        }
        puts(codecell_cell_description(cell));
        exit_code = EXIT_OK;
out:
        codecell_cell_free(cell);
        codecell_config_free(config);
        return exit_code;
}
