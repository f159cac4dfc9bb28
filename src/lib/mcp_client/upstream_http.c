/* The Streamable HTTP transport of an upstream MCP server (MCP 2025-03-26 and later): each
 * message is a POST whose answer is JSON or a stream of server-sent events; a GET stream
 * carries what the server says unasked (list_changed). libcurl does the HTTP (and TLS, for a
 * remote https:// server) on one thread per connection, driving every transfer with its multi
 * interface, so a hanging answer never holds up another. The configured headers (a bearer
 * token) go only to the configured URL: redirects are not followed. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "curl_api.h"
#include "exact_integers.h"
#include "upstream_internal.h"
#include "util.h"

/* An answer longer than this is refused: the server is broken or hostile. */
#define MAX_BODY (64u << 20)
/* After a request's own deadline, how long its transfer may linger before it is dropped. */
#define SLACK_MS 2000

struct transfer {
        CURL *easy;
        struct curl_slist *headers;
        char *body; /* what is posted, or NULL (the GET stream) */
        int64_t id; /* of the request posted, or 0 */
        char *data; /* of the answer, as it comes */
        size_t len, cap;
        bool sse;          /* the answer is an event stream: parsed as it comes */
        bool get_stream;   /* the GET stream */
        bool lost_on_fail; /* the server is unreachable if this transfer fails */
        struct transfer *next;
};

struct http_state {
        CURLM *multi;
        pthread_t thread;
        pthread_mutex_t lock;    /* queue, session, quit */
        struct transfer *queue;  /* to be added by the thread */
        struct transfer *active; /* added */
        char *session;           /* Mcp-Session-Id */
        bool quit, lost;
};

static void transfer_free(struct transfer *t)
{
        if (!t)
                return;
        if (t->easy)
                curl_easy_cleanup(t->easy);
        curl_slist_free_all(t->headers);
        free(t->body);
        free(t->data);
        free(t);
}

/* The events of an SSE answer: each "data:" block is one JSON-RPC message. */
static void take_events(struct upstream *u, struct transfer *t, bool at_end)
{
        size_t start = 0;
        for (;;) {
                char *end = NULL;
                size_t sep = 0;
                for (size_t i = start; i + 1 < t->len; i++) {
                        if (t->data[i] == '\n' && t->data[i + 1] == '\n') {
                                end = t->data + i;
                                sep = 2;
                                break;
                        }
                        if (i + 3 < t->len && memcmp(t->data + i, "\r\n\r\n", 4) == 0) {
                                end = t->data + i;
                                sep = 4;
                                break;
                        }
                }
                if (!end && at_end && start < t->len) {
                        end = t->data + t->len;
                        sep = 0;
                }
                if (!end)
                        break;
                /* The event's data lines, joined. */
                char *data = NULL;
                size_t dlen = 0;
                FILE *f = open_memstream(&data, &dlen);
                for (char *line = t->data + start; f && line < end;) {
                        char *nl = memchr(line, '\n', (size_t)(end - line));
                        char *stop = nl ? nl : end;
                        size_t n = (size_t)(stop - line);
                        if (n && line[n - 1] == '\r')
                                n--;
                        if (n >= 5 && memcmp(line, "data:", 5) == 0) {
                                size_t skip = n > 5 && line[5] == ' ' ? 6 : 5;
                                if (dlen)
                                        fputc('\n', f);
                                fwrite(line + skip, 1, n - skip, f);
                                fflush(f);
                        }
                        line = nl ? nl + 1 : end;
                }
                if (f && fclose(f) == 0 && dlen) {
                        json_t *msg = json_loadb_exact(data, dlen, JSON_REJECT_DUPLICATES, NULL);
                        if (msg)
                                upstream_receive(u, msg);
                }
                free(data);
                start = (size_t)(end - t->data) + sep;
                if (start >= t->len)
                        break;
        }
        memmove(t->data, t->data + start, t->len - start);
        t->len -= start;
}

