/* codecell repl: an interactive session, for a person trying the sandbox. Each entry is one
 * eval in a persistent session; its output, value or error is printed as `run` prints them.
 * At a terminal: a banner, prompts, line editing and history (repl_line.c), entries that go
 * on while a block is open (repl_entry.c), Ctrl-C that interrupts the code and keeps the
 * session (repl_interrupt.c). From a pipe: the same entries, without the rest. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cell_flags.h"
#include "config_cell.h"
#include "codecell.h"
#include "commands.h"
#include "option_errors.h"
#include "repl_entry.h"
#include "repl_interrupt.h"
#include "repl_line.h"
#include "result_print.h"

#define WHO "codecell repl"
#define PROMPT "codecell> "
#define CONTINUED "   ...> "

static const char usage[] =
        "Usage: codecell repl [OPTIONS]\n"
        "       codecell repl --config FILE [--cell NAME] [--session NAME]\n"
        "\n"
        "Reads code from stdin and evaluates each entry in one persistent sandboxed\n"
        "session: variables, definitions and files in /work survive from one entry to\n"
        "the next. An entry goes on while a block, bracket or string is open (Ruby's\n"
        "def ... end, do ... end; Python's line ending in ':' opens a block that an\n"
        "empty line closes); a line ending in \\ goes on too. At a terminal, lines are\n"
        "edited (arrows, history in ~/.local/state/codecell), Ctrl-C interrupts the\n"
        "running code and keeps the session (the third stops it, losing the state), or\n"
        "drops the line at the prompt. Type .help for the commands, .reset to start the\n"
        "session afresh, .exit (or Ctrl-D, end of input) to leave.\n"
        "\n"
        "Options:\n"
        "      --session NAME       the session's name (default: repl)\n"
        "      --config FILE        use a cell of a configuration file (its language,\n"
        "                           mounts, tools and limits); instead of the options\n"
        "                           below, but --timeout and --memory, which only narrow\n"
        "                           the cell's limits beside it\n"
        "      --cell NAME          which cell of FILE (not needed when it has one)\n"
        "      --lang LANG          ruby (default) or python\n"
        "      --mount SRC:DST[:ro|rw|exec]\n"
        "                           a host folder, as for codecell run; repeatable\n"
        "      --allow-subprocesses let the code run the system's programs (fork, exec\n"
        "                           of /usr); off by default\n" CELL_FLAGS_HELP_ALLOW_NET
                CELL_FLAGS_HELP_INTERPRETER CELL_FLAGS_HELP_START
        "      --tools FILE         host tools (docs/tools.md)\n"
        "      --timeout DURATION   wall-clock limit of each entry (default 30s)\n"
        "      --memory SIZE        memory limit of the session (default 256M)\n"
        "  -h, --help               show this help\n"
        "\n"
        "Exit codes: 0 at .exit or the end of input (whatever the entries did), 2 usage\n"
        "or configuration error (a bad session name too), 4 the cell could not be made,\n"
        "or at a terminal its session could not be started.\n";

static const char help_text[] =
        ".help    this help\n"
        ".reset   end the session and start a fresh one: variables, definitions,\n"
        "         loaded libraries and files in /work are gone\n"
        ".exit    leave (Ctrl-D on an empty line too)\n"
        "An entry runs once it is whole: while a block, bracket or string is open the\n"
        "prompt is \"" CONTINUED "\" (in Python an empty line ends a block); a line\n"
        "ending in \\ goes on too. Ctrl-C while code runs interrupts it (Interrupt,\n"
        "KeyboardInterrupt) and the session keeps its state; a third Ctrl-C stops it,\n"
        "which ends the session. Ctrl-C at the prompt drops the entry.\n";

enum { OPT_SESSION = 256, OPT_TIMEOUT, OPT_MEMORY, OPT_CONFIG, OPT_CELL };

static const struct option options[] = {
        {"session", required_argument, NULL, OPT_SESSION},
        {"config", required_argument, NULL, OPT_CONFIG},
        {"cell", required_argument, NULL, OPT_CELL},
        CELL_FLAG_OPTIONS,
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

/* What each language's banner shows, and how its session says its version without leaving a
 * name behind in the session's globals. */
static const struct language {
        const char *name, *shown, *version_code;
        bool echo_null; /* irb shows nil; Python's REPL shows no None */
} languages[] = {
        {"ruby", "Ruby", "RUBY_VERSION", true},
        {"python", "Python", "__import__('platform').python_version()", false},
};

struct repl {
        codecell_cell *cell;
        const char *session;
        const struct language *lang;
        struct repl_line *in;
};

static const struct language *language_named(const char *name)
{
        for (size_t i = 0; i < sizeof(languages) / sizeof(languages[0]); i++)
                if (strcmp(languages[i].name, name) == 0)
                        return &languages[i];
        return &languages[0];
}

/* One eval, interruptible by Ctrl-C: 0, or the exit code when the engine refused it (< 0 from
 * codecell_session_eval: a bad session name, too many sessions). */
