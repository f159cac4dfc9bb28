/* bench/mcp: the round trip of an MCP tools/call (Ruby `1+1`, warm pool) over stdio and over
 * Streamable HTTP with keep-alive, beside the engine's own pool-hit latency through the C API,
 * all in one run on one configuration. The difference is what the protocol adds.
 *
 * Every call is paced (PAUSE_MS between calls) so the pool has refilled and each call is a pool
 * hit in all three columns alike. Usage: mcp [CALLS] (default 1000). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "codecell.h"

#define PAUSE_MS 30
#define CODE "1+1"

static const char config_text[] =
        "{\"cells\": [{\"name\": \"ruby\", \"language\": \"ruby\", \"pool\": 2}]}\n";

static const char init_msg[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}"
        "}";

static void pause_ms(int ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
}

static void die(const char *what)
{
        fprintf(stderr, "mcp: %s: %s\n", what, strerror(errno));
        exit(1);
}

static void report(const char *name, double *v, size_t n, double base)
{
        double p50 = percentile(v, n, 0.5), p99 = percentile(v, n, 0.99);
        if (base > 0)
                printf("| %-34s | %8.3f | %8.3f | %+8.3f |\n", name, p50, p99, p50 - base);
        else
                printf("| %-34s | %8.3f | %8.3f | %8s |\n", name, p50, p99, "");
}

/* ---- the engine through the C API -------------------------------------------------- */

static double engine(const char *config, double *v, size_t n)
{
        codecell_error err = {0};
        codecell_cellset *cells = codecell_cellset_load(config, 0, &err);
        if (!cells || codecell_cell_warmup(codecell_cellset_cell(cells, 0), &err) < 0) {
                fprintf(stderr, "mcp: %s\n", err.message);
                exit(1);
        }
        for (size_t i = 0; i < n; i++) {
                pause_ms(PAUSE_MS);
                codecell_result *res = NULL;
                double t = now_ms();
                if (codecell_cell_run(codecell_cellset_cell(cells, 0), CODE, strlen(CODE), &res,
                                      &err) < 0 ||
                    codecell_result_status(res) != CODECELL_STATUS_OK) {
                        fprintf(stderr, "mcp: engine run failed\n");
                        exit(1);
                }
                char *json = codecell_result_to_json(res, false); /* what the server sends */
                v[i] = now_ms() - t;
                free(json);
                codecell_result_free(res);
        }
        codecell_cellset_free(cells);
        return percentile(v, n, 0.5);
}

/* ---- a server process ---------------------------------------------------------------- */

struct server {
        pid_t pid;
        int in, out, err; /* its stdin, stdout, stderr */
};

static struct server start_server(const char *bin, const char *config, const char *http)
{
        int in[2], out[2], err[2];
        if (pipe(in) < 0 || pipe(out) < 0 || pipe(err) < 0)
                die("pipe");
        struct server s = {.pid = fork()};
        if (s.pid < 0)
                die("fork");
        if (s.pid == 0) {
                dup2(in[0], 0);
                dup2(out[1], 1);
                dup2(err[1], 2);
                for (int fd = 3; fd < 64; fd++)
                        close(fd);
                if (http)
                        execl(bin, bin, "serve", "--config", config, "--http", http, NULL);
                else
                        execl(bin, bin, "serve", "--config", config, NULL);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        close(err[1]);
        s.in = in[1];
        s.out = out[0];
        s.err = err[0];
        return s;
}

static void stop_server(struct server *s)
{
        close(s->in);
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
        close(s->out);
        close(s->err);
}

static void write_all(int fd, const char *p, size_t n)
{
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        die("write");
                p += w;
                n -= (size_t)w;
        }
}

/* ---- stdio ----------------------------------------------------------------------------- */

static char line_buf[1 << 20];
static size_t line_len;

/* Reads one line from fd; returns it NUL-terminated, without the newline (valid until the next
 * call). */
static const char *read_line(int fd)
{
        static char line[sizeof(line_buf)];
        for (;;) {
                char *nl = memchr(line_buf, '\n', line_len);
                if (nl) {
                        size_t n = (size_t)(nl - line_buf);
                        memcpy(line, line_buf, n);
                        line[n] = '\0';
                        memmove(line_buf, nl + 1, line_len - n - 1);
                        line_len -= n + 1;
                        return line;
                }
                ssize_t r = read(fd, line_buf + line_len, sizeof(line_buf) - line_len);
                if (r <= 0)
                        die("read");
                line_len += (size_t)r;
        }
}

static double over_stdio(const char *bin, const char *config, double *v, size_t n)
{
        struct server s = start_server(bin, config, NULL);
        char msg[512];
        int len = snprintf(msg, sizeof(msg), "%s\n", init_msg);
        write_all(s.in, msg, (size_t)len);
        read_line(s.out);
        pause_ms(500); /* the pool fills */
        for (size_t i = 0; i < n; i++) {
                pause_ms(PAUSE_MS);
                len = snprintf(
                        msg, sizeof(msg),
                        "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"tools/call\",\"params\":"
                        "{\"name\":\"ruby\",\"arguments\":{\"code\":\"" CODE "\"}}}\n",
                        i + 1);
                double t = now_ms();
                write_all(s.in, msg, (size_t)len);
                const char *answer = read_line(s.out);
                v[i] = now_ms() - t;
                if (!strstr(answer, "\"status\":\"ok\"")) {
                        fprintf(stderr, "mcp: stdio answer: %.300s\n", answer);
                        exit(1);
                }
        }
        stop_server(&s);
        return percentile(v, n, 0.5);
}

