/* The table of MCP methods (src/mcp/methods.h) against both transports, in this process. Every
 * request the table offers in an era is answered in that era, over stdio and over HTTP, with
 * something other than "method not found", and every other name (one the table does not
 * offer there, a notification's, one it does not list) gets it; a notification gets no answer;
 * and what HTTP decides by method follows the entry: the Mcp-Session-Id of a method that opens
 * a session, an event stream for a long-running one, the Mcp-Name and Mcp-Param-* headers of
 * 2026-07-28. A transport that compared names by hand, or a method handled outside the table,
 * fails here. tools/call is sent an empty "code", which it refuses before any sandbox starts. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "methods.h"
#include "mhd_api.h"
#include "transports.h"

static codecell_cellset *cells;
static struct mcp_server *server;

/* Every name a test sends: the table's, then some it does not list. */
static const char *const unlisted[] = {"prompts/list", "notifications/unknown", NULL};

static const char *name_at(size_t i)
{
        size_t n = 0;
        while (mcp_methods[n].name)
                n++;
        return i < n ? mcp_methods[i].name : unlisted[i - n];
}

/* Whether a request of that name is to be answered in era with anything but -32601. */
static bool served(const char *name, enum mcp_era era)
{
        const struct mcp_method *m = mcp_method_find(name);
        return mcp_method_offered(m, era) && !m->notification && m->handle;
}

/* A request (id >= 0) or a notification (id < 0) of that name whose params hold what any of
 * the table's methods asks for. */
static json_t *message(const char *name, enum mcp_era era, json_int_t id, json_t *meta)
{
        json_t *params = json_pack("{s:s, s:s, s:s, s:s, s:{s:s}, s:i}", "protocolVersion",
                                   "2025-11-25", "level", "info", "name", "ruby", "uri",
                                   "file:///x", "arguments", "code", "", "requestId", 999);
        if (!meta)
                meta = json_object();
        if (era == MCP_ERA_MODERN) {
                json_object_set_new(meta, "io.modelcontextprotocol/protocolVersion",
                                    json_string(MCP_MODERN_PROTOCOL));
                json_object_set_new(meta, "io.modelcontextprotocol/clientCapabilities",
                                    json_object());
        }
        json_object_set_new(params, "_meta", meta);
        json_t *msg =
                json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", name, "params", params);
        if (id >= 0)
                json_object_set_new(msg, "id", json_integer(id));
        return msg;
}

static int error_code(const json_t *answer)
{
        return (int)json_integer_value(json_object_get(json_object_get(answer, "error"), "code"));
}

static void set_up(void)
{
        static const char config[] =
                "{\"cells\": [{\"name\": \"ruby\", \"language\": \"ruby\", \"pool\": 0}]}";
        char path[] = "/tmp/codecell-test-methods-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0 || write(fd, config, strlen(config)) != (ssize_t)strlen(config))
                abort();
        close(fd);
        codecell_error err;
        cells = codecell_cellset_load(path, 0, &err);
        unlink(path);
        if (!cells) {
                fprintf(stderr, "cellset: %s\n", err.message);
                exit(1);
        }
        struct mcp_server_options o = {.transport = "stdio"};
        if (!(server = mcp_server_new(cells, &o)))
                abort();
}

/* ---- stdio ---------------------------------------------------------------------------- */

static void append(int fd, json_t *msg)
{
        char *text = jsonrpc_text_free(msg);
        if (!text || write(fd, text, strlen(text)) < 0 || write(fd, "\n", 1) != 1)
                abort();
        free(text);
}

