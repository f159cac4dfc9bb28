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
#include "option_errors.h"
#include "mcp.h"
#include "mhd_api.h"
#include "oplog.h"
#include "systemd.h"
#include "transports.h"
#include "units.h"

static const char usage[] =
        "Usage: codecell serve --config FILE [--http [ADDR:]PORT] [OPTIONS]\n"
        "\n"
        "Serves the cells of FILE (docs/configuration.md) as MCP tools, one per cell: over\n"
        "stdin/stdout by default (one JSON-RPC message per line; logs go to stderr), or over\n"
        "Streamable HTTP at http://ADDR:PORT/mcp. Ends at end of input (stdio) or on SIGINT,\n"
        "after cancelling what runs and closing every sandbox; on SIGTERM too, but over\n"
        "HTTP it drains first (--drain-timeout). Several instances behind nginx: see\n"
        "docs/scaling.md.\n"
        "Started by systemd socket activation (LISTEN_FDS=1), it serves HTTP on that\n"
        "socket, without --http; with NOTIFY_SOCKET it reports READY=1 once it serves.\n"
        "\n"
        "Options:\n"
        "      --config FILE        cells, host tools and MCP servers (required)\n"
        "      --http [ADDR:]PORT   serve Streamable HTTP instead of stdio, on ADDR\n"
        "                           (default 127.0.0.1; port 0 picks a free port)\n"
        "      --token-file FILE    require \"Authorization: Bearer TOKEN\" (HTTP), TOKEN\n"
        "                           being any line of the file (one per client)\n"
        "      --allow-host HOST    also accept this Host header (host:port); repeatable\n"
        "      --allow-origin URL   also accept this Origin (http://host:port); repeatable\n"
        "      --cors-origin URL    let pages from this Origin call the server from a\n"
        "                           browser (CORS; \"*\" for any); repeatable; none by default\n"
        "      --max-runs N         runs at once across all clients (default 16)\n"
        "      --max-sessions N     MCP sessions at once over HTTP (default 1024)\n"
        "      --max-body SIZE      largest HTTP request body or stdio line (default 4M)\n"
        "      --header-timeout DURATION\n"
        "                           close an HTTP connection that has not sent a request\n"
        "                           with a valid token this long after it opened\n"
        "                           (default 10s)\n"
        "      --max-connections N  HTTP connections at once (default 512; half of them\n"
        "                           at most without a valid token yet)\n"
        "      --max-connections-per-address N\n"
        "                           HTTP connections at once from one client address\n"
        "                           (default 64; 0: no cap; raise it behind a proxy)\n"
        "      --client-idle DURATION\n"
        "                           end an MCP session (HTTP) unused this long, with its\n"
        "                           code sessions (default 1h)\n"
        "      --instance NAME      this server's name among several behind a proxy (1-16\n"
        "                           of a-z 0-9 -): it leads every Mcp-Session-Id and\n"
        "                           session handle, so the proxy routes them home\n"
        "      --file-inline SIZE   output files up to SIZE are embedded in a tool result,\n"
        "                           larger ones linked (default 256K)\n"
        "      --file-link-ttl DURATION\n"
        "                           how long such a link can be read with resources/read\n"
        "                           (default 10m)\n"
        "      --file-links-max SIZE\n"
        "                           the linked files kept at once (default 64M; the\n"
        "                           oldest go first)\n"
        "      --drain-timeout DURATION\n"
        "                           on SIGTERM (HTTP), refuse new work with 503 and let\n"
        "                           the requests in flight finish, this long at most, then\n"
        "                           stop (default 30s; 0 stops at once)\n"
        "      --log FILE           the operator's log (one JSON object a line, per call\n"
        "                           and per event) goes to FILE, appended, not stderr\n"
        "      --log-level LEVEL    debug, info (default), warning, error or off\n"
        "      --log-content        also log each call's code, value and output (off: the\n"
        "                           log holds no code, values or output)\n"
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
        OPT_CORS_ORIGIN,
        OPT_MAX_RUNS,
        OPT_MAX_SESSIONS,
        OPT_MAX_BODY,
        OPT_CLIENT_IDLE,
        OPT_LOG,
        OPT_LOG_LEVEL,
        OPT_LOG_CONTENT,
        OPT_INSTANCE,
        OPT_DRAIN_TIMEOUT,
        OPT_HEADER_TIMEOUT,
        OPT_MAX_CONNECTIONS,
        OPT_MAX_PER_ADDRESS,
        OPT_FILE_INLINE,
        OPT_FILE_LINK_TTL,
        OPT_FILE_LINKS_MAX,
};

