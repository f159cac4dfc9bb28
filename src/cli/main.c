/* codecell: the command-line tool. One file per verb; this one only dispatches. */
#include <stdio.h>
#include <string.h>

#include "codecell.h"
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
        "  help     this help, or a command's (codecell help run)\n"
        "\n"
        "Options:\n"
        "  -h, --help     show this help\n"
        "  -V, --version  print the version\n"
        "\n"
        "Exit codes: 0 ok, 1 guest error, 2 usage or configuration error, 3 limit hit\n"
        "(timeout, fuel_exhausted, memory_limit), 4 sandbox error.\n";

static int dispatch(int argc, char **argv);

/* `codecell help VERB` is `codecell VERB --help`. */
static int help(int argc, char **argv)
{
        if (argc < 2) {
                fputs(usage, stdout);
                return EXIT_OK;
        }
        if (argc > 2 || strcmp(argv[1], "help") == 0) {
                fprintf(stderr, "codecell help: expected one command (like: codecell help run)\n");
                return EXIT_USAGE;
        }
        char *verb_help[] = {argv[1], "--help", NULL};
        return dispatch(2, verb_help);
}

/* The command carries the library inside it (linked statically), so one number. */
static int version(void)
{
        printf("codecell %s\n", codecell_version());
        return EXIT_OK;
}

int main(int argc, char **argv)
{
        if (argc < 2) {
                fputs(usage, stderr);
                return EXIT_USAGE;
        }
        return dispatch(argc - 1, argv + 1);
}

/* argv[0] is the verb. */
static int dispatch(int argc, char **argv)
{
        const char *verb = argv[0];
        if (strcmp(verb, "-h") == 0 || strcmp(verb, "--help") == 0) {
                fputs(usage, stdout);
                return EXIT_OK;
        }
        if (strcmp(verb, "-V") == 0 || strcmp(verb, "--version") == 0)
                return version();
        if (strcmp(verb, "help") == 0)
                return help(argc, argv);
        if (strcmp(verb, "run") == 0)
                return cmd_run(argc, argv);
        if (strcmp(verb, "repl") == 0)
                return cmd_repl(argc, argv);
        if (strcmp(verb, "describe") == 0)
                return cmd_describe(argc, argv);
        if (strcmp(verb, "serve") == 0)
                return cmd_serve(argc, argv);
        if (strcmp(verb, "check") == 0)
                return cmd_check(argc, argv);
        fprintf(stderr, "codecell: unknown command \"%s\" (try: codecell --help)\n", verb);
        return EXIT_USAGE;
}