/* ---- HTTP with keep-alive ---------------------------------------------------------------- */

/* Reads one HTTP response on fd: returns the body (static), copies Mcp-Session-Id if any. */
static const char *read_response(int fd, char *session_id, size_t sid_size)
{
        static char buf[1 << 20];
        size_t len = 0;
        char *end = NULL;
        for (;;) {
                ssize_t r = read(fd, buf + len, sizeof(buf) - len - 1);
                if (r <= 0)
                        die("read http");
                len += (size_t)r;
                buf[len] = '\0';
                if (!end && (end = strstr(buf, "\r\n\r\n"))) {
                        char *cl = strcasestr(buf, "Content-Length:");
                        if (!cl || cl > end) {
                                fprintf(stderr, "mcp: no Content-Length\n");
                                exit(1);
                        }
                        size_t want = (size_t)(end + 4 - buf) + strtoul(cl + 15, NULL, 10);
                        while (len < want) {
                                r = read(fd, buf + len, sizeof(buf) - len - 1);
                                if (r <= 0)
                                        die("read http body");
                                len += (size_t)r;
                        }
                        buf[len] = '\0';
                        char *sid = strcasestr(buf, "Mcp-Session-Id: ");
                        if (session_id && sid && sid < end)
                                snprintf(session_id, sid_size, "%.32s", sid + 16);
                        return end + 4;
                }
        }
}

static void post(int fd, unsigned port, const char *sid, const char *body)
{
        char req[2048];
        int n = snprintf(req, sizeof(req),
                         "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
                         "Content-Type: application/json\r\n"
                         "Accept: application/json, text/event-stream\r\n%s%s%s"
                         "Content-Length: %zu\r\n\r\n%s",
                         port, sid ? "Mcp-Session-Id: " : "", sid ? sid : "", sid ? "\r\n" : "",
                         strlen(body), body);
        write_all(fd, req, (size_t)n);
}

static double over_http(const char *bin, const char *config, double *v, size_t n)
{
        struct server s = start_server(bin, config, "127.0.0.1:0");
        /* The operator's log comes first (start, config_loaded), then the line with the port. */
        static char log[65536];
        static const char listening[] = "listening on http://127.0.0.1:";
        size_t got = 0;
        unsigned port = 0;
        while (!port) {
                ssize_t r = read(s.err, log + got, sizeof(log) - got - 1);
                if (r <= 0)
                        die("serve did not start");
                got += (size_t)r;
                log[got] = '\0';
                char *p = strstr(log, listening);
                if (p && strstr(p, "/mcp"))
                        port = (unsigned)strtoul(p + sizeof(listening) - 1, NULL, 10);
        }
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
                die("connect");
        char sid[40] = "";
        post(fd, port, NULL, init_msg);
        read_response(fd, sid, sizeof(sid));
        pause_ms(500);
        for (size_t i = 0; i < n; i++) {
                pause_ms(PAUSE_MS);
                char body[256];
                snprintf(body, sizeof(body),
                         "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"tools/call\",\"params\":"
                         "{\"name\":\"ruby\",\"arguments\":{\"code\":\"" CODE "\"}}}",
                         i + 1);
                double t = now_ms();
                post(fd, port, sid, body);
                const char *answer = read_response(fd, NULL, 0);
                v[i] = now_ms() - t;
                if (!strstr(answer, "\"status\":\"ok\"")) {
                        fprintf(stderr, "mcp: http answer: %.300s\n", answer);
                        exit(1);
                }
        }
        close(fd);
        stop_server(&s);
        return percentile(v, n, 0.5);
}

int main(int argc, char **argv)
{
        size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
        if (n < 10)
                n = 10;
        char self[4096];
        ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (k < 0)
                die("readlink");
        self[k] = '\0';
        char bin[4200];
        snprintf(bin, sizeof(bin), "%.*s/codecell", (int)(strrchr(self, '/') - self), self);
        char dir[] = "/tmp/codecell-bench-mcp-XXXXXX";
        if (!mkdtemp(dir))
                die("mkdtemp");
        char config[128];
        snprintf(config, sizeof(config), "%s/cells.json", dir);
        FILE *f = fopen(config, "w");
        if (!f || fputs(config_text, f) < 0 || fclose(f) != 0)
                die("config");
        signal(SIGPIPE, SIG_IGN);

        double *e = calloc(n, sizeof(double)), *s = calloc(n, sizeof(double)),
               *h = calloc(n, sizeof(double));
        printf("bench/mcp: tools/call round trip, Ruby `%s`, pool of 2, %zu calls each, paced "
               "%d ms apart (ms)\n\n",
               CODE, n, PAUSE_MS);
        double base = engine(config, e, n);
        over_stdio(bin, config, s, n);
        over_http(bin, config, h, n);
        printf("| %-34s | %8s | %8s | %8s |\n", "path", "p50", "p99", "+ p50");
        printf("|%s|----------|----------|----------|\n", "------------------------------------");
        report("engine pool hit (C API)", e, n, 0);
        report("MCP over stdio", s, n, base);
        report("MCP over HTTP (keep-alive)", h, n, base);
        unlink(config);
        rmdir(dir);
        free(e);
        free(s);
        free(h);
        return 0;
}