static const struct option options[] = {
        {"config", required_argument, NULL, OPT_CONFIG},
        {"http", required_argument, NULL, OPT_HTTP},
        {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
        {"allow-host", required_argument, NULL, OPT_ALLOW_HOST},
        {"allow-origin", required_argument, NULL, OPT_ALLOW_ORIGIN},
        {"cors-origin", required_argument, NULL, OPT_CORS_ORIGIN},
        {"max-runs", required_argument, NULL, OPT_MAX_RUNS},
        {"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
        {"max-body", required_argument, NULL, OPT_MAX_BODY},
        {"client-idle", required_argument, NULL, OPT_CLIENT_IDLE},
        {"log", required_argument, NULL, OPT_LOG},
        {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
        {"log-content", no_argument, NULL, OPT_LOG_CONTENT},
        {"instance", required_argument, NULL, OPT_INSTANCE},
        {"drain-timeout", required_argument, NULL, OPT_DRAIN_TIMEOUT},
        {"header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT},
        {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
        {"max-connections-per-address", required_argument, NULL, OPT_MAX_PER_ADDRESS},
        {"file-inline", required_argument, NULL, OPT_FILE_INLINE},
        {"file-link-ttl", required_argument, NULL, OPT_FILE_LINK_TTL},
        {"file-links-max", required_argument, NULL, OPT_FILE_LINKS_MAX},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

#define WHO "codecell serve"
#define MAX_ALLOWED 16

#define MAX_TOKENS 1024

static void free_tokens(char **tokens)
{
        for (size_t i = 0; tokens && tokens[i]; i++)
                free(tokens[i]);
        free(tokens);
}

/* The tokens: every line of the file that is not empty (trailing spaces and CR dropped), at
 * least one. Each is one client's: what a client opens belongs to its token. */
static char **read_tokens(const char *path)
{
        FILE *f = fopen(path, "re");
        if (!f) {
                fprintf(stderr, WHO ": --token-file %s: %s\n", path, strerror(errno));
                return NULL;
        }
        char **tokens = calloc(MAX_TOKENS + 1, sizeof(char *));
        char *line = NULL;
        size_t cap = 0, n_tokens = 0;
        ssize_t n;
        while (tokens && (n = getline(&line, &cap, f)) >= 0) {
                while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
                        line[--n] = '\0';
                if (n == 0)
                        continue;
                bool full = n_tokens == MAX_TOKENS;
                if (full || !(tokens[n_tokens++] = strdup(line))) {
                        fprintf(stderr, WHO ": --token-file %s: %s\n", path,
                                full ? "over 1024 tokens" : strerror(ENOMEM));
                        free_tokens(tokens);
                        tokens = NULL;
                }
        }
        free(line);
        fclose(f);
        if (tokens && n_tokens == 0) {
                fprintf(stderr, WHO ": --token-file %s: the file holds no token\n", path);
                free(tokens);
                tokens = NULL;
        }
        return tokens;
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

/* What print_listening needs: the address as given, and whom to tell that we serve. */
struct listening {
        const char *address;
        const struct systemd_env *systemd;
};

static void print_listening(unsigned port, void *userdata)
{
        const struct listening *l = userdata;
        const char *address = l->address;
        systemd_notify(l->systemd, "READY=1");
        const char *colon = strrchr(address, ':');
        if (colon)
                fprintf(stderr, WHO ": listening on http://%.*s:%u/mcp\n", (int)(colon - address),
                        address, port);
        else
                fprintf(stderr, WHO ": listening on http://127.0.0.1:%u/mcp\n", port);
}

struct serve_flags {
        const char *config, *http, *token_file;
        struct systemd_env systemd;
        const char *log;
        enum oplog_level log_level;
        bool log_content;
        const char *hosts[MAX_ALLOWED + 1], *origins[MAX_ALLOWED + 1], *cors[MAX_ALLOWED + 1];
        size_t n_hosts, n_origins, n_cors;
        struct mcp_server_options server;
        uint64_t max_body;
        uint64_t client_idle_ms;
        uint64_t drain_ms;
        bool drain_given;
        /* The HTTP connection bounds (transports.h); *_given: set on the command line. */
        uint64_t header_timeout_ms;
        size_t max_connections, max_per_address;
        bool connections_given;
};

/* The first lines of the operator's log: what runs, and with which cells. */
static void log_start(const struct serve_flags *f)
{
        oplog_event(OPLOG_INFO, "start",
                    json_pack("{s:s, s:i, s:s, s:s?, s:b, s:s?}", "version", codecell_version(),
                              "pid", (int)getpid(), "transport", f->http ? "http" : "stdio",
                              "address", f->http, "socket_activated", f->systemd.listen_fd >= 0,
                              "instance", f->server.instance));
}

static void log_config(const char *path, codecell_cellset *cells)
{
        json_t *names = json_array();
        for (size_t i = 0; i < codecell_cellset_size(cells); i++)
                json_array_append_new(names, json_string(codecell_cellset_name(cells, i)));
        oplog_event(OPLOG_INFO, "config_loaded",
                    json_pack("{s:s, s:o}", "config", path, "cells", names));
}

/* 0 to go on, or the exit code. */
static int parse_flags(int argc, char **argv, struct serve_flags *f)
{
        int c;
        optind = 1;
        opterr = 0;
        for (int at = optind; (c = getopt_long(argc, argv, "+:h", options, NULL)) != -1;
             at = optind) {
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
                case OPT_ALLOW_ORIGIN:
                case OPT_CORS_ORIGIN: {
                        size_t *n = c == OPT_ALLOW_HOST    ? &f->n_hosts
                                    : c == OPT_CORS_ORIGIN ? &f->n_cors
                                                           : &f->n_origins;
                        const char **list = c == OPT_ALLOW_HOST    ? f->hosts
                                            : c == OPT_CORS_ORIGIN ? f->cors
                                                                   : f->origins;
                        if (*n == MAX_ALLOWED) {
                                fprintf(stderr,
                                        WHO ": at most %d of each of --allow-host, "
                                            "--allow-origin, --cors-origin\n",
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
                case OPT_LOG:
                        f->log = optarg;
                        break;
                case OPT_FILE_INLINE:
                case OPT_FILE_LINKS_MAX: {
                        uint64_t size = 0;
                        if (parse_size(optarg, &size) < 0 || size == 0) {
                                fprintf(stderr, WHO ": %s %s: expected a size (like 256K)\n",
                                        c == OPT_FILE_INLINE ? "--file-inline" : "--file-links-max",
                                        optarg);
                                return EXIT_USAGE;
                        }
                        *(c == OPT_FILE_INLINE ? &f->server.file_inline_bytes
                                               : &f->server.file_links_bytes) = (size_t)size;
                        break;
                }
                case OPT_FILE_LINK_TTL: {
                        uint64_t ms = 0;
                        if (parse_duration_ms(optarg, &ms) < 0 || ms == 0) {
                                fprintf(stderr,
                                        WHO ": --file-link-ttl %s: expected a duration (like "
                                            "10m or 500ms)\n",
                                        optarg);
                                return EXIT_USAGE;
                        }
                        f->server.file_link_ms = (double)ms;
                        break;
                }
                case OPT_LOG_LEVEL:
                        if (!oplog_level_parse(optarg, &f->log_level)) {
                                fprintf(stderr,
                                        WHO ": --log-level %s: expected debug, info, warning, "
                                            "error or off\n",
                                        optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case OPT_LOG_CONTENT:
                        f->log_content = true;
                        break;
                case OPT_INSTANCE:
                        if (!mcp_instance_name_valid(optarg)) {
                                fprintf(stderr,
                                        WHO ": --instance %s: expected 1 to %d of a-z, 0-9 and "
                                            "'-', not starting with '-' (like a, b2, web-1)\n",
                                        optarg, MCP_INSTANCE_MAX);
                                return EXIT_USAGE;
                        }
                        f->server.instance = optarg;
                        break;
                case OPT_DRAIN_TIMEOUT:
                        f->drain_given = true;
                        f->drain_ms = 0;
                        if (strcmp(optarg, "0") != 0 &&
                            parse_duration_ms(optarg, &f->drain_ms) < 0) {
                                fprintf(stderr,
                                        WHO ": --drain-timeout %s: expected a duration (like "
                                            "30s or 2m), or 0\n",
                                        optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case OPT_HEADER_TIMEOUT:
                        f->connections_given = true;
                        if (parse_duration_ms(optarg, &f->header_timeout_ms) < 0 ||
                            f->header_timeout_ms < 100 || f->header_timeout_ms > 3600 * 1000) {
                                fprintf(stderr,
                                        WHO ": --header-timeout %s: expected a duration from "
                                            "100ms to 1h (like 10s)\n",
                                        optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case OPT_MAX_CONNECTIONS:
                        f->connections_given = true;
                        if (!parse_count("--max-connections", optarg, &f->max_connections))
                                return EXIT_USAGE;
                        break;
                case OPT_MAX_PER_ADDRESS:
                        f->connections_given = true;
                        f->max_per_address = 0;
                        if (strcmp(optarg, "0") != 0 &&
                            !parse_count("--max-connections-per-address", optarg,
                                         &f->max_per_address))
                                return EXIT_USAGE;
                        break;
                case 'h':
                        fputs(usage, stdout);
                        return -1;
                default:
                        return option_refused(WHO, c, argv[at]);
                }
        }
        if (optind < argc)
                return extra_argument(WHO, argv[optind]);
        if (!f->config) {
                fprintf(stderr, WHO ": --config FILE is required (see " WHO " --help)\n");
                return EXIT_USAGE;
        }
        if (f->http && f->systemd.listen_fd >= 0) {
                fprintf(stderr, WHO ": --http: systemd passed a socket to serve on already "
                                    "(LISTEN_FDS); drop --http\n");
                return EXIT_USAGE;
        }
        if (f->systemd.listen_fd >= 0)
                f->http = f->systemd.address;
        if (!f->http && (f->token_file || f->n_hosts || f->n_origins || f->n_cors ||
                         f->client_idle_ms || f->drain_given || f->connections_given)) {
                fprintf(stderr, WHO ": --token-file, --allow-host, --allow-origin, --cors-origin, "
                                    "--client-idle, --drain-timeout, --header-timeout, "
                                    "--max-connections and --max-connections-per-address "
                                    "need --http\n");
                return EXIT_USAGE;
        }
        if (f->max_connections < 2) {
                fprintf(stderr,
                        WHO ": --max-connections %zu: must be at least 2 (half of them "
                            "are kept for clients with a valid token)\n",
                        f->max_connections);
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
        struct serve_flags f = {.max_body = 4 << 20,
                                .log_level = OPLOG_INFO,
                                .drain_ms = 30000,
                                .header_timeout_ms = 10000,
                                .max_connections = 512,
                                .max_per_address = 64};
        uint64_t client_idle_default_ms = 3600 * 1000;
        if (systemd_env_take(&f.systemd) < 0) {
                fprintf(stderr, WHO ": systemd must pass exactly one listening TCP socket "
                                    "(LISTEN_FDS=1; Accept=no in the .socket unit)\n");
                return EXIT_USAGE;
        }
        int exit_code = parse_flags(argc, argv, &f);
        if (exit_code)
                return exit_code < 0 ? EXIT_OK : exit_code;
        f.server.transport = f.http ? "http" : "stdio";
        const char *why = NULL;
        if (f.http && !mhd_api_load(&why)) {
                fprintf(stderr, WHO ": --http needs libmicrohttpd (Debian: libmicrohttpd12): %s\n",
                        why);
                return EXIT_SANDBOX;
        }
        int log_r = oplog_open(f.log, f.log_level, f.log_content);
        if (log_r < 0) {
                fprintf(stderr, WHO ": --log %s: %s\n", f.log, strerror(-log_r));
                return EXIT_USAGE;
        }
        log_start(&f);
        char **tokens = f.token_file ? read_tokens(f.token_file) : NULL;
        if (f.token_file && !tokens)
                return EXIT_USAGE;
        int sfd = signal_fd();
        codecell_error err = {0};
        codecell_cellset *cells = codecell_cellset_load(f.config, 0, &err);
        struct mcp_server *server = NULL;
        if (!cells) {
                fprintf(stderr, WHO ": %s\n", err.message);
                oplog_event(OPLOG_ERROR, "config_error",
                            json_pack("{s:s, s:s}", "config", f.config, "error", err.message));
                exit_code = err.kind == CODECELL_ERR_INVALID ? EXIT_USAGE : EXIT_SANDBOX;
                goto out;
        }
        log_config(f.config, cells);
        for (size_t i = 0; i < codecell_cellset_size(cells); i++)
                if (codecell_cell_warmup(codecell_cellset_cell(cells, i), &err) < 0) {
                        fprintf(stderr, WHO ": cell %s: sandboxes cannot start: %s\n",
                                codecell_cellset_name(cells, i), err.message);
                        oplog_event(OPLOG_ERROR, "pool_error",
                                    json_pack("{s:s, s:s}", "cell", codecell_cellset_name(cells, i),
                                              "error", err.message));
                        exit_code = EXIT_SANDBOX;
                        goto out;
                }
        /* What this host lacks is the operator's to know, once, here: never in the results
         * the model reads. */
        for (size_t i = 0; i < codecell_cellset_size(cells); i++) {
                const char *w;
                for (size_t k = 0; (w = codecell_cell_warning(codecell_cellset_cell(cells, i), k));
                     k++)
                        fprintf(stderr, WHO ": cell %s: warning: %s\n",
                                codecell_cellset_name(cells, i), w);
        }
        server = mcp_server_new(cells, &f.server);
        if (!server) {
                fprintf(stderr, WHO ": out of memory\n");
                exit_code = EXIT_SANDBOX;
                goto out;
        }
        if (f.http) {
                struct listening listening = {.address = f.http, .systemd = &f.systemd};
                struct http_options o = {.address = f.http,
                                         .tokens = (const char **)tokens,
                                         .allowed_hosts = f.hosts,
                                         .allowed_origins = f.origins,
                                         .cors_origins = f.cors,
                                         .max_body = f.max_body,
                                         .header_timeout_ms = f.header_timeout_ms,
                                         .max_connections = (unsigned)f.max_connections,
                                         .max_connections_per_address = (unsigned)f.max_per_address,
                                         .client_idle_ms = f.client_idle_ms
                                                                   ? f.client_idle_ms
                                                                   : client_idle_default_ms,
                                         .drain_ms = f.drain_ms,
                                         .listen_fd = f.systemd.listen_fd,
                                         .listening = print_listening,
                                         .userdata = &listening};
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
                systemd_notify(&f.systemd, "READY=1");
                int r = mcp_serve_stdio(server, STDIN_FILENO, STDOUT_FILENO, f.max_body, sfd);
                if (r < 0) {
                        fprintf(stderr, WHO ": %s\n", strerror(-r));
                        exit_code = EXIT_SANDBOX;
                }
        }
out:
        systemd_notify(&f.systemd, "STOPPING=1");
        oplog_event(exit_code ? OPLOG_ERROR : OPLOG_INFO, "stop",
                    json_pack("{s:i}", "exit_code", exit_code));
        oplog_close();
        mcp_server_free(server);
        codecell_cellset_free(cells);
        free_tokens(tokens);
        if (sfd >= 0)
                close(sfd);
        return exit_code;
}
