/* codecell serve: the cells of a configuration file as MCP tools, over stdio or HTTP. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cell_flags.h"
#include "codecell.h"
#include "commands.h"
#include "mcp.h"
#include "transports.h"
#include "units.h"

static const char usage[] =
        "Usage: codecell serve --config FILE [--http [ADDR:]PORT] [OPTIONS]\n"
        "\n"
        "Serves the cells of FILE (docs/configuration.md) as MCP tools, one per cell: over\n"
        "stdin/stdout by default (one JSON-RPC message per line; logs go to stderr), or over\n"
        "Streamable HTTP at http://ADDR:PORT/mcp. Ends at end of input (stdio) or on SIGTERM\n"
        "or SIGINT, after cancelling what runs and closing every sandbox.\n"
        "\n"
        "Options:\n"
        "      --config FILE        cells, host tools and MCP servers (required)\n"
        "      --http [ADDR:]PORT   serve Streamable HTTP instead of stdio, on ADDR\n"
        "                           (default 127.0.0.1; port 0 picks a free port)\n"
        "      --token-file FILE    require \"Authorization: Bearer TOKEN\" (HTTP), TOKEN\n"
        "                           being the file's first line\n"
        "      --allow-host HOST    also accept this Host header (host:port); repeatable\n"
        "      --allow-origin URL   also accept this Origin (http://host:port); repeatable\n"
        "      --max-runs N         runs at once across all clients (default 16)\n"
        "      --max-sessions N     MCP sessions at once over HTTP (default 1024)\n"
        "      --max-body SIZE      largest HTTP request body (default 4M)\n"
        "      --client-idle DURATION\n"
        "                           end an MCP session (HTTP) unused this long, with its\n"
        "                           code sessions (default 1h)\n"
        "  -h, --help               show this help\n"
        "\n"
        "Exit codes: 0 stopped cleanly, 2 usage or configuration error, 4 the sandboxes or\n"
        "the listening socket could not be set up.\n";

enum {
        OPT_CONFIG = 0x200,
        OPT_HTTP,
        OPT_TOKEN_FILE,
        OPT_ALLOW_HOST,
        OPT_ALLOW_ORIGIN,
        OPT_MAX_RUNS,
        OPT_MAX_SESSIONS,
        OPT_MAX_BODY,
        OPT_CLIENT_IDLE,
};

static const struct option options[] = {
        {"config", required_argument, NULL, OPT_CONFIG},
        {"http", required_argument, NULL, OPT_HTTP},
        {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
        {"allow-host", required_argument, NULL, OPT_ALLOW_HOST},
        {"allow-origin", required_argument, NULL, OPT_ALLOW_ORIGIN},
        {"max-runs", required_argument, NULL, OPT_MAX_RUNS},
        {"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
        {"max-body", required_argument, NULL, OPT_MAX_BODY},
        {"client-idle", required_argument, NULL, OPT_CLIENT_IDLE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

#define WHO "codecell serve"
#define MAX_ALLOWED 16

/* The token: the file's first line, which must not be empty. */
static char *read_token(const char *path)
{
        FILE *f = fopen(path, "re");
        if (!f) {
                fprintf(stderr, WHO ": --token-file %s: %s\n", path, strerror(errno));
                return NULL;
        }
        char *line = NULL;
        size_t cap = 0;
        ssize_t n = getline(&line, &cap, f);
        fclose(f);
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
                line[--n] = '\0';
        if (n <= 0) {
                fprintf(stderr, WHO ": --token-file %s: the first line is empty\n", path);
                free(line);
                return NULL;
        }
        return line;
}

static bool parse_count(const char *flag, const char *text, size_t *ret)
{
        char *end;
        errno = 0;
        unsigned long v = strtoul(text, &end, 10);
        if (errno || *end || !*text || v == 0 || v > 100000 || text[0] == '-') {
                fprintf(stderr, WHO ": %s %s: must be a whole number from 1 to 100000\n", flag,
                        text);
                return false;
        }
        *ret = v;
        return true;
}

static void print_listening(unsigned port, void *userdata)
{
        const char *address = userdata;
        const char *colon = strrchr(address, ':');
        if (colon)
                fprintf(stderr, WHO ": listening on http://%.*s:%u/mcp\n", (int)(colon - address),
                        address, port);
        else
                fprintf(stderr, WHO ": listening on http://127.0.0.1:%u/mcp\n", port);
}

struct serve_flags {
        const char *config, *http, *token_file;
        const char *hosts[MAX_ALLOWED + 1], *origins[MAX_ALLOWED + 1];
        size_t n_hosts, n_origins;
        struct mcp_server_options server;
        uint64_t max_body;
        uint64_t client_idle_ms;
};