static int eval(struct repl *r, const char *code, codecell_result **ret_res, bool live)
{
        codecell_error err = {0};
        codecell_cancel *cancel = codecell_cancel_new(&err);
        codecell_run_options o = {.cancel = cancel, .output = live ? print_live_output : NULL};
        /* The live output is written to the fds: what stdio holds goes first. */
        fflush(stdout);
        fflush(stderr);
        (void)repl_interrupts_target(cancel);
        int rc = codecell_session_eval_with(r->cell, r->session, code, strlen(code), &o, ret_res,
                                            &err);
        /* The terminal echoed "^C" where the cursor was: the error goes below it. */
        if (repl_interrupts_target(NULL) > 0)
                putchar('\n');
        codecell_cancel_free(cancel);
        if (rc < 0) {
                fprintf(stderr, WHO ": %s\n", err.message);
                return err.kind == CODECELL_ERR_INVALID ? EXIT_USAGE : EXIT_SANDBOX;
        }
        return EXIT_OK;
}

/* The session is started at once: a bad name or a kernel that cannot start ends the REPL
 * before any entry (an entry's own failure never does). At a terminal it says its version for
 * the banner. */
static int start_session(struct repl *r, bool show_banner)
{
        codecell_result *res = NULL;
        int rc = eval(r, r->lang->version_code, &res, false);
        if (rc != EXIT_OK)
                return rc;
        if (codecell_result_status(res) != CODECELL_STATUS_OK) {
                print_outcome(res);
                codecell_result_free(res);
                fprintf(stderr, WHO ": the session could not be started\n");
                return EXIT_SANDBOX;
        }
        if (!show_banner) {
                codecell_result_free(res);
                return EXIT_OK;
        }
        json_t *v = json_loads(codecell_result_value(res), JSON_DECODE_ANY, NULL);
        printf("codecell %s: %s %s, session \"%s\" (.help for help, .exit or Ctrl-D to leave)\n",
               codecell_version(), r->lang->shown, json_is_string(v) ? json_string_value(v) : "?",
               r->session);
        json_decref(v);
        codecell_result_free(res);
        return EXIT_OK;
}

/* A line continued with a backslash: the backslash stays, since both languages read
 * backslash-newline as a continuation too (and inside a string literal it means something). */
static bool ends_with_backslash(const char *line)
{
        size_t n = strlen(line);
        return n > 0 && line[n - 1] == '\\';
}

/* A line of its own that is one of the commands (only as an entry's first line). */
static bool is_command(const char *line)
{
        size_t n = strlen(line);
        while (n > 0 && line[n - 1] == ' ')
                n--;
        if (n < 2 || line[0] != '.')
                return false;
        for (size_t i = 1; i < n; i++)
                if (line[i] < 'a' || line[i] > 'z')
                        return false;
        return true;
}

static bool append(char **entry, size_t *len, const char *line)
{
        size_t n = strlen(line);
        char *grown = realloc(*entry, *len + n + 2);
        if (!grown)
                return false;
        memcpy(grown + *len, line, n);
        *len += n;
        grown[(*len)++] = '\n';
        grown[*len] = '\0';
        *entry = grown;
        return true;
}

/* One entry: lines until the language calls it whole (a command is one line). READ_END at
 * the end of input with nothing read; what was read before the end is an entry. */
static enum repl_read read_entry(struct repl *r, char **ret_entry)
{
        char *entry = NULL, *line = NULL;
        size_t len = 0;
        *ret_entry = NULL;
        for (;;) {
                enum repl_read got = repl_line_read(r->in, entry ? CONTINUED : PROMPT, &line);
                if (got == READ_CLEARED) {
                        free(entry);
                        return READ_CLEARED;
                }
                if (got == READ_END) {
                        *ret_entry = entry;
                        return entry ? READ_LINE : READ_END;
                }
                repl_line_remember(r->in, line);
                bool cmd = !entry && is_command(line), more = ends_with_backslash(line);
                bool ok = append(&entry, &len, line);
                bool empty = !*line;
                free(line);
                if (!ok || cmd)
                        break;
                if (more)
                        continue;
                enum repl_entry state = repl_entry_state(r->lang->name, entry);
                if (state == ENTRY_WHOLE || (state == ENTRY_BLOCK && empty))
                        break;
        }
        *ret_entry = entry;
        return READ_LINE;
}

/* A command; false for .exit. */
static bool command(struct repl *r, const char *entry)
{
        if (strcmp(entry, ".exit") == 0)
                return false;
        if (strcmp(entry, ".reset") == 0) {
                (void)codecell_session_close(r->cell, r->session, NULL);
                puts("(session reset)");
        } else if (strcmp(entry, ".help") == 0) {
                fputs(help_text, stdout);
        } else {
                printf("unknown command %s (.help lists them)\n", entry);
        }
        return true;
}