struct write_ctx {
        struct upstream *u;
        struct transfer *t;
};

static size_t on_data(char *ptr, size_t size, size_t n, void *arg)
{
        struct write_ctx *c = arg;
        struct transfer *t = c->t;
        size_t bytes = size * n;
        if (t->len + bytes + 1 > MAX_BODY)
                return 0; /* aborts the transfer */
        if (t->len + bytes + 1 > t->cap) {
                size_t cap = t->cap ? t->cap : 4096;
                while (cap < t->len + bytes + 1)
                        cap *= 2;
                char *grown = realloc(t->data, cap);
                if (!grown)
                        return 0;
                t->data = grown;
                t->cap = cap;
        }
        memcpy(t->data + t->len, ptr, bytes);
        t->len += bytes;
        t->data[t->len] = '\0';
        if (!t->sse) {
                const char *type = NULL;
                curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &type);
                t->sse = type && strncasecmp(type, "text/event-stream", 17) == 0;
        }
        if (t->sse)
                take_events(c->u, t, false);
        return bytes;
}

static size_t on_header(char *ptr, size_t size, size_t n, void *arg)
{
        struct write_ctx *c = arg;
        struct http_state *s = c->u->transport;
        size_t bytes = size * n;
        static const char name[] = "mcp-session-id:";
        if (bytes > sizeof(name) - 1 && strncasecmp(ptr, name, sizeof(name) - 1) == 0) {
                size_t a = sizeof(name) - 1, b = bytes;
                while (a < b && (ptr[a] == ' ' || ptr[a] == '\t'))
                        a++;
                while (b > a && (ptr[b - 1] == '\r' || ptr[b - 1] == '\n' || ptr[b - 1] == ' '))
                        b--;
                char *id = strndup(ptr + a, b - a);
                pthread_mutex_lock(&s->lock);
                if (id) {
                        free(s->session);
                        s->session = id;
                }
                pthread_mutex_unlock(&s->lock);
        }
        return bytes;
}

/* A request the server refused (HTTP 4xx/5xx) gets a JSON-RPC error, so its caller learns
 * why at once instead of at its deadline. */
static void answer_refused(struct upstream *u, struct transfer *t, long status)
{
        char *text = t->data ? utf8_sanitize(t->data, utf8_cut(t->data, t->len, 300), NULL) : NULL;
        char message[512];
        snprintf(message, sizeof(message), "HTTP %ld%s%s", status, text && *text ? ": " : "",
                 text ? text : "");
        free(text);
        json_t *msg = json_pack("{s:s, s:I, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
                                (json_int_t)t->id, "error", "code", -32000, "message", message);
        if (msg)
                upstream_receive(u, msg);
}

static void finished(struct upstream *u, struct http_state *s, struct transfer *t, CURLcode code)
{
        long status = 0;
        curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
        if (code == CURLE_OK && status >= 200 && status < 300) {
                if (t->sse)
                        take_events(u, t, true);
                else if (t->len) {
                        json_t *body =
                                json_loadb_exact(t->data, t->len, JSON_REJECT_DUPLICATES, NULL);
                        size_t i;
                        json_t *m;
                        if (json_is_array(body))
                                json_array_foreach(body, i, m)
                                        upstream_receive(u, json_incref(m));
                        else if (body)
                                upstream_receive(u, json_incref(body));
                        json_decref(body);
                }
                return;
        }
        /* 404 with a session: the server forgot it; reconnect. No answer at all: it is down. */
        bool gone = (status == 404 && s->session) ||
                    (code != CURLE_OK && code != CURLE_OPERATION_TIMEDOUT && t->lost_on_fail);
        if (gone && !s->lost) {
                s->lost = true;
                char reason[300];
                if (status == 404)
                        snprintf(reason, sizeof(reason), "the server ended the session (HTTP 404)");
                else
                        snprintf(reason, sizeof(reason), "%s", curl_easy_strerror(code));
                upstream_lost(u, reason);
        } else if (!gone && t->id && status >= 400) {
                answer_refused(u, t, status);
        }
}