/* Every name as a request and as a notification, in both eras, on one stdin. */
static void test_stdio(void)
{
        int in = memfd_create("stdin", 0), out = memfd_create("stdout", 0);
        size_t names = 0, requests = 0;
        while (name_at(names))
                names++;
        for (int e = 0; e < 2; e++)
                for (size_t i = 0; i < names; i++) {
                        enum mcp_era era = e ? MCP_ERA_MODERN : MCP_ERA_LEGACY;
                        append(in, message(name_at(i), era, (json_int_t)(e * 100 + i), NULL));
                        append(in, message(name_at(i), era, -1, NULL));
                        requests++;
                }
        lseek(in, 0, SEEK_SET);
        CHECK(mcp_serve_stdio(server, in, out, 1 << 20, -1) == 0);
        off_t size = lseek(out, 0, SEEK_END);
        char *text = calloc(1, (size_t)size + 1);
        if (!text || pread(out, text, (size_t)size, 0) != size)
                abort();
        unsigned answered[200] = {0};
        size_t answers = 0;
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                json_t *m = json_loads(line, 0, NULL);
                if (json_object_get(m, "method")) { /* a notification of ours, not an answer */
                        json_decref(m);
                        continue;
                }
                json_int_t id = json_integer_value(json_object_get(m, "id"));
                if (!json_is_integer(json_object_get(m, "id")) || id < 0 || id >= 200) {
                        fprintf(stderr, "stdio answered what no request asked: %s\n", line);
                        check_failures++;
                        json_decref(m);
                        continue;
                }
                const char *name = name_at((size_t)(id % 100));
                enum mcp_era era = id >= 100 ? MCP_ERA_MODERN : MCP_ERA_LEGACY;
                if ((error_code(m) != JSONRPC_METHOD_NOT_FOUND) != served(name, era)) {
                        fprintf(stderr, "stdio, %s in era %d: %s\n", name, era, line);
                        check_failures++;
                }
                answered[id]++;
                answers++;
                json_decref(m);
        }
        /* Exactly one answer per request, none for the notifications. */
        CHECK(answers == requests);
        for (size_t i = 0; i < 200; i++)
                CHECK(answered[i] <= 1);
        free(text);
        close(in);
        close(out);
}

/* ---- HTTP ----------------------------------------------------------------------------- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static unsigned port;
static int stop_fds[2];

static void listening(unsigned p, void *userdata)
{
        (void)userdata;
        pthread_mutex_lock(&lock);
        port = p;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
}

static void *serve_http(void *arg)
{
        (void)arg;
        struct http_options o = {.address = "127.0.0.1:0",
                                 .max_body = 1 << 20,
                                 .header_timeout_ms = 10000,
                                 .max_connections = 64,
                                 .client_idle_ms = 600000,
                                 .listening = listening};
        /* The read end of a pipe stands for the signalfd: closing the other end stops it. */
        if (mcp_serve_http(server, &o, stop_fds[0]) < 0)
                abort();
        return NULL;
}

struct answer {
        unsigned status;
        char session_id[80]; /* the response's Mcp-Session-Id, or "" */
        bool stream;         /* text/event-stream */
        json_t *body;        /* the JSON-RPC answer */
};

/* POSTs msg (taken) with extra header lines ("Name: value\r\n" each) and reads the whole
 * answer (the connection closes after it). */
static struct answer post(json_t *msg, const char *accept, const char *headers)
{
        char *body = jsonrpc_text_free(msg);
        char *request = NULL;
        if (asprintf(&request,
                     "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nContent-Type: "
                     "application/json\r\nAccept: %s\r\nConnection: close\r\nContent-Length: "
                     "%zu\r\n%s\r\n%s",
                     port, accept, strlen(body), headers, body) < 0)
                abort();
        free(body);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            write(fd, request, strlen(request)) != (ssize_t)strlen(request))
                abort();
        free(request);
        size_t len = 0, cap = 65536;
        char *text = malloc(cap);
        for (ssize_t n; text && (n = read(fd, text + len, cap - len - 1)) > 0;)
                if ((len += (size_t)n) + 1 == cap && !(text = realloc(text, cap *= 2)))
                        abort();
        close(fd);
        if (!text)
                abort();
        text[len] = '\0';
        struct answer a = {0};
        sscanf(text, "HTTP/1.1 %u", &a.status);
        char *end = strstr(text, "\r\n\r\n");
        if (end)
                *end = '\0';
        const char *sid = strcasestr(text, "\r\nMcp-Session-Id: ");
        if (sid)
                snprintf(a.session_id, sizeof(a.session_id), "%.*s", (int)strcspn(sid + 18, "\r\n"),
                         sid + 18);
        a.stream = strcasestr(text, "\r\nContent-Type: text/event-stream") != NULL;
        /* An event stream is chunked: its answer is the one "data:" line. */
        char *json = !end ? NULL : a.stream ? strstr(end + 4, "data: ") : end + 4;
        if (json && a.stream)
                json += 6;
        a.body = json ? json_loads(json, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
        free(text);
        return a;
}