static int loop(struct repl *r)
{
        char *entry;
        enum repl_read got;
        while ((got = read_entry(r, &entry)) != READ_END) {
                if (got == READ_CLEARED)
                        continue;
                size_t len = strlen(entry);
                while (len > 0 && (entry[len - 1] == '\n' || entry[len - 1] == ' '))
                        entry[--len] = '\0';
                if (is_command(entry)) {
                        bool go_on = command(r, entry);
                        free(entry);
                        if (!go_on)
                                break;
                        continue;
                }
                codecell_result *res = NULL;
                /* An entry the engine refuses (not UTF-8, too large) was said; the next may do. */
                if (len > 0)
                        (void)eval(r, entry, &res, true);
                free(entry);
                if (res) {
                        print_outcome_of(res, r->lang->echo_null);
                        fflush(stdout);
                        fflush(stderr);
                }
                codecell_result_free(res);
        }
        return EXIT_OK;
}

/* The cell: from the flags, or the configuration file's, whose sessions must be on. */
static int make_cell(const struct cell_flags *f, const char *config, const char *cell_name,
                     codecell_cellset **ret_set, codecell_cell **ret_cell)
{
        if (!config)
                return cell_from_flags(f, ret_cell);
        size_t i = 0;
        int rc = cell_from_config_narrowed(f, config, cell_name, ret_set, &i);
        if (rc != EXIT_OK)
                return rc;
        *ret_cell = codecell_cellset_cell(*ret_set, i);
        if (!codecell_cellset_sessions(*ret_set, i)) {
                fprintf(stderr, WHO ": cell %s of %s has sessions turned off\n",
                        codecell_cellset_name(*ret_set, i), config);
                return EXIT_USAGE;
        }
        return EXIT_OK;
}

static int parse(int argc, char **argv, struct cell_flags *f, const char **session,
                 const char **config, const char **cell_name)
{
        int c;
        optind = 1;
        opterr = 0;
        for (int at = optind; (c = getopt_long(argc, argv, "+:h", options, NULL)) != -1;
             at = optind) {
                if (cell_flags_take(f, c, optarg))
                        continue;
                switch (c) {
                case OPT_SESSION:
                        *session = optarg;
                        break;
                case OPT_CONFIG:
                        *config = optarg;
                        break;
                case OPT_CELL:
                        *cell_name = optarg;
                        break;
                case OPT_TIMEOUT:
                case OPT_MEMORY: {
                        bool duration = c == OPT_TIMEOUT;
                        codecell_limit limit =
                                duration ? CODECELL_LIMIT_TIMEOUT_MS : CODECELL_LIMIT_MEMORY_BYTES;
                        if (cell_flags_limit(f, limit, duration, optarg) < 0) {
                                fprintf(stderr, WHO ": bad %s \"%s\"\n",
                                        duration ? "duration" : "size", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                }
                case 'h':
                        fputs(usage, stdout);
                        return -1;
                default:
                        return option_refused(f->who, c, argv[at]);
                }
        }
        if (optind < argc)
                return extra_argument(f->who, argv[optind]);
        if (*cell_name && !*config) {
                fprintf(stderr, WHO ": --cell NAME names a cell of a --config FILE\n");
                return EXIT_USAGE;
        }
        const char *conflict = *config ? cell_shaping_flag(f) : NULL;
        if (conflict) {
                fprintf(stderr,
                        WHO ": %s: --config uses the cell as the file shapes it; beside it only "
                            "--timeout and --memory apply, and only narrow\n",
                        conflict);
                return EXIT_USAGE;
        }
        return EXIT_OK;
}

int cmd_repl(int argc, char **argv)
{
        const char *session = "repl", *config = NULL, *cell_name = NULL;
        struct cell_flags f = {.who = WHO, .policy = CODECELL_POLICY_WARN};
        int rc = parse(argc, argv, &f, &session, &config, &cell_name);
        if (rc != EXIT_OK)
                return rc < 0 ? EXIT_OK : rc;
        bool terminal = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
        /* Before the cell starts any thread: each inherits SIGINT blocked. */
        if (terminal && repl_interrupts_start() < 0) {
                fprintf(stderr, WHO ": cannot start the thread that takes Ctrl-C\n");
                return EXIT_SANDBOX;
        }
        const char *lang_name = f.lang ? f.lang : "ruby";
        if (!f.lang)
                f.lang = lang_name;
        codecell_cellset *set = NULL;
        struct repl r = {.session = session};
        rc = make_cell(&f, config, cell_name, &set, &r.cell);
        if (rc == EXIT_OK) {
                if (set) {
                        codecell_cell_info info;
                        codecell_cell_info_get(r.cell, &info);
                        lang_name = info.language;
                }
                r.lang = language_named(lang_name);
                char *history = terminal ? repl_history_path(r.lang->name) : NULL;
                r.in = repl_line_open(history);
                free(history);
                if (!r.in) {
                        fprintf(stderr, WHO ": out of memory\n");
                        rc = EXIT_SANDBOX;
                }
        }
        if (rc == EXIT_OK)
                rc = start_session(&r, repl_line_interactive(r.in));
        if (rc == EXIT_OK)
                rc = loop(&r);
        repl_line_close(r.in);
        if (set)
                codecell_cellset_free(set); /* and its cells */
        else
                codecell_cell_free(r.cell);
        return rc;
}
