/* The Streamable HTTP transport on libmicrohttpd: one endpoint, /mcp, for both eras of MCP.
 * POST carries one JSON-RPC message; a request is answered with application/json, or with
 * text/event-stream when it will send notifications first (progress, log messages).
 * 2025-03-26 to 2025-11-25: the Mcp-Session-Id issued at initialize scopes the client's code
 * sessions; DELETE ends it. 2026-07-28 (a request whose _meta names its protocol version): no
 * session, the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers must match the body, and
 * code sessions are handles passed as tool arguments. Every request is checked in this order:
 * Host and Origin (DNS rebinding; CORS when configured), an OPTIONS preflight, the bearer
 * token, then the method. One thread per connection: a run blocks only its own connection.
 * Before any of that, once a request's headers are in and before its body is read: framing a
 * proxy could read otherwise is refused and the connection closed (framing.h), and a request
 * that passes the token lets its connection live on; one that does not is answered and its
 * connection closed, and a connection holds its slot without a token for the header timeout at
 * most (peers.h), so that peers without a token cannot hold every connection (slowloris). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "deadline.h"
#include "util.h"
#include "oplog.h"
#include "refusals.h"
#include "asks.h"
#include "framing.h"
#include "headers.h"
#include "methods.h"
#include "mhd_api.h"
#include "peers.h"
#include "transports.h"

#define SESSION_ID_BYTES 16
#define SSE_KEEPALIVE_MS 15000
#define PEER_CHECK_MS 200
/* How long a connection whose requests pass the token may stay quiet: longer than any run
 * (a run's answer, and a stream's keep-alive every 15 s, are activity). */
#define TRUSTED_IDLE_S 600u

/* An Mcp-Session-Id: the instance name and a dot, when the server has one (a proxy routes
 * on it), then 32 hex digits. */
#define SESSION_ID_MAX (MCP_INSTANCE_MAX + 1 + SESSION_ID_BYTES * 2)

struct http_session {
        char id[SESSION_ID_MAX + 1];
        size_t who; /* the token it was opened with: only that token reaches it */
        struct mcp_client *client;
        double last_used_ms; /* monotonic */
};

struct http {
        struct mcp_server *server;
        const struct http_options *o;
        char **hosts, **origins; /* allowed Host and Origin values, NULL-terminated */
        /* The clients of 2026-07-28 requests, one per token (one in all without a token): that
         * era has no session to tell clients apart by, so its code sessions are scoped by the
         * token that authorized the request (docs/mcp.md). */
        struct mcp_client **modern;
        size_t n_modern;
        pthread_mutex_t lock; /* guards sessions */
        struct http_session *sessions;
        size_t n_sessions;
        /* Event-stream handlers still running (they may outlive their connection). */
        unsigned streams;
        pthread_cond_t streams_done;
        /* Requests between their first byte and their answer's last: a drain waits for
         * them. */
        unsigned in_flight;
        /* The connections without a token yet (its own lock). */
        struct peers peers;
};

/* One HTTP request as it arrives: the body, capped. */
struct request {
        char *body;
        size_t len;
        bool too_big;
        /* It did not pass the token (or the Host check): it is answered without its body, and
         * its connection closed after the answer. */
        bool untrusted;
};

/* ---- responses ---------------------------------------------------------------------- */

/* The Origin a response of this thread's request may be read from by a browser (CORS), or
 * NULL. Set by handle() for the request it serves: libmicrohttpd gives each connection its
 * own thread, so every reply() of that request runs on it. */
static __thread const char *cors_origin;
/* Set while the server drains: every answer closes its connection, so that a proxy's
 * keep-alive connections to this instance go away with their last request. */
static __thread bool closing;
/* Set while an untrusted request is answered: its connection closes after the answer. */
static __thread bool close_after;

/* Whether the answer being made ends its connection. */
static bool ends_connection(void)
{
        return closing || close_after;
}

static void add_cors_headers(struct MHD_Response *r)
{
        if (!cors_origin)
                return;
        MHD_add_response_header(r, "Access-Control-Allow-Origin", cors_origin);
        MHD_add_response_header(r, "Access-Control-Expose-Headers",
                                "Mcp-Session-Id, WWW-Authenticate");
        MHD_add_response_header(r, "Vary", "Origin");
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
                             char *body, const char *session_id)
{
        struct MHD_Response *r = MHD_create_response_from_buffer(
                body ? strlen(body) : 0, body ? body : (char *)"",
                body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
        if (!r) {
                free(body);
                return MHD_NO;
        }
        if (type)
                MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        if (session_id)
                MHD_add_response_header(r, "Mcp-Session-Id", session_id);
        if (status == MHD_HTTP_METHOD_NOT_ALLOWED || status == MHD_HTTP_NO_CONTENT)
                MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "POST, DELETE, OPTIONS");
        add_cors_headers(r);
        if (ends_connection())
                MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
        if (status == MHD_HTTP_UNAUTHORIZED)
                MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
        enum MHD_Result ok = MHD_queue_response(conn, status, r);
        MHD_destroy_response(r);
        return ok;
}

static enum MHD_Result reply_json(struct MHD_Connection *conn, unsigned status, json_t *msg,
                                  const char *session_id)
{
        char *text = jsonrpc_text(msg);
        json_decref(msg);
        return reply(conn, status, "application/json", text, session_id);
}

/* An HTTP-level refusal, worded as a JSON-RPC error so MCP clients can show it. */
static enum MHD_Result refuse(struct MHD_Connection *conn, unsigned status, int code,
                              const char *why)
{
        if (status < 500 || code == JSONRPC_SERVER_BUSY)
                refusal_note(refusal_of_http_status(status), why);
        else
                oplog_event(OPLOG_ERROR, "http_error",
                            json_pack("{s:i, s:s}", "status", (int)status, "why", why));
        return reply_json(conn, status, jsonrpc_error(NULL, code, "%s", why), NULL);
}

/* ---- checks ------------------------------------------------------------------------- */

static const char *header(struct MHD_Connection *conn, const char *name)
{
        return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

static bool listed(char *const *list, const char *value)
{
        for (size_t i = 0; value && list && list[i]; i++)
                if (strcasecmp(list[i], value) == 0)
                        return true;
        return false;
}

/* Compares in time that depends only on the lengths, not on where they differ. */
static bool same_secret(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b);
        unsigned char diff = la != lb;
        for (size_t i = 0; i < la; i++)
                diff |= (unsigned char)a[i] ^ (unsigned char)b[i % (lb ? lb : 1)];
        return diff == 0;
}

