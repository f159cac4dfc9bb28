/* JSON-RPC 2.0 framing checks and message builders. jansson rejects invalid UTF-8 and
 * duplicate keys for us; the depth of nesting is bounded by its parser. */
#include "jsonrpc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static json_t *error_for(const json_t *msg, int code, const char *text)
{
        const json_t *id = json_is_object(msg) ? json_object_get(msg, "id") : NULL;
        if (id && !json_is_string(id) && !json_is_integer(id))
                id = NULL;
        return jsonrpc_error(id, code, "%s", text);
}

json_t *jsonrpc_parse(const char *text, size_t len, enum jsonrpc_kind *ret_kind, json_t **ret_error)
{
        json_error_t jerr;
        *ret_error = NULL;
        json_t *msg = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
        if (!msg) {
                char why[200];
                snprintf(why, sizeof(why), "parse error: %s (at byte %d)", jerr.text,
                         jerr.position);
                *ret_error = jsonrpc_error(NULL, JSONRPC_PARSE_ERROR, "%s", why);
                return NULL;
        }
        const char *problem = NULL;
        const json_t *id = json_object_get(msg, "id");
        const json_t *method = json_object_get(msg, "method");
        const json_t *params = json_object_get(msg, "params");
        if (json_is_array(msg))
                problem = "batches are not supported: send one message at a time";
        else if (!json_is_object(msg))
                problem = "a message must be a JSON object";
        else if (!json_is_string(json_object_get(msg, "jsonrpc")) ||
                 strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0)
                problem = "\"jsonrpc\" must be \"2.0\"";
        else if (id && !json_is_string(id) && !json_is_integer(id))
                problem = "\"id\" must be a string or an integer";
        else if (!method && (json_object_get(msg, "result") || json_object_get(msg, "error")) && id)
                *ret_kind = JSONRPC_RESPONSE;
        else if (!json_is_string(method))
                problem = "\"method\" must be a string";
        else if (params && !json_is_object(params))
                problem = "\"params\" must be an object";
        else
                *ret_kind = id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
        if (problem) {
                *ret_error = error_for(msg, JSONRPC_INVALID_REQUEST, problem);
                json_decref(msg);
                return NULL;
        }
        return msg;
}

json_t *jsonrpc_result(const json_t *id, json_t *result)
{
        return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

void jsonrpc_vformat(char *text, size_t size, const char *fmt, va_list ap)
{
        vsnprintf(text, size, fmt, ap);
        utf8_trim_cut(text);
}

json_t *jsonrpc_error(const json_t *id, int code, const char *fmt, ...)
{
        char text[1024];
        va_list ap;
        va_start(ap, fmt);
        /* The text may hold what the client sent, cut to fit: it must still be a JSON string,
         * or there would be no error to send at all. */
        jsonrpc_vformat(text, sizeof(text), fmt, ap);
        va_end(ap);
        char *clean = utf8_sanitize(text, strlen(text), NULL);
        json_t *msg =
                json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                          "error", "code", code, "message", clean ? clean : "out of memory");
        free(clean);
        return msg;
}

json_t *jsonrpc_notification(const char *method, json_t *params)
{
        return json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params);
}

char *jsonrpc_text(const json_t *message)
{
        return message ? json_dumps(message, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
}

char *jsonrpc_text_free(json_t *message)
{
        char *text = jsonrpc_text(message);
        json_decref(message);
        return text;
}
