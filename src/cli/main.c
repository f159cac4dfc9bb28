/* codecell: the command-line tool. One file per verb; this one only dispatches. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const char usage[] =
        "Usage: codecell COMMAND [OPTIONS]\n"
        "\n"
        "Run model-written code in a fresh Linux sandbox and get a structured result.\n"
        "\n"
        "Commands:\n"
        "  run      run one script in a fresh sandbox (codecell run --help)\n"
        "  check    report which isolation layers this host gives\n"
        "  repl     an interactive session whose state survives between entries\n"
        "  describe print the description a model sees for a cell\n"
        "  serve    serve the cells of a configuration file as MCP tools (stdio or HTTP)\n"
        "\n"
        "Exit codes: 0 ok, 1 guest error, 2 usage or configuration error, 3 limit hit\n"
        "(timeout, fuel_exhausted, memory_limit), 4 sandbox error.\n";

int main(int argc, char **argv)
{
        if (argc < 2) {
                fputs(usage, stderr);
                return EXIT_USAGE;
        }
        const char *verb = argv[1];
        if (strcmp(verb, "-h") == 0 || strcmp(verb, "--help") == 0 || strcmp(verb, "help") == 0) {
                fputs(usage, stdout);
                return EXIT_OK;
        }
        if (strcmp(verb, "run") == 0)
                return cmd_run(argc - 1, argv + 1);
        if (strcmp(verb, "repl") == 0)
                return cmd_repl(argc - 1, argv + 1);
        if (strcmp(verb, "describe") == 0)
                return cmd_describe(argc - 1, argv + 1);
        if (strcmp(verb, "serve") == 0)
                return cmd_serve(argc - 1, argv + 1);
        if (strcmp(verb, "check") == 0)
                return cmd_check(argc - 1, argv + 1);
        fprintf(stderr, "codecell: unknown command \"%s\" (try: codecell --help)\n", verb);
        return EXIT_USAGE;
}