/* Which token the request carries (its index; 0 when the server has none), or -1. Every
 * token is compared, so the time taken does not say which one came close. */
static int authorized(struct http *h, struct MHD_Connection *conn)
{
        if (!h->o->tokens || !h->o->tokens[0])
                return 0;
        const char *auth = header(conn, MHD_HTTP_HEADER_AUTHORIZATION);
        if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
                return -1;
        int who = -1;
        for (int i = 0; h->o->tokens[i]; i++)
                if (same_secret(auth + 7, h->o->tokens[i]) && who < 0)
                        who = i;
        return who;
}

static bool accepts(const char *accept, const char *type)
{
        return !accept || strstr(accept, type) || strstr(accept, "*/*");
}

/* ---- sessions ----------------------------------------------------------------------- */

static int new_session(struct http *h, struct mcp_client *client, size_t who, char *ret_id)
{
        unsigned char raw[SESSION_ID_BYTES];
        /* The id is the only thing that names a session over HTTP: unguessable. */
        if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
                return -EIO;
        const char *instance = mcp_server_instance(h->server);
        int at = sprintf(ret_id, *instance ? "%s." : "%s", instance);
        for (size_t i = 0; i < sizeof(raw); i++)
                sprintf(ret_id + at + 2 * i, "%02x", raw[i]);
        pthread_mutex_lock(&h->lock);
        struct http_session *grown = realloc(h->sessions, (h->n_sessions + 1) * sizeof(*grown));
        if (!grown) {
                pthread_mutex_unlock(&h->lock);
                return -ENOMEM;
        }
        h->sessions = grown;
        snprintf(h->sessions[h->n_sessions].id, sizeof(grown->id), "%s", ret_id);
        h->sessions[h->n_sessions].last_used_ms = now_ms();
        h->sessions[h->n_sessions].who = who;
        h->sessions[h->n_sessions++].client = client;
        pthread_mutex_unlock(&h->lock);
        return 0;
}

/* The session's client with a reference for the caller; remove also takes it off the table.
 * A session is found only with the token it was opened with. */
static struct mcp_client *find_session(struct http *h, const char *id, size_t who, bool remove)
{
        struct mcp_client *c = NULL;
        pthread_mutex_lock(&h->lock);
        for (size_t i = 0; id && i < h->n_sessions; i++)
                if (same_secret(h->sessions[i].id, id) && h->sessions[i].who == who) {
                        c = h->sessions[i].client;
                        h->sessions[i].last_used_ms = now_ms();
                        if (remove)
                                h->sessions[i] = h->sessions[--h->n_sessions];
                        else
                                mcp_client_ref(c);
                        break;
                }
        pthread_mutex_unlock(&h->lock);
        return c;
}

/* 404 for a session id not open here. One that names another instance came here because the
 * proxy could not reach that instance: the session, and its code sessions, died with it. */
static enum MHD_Result refuse_unknown_session(struct http *h, struct MHD_Connection *conn,
                                              const char *sid)
{
        const char *dot = strchr(sid, '.');
        const char *mine = mcp_server_instance(h->server);
        size_t n = dot ? (size_t)(dot - sid) : 0;
        char home[MCP_INSTANCE_MAX + 1] = "";
        if (n <= MCP_INSTANCE_MAX)
                snprintf(home, sizeof(home), "%.*s", (int)n, sid);
        if (!mcp_instance_name_valid(home) || strcmp(home, mine) == 0)
                return refuse(conn, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST,
                              "unknown or ended MCP session: initialize again");
        char why[256];
        snprintf(why, sizeof(why),
                 "MCP session lost: it lived on the codecell instance \"%s\", which no longer "
                 "serves it (it stopped, crashed or was replaced), and its code sessions are "
                 "gone with it: initialize again",
                 home);
        return refuse(conn, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST, why);
}

/* ---- answers: one JSON body, or an event stream ------------------------------------ */

/* Keeps the request's answer, as the text of the body; notifications have nowhere to go in a
 * JSON answer. */
struct json_sink {
        struct mcp_sink sink;
        char *answer;
};

static int json_sink_send(struct mcp_sink *sink, char *text, bool answer)
{
        struct json_sink *j = (struct json_sink *)sink;
        if (answer && !j->answer) {
                j->answer = text;
                return 0;
        }
        free(text);
        return answer ? -1 : 0;
}

/* An SSE answer: the handler runs on its own thread and queues events; libmicrohttpd's
 * connection thread takes them as the client reads. */
struct stream {
        struct mcp_sink sink;
        pthread_mutex_t lock;
        pthread_cond_t changed;
        char *buf;
        size_t off, len, cap; /* buf[off, len) is still to send */
        bool done;            /* the handler has returned: end the stream once buf is sent */
        int fd;               /* the connection's socket, watched for the client going away */
        unsigned refs;        /* the handler thread and the response */
        struct http *http;
        struct mcp_server *server;
        struct mcp_client *client;
        json_t *message;
};

static void stream_unref(struct stream *st)
{
        pthread_mutex_lock(&st->lock);
        bool last = --st->refs == 0;
        pthread_mutex_unlock(&st->lock);
        if (!last)
                return;
        free(st->buf);
        json_decref(st->message);
        mcp_client_unref(st->client);
        pthread_cond_destroy(&st->changed);
        pthread_mutex_destroy(&st->lock);
        free(st);
}

static int stream_send(struct mcp_sink *sink, char *text, bool answer)
{
        (void)answer;
        struct stream *st = (struct stream *)sink;
        static const char head[] = "event: message\ndata: ", tail[] = "\n\n";
        size_t n = strlen(text), need = sizeof(head) - 1 + n + sizeof(tail) - 1;
        int r = 0;
        pthread_mutex_lock(&st->lock);
        if (st->off && st->len + need > st->cap) {
                /* What was sent makes room: moved once per send, not once per read. */
                memmove(st->buf, st->buf + st->off, st->len - st->off);
                st->len -= st->off;
                st->off = 0;
        }
        if (st->len + need > st->cap) {
                size_t cap = (st->len + need) * 2;
                char *grown = realloc(st->buf, cap);
                if (grown) {
                        st->buf = grown;
                        st->cap = cap;
                }
        }
        if (st->len + need <= st->cap) {
                char *p = mempcpy(st->buf + st->len, head, sizeof(head) - 1);
                p = mempcpy(p, text, n);
                memcpy(p, tail, sizeof(tail) - 1);
                st->len += need;
        } else {
                r = -1;
        }
        /* 2026-07-28: the answer ends the stream, even when the handler goes on (a run that
         * answered input_required waits for the retry, approvals.c): closing it after the
         * answer is then no cancellation. */
        if (answer && mcp_message_modern(st->message))
                st->done = true;
        pthread_cond_broadcast(&st->changed);
        pthread_mutex_unlock(&st->lock);
        free(text);
        return r;
}