static void *http_main(void *arg)
{
        struct upstream *u = arg;
        struct http_state *s = u->transport;
        for (;;) {
                pthread_mutex_lock(&s->lock);
                bool quit = s->quit;
                struct transfer *q = s->queue;
                s->queue = NULL;
                pthread_mutex_unlock(&s->lock);
                while (q) {
                        struct transfer *t = q;
                        q = q->next;
                        t->next = s->active;
                        s->active = t;
                        curl_multi_add_handle(s->multi, t->easy);
                }
                if (quit)
                        break;
                int running = 0;
                curl_multi_perform(s->multi, &running);
                CURLMsg *m;
                int left;
                while ((m = curl_multi_info_read(s->multi, &left))) {
                        if (m->msg != CURLMSG_DONE)
                                continue;
                        struct transfer **p = &s->active;
                        while (*p && (*p)->easy != m->easy_handle)
                                p = &(*p)->next;
                        struct transfer *t = *p;
                        if (!t)
                                continue;
                        *p = t->next;
                        curl_multi_remove_handle(s->multi, t->easy);
                        finished(u, s, t, m->data.result);
                        void *ctx = NULL;
                        curl_easy_getinfo(t->easy, CURLINFO_PRIVATE, &ctx);
                        free(ctx);
                        transfer_free(t);
                }
                curl_multi_poll(s->multi, NULL, 0, 1000, NULL);
        }
        while (s->active) {
                struct transfer *t = s->active;
                s->active = t->next;
                curl_multi_remove_handle(s->multi, t->easy);
                void *ctx = NULL;
                curl_easy_getinfo(t->easy, CURLINFO_PRIVATE, &ctx);
                free(ctx);
                transfer_free(t);
        }
        return NULL;
}

/* A transfer of body (POST) or the GET stream (body NULL) to the server's URL. */
static struct transfer *transfer_new(struct upstream *u, const char *method, const char *body,
                                     double deadline)
{
        struct http_state *s = u->transport;
        struct transfer *t = calloc(1, sizeof(*t));
        struct write_ctx *ctx = calloc(1, sizeof(*ctx));
        if (!t || !ctx || !(t->easy = curl_easy_init()) || (body && !(t->body = strdup(body)))) {
                free(ctx);
                transfer_free(t);
                return NULL;
        }
        *ctx = (struct write_ctx){.u = u, .t = t};
        struct curl_slist *h = NULL;
        h = curl_slist_append(h, "Accept: application/json, text/event-stream");
        if (body)
                h = curl_slist_append(h, "Content-Type: application/json");
        pthread_mutex_lock(&s->lock);
        if (s->session) {
                char line[600];
                snprintf(line, sizeof(line), "Mcp-Session-Id: %.500s", s->session);
                h = curl_slist_append(h, line);
        }
        pthread_mutex_unlock(&s->lock);
        pthread_mutex_lock(&u->lock);
        if (u->protocol) {
                char line[80];
                snprintf(line, sizeof(line), "MCP-Protocol-Version: %s", u->protocol);
                h = curl_slist_append(h, line);
        }
        pthread_mutex_unlock(&u->lock);
        for (char **p = u->spec.headers; p && *p; p++)
                h = curl_slist_append(h, *p);
        t->headers = h;
        CURL *e = t->easy;
        curl_easy_setopt(e, CURLOPT_URL, u->spec.url);
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        if (body) {
                curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->body);
                curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(t->body));
        } else if (strcmp(method, "GET") == 0) {
                curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        } else {
                curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
        }
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, ctx);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, ctx);
        curl_easy_setopt(e, CURLOPT_PRIVATE, ctx);
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
        if (deadline > 0) {
                double ms = deadline - now_ms() + SLACK_MS;
                curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(ms > 1 ? ms : 1));
        }
        return t;
}

