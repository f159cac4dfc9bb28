/* The verbs of the `codecell` command. Each returns the process exit code. */
#ifndef CODECELL_CLI_COMMANDS_H
#define CODECELL_CLI_COMMANDS_H

/* Exit codes, documented in --help and docs/cli.md. */
enum {
        EXIT_OK = 0,
        EXIT_GUEST_ERROR = 1,
        EXIT_USAGE = 2,
        EXIT_LIMIT = 3,
        EXIT_SANDBOX = 4,
};

int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_describe(int argc, char **argv);
int cmd_repl(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
