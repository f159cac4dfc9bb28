/* codecell repl: an interactive session, for a person trying the sandbox. Each entry is one
 * eval in a persistent session; its output, value or error is printed as `run` prints them. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cell_flags.h"
#include "codecell.h"
#include "commands.h"
#include "option_errors.h"
#include "result_print.h"

static const char usage[] =
        "Usage: codecell repl [OPTIONS]\n"
        "\n"
        "Reads code from stdin and evaluates each entry in one persistent sandboxed\n"
        "session: variables, definitions and files in /work survive from one entry to\n"
        "the next. An entry is one line; end a line with \\ to continue it on the next,\n"
        "and in Python a line ending in ':' opens a block that an empty line closes.\n"
        "Type .reset to start the session afresh, .exit (or end of input) to leave.\n"
        "\n"
        "Options:\n"
        "      --session NAME       the session's name (default: repl)\n"
        "      --lang LANG          ruby (default) or python\n"
        "      --mount SRC:DST[:ro|rw|exec]\n"
        "                           a host folder, as for codecell run; repeatable\n"
        "      --allow-subprocesses let the code run the system's programs (fork, exec\n"
        "                           of /usr); off by default\n" CELL_FLAGS_HELP_INTERPRETER
                CELL_FLAGS_HELP_START "      --tools FILE         host tools (docs/tools.md)\n"
        "      --timeout DURATION   wall-clock limit of each entry (default 30s)\n"
        "      --memory SIZE        memory limit of the session (default 256M)\n"
        "  -h, --help               show this help\n"
        "\n"
        "Exit codes: 0 at the end of input, 2 usage or configuration error,\n"
        "4 the session could not be started.\n";

enum { OPT_SESSION = 256, OPT_TIMEOUT, OPT_MEMORY };

static const struct option options[] = {
        {"session", required_argument, NULL, OPT_SESSION},
        CELL_FLAG_OPTIONS,
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

/* One entry from stdin: a line, continued by a trailing backslash, or a block of the language
 * (Python's, after a line ending in ':'). NULL at the end of input. */
static char *read_entry(FILE *in, const char *language, bool prompt)
{
        char *entry = NULL, *line = NULL;
        size_t entry_len = 0, cap = 0;
        bool block = false;
        if (prompt)
                fputs("codecell> ", stdout);
        fflush(stdout);
        for (;;) {
                ssize_t n = getline(&line, &cap, in);
                if (n < 0)
                        break;
                if (n > 0 && line[n - 1] == '\n')
                        line[--n] = '\0';
                bool more = n > 0 && line[n - 1] == '\\';
                if (more)
                        line[--n] = '\0';
                if (entry_len == 0 && codecell_language_opens_block(language, line))
                        block = true;
                if (block && n == 0)
                        break; /* an empty line closes a block */
                char *grown = realloc(entry, entry_len + (size_t)n + 2);
                if (!grown)
                        break;
                entry = grown;
                memcpy(entry + entry_len, line, (size_t)n);
                entry_len += (size_t)n;
                entry[entry_len++] = '\n';
                entry[entry_len] = '\0';
                if (!more && !block)
                        break;
                if (prompt)
                        fputs("   ...> ", stdout);
                fflush(stdout);
        }
        free(line);
        return entry;
}

int cmd_repl(int argc, char **argv)
{
        const char *session = "repl";
        struct cell_flags f = {
                .who = "codecell repl", .lang = "ruby", .policy = CODECELL_POLICY_WARN};
        int c;
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+:h", options, NULL)) != -1) {
                if (cell_flags_take(&f, c, optarg))
                        continue;
                switch (c) {
                case OPT_SESSION:
                        session = optarg;
                        break;
                case OPT_TIMEOUT:
                case OPT_MEMORY: {
                        bool duration = c == OPT_TIMEOUT;
                        codecell_limit limit =
                                duration ? CODECELL_LIMIT_TIMEOUT_MS : CODECELL_LIMIT_MEMORY_BYTES;
                        if (cell_flags_limit(&f, limit, duration, optarg) < 0) {
                                fprintf(stderr, "codecell repl: bad %s \"%s\"\n",
                                        duration ? "duration" : "size", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                }
                case 'h':
                        fputs(usage, stdout);
                        return EXIT_OK;
                default:
                        return option_refused(f.who, c, argv);
                }
        }
        if (optind < argc)
                return extra_argument(f.who, argv[optind]);
        codecell_error err = {0};
        codecell_cell *cell = NULL;
        int exit_code = cell_from_flags(&f, &cell);
        if (exit_code != EXIT_OK)
                return exit_code;
        bool prompt = isatty(STDIN_FILENO);
        char *entry;
        while ((entry = read_entry(stdin, f.lang, prompt))) {
                size_t len = strlen(entry);
                while (len > 0 && (entry[len - 1] == '\n' || entry[len - 1] == ' '))
                        entry[--len] = '\0';
                if (strcmp(entry, ".exit") == 0) {
                        free(entry);
                        break;
                }
                if (strcmp(entry, ".reset") == 0) {
                        (void)codecell_session_close(cell, session, NULL);
                        puts("(session reset)");
                        free(entry);
                        continue;
                }
                if (len == 0) {
                        free(entry);
                        continue;
                }
                codecell_result *res = NULL;
                if (codecell_session_eval(cell, session, entry, len, &res, &err) < 0) {
                        fprintf(stderr, "codecell repl: %s\n", err.message);
                } else {
                        print_result(res);
                        fflush(stdout);
                        fflush(stderr);
                }
                codecell_result_free(res);
                free(entry);
        }
        codecell_cell_free(cell);
        return exit_code;
}