static void *stream_run(void *arg)
{
        struct stream *st = arg;
        mcp_handle(st->server, st->client, st->message, JSONRPC_REQUEST, &st->sink);
        pthread_mutex_lock(&st->lock);
        st->done = true;
        pthread_cond_broadcast(&st->changed);
        pthread_mutex_unlock(&st->lock);
        struct http *h = st->http;
        stream_unref(st);
        pthread_mutex_lock(&h->lock);
        h->streams--;
        pthread_cond_broadcast(&h->streams_done);
        pthread_mutex_unlock(&h->lock);
        return NULL;
}

/* Whether the client has closed the connection (or shut it for writing): a stream that waits
 * for its next event writes nothing, so libmicrohttpd would learn it only at the keep-alive. */
static bool peer_gone(int fd)
{
        struct pollfd p = {.fd = fd, .events = POLLRDHUP};
        return fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
        (void)pos;
        struct stream *st = cls;
        pthread_mutex_lock(&st->lock);
        double quiet_since = now_ms();
        while (st->len == st->off && !st->done) {
                int woken = cond_wait_until(&st->changed, &st->lock, now_ms() + PEER_CHECK_MS);
                if (woken != ETIMEDOUT || st->len != st->off || st->done)
                        continue;
                if (peer_gone(st->fd)) {
                        /* Ends the response: stream_closed() then cancels a modern call. */
                        pthread_mutex_unlock(&st->lock);
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                }
                if (now_ms() - quiet_since >= SSE_KEEPALIVE_MS) {
                        /* A comment line keeps proxies from closing a quiet stream. */
                        pthread_mutex_unlock(&st->lock);
                        static const char keepalive[] = ": keepalive\n\n";
                        size_t n = sizeof(keepalive) - 1 < max ? sizeof(keepalive) - 1 : max;
                        memcpy(out, keepalive, n);
                        return (ssize_t)n;
                }
        }
        ssize_t n;
        if (st->len == st->off) {
                n = MHD_CONTENT_READER_END_OF_STREAM;
        } else {
                size_t k = st->len - st->off < max ? st->len - st->off : max;
                memcpy(out, st->buf + st->off, k);
                st->off += k;
                if (st->off == st->len)
                        st->off = st->len = 0;
                n = (ssize_t)k;
        }
        pthread_mutex_unlock(&st->lock);
        return n;
}

static void stream_closed(void *cls)
{
        struct stream *st = cls;
        pthread_mutex_lock(&st->lock);
        bool running = !st->done;
        pthread_mutex_unlock(&st->lock);
        /* 2026-07-28: a response stream closed before its answer cancels the request (the
         * earlier revisions say a disconnect is not a cancellation). */
        if (running && mcp_message_modern(st->message))
                mcp_cancel_answering(st->client, &st->sink);
        stream_unref(st);
}

static enum MHD_Result answer_stream(struct http *h, struct MHD_Connection *conn,
                                     struct mcp_client *client, json_t *message)
{
        struct stream *st = calloc(1, sizeof(*st));
        if (!st)
                return refuse(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, JSONRPC_INTERNAL_ERROR,
                              "out of memory");
        st->sink.send = stream_send;
        pthread_mutex_init(&st->lock, NULL);
        cond_init_monotonic(&st->changed);
        st->refs = 2;
        st->http = h;
        st->server = h->server;
        st->client = mcp_client_ref(client);
        st->message = json_incref(message);
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        st->fd = info ? info->connect_fd : -1;
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384,
                                                                   stream_read, st, stream_closed);
        pthread_t thread;
        pthread_mutex_lock(&h->lock);
        h->streams++;
        pthread_mutex_unlock(&h->lock);
        if (!r || pthread_create(&thread, NULL, stream_run, st) != 0) {
                pthread_mutex_lock(&h->lock);
                h->streams--;
                pthread_mutex_unlock(&h->lock);
                if (r)
                        MHD_destroy_response(r); /* drops the response's reference */
                else
                        stream_unref(st);
                stream_unref(st);
                return refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, JSONRPC_INTERNAL_ERROR,
                              "cannot start the call");
        }
        pthread_detach(thread);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        MHD_add_response_header(r, "X-Accel-Buffering", "no");
        add_cors_headers(r);
        if (ends_connection())
                MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
        enum MHD_Result ok = MHD_queue_response(conn, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ok;
}

/* ---- POST /mcp: 2026-07-28 ------------------------------------------------------------ */

#define HEADER_MISMATCH (-32020)

/* Whether a header that mirrors a value of the body (raw, NULL when absent) fails to match it;
 * then writes why. */
static bool mirror_mismatch(const char *raw, const char *body, const char *name, const char *what,
                            char *why, size_t n)
{
        char *value = raw ? mcp_header_decode(raw) : NULL;
        bool bad = !value || strcmp(value, body) != 0;
        if (bad)
                snprintf(why, n, "%s header %s %s", name,
                         !raw    ? "missing: it must repeat"
                         : value ? "does not match"
                                 : "is not valid Base64 in =?base64?…?=, so cannot match",
                         what);
        free(value);
        return bad;
}

/* Server validation of 2026-07-28: the headers that mirror the body must be there and match
 * it, so that a proxy routing on them and this server never disagree; which of the method's
 * params they repeat is its entry's (methods.h). False when they do; else writes why. */