/* 0 to go on, or the exit code. */
static int parse_flags(int argc, char **argv, struct serve_flags *f)
{
        int c;
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
                switch (c) {
                case OPT_CONFIG:
                        f->config = optarg;
                        break;
                case OPT_HTTP:
                        f->http = optarg;
                        break;
                case OPT_TOKEN_FILE:
                        f->token_file = optarg;
                        break;
                case OPT_ALLOW_HOST:
                case OPT_ALLOW_ORIGIN: {
                        size_t *n = c == OPT_ALLOW_HOST ? &f->n_hosts : &f->n_origins;
                        const char **list = c == OPT_ALLOW_HOST ? f->hosts : f->origins;
                        if (*n == MAX_ALLOWED) {
                                fprintf(stderr, WHO ": at most %d of each --allow-*\n",
                                        MAX_ALLOWED);
                                return EXIT_USAGE;
                        }
                        list[(*n)++] = optarg;
                        break;
                }
                case OPT_MAX_RUNS:
                        if (!parse_count("--max-runs", optarg, &f->server.max_runs))
                                return EXIT_USAGE;
                        break;
                case OPT_MAX_SESSIONS:
                        if (!parse_count("--max-sessions", optarg, &f->server.max_clients))
                                return EXIT_USAGE;
                        break;
                case OPT_MAX_BODY:
                        if (parse_size(optarg, &f->max_body) < 0 || f->max_body < 1024) {
                                fprintf(stderr,
                                        WHO ": --max-body %s: expected a size of at least 1K "
                                            "(like 4M)\n",
                                        optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case OPT_CLIENT_IDLE:
                        if (parse_duration_ms(optarg, &f->client_idle_ms) < 0 ||
                            f->client_idle_ms < 100) {
                                fprintf(stderr,
                                        WHO ": --client-idle %s: expected a duration of at least "
                                            "100ms (like 30m or 1h)\n",
                                        optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'h':
                        fputs(usage, stdout);
                        return -1;
                default:
                        return bad_option(WHO, argv[optind - 1]);
                }
        }
        if (optind < argc)
                return bad_option(WHO, argv[optind]);
        if (!f->config) {
                fprintf(stderr, WHO ": --config FILE is required (see " WHO " --help)\n");
                return EXIT_USAGE;
        }
        if (!f->http && (f->token_file || f->n_hosts || f->n_origins || f->client_idle_ms)) {
                fprintf(stderr, WHO ": --token-file, --allow-host, --allow-origin and "
                                    "--client-idle need --http\n");
                return EXIT_USAGE;
        }
        return 0;
}

/* SIGTERM and SIGINT arrive on an fd the transports poll; SIGPIPE is ignored, a closed peer
 * shows up as a write error instead. Blocked before any thread starts, so every thread
 * inherits the mask. */
static int signal_fd(void)
{
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        signal(SIGPIPE, SIG_IGN);
        if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
                return -1;
        return signalfd(-1, &set, SFD_CLOEXEC);
}

int cmd_serve(int argc, char **argv)
{
        struct serve_flags f = {.max_body = 4 << 20};
        uint64_t client_idle_default_ms = 3600 * 1000;
        int exit_code = parse_flags(argc, argv, &f);
        if (exit_code)
                return exit_code < 0 ? EXIT_OK : exit_code;
        f.server.transport = f.http ? "http" : "stdio";
        char *token = f.token_file ? read_token(f.token_file) : NULL;
        if (f.token_file && !token)
                return EXIT_USAGE;
        int sfd = signal_fd();
        codecell_error err = {0};
        codecell_cellset *cells = codecell_cellset_load(f.config, 0, &err);
        struct mcp_server *server = NULL;
        if (!cells) {
                fprintf(stderr, WHO ": %s\n", err.message);
                exit_code = err.kind == CODECELL_ERR_INVALID ? EXIT_USAGE : EXIT_SANDBOX;
                goto out;
        }
        for (size_t i = 0; i < codecell_cellset_size(cells); i++)
                if (codecell_cell_warmup(codecell_cellset_cell(cells, i), &err) < 0) {
                        fprintf(stderr, WHO ": cell %s: sandboxes cannot start: %s\n",
                                codecell_cellset_name(cells, i), err.message);
                        exit_code = EXIT_SANDBOX;
                        goto out;
                }
        server = mcp_server_new(cells, &f.server);
        if (!server) {
                fprintf(stderr, WHO ": out of memory\n");
                exit_code = EXIT_SANDBOX;
                goto out;
        }
        if (f.http) {
                struct http_options o = {.address = f.http,
                                         .token = token,
                                         .allowed_hosts = f.hosts,
                                         .allowed_origins = f.origins,
                                         .max_body = f.max_body,
                                         .client_idle_ms = f.client_idle_ms
                                                                   ? f.client_idle_ms
                                                                   : client_idle_default_ms,
                                         .listening = print_listening,
                                         .userdata = (void *)f.http};
                int r = mcp_serve_http(server, &o, sfd);
                if (r == -EINVAL) {
                        fprintf(stderr,
                                WHO ": --http %s: expected [ADDR:]PORT with a numeric "
                                    "address (8080, 127.0.0.1:8080, [::1]:8080)\n",
                                f.http);
                        exit_code = EXIT_USAGE;
                } else if (r < 0) {
                        fprintf(stderr, WHO ": --http %s: %s\n", f.http, strerror(-r));
                        exit_code = EXIT_SANDBOX;
                }
        } else {
                fprintf(stderr, WHO ": serving %zu cell(s) on stdio\n",
                        codecell_cellset_size(cells));
                int r = mcp_serve_stdio(server, STDIN_FILENO, STDOUT_FILENO, f.max_body, sfd);
                if (r < 0) {
                        fprintf(stderr, WHO ": %s\n", strerror(-r));
                        exit_code = EXIT_SANDBOX;
                }
        }
out:
        mcp_server_free(server);
        codecell_cellset_free(cells);
        free(token);
        if (sfd >= 0)
                close(sfd);
        return exit_code;
}
