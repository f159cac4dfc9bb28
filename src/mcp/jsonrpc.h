/* JSON-RPC 2.0 as MCP uses it: one message per text, no batches. */
#ifndef CODECELL_MCP_JSONRPC_H
#define CODECELL_MCP_JSONRPC_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>

enum {
        JSONRPC_PARSE_ERROR = -32700,
        JSONRPC_INVALID_REQUEST = -32600,
        JSONRPC_METHOD_NOT_FOUND = -32601,
        JSONRPC_INVALID_PARAMS = -32602,
        JSONRPC_INTERNAL_ERROR = -32603,
        JSONRPC_SERVER_BUSY = -32000, /* too many runs at once */
        JSONRPC_REQUEST_CANCELLED = -32800,
};

enum jsonrpc_kind {
        JSONRPC_REQUEST,      /* method and id: answered */
        JSONRPC_NOTIFICATION, /* method, no id */
        JSONRPC_RESPONSE,     /* result or error: a client's answer, which we never ask for */
};

/* Parses and checks one message. On success returns it (caller owns) with its kind. On
 * failure returns NULL and sets *ret_error to the error response to send (caller owns; its id
 * is the message's id when one could be read, else null). */
json_t *jsonrpc_parse(const char *text, size_t len, enum jsonrpc_kind *ret_kind,
                      json_t **ret_error);

/* fmt into text (size bytes), cut on a UTF-8 character boundary when it does not fit. */
void jsonrpc_vformat(char *text, size_t size, const char *fmt, va_list ap)
        __attribute__((format(printf, 3, 0)));

/* {"jsonrpc":"2.0","id":id,"result":result}; steals result. */
json_t *jsonrpc_result(const json_t *id, json_t *result);
/* {"jsonrpc":"2.0","id":id,"error":{"code":code,"message":…}}; id NULL gives null. */
json_t *jsonrpc_error(const json_t *id, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* {"jsonrpc":"2.0","method":method,"params":params}; steals params. */
json_t *jsonrpc_notification(const char *method, json_t *params);

/* Compact text of a message, one line (JSON escapes every newline). Caller frees. */
char *jsonrpc_text(const json_t *message);
/* jsonrpc_text(), then frees message. */
char *jsonrpc_text_free(json_t *message);

#endif
