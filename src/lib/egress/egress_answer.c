#include "egress_answer.h"

#include <string.h>
#include <strings.h>

size_t egress_answer_room(const struct egress_answer *a)
{
        return a->passing ? 0 : sizeof(a->head) - a->len;
}

/* The end of the first head in buf[0..len) (after its blank line), or 0. */
static size_t head_end(const char *buf, size_t len)
{
        for (size_t i = 3; i < len; i++)
                if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
                    buf[i - 3] == '\r')
                        return i + 1;
        return 0;
}

/* "HTTP/1.x 1xx": an interim answer, another head follows. */
static bool interim(const char *head, size_t len)
{
        return len >= 12 && strncmp(head, "HTTP/1.", 7) == 0 && head[8] == ' ' && head[9] == '1';
}

static bool is_header(const char *line, size_t len, const char *name)
{
        size_t n = strlen(name);
        return len > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

/* The final head, its connection headers replaced by "Connection: close", into out. */
static size_t rewrite(const char *head, size_t len, char *out)
{
        size_t n = 0;
        const char *end = head + len - 2; /* before the blank line */
        for (const char *line = head; line < end;) {
                const char *eol = memchr(line, '\n', (size_t)(end - line));
                size_t line_len = eol ? (size_t)(eol + 1 - line) : (size_t)(end - line);
                bool first = line == head;
                if (first || !(is_header(line, line_len, "connection") ||
                               is_header(line, line_len, "keep-alive") ||
                               is_header(line, line_len, "proxy-connection"))) {
                        memcpy(out + n, line, line_len);
                        n += line_len;
                }
                line += line_len;
        }
        static const char close_line[] = "Connection: close\r\n\r\n";
        memcpy(out + n, close_line, sizeof(close_line) - 1);
        return n + sizeof(close_line) - 1;
}

size_t egress_answer_feed(struct egress_answer *a, size_t n, bool at_end, char *out)
{
        a->len += n;
        size_t out_len = 0, end;
        while (!a->passing && (end = head_end(a->head, a->len))) {
                if (interim(a->head, end)) {
                        memcpy(out + out_len, a->head, end);
                        out_len += end;
                } else {
                        out_len += rewrite(a->head, end, out + out_len);
                        a->passing = true;
                }
                memmove(a->head, a->head + end, a->len - end);
                a->len -= end;
        }
        /* The body's first bytes, a head too large to read, or what the server left when it
         * ended: as they are. */
        if (a->passing || a->len == sizeof(a->head) || at_end) {
                memcpy(out + out_len, a->head, a->len);
                out_len += a->len;
                a->len = 0;
                a->passing = true;
        }
        return out_len;
}