static bool header_mismatch(struct mcp_server *server, struct MHD_Connection *conn,
                            const json_t *msg, const struct mcp_method *m, char *why, size_t n)
{
        const json_t *params = json_object_get(msg, "params");
        const char *method = json_string_value(json_object_get(msg, "method"));
        const char *body_version = json_string_value(
                json_object_get(json_object_get(params, "_meta"), MCP_META_VERSION));
        const char *version = header(conn, "MCP-Protocol-Version");
        const char *mcp_method = header(conn, "Mcp-Method");
        if (!version || (body_version && strcmp(version, body_version) != 0)) {
                snprintf(why, n, "MCP-Protocol-Version header %s the body's _meta[\"%s\"]",
                         version ? "does not match" : "missing: it must repeat", MCP_META_VERSION);
                return true;
        }
        if (!mcp_method || strcmp(mcp_method, method) != 0) {
                snprintf(why, n, "Mcp-Method header %s the body's method",
                         mcp_method ? "does not match" : "missing: it must repeat");
                return true;
        }
        const char *key = m ? m->name_param : NULL;
        const char *body_name = key ? json_string_value(json_object_get(params, key)) : NULL;
        if (!key || !body_name)
                return false;
        char what[32];
        snprintf(what, sizeof(what), "params.%s", key);
        if (mirror_mismatch(header(conn, "Mcp-Name"), body_name, "Mcp-Name", what, why, n))
                return true;
        /* The session argument, mirrored because its tool says x-mcp-header: a proxy routes on
         * it, so it must be the body's. */
        if (!m->param_headers || !mcp_tool_mirrors_session(server, body_name))
                return false;
        const json_t *session = json_object_get(json_object_get(params, "arguments"), "session");
        const char *raw = header(conn, "Mcp-Param-" MCP_SESSION_PARAM);
        if (!session && raw) {
                snprintf(why, n,
                         "Mcp-Param-" MCP_SESSION_PARAM " header sent, but "
                         "params.arguments has no session");
                return true;
        }
        return json_is_string(session) &&
               mirror_mismatch(raw, json_string_value(session), "Mcp-Param-" MCP_SESSION_PARAM,
                               "params.arguments.session", why, n);
}

/* The HTTP status of a 2026-07-28 answer: an unknown method is 404, a request the server
 * cannot take as it is (bad params, version, headers) 400, anything else 200. */
static unsigned modern_status(const char *answer)
{
        /* An error answer is small (its message is cut): a large answer is a result, and is
         * not parsed again just to learn so. */
        if (!answer || strlen(answer) > 65536)
                return MHD_HTTP_OK;
        json_t *msg = json_loads(answer, 0, NULL);
        json_int_t code =
                json_integer_value(json_object_get(json_object_get(msg, "error"), "code"));
        json_decref(msg);
        if (code == JSONRPC_METHOD_NOT_FOUND)
                return MHD_HTTP_NOT_FOUND;
        if (code == JSONRPC_INVALID_PARAMS || (code <= -32020 && code >= -32022))
                return MHD_HTTP_BAD_REQUEST;
        return MHD_HTTP_OK;
}

/* One 2026-07-28 message, of method m (NULL: none this server knows): no session (an
 * Mcp-Session-Id is ignored), headers checked against the body. Takes msg. */
static enum MHD_Result post_modern(struct http *h, struct MHD_Connection *conn, json_t *msg,
                                   const struct mcp_method *m, enum jsonrpc_kind kind,
                                   const char *accept, size_t who)
{
        struct mcp_client *modern = h->modern[who];
        char why[192];
        const json_t *id = json_object_get(msg, "id");
        enum MHD_Result result;
        if (kind == JSONRPC_REQUEST && header_mismatch(h->server, conn, msg, m, why, sizeof(why))) {
                result = reply_json(conn, MHD_HTTP_BAD_REQUEST,
                                    jsonrpc_error(id, HEADER_MISMATCH, "Header mismatch: %s", why),
                                    NULL);
                json_decref(msg);
                return result;
        }
        if (kind == JSONRPC_REQUEST && !mcp_message_modern(msg)) {
                /* The header says 2026-07-28 but the body has no _meta to say it too. */
                result = reply_json(conn, MHD_HTTP_BAD_REQUEST,
                                    jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
                                                  "params._meta[\"" MCP_META_VERSION "\"] must "
                                                  "be a string (2026-07-28 requests carry it "
                                                  "every time)"),
                                    NULL);
                json_decref(msg);
                return result;
        }
        const json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
        if (kind != JSONRPC_REQUEST) {
                mcp_handle(h->server, modern, msg, kind, NULL);
                result = reply(conn, MHD_HTTP_ACCEPTED, NULL, NULL, NULL);
        } else if (m && m->long_running && accepts(accept, "text/event-stream") &&
                   (json_object_get(meta, "progressToken") ||
                    json_object_get(meta, "io.modelcontextprotocol/logLevel") ||
                    json_is_object(json_object_get(
                            json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"),
                            "elicitation")))) {
                /* A client that can be asked for approval may get an input_required answer
                 * while its run goes on: on a stream, the answer goes out at once. */
                result = answer_stream(h, conn, modern, msg);
        } else {
                struct json_sink js = {.sink.send = json_sink_send};
                mcp_handle(h->server, modern, msg, kind, &js.sink);
                char *answer =
                        js.answer ? js.answer
                                  : jsonrpc_text_free(jsonrpc_error(id, JSONRPC_REQUEST_CANCELLED,
                                                                    "the request was cancelled"));
                result = reply(conn, modern_status(answer), "application/json", answer, NULL);
        }
        json_decref(msg);
        return result;
}

/* ---- POST /mcp: the initialize era ------------------------------------------------------ */

/* Whether a draining server still answers a request of method m (NULL: unknown): one of an
 * MCP session open here that starts no run (tools/list, ping; DELETE and notifications are
 * answered too). Every run, new MCP session (refused_while_draining) or 2026-07-28 request is
 * turned away with 503, so that the drain ends once the runs in progress have: the proxy
 * passes one-shot work on to another instance, and a call bound to this instance to one that
 * says its session was lost (docs/scaling.md). */
static bool answered_while_draining(const struct mcp_method *m, bool modern)
{
        return !modern && !(m && m->refused_while_draining);
}

/* 503 to new work while draining: the proxy passes the request on to another instance (and
 * counts this one as failed for a while). */
static enum MHD_Result refuse_draining(struct MHD_Connection *conn)
{
        return refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, JSONRPC_SERVER_BUSY,
                      "this codecell instance is shutting down (draining): send the request "
                      "again, to another instance");
}

/* Whether the text of an answer to initialize is a result (not an error). */
static bool initialized(const char *answer)
{
        json_t *msg = answer ? json_loads(answer, 0, NULL) : NULL;
        bool ok = json_is_object(json_object_get(msg, "result"));
        json_decref(msg);
        return ok;
}

