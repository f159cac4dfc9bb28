#include "exact_integers.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define MARKER_NAME "codecell-integer:"
#define TOKEN_LEN 32

static char token[TOKEN_LEN + 1];
static pthread_once_t token_once = PTHREAD_ONCE_INIT;

static void make_token(void)
{
        unsigned char bytes[TOKEN_LEN / 2];
        size_t got = 0;
        while (got < sizeof(bytes)) {
                ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
                if (n > 0)
                        got += (size_t)n;
                else if (errno != EINTR)
                        abort(); /* no randomness: the markers could be forged */
        }
        for (size_t i = 0; i < sizeof(bytes); i++)
                snprintf(token + 2 * i, 3, "%02x", bytes[i]);
}

/* Where the JSON number token at p ends, and whether it is an integer jansson cannot hold. */
static const char *number_end(const char *p, const char *end, bool *ret_too_big)
{
        const char *start = p;
        bool integer = true;
        while (p < end && strchr("+-0123456789.eE", *p) && *p) {
                if (*p == '.' || *p == 'e' || *p == 'E')
                        integer = false;
                p++;
        }
        *ret_too_big = false;
        if (integer && p > start) {
                char digits[64];
                size_t n = (size_t)(p - start);
                if (n >= sizeof(digits)) {
                        *ret_too_big = true;
                } else {
                        memcpy(digits, start, n);
                        digits[n] = '\0';
                        errno = 0;
                        (void)strtoll(digits, NULL, 10);
                        *ret_too_big = errno == ERANGE;
                }
        }
        return p;
}

/* text with each too-big integer outside a string replaced by its marker string; NULL when
 * out of memory. */
static char *with_markers(const char *text, size_t len)
{
        char *out = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&out, &size);
        if (!f)
                return NULL;
        bool in_string = false;
        for (const char *p = text, *end = text + len; p < end;) {
                if (in_string) {
                        if (*p == '\\' && p + 1 < end) {
                                fwrite(p, 1, 2, f);
                                p += 2;
                                continue;
                        }
                        in_string = *p != '"';
                        fputc(*p++, f);
                } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
                        bool too_big;
                        const char *stop = number_end(p, end, &too_big);
                        if (too_big)
                                fprintf(f, "\"\\u0000" MARKER_NAME "%s:%.*s\"", token,
                                        (int)(stop - p), p);
                        else
                                fwrite(p, 1, (size_t)(stop - p), f);
                        p = stop;
                } else {
                        in_string = *p == '"';
                        fputc(*p++, f);
                }
        }
        if (fclose(f) != 0) {
                free(out);
                return NULL;
        }
        return out;
}

json_t *json_loadb_exact(const char *text, size_t len, size_t flags, json_error_t *error)
{
        json_error_t own;
        json_error_t *e = error ? error : &own;
        json_t *value = json_loadb(text, len, flags, e);
        if (value || json_error_code(e) != json_error_numeric_overflow)
                return value;
        pthread_once(&token_once, make_token);
        char *marked = with_markers(text, len);
        if (!marked)
                return NULL;
        value = json_loads(marked, flags | JSON_ALLOW_NUL, e);
        free(marked);
        return value;
}

json_t *json_loads_exact(const char *text, size_t flags, json_error_t *error)
{
        return json_loadb_exact(text, strlen(text), flags, error);
}

char *json_dumps_exact(const json_t *value, size_t flags)
{
        char *text = json_dumps(value, flags);
        pthread_once(&token_once, make_token);
        if (!text)
                return NULL;
        char prefix[16 + sizeof(MARKER_NAME) + TOKEN_LEN + 2];
        snprintf(prefix, sizeof(prefix), "\"\\u0000" MARKER_NAME "%s:", token);
        size_t prefix_len = strlen(prefix);
        /* The digits are shorter than their marker: the text only shrinks, in place. */
        char *read = text, *write = text;
        for (char *at; (at = strstr(read, prefix));) {
                char *digits = at + prefix_len, *close = strchr(digits, '"');
                if (!close)
                        break;
                memmove(write, read, (size_t)(at - read));
                write += at - read;
                memmove(write, digits, (size_t)(close - digits));
                write += close - digits;
                read = close + 1;
        }
        memmove(write, read, strlen(read) + 1);
        return text;
}