/* The headers of 2026-07-28 that mirror msg's body, as the client of a method of this name
 * sends them; name_header false leaves Mcp-Name out. */
static void modern_headers(char *out, size_t n, const char *name, bool name_header)
{
        const struct mcp_method *m = mcp_method_find(name);
        int at = snprintf(out, n,
                          "MCP-Protocol-Version: " MCP_MODERN_PROTOCOL "\r\nMcp-Method: %s\r\n",
                          name);
        if (name_header && m && m->name_param)
                snprintf(out + at, n - (size_t)at, "Mcp-Name: %s\r\n",
                         strcmp(m->name_param, "uri") == 0 ? "file:///x" : "ruby");
}

static void test_http_names(const char *sid_header)
{
        char headers[512];
        for (size_t i = 0; name_at(i); i++) {
                const char *name = name_at(i);
                const struct mcp_method *m = mcp_method_find(name);
                struct answer a = post(message(name, MCP_ERA_LEGACY, 1, NULL), "application/json",
                                       sid_header);
                if ((error_code(a.body) != JSONRPC_METHOD_NOT_FOUND) !=
                            served(name, MCP_ERA_LEGACY) ||
                    !!a.session_id[0] != (served(name, MCP_ERA_LEGACY) && m->opens_session)) {
                        fprintf(stderr, "HTTP, %s before 2026-07-28: %u, session id \"%s\"\n", name,
                                a.status, a.session_id);
                        check_failures++;
                }
                json_decref(a.body);

                modern_headers(headers, sizeof(headers), name, true);
                a = post(message(name, MCP_ERA_MODERN, 2, NULL), "application/json", headers);
                bool found = error_code(a.body) != JSONRPC_METHOD_NOT_FOUND;
                if (found != served(name, MCP_ERA_MODERN) || (a.status == 404) == found) {
                        fprintf(stderr, "HTTP, %s in 2026-07-28: %u, code %d\n", name, a.status,
                                error_code(a.body));
                        check_failures++;
                }
                json_decref(a.body);
        }
}

/* An event stream for a request that asks for progress, only when its method is long-running. */
static void test_http_streams(const char *sid_header)
{
        char headers[512];
        for (const struct mcp_method *m = mcp_methods; m->name; m++)
                for (int e = 0; e < 2 && !m->notification; e++) {
                        enum mcp_era era = e ? MCP_ERA_MODERN : MCP_ERA_LEGACY;
                        if (!served(m->name, era))
                                continue;
                        modern_headers(headers, sizeof(headers), m->name, true);
                        json_t *meta = json_pack("{s:s}", "progressToken", "p");
                        struct answer a = post(message(m->name, era, 3, meta), "text/event-stream",
                                               era == MCP_ERA_MODERN ? headers : sid_header);
                        if (a.stream != m->long_running || !a.body) {
                                fprintf(stderr, "HTTP, %s in era %d: stream %d, answer %p\n",
                                        m->name, era, a.stream, (void *)a.body);
                                check_failures++;
                        }
                        json_decref(a.body);
                }
}