static enum MHD_Result post(struct http *h, struct MHD_Connection *conn, struct request *req,
                            size_t who)
{
        if (req->too_big) {
                char why[96];
                snprintf(why, sizeof(why), "request body over %zu bytes", h->o->max_body);
                return refuse(conn, MHD_HTTP_CONTENT_TOO_LARGE, JSONRPC_INVALID_REQUEST, why);
        }
        const char *type = header(conn, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!type || strncasecmp(type, "application/json", 16) != 0)
                return refuse(conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, JSONRPC_INVALID_REQUEST,
                              "Content-Type must be application/json");
        const char *accept = header(conn, MHD_HTTP_HEADER_ACCEPT);
        if (!accepts(accept, "application/json") && !accepts(accept, "text/event-stream"))
                return refuse(conn, MHD_HTTP_NOT_ACCEPTABLE, JSONRPC_INVALID_REQUEST,
                              "Accept must include application/json or text/event-stream");
        enum jsonrpc_kind kind;
        json_t *error = NULL;
        json_t *msg = jsonrpc_parse(req->body ? req->body : "", req->len, &kind, &error);
        if (!msg)
                return reply_json(conn, MHD_HTTP_BAD_REQUEST, error, NULL);
        const struct mcp_method *m =
                mcp_method_find(json_string_value(json_object_get(msg, "method")));
        const char *sid = header(conn, "Mcp-Session-Id");
        const char *version = header(conn, "MCP-Protocol-Version");
        enum MHD_Result result;
        struct mcp_client *client = NULL;
        char new_id[SESSION_ID_MAX + 1] = "";
        bool modern =
                mcp_message_modern(msg) || (version && strcmp(version, MCP_MODERN_PROTOCOL) == 0);
        if (closing && kind == JSONRPC_REQUEST && !answered_while_draining(m, modern)) {
                json_decref(msg);
                return refuse_draining(conn);
        }
        if (modern)
                return post_modern(h, conn, msg, m, kind, accept, who);

        if (kind == JSONRPC_REQUEST && m && m->opens_session) {
                client = mcp_client_new(h->server);
                if (!client || new_session(h, client, who, new_id) < 0) {
                        mcp_client_unref(client);
                        json_decref(msg);
                        return refuse(conn, MHD_HTTP_SERVICE_UNAVAILABLE, JSONRPC_SERVER_BUSY,
                                      "too many MCP sessions: end one (DELETE /mcp) first");
                }
                mcp_client_ref(client); /* one for the table, one for this request */
        } else if (!sid) {
                json_decref(msg);
                return refuse(conn, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST,
                              "Mcp-Session-Id header required (send initialize first)");
        } else if (!(client = find_session(h, sid, who, false))) {
                json_decref(msg);
                return refuse_unknown_session(h, conn, sid);
        } else if (version && !mcp_protocol_supported(version)) {
                mcp_client_unref(client);
                json_decref(msg);
                char why[128];
                snprintf(why, sizeof(why), "unsupported MCP-Protocol-Version \"%.*s\"",
                         utf8_prefix(version, 40), version);
                return refuse(conn, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST, why);
        }

        if (kind != JSONRPC_REQUEST) {
                mcp_handle(h->server, client, msg, kind, NULL);
                result = reply(conn, MHD_HTTP_ACCEPTED, NULL, NULL, NULL);
        } else if (m && m->long_running && accepts(accept, "text/event-stream") &&
                   (json_object_get(json_object_get(json_object_get(msg, "params"), "_meta"),
                                    "progressToken") ||
                    mcp_client_wants_logs(client) || mcp_client_elicits(client))) {
                /* A client that can be asked for approval gets its question on this stream
                 * (elicitation/create, asks.c) and POSTs the answer. */
                result = answer_stream(h, conn, client, msg);
        } else {
                struct json_sink js = {.sink.send = json_sink_send};
                mcp_handle(h->server, client, msg, kind, &js.sink);
                /* Only a cancelled request has no answer. */
                char *answer =
                        js.answer ? js.answer
                                  : jsonrpc_text_free(jsonrpc_error(json_object_get(msg, "id"),
                                                                    JSONRPC_REQUEST_CANCELLED,
                                                                    "the request was cancelled"));
                if (new_id[0] && !initialized(answer)) {
                        /* A failed initialize opens nothing: no session id, nothing counted. */
                        struct mcp_client *gone = find_session(h, new_id, who, true);
                        if (gone) {
                                mcp_client_end(gone);
                                mcp_client_unref(gone);
                        }
                        new_id[0] = '\0';
                }
                result = reply(conn, MHD_HTTP_OK, "application/json", answer,
                               new_id[0] ? new_id : NULL);
        }
        mcp_client_unref(client);
        json_decref(msg);
        return result;
}

static enum MHD_Result delete_session(struct http *h, struct MHD_Connection *conn, size_t who)
{
        const char *sid = header(conn, "Mcp-Session-Id");
        if (!sid)
                return refuse(conn, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST,
                              "Mcp-Session-Id header required");
        struct mcp_client *c = find_session(h, sid, who, true);
        if (!c)
                return refuse_unknown_session(h, conn, sid);
        mcp_client_end(c); /* cancels its runs, closes its code sessions */
        mcp_client_unref(c);
        return reply(conn, MHD_HTTP_OK, NULL, NULL, NULL);
}

static enum MHD_Result route(struct http *h, struct MHD_Connection *conn, const char *url,
                             const char *method, struct request *req);

static enum MHD_Result note_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
        (void)kind;
        framing_note(cls, key, key_size, value ? value : "", value ? value_size : 0);
        return MHD_YES;
}

/* The request's framing, from every header line (libmicrohttpd's own lookup sees only the
 * first of each name): 0 when sound, else 400 and why. */
static unsigned framing_fault(struct MHD_Connection *conn, const char *version, const char **why)
{
        struct framing f = {0};
        MHD_get_connection_values_n(conn, MHD_HEADER_KIND, note_header, &f);
        return framing_verdict(&f, strcmp(version, MHD_HTTP_VERSION_1_0) == 0, why);
}

static struct peer *peer_of(struct MHD_Connection *conn)
{
        const union MHD_ConnectionInfo *info =
                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        return info ? info->socket_context : NULL;
}

/* A request's headers are in, none of its body is read. Framing two parsers could read
 * differently is refused now, and the connection closed with the answer: its body, and what
 * follows, are not known to be what a proxy in front took them for. A request that passes the
 * Host check and the token frees its connection from the header deadline; any other is
 * answered once its body is dropped, and its connection closed. */