static void enqueue(struct http_state *s, struct transfer *t)
{
        pthread_mutex_lock(&s->lock);
        t->next = s->queue;
        s->queue = t;
        pthread_mutex_unlock(&s->lock);
        curl_multi_wakeup(s->multi);
}

static int http_open(struct upstream *u, double deadline, char **ret_error)
{
        (void)deadline;
        const char *why = NULL;
        if (!curl_api_load(&why)) {
                char message[512];
                snprintf(message, sizeof(message),
                         "could not be started: Streamable HTTP needs libcurl (Debian's libcurl4): "
                         "%s",
                         why);
                *ret_error = strdup(message);
                return -1;
        }
        struct http_state *s = calloc(1, sizeof(*s));
        if (!s || !(s->multi = curl_multi_init())) {
                free(s);
                *ret_error = strdup("could not be started: out of memory");
                return -1;
        }
        pthread_mutex_init(&s->lock, NULL);
        u->transport = s;
        if (pthread_create(&s->thread, NULL, http_main, u) != 0) {
                curl_multi_cleanup(s->multi);
                pthread_mutex_destroy(&s->lock);
                free(s);
                u->transport = NULL;
                *ret_error = strdup("could not be started: no thread");
                return -1;
        }
        return 0;
}

static int http_send(struct upstream *u, const char *text, double deadline, char **ret_error)
{
        struct http_state *s = u->transport;
        if (!s) {
                *ret_error = strdup("the connection is closed");
                return -1;
        }
        json_t *msg = json_loads_exact(text, 0, NULL);
        const char *method = json_string_value(json_object_get(msg, "method"));
        json_t *id = json_object_get(msg, "id");
        bool is_request = method && json_is_integer(id);
        struct transfer *t = transfer_new(u, "POST", text, deadline);
        if (t) {
                t->id = is_request ? json_integer_value(id) : 0;
                t->lost_on_fail = is_request;
        }
        /* Once the session is open, the GET stream carries the server's own notifications. */
        bool open_stream = method && strcmp(method, "notifications/initialized") == 0;
        json_decref(msg);
        if (!t) {
                *ret_error = strdup("out of memory");
                return -1;
        }
        enqueue(s, t);
        if (open_stream) {
                struct transfer *g = transfer_new(u, "GET", NULL, 0);
                if (g) {
                        g->get_stream = true;
                        enqueue(s, g);
                }
        }
        return 0;
}

/* A clean shutdown ends the session with DELETE (servers may answer 405: fine). */
static void delete_session(struct upstream *u, struct http_state *s)
{
        if (!s->session)
                return;
        struct transfer *t = transfer_new(u, "DELETE", NULL, now_ms() + 1000 - SLACK_MS);
        if (!t)
                return;
        (void)curl_easy_perform(t->easy);
        void *ctx = NULL;
        curl_easy_getinfo(t->easy, CURLINFO_PRIVATE, &ctx);
        free(ctx);
        transfer_free(t);
}

static void http_close(struct upstream *u, bool polite)
{
        struct http_state *s = u->transport;
        if (!s)
                return;
        pthread_mutex_lock(&s->lock);
        s->quit = true;
        pthread_mutex_unlock(&s->lock);
        curl_multi_wakeup(s->multi);
        pthread_join(s->thread, NULL);
        if (polite)
                delete_session(u, s);
        for (struct transfer *t = s->queue; t;) {
                struct transfer *next = t->next;
                void *ctx = NULL;
                curl_easy_getinfo(t->easy, CURLINFO_PRIVATE, &ctx);
                free(ctx);
                transfer_free(t);
                t = next;
        }
        curl_multi_cleanup(s->multi);
        pthread_mutex_lock(&u->write_lock);
        u->transport = NULL;
        pthread_mutex_unlock(&u->write_lock);
        if (!s->lost)
                upstream_lost(u, "codecell closed the connection");
        free(s->session);
        pthread_mutex_destroy(&s->lock);
        free(s);
}

const struct transport_ops upstream_http_ops = {
        .open = http_open,
        .send = http_send,
        .close = http_close,
};