#define HEADER_MISMATCH (-32020)

/* 2026-07-28: a missing Mcp-Name is refused only for a method whose entry names a param for
 * it, a missing Mcp-Param-Session only for one whose arguments it mirrors. */
static void test_http_mirrors(void)
{
        char headers[512];
        for (const struct mcp_method *m = mcp_methods; m->name; m++) {
                if (m->notification)
                        continue;
                modern_headers(headers, sizeof(headers), m->name, false);
                struct answer a = post(message(m->name, MCP_ERA_MODERN, 4, NULL),
                                       "application/json", headers);
                if ((error_code(a.body) == HEADER_MISMATCH) != (m->name_param != NULL)) {
                        fprintf(stderr, "HTTP, %s without Mcp-Name: code %d\n", m->name,
                                error_code(a.body));
                        check_failures++;
                }
                json_decref(a.body);
                if (!m->name_param)
                        continue;
                json_t *msg = message(m->name, MCP_ERA_MODERN, 5, NULL);
                json_object_set_new(json_object_get(json_object_get(msg, "params"), "arguments"),
                                    "session", json_string("new"));
                modern_headers(headers, sizeof(headers), m->name, true);
                a = post(msg, "application/json", headers);
                if ((error_code(a.body) == HEADER_MISMATCH) != m->param_headers) {
                        fprintf(stderr, "HTTP, %s without Mcp-Param-Session: code %d\n", m->name,
                                error_code(a.body));
                        check_failures++;
                }
                json_decref(a.body);
        }
}

/* The header line of an MCP session, opened by the table's first method that opens one. */
static void open_session(char *out, size_t n)
{
        const struct mcp_method *m = mcp_methods;
        while (m->name && !m->opens_session)
                m++;
        CHECK(m->name != NULL);
        struct answer a = post(message(m->name, MCP_ERA_LEGACY, 0, NULL), "application/json", "");
        CHECK(a.session_id[0]);
        snprintf(out, n, "Mcp-Session-Id: %s\r\n", a.session_id);
        json_decref(a.body);
}

static int test_http(void)
{
        const char *why = NULL;
        if (!mhd_api_load(&why)) {
                fprintf(stderr, "skip: HTTP: libmicrohttpd cannot be loaded: %s\n", why);
                return 77;
        }
        pthread_t thread;
        if (pipe(stop_fds) < 0 || pthread_create(&thread, NULL, serve_http, NULL) != 0)
                abort();
        pthread_mutex_lock(&lock);
        while (!port)
                pthread_cond_wait(&changed, &lock);
        pthread_mutex_unlock(&lock);
        char sid[128];
        open_session(sid, sizeof(sid));
        test_http_names(sid);
        test_http_streams(sid);
        test_http_mirrors();
        close(stop_fds[1]);
        pthread_join(thread, NULL);
        close(stop_fds[0]);
        return 0;
}

/* ---- the table itself ----------------------------------------------------------------- */

static void test_table(void)
{
        for (const struct mcp_method *m = mcp_methods; m->name; m++) {
                CHECK(mcp_method_find(m->name) == m); /* names are unique */
                /* A flag of what a request does is no use on a notification. */
                CHECK(!m->notification || (!m->long_running && !m->opens_session &&
                                           !m->refused_while_draining && !m->name_param));
                CHECK(!m->eras || m->handle || m->notification);
                CHECK(!m->param_headers || m->name_param);
        }
        CHECK(mcp_method_find(NULL) == NULL);
        CHECK(mcp_method_find("prompts/list") == NULL);
        CHECK(!mcp_method_offered(NULL, MCP_ERA_LEGACY));
}

int main(void)
{
        set_up();
        test_table();
        test_stdio();
        int skip = test_http();
        mcp_server_free(server);
        codecell_cellset_free(cells);
        if (check_failures || !skip)
                CHECK_DONE();
        return skip;
}