static enum MHD_Result first_look(struct http *h, struct MHD_Connection *conn, const char *version,
                                  struct request *req)
{
        const char *why;
        unsigned status = framing_fault(conn, version, &why);
        if (status) {
                close_after = true;
                enum MHD_Result r = refuse(conn, status, JSONRPC_INVALID_REQUEST, why);
                close_after = false;
                return r;
        }
        if (listed(h->hosts, header(conn, MHD_HTTP_HEADER_HOST)) && authorized(h, conn) >= 0) {
                peers_trust(&h->peers, peer_of(conn));
                MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, TRUSTED_IDLE_S);
        } else {
                req->untrusted = true;
        }
        return MHD_YES;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
        struct http *h = cls;
        struct request *req = *state;
        if (!req) {
                if (!(req = calloc(1, sizeof(*req))))
                        return MHD_NO;
                *state = req;
                pthread_mutex_lock(&h->lock);
                h->in_flight++;
                pthread_mutex_unlock(&h->lock);
                return first_look(h, conn, version, req);
        }
        if (*upload_size) {
                /* Past the cap the rest is read and dropped, then refused whole; an untrusted
                 * request's body is never kept (it is refused before it is read). */
                if (!req->untrusted && !req->too_big && req->len + *upload_size > h->o->max_body) {
                        req->too_big = true;
                } else if (!req->untrusted && !req->too_big) {
                        char *grown = realloc(req->body, req->len + *upload_size + 1);
                        if (!grown)
                                return MHD_NO;
                        req->body = grown;
                        memcpy(req->body + req->len, upload, *upload_size);
                        req->len += *upload_size;
                }
                *upload_size = 0;
                return MHD_YES;
        }
        cors_origin = NULL;
        closing = mcp_server_draining(h->server);
        close_after = req->untrusted;
        enum MHD_Result r = route(h, conn, url, method, req);
        cors_origin = NULL;
        closing = close_after = false;
        return r;
}

/* Whether a page from origin may read this server's answers (CORS): only origins given with
 * --cors-origin ("*" for any); none by default. */
static bool cors_allowed(struct http *h, const char *origin)
{
        for (size_t i = 0; origin && h->o->cors_origins && h->o->cors_origins[i]; i++)
                if (strcmp(h->o->cors_origins[i], "*") == 0 ||
                    strcasecmp(h->o->cors_origins[i], origin) == 0)
                        return true;
        return false;
}

/* OPTIONS: a browser's preflight. Answered before the token is checked, since browsers send
 * the preflight without credentials. */
static enum MHD_Result preflight(struct MHD_Connection *conn)
{
        if (header(conn, MHD_HTTP_HEADER_ORIGIN) && !cors_origin)
                return refuse(conn, MHD_HTTP_FORBIDDEN, JSONRPC_INVALID_REQUEST,
                              "Origin not allowed to call this server from a browser (see "
                              "--cors-origin)");
        struct MHD_Response *r =
                MHD_create_response_from_buffer(0, (char *)"", MHD_RESPMEM_PERSISTENT);
        if (!r)
                return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "POST, DELETE, OPTIONS");
        if (cors_origin) {
                MHD_add_response_header(r, "Access-Control-Allow-Methods", "POST, DELETE, OPTIONS");
                MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                        "Content-Type, Accept, Authorization, Mcp-Session-Id, "
                                        "MCP-Protocol-Version, Mcp-Method, Mcp-Name, "
                                        "Mcp-Param-" MCP_SESSION_PARAM ", Last-Event-ID");
                MHD_add_response_header(r, "Access-Control-Max-Age", "600");
                add_cors_headers(r);
        }
        if (ends_connection())
                MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
        enum MHD_Result ok = MHD_queue_response(conn, MHD_HTTP_NO_CONTENT, r);
        MHD_destroy_response(r);
        return ok;
}

static enum MHD_Result route(struct http *h, struct MHD_Connection *conn, const char *url,
                             const char *method, struct request *req)
{
        /* DNS rebinding: a page in a browser must not reach this server under another name. */
        const char *host = header(conn, MHD_HTTP_HEADER_HOST);
        if (!listed(h->hosts, host))
                return refuse(conn, MHD_HTTP_FORBIDDEN, JSONRPC_INVALID_REQUEST,
                              "Host not allowed (see --allow-host)");
        const char *origin = header(conn, MHD_HTTP_HEADER_ORIGIN);
        if (cors_allowed(h, origin))
                cors_origin = origin;
        else if (origin && !listed(h->origins, origin))
                return refuse(conn, MHD_HTTP_FORBIDDEN, JSONRPC_INVALID_REQUEST,
                              "Origin not allowed (see --allow-origin, --cors-origin)");
        if (strcmp(method, "OPTIONS") == 0)
                return preflight(conn);
        if (strcmp(url, "/healthz") == 0 && strcmp(method, "GET") == 0)
                /* Ready once it listens (the configuration loaded, the upstream MCP servers
                 * connected, every pool warmed); not while it drains. */
                return closing ? reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
                                       strdup("draining\n"), NULL)
                               : reply(conn, MHD_HTTP_OK, "text/plain", strdup("ok\n"), NULL);
        bool is_mcp = strcmp(url, "/mcp") == 0;
        bool is_metrics = strcmp(url, "/metrics") == 0 && strcmp(method, "GET") == 0;
        if (!is_mcp && !is_metrics)
                return refuse(conn, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST,
                              "not found: the MCP endpoint is /mcp");
        int who = authorized(h, conn);
        if (who < 0)
                return refuse(conn, MHD_HTTP_UNAUTHORIZED, JSONRPC_INVALID_REQUEST,
                              "a valid bearer token is required");
        if (is_metrics)
                return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4",
                             mcp_server_metrics(h->server), NULL);
        if (strcmp(method, "POST") == 0)
                return post(h, conn, req, (size_t)who);
        if (strcmp(method, "DELETE") == 0)
                return delete_session(h, conn, (size_t)who);
        /* No server-initiated stream: this server never sends a request of its own (and
         * 2026-07-28 has no GET at all). */
        return refuse(conn, MHD_HTTP_METHOD_NOT_ALLOWED, JSONRPC_INVALID_REQUEST,
                      "use POST (or DELETE to end the session)");
}

static void completed(void *cls, struct MHD_Connection *conn, void **state,
                      enum MHD_RequestTerminationCode why)
{
        (void)conn, (void)why;
        struct http *h = cls;
        struct request *req = *state;
        if (req) {
                free(req->body);
                pthread_mutex_lock(&h->lock);
                h->in_flight--;
                pthread_cond_broadcast(&h->streams_done);
                pthread_mutex_unlock(&h->lock);
        }
        free(req);
        *state = NULL;
}

/* Every connection is in the table of those without a token from its accept until a request
 * on it passes the token or it closes (peers.h). */
static void connection_event(void *cls, struct MHD_Connection *conn, void **socket_context,
                             enum MHD_ConnectionNotificationCode what)
{
        struct http *h = cls;
        if (what == MHD_CONNECTION_NOTIFY_STARTED) {
                const union MHD_ConnectionInfo *info =
                        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
                /* Out of memory, the connection goes untracked: still under the idle timeout. */
                *socket_context = info ? peers_add(&h->peers, info->connect_fd) : NULL;
        } else {
                peers_remove(&h->peers, *socket_context);
                *socket_context = NULL;
        }
}

/* ---- listening ---------------------------------------------------------------------- */

/* "HOST:PORT", "[V6]:PORT", or a bare "PORT" (on 127.0.0.1: loopback unless told otherwise)
 * into a socket address. */
static int parse_address(const char *text, struct sockaddr_storage *ss, socklen_t *len, char *host,
                         size_t host_size)
{
        if (*text && strspn(text, "0123456789") == strlen(text)) {
                char with_host[32];
                snprintf(with_host, sizeof(with_host), "127.0.0.1:%.8s", text);
                return parse_address(with_host, ss, len, host, host_size);
        }
        const char *colon = strrchr(text, ':');
        if (!colon || colon == text)
                return -EINVAL;
        char *end;
        long port = strtol(colon + 1, &end, 10);
        if (*end || colon[1] == '\0' || port < 0 || port > 65535)
                return -EINVAL;
        size_t n = (size_t)(colon - text);
        if (text[0] == '[' && colon[-1] == ']')
                snprintf(host, host_size, "%.*s", (int)(n - 2), text + 1);
        else
                snprintf(host, host_size, "%.*s", (int)n, text);
        memset(ss, 0, sizeof(*ss));
        struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
        if (strcmp(host, "localhost") == 0)
                snprintf(host, host_size, "127.0.0.1");
        if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
                v4->sin_family = AF_INET;
                v4->sin_port = htons((uint16_t)port);
                *len = sizeof(*v4);
        } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
                v6->sin6_family = AF_INET6;
                v6->sin6_port = htons((uint16_t)port);
                *len = sizeof(*v6);
        } else {
                return -EINVAL;
        }
        return 0;
}

static unsigned port_of(const struct sockaddr_storage *ss)
{
        return ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
                                              : ((const struct sockaddr_in6 *)ss)->sin6_port);
}

static int listen_on(const char *address, unsigned *ret_port, char *host, size_t host_size)
{
        struct sockaddr_storage ss;
        socklen_t len;
        if (parse_address(address, &ss, &len, host, host_size) < 0)
                return -EINVAL;
        int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd < 0)
                return -errno;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 128) < 0 ||
            getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
                int e = errno;
                close(fd);
                return -e;
        }
        *ret_port = port_of(&ss);
        return fd;
}

/* A socket that listens already (socket activation): its address, for the Host and Origin
 * checks, is o->address. */
static int adopt(const struct http_options *o, unsigned *ret_port, char *host, size_t host_size)
{
        struct sockaddr_storage ss;
        socklen_t len;
        if (parse_address(o->address, &ss, &len, host, host_size) < 0)
                return -EINVAL;
        *ret_port = port_of(&ss);
        return o->listen_fd;
}

/* Ends the MCP sessions unused for client_idle_ms (none with a request in progress): a client
 * that never sends DELETE does not hold its slot, and its code sessions, for ever. */
static void sweep_idle(struct http *h)
{
        double now = now_ms();
        for (;;) {
                struct mcp_client *gone = NULL;
                pthread_mutex_lock(&h->lock);
                for (size_t i = 0; i < h->n_sessions && !gone; i++)
                        if (now - h->sessions[i].last_used_ms > (double)h->o->client_idle_ms &&
                            !mcp_client_busy(h->sessions[i].client)) {
                                gone = h->sessions[i].client;
                                h->sessions[i] = h->sessions[--h->n_sessions];
                        }
                pthread_mutex_unlock(&h->lock);
                if (!gone)
                        return;
                mcp_client_end(gone);
                mcp_client_unref(gone);
        }
}

/* The signal read from signal_fd (a signalfd), or 0. */
static int signal_read(int signal_fd)
{
        struct signalfd_siginfo si;
        return read(signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si) ? (int)si.ssi_signo : 0;
}

/* From the start of a drain, new connections are refused: a proxy passes a request whose
 * connection was refused on to another instance whatever its method, since nothing of it was
 * sent (nginx sends a POST that reached an instance nowhere else, lest it run twice). The
 * socket stays open, as libmicrohttpd asks until it stops, but shut down: Linux then stops
 * listening on it and refuses. Connections open already are served on (docs/scaling.md).
 * A socket systemd passed is only no longer accepted from: it is systemd's too, and its new
 * connections wait there for the next start of the service. */
static void stop_listening(struct MHD_Daemon *d, bool ours)
{
        MHD_socket fd = MHD_quiesce_daemon(d);
        if (fd != MHD_INVALID_SOCKET && ours)
                (void)shutdown(fd, SHUT_RDWR);
}

/* Serves until told to stop: SIGINT, or SIGTERM without a drain time, at once; SIGTERM with
 * one after draining (no new connection; on those open, new work turned away with 503 and
 * /healthz 503) until no request is in flight or the drain time is over, or a second signal.
 * Ends idle MCP sessions meanwhile. */
static void wait_for_stop(struct http *h, struct MHD_Daemon *d, int signal_fd)
{
        int sweep_every = h->o->client_idle_ms / 2 < 5000 ? (int)(h->o->client_idle_ms / 2) : 5000;
        /* Connections past the header timeout are closed within a quarter of it, or a second. */
        int reap_every =
                h->o->header_timeout_ms / 4 < 1000 ? (int)(h->o->header_timeout_ms / 4) : 1000;
        int every = sweep_every < reap_every ? sweep_every : reap_every;
        double drain_until = 0;
        for (;;) {
                struct pollfd p = {.fd = signal_fd, .events = POLLIN};
                int n = poll(&p, 1, drain_until ? 20 : every > 50 ? every : 50);
                if (n > 0) {
                        int sig = signal_read(signal_fd);
                        if (sig != SIGTERM || !h->o->drain_ms || drain_until)
                                return;
                        drain_until = now_ms() + (double)h->o->drain_ms;
                        mcp_server_drain(h->server);
                        stop_listening(d, h->o->listen_fd <= 0);
                        oplog_event(OPLOG_INFO, "drain",
                                    json_pack("{s:I}", "deadline_ms", (json_int_t)h->o->drain_ms));
                } else if (n < 0 && errno != EINTR) {
                        return;
                }
                sweep_idle(h);
                peers_reap(&h->peers);
                if (!drain_until)
                        continue;
                pthread_mutex_lock(&h->lock);
                bool idle = h->in_flight == 0;
                pthread_mutex_unlock(&h->lock);
                if (idle || now_ms() >= drain_until)
                        return;
        }
}

#define ANSWER_IN_FLIGHT_MS 5000

/* Waits, a little while at most, until the requests in flight have sent their answers (the
 * cancelled ones answer -32800): stopping the daemon first would cut them off unanswered. */
static void answer_in_flight(struct http *h)
{
        double until = now_ms() + ANSWER_IN_FLIGHT_MS;
        pthread_mutex_lock(&h->lock);
        while (h->in_flight && cond_wait_until(&h->streams_done, &h->lock, until) == 0)
                ;
        pthread_mutex_unlock(&h->lock);
}

static void free_list(char **list)
{
        for (size_t i = 0; list && list[i]; i++)
                free(list[i]);
        free(list);
}

/* The Host and Origin values this server answers to: its own address (and, on loopback, the
 * loopback names) with its port, plus what the user allowed. */
static int allowed_lists(struct http *h, const char *host, unsigned port)
{
        bool loopback = strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0;
        const char *names[] = {"127.0.0.1", "localhost", "[::1]", NULL};
        size_t extra_h = 0, extra_o = 0;
        while (h->o->allowed_hosts && h->o->allowed_hosts[extra_h])
                extra_h++;
        while (h->o->allowed_origins && h->o->allowed_origins[extra_o])
                extra_o++;
        h->hosts = calloc(8 + extra_h, sizeof(char *));
        h->origins = calloc(8 + extra_o, sizeof(char *));
        if (!h->hosts || !h->origins)
                return -ENOMEM;
        size_t nh = 0, no = 0;
        char own[80];
        snprintf(own, sizeof(own), strchr(host, ':') ? "[%s]" : "%s", host);
        for (size_t i = 0; i < (loopback ? 3u : 0u); i++) {
                if (asprintf(&h->hosts[nh++], "%s:%u", names[i], port) < 0 ||
                    asprintf(&h->origins[no++], "http://%s:%u", names[i], port) < 0)
                        return -ENOMEM;
        }
        if (asprintf(&h->hosts[nh++], "%s:%u", own, port) < 0 ||
            asprintf(&h->origins[no++], "http://%s:%u", own, port) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < extra_h; i++)
                if (!(h->hosts[nh++] = strdup(h->o->allowed_hosts[i])))
                        return -ENOMEM;
        for (size_t i = 0; i < extra_o; i++)
                if (!(h->origins[no++] = strdup(h->o->allowed_origins[i])))
                        return -ENOMEM;
        return 0;
}

int mcp_serve_http(struct mcp_server *server, const struct http_options *o, int signal_fd)
{
        if (!mhd_api_load(NULL))
                return -ENOSYS; /* cmd_serve says why before it gets here */
        struct http h = {.server = server, .o = o};
        pthread_mutex_init(&h.lock, NULL);
        /* Half the connections at most wait for a token: the other half stays for those that
         * passed it. */
        peers_init(&h.peers, o->header_timeout_ms, o->max_connections / 2);
        cond_init_monotonic(&h.streams_done);
        char host[64];
        unsigned port = 0;
        int fd = o->listen_fd > 0 ? adopt(o, &port, host, sizeof(host))
                                  : listen_on(o->address, &port, host, sizeof(host));
        if (fd < 0)
                return fd;
        int r = allowed_lists(&h, host, port);
        while (o->tokens && o->tokens[h.n_modern])
                h.n_modern++;
        h.n_modern += !h.n_modern;
        h.modern = calloc(h.n_modern, sizeof(*h.modern));
        for (size_t i = 0; h.modern && r == 0 && i < h.n_modern; i++)
                if (!(h.modern[i] = mcp_client_new_stateless(server, !o->tokens || !o->tokens[0])))
                        r = -ENOMEM;
        if (r == 0 && !h.modern)
                r = -ENOMEM;
        struct MHD_Daemon *d = NULL;
        /* poll, not select: a connection's descriptor may be past FD_SETSIZE in a server that
         * holds many sandboxes. The idle timeout is the header timeout's, until a request on
         * the connection passes the token (first_look). */
        unsigned idle_s = (unsigned)((o->header_timeout_ms + 999) / 1000);
        if (r == 0)
                d = MHD_start_daemon(
                        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                                MHD_USE_ITC | MHD_USE_POLL,
                        0, NULL, NULL, handle, &h, MHD_OPTION_LISTEN_SOCKET, fd,
                        MHD_OPTION_NOTIFY_COMPLETED, completed, &h, MHD_OPTION_NOTIFY_CONNECTION,
                        connection_event, &h, MHD_OPTION_CONNECTION_LIMIT, o->max_connections,
                        MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->max_connections_per_address,
                        MHD_OPTION_CONNECTION_TIMEOUT, idle_s ? idle_s : 1u, MHD_OPTION_END);
        if (!d) {
                close(fd);
                r = r ?: -EIO;
                goto out;
        }
        if (o->listening)
                o->listening(port, o->userdata);
        wait_for_stop(&h, d, signal_fd);
        /* Stop taking work, cancel what runs, let the cancelled requests send their answers
         * (a little while at most: a client may be slow to take them), then end the
         * connections. */
        mcp_server_stop(server);
        answer_in_flight(&h);
        MHD_stop_daemon(d);
        close(fd);
        pthread_mutex_lock(&h.lock);
        while (h.streams)
                pthread_cond_wait(&h.streams_done, &h.lock);
        for (size_t i = 0; i < h.n_sessions; i++) {
                mcp_client_end(h.sessions[i].client);
                mcp_client_unref(h.sessions[i].client);
        }
        h.n_sessions = 0;
        pthread_mutex_unlock(&h.lock);
out:
        for (size_t i = 0; h.modern && i < h.n_modern; i++) {
                if (h.modern[i])
                        mcp_client_end(h.modern[i]);
                mcp_client_unref(h.modern[i]);
        }
        free(h.modern);
        free(h.sessions);
        free_list(h.hosts);
        free_list(h.origins);
        peers_destroy(&h.peers);
        pthread_cond_destroy(&h.streams_done);
        pthread_mutex_destroy(&h.lock);
        return r;
}
