/* The framing checks of framing.h. libmicrohttpd 0.9.75 decides a body's length from the first
 * Content-Length or Transfer-Encoding line alone, and stores a line it cannot parse under a name a
 * proxy would not give it (a space before the colon stays in the name; a folded line's text is
 * appended to the name, not the value). What it leaves is refused here, from what it stored:
 * - a name that is not a token: whitespace before the colon, or a fold that carried one;
 * - a name that begins as one of the headers below but is longer ("Content-Length5"): a folded
 *   line, which libmicrohttpd neither refused nor joined with a space (RFC 9112 §5.2);
 * - a control character in a value (a lone CR, which another parser may end a line at);
 * - a second line of a header whose value must be single (table below);
 * - Content-Length together with Transfer-Encoding (§6.1: close after it, whichever wins);
 * - a Transfer-Encoding other than exactly "chunked", or one in an HTTP/1.0 request (§6.1: the
 *   length cannot be known, 400 and close).
 * A NUL inside a value cannot be seen here: libmicrohttpd ends the value at it, and drops the
 * rest of the line; nginx refuses such a line before it gets here (docs/scaling.md). */
#include <string.h>
#include <strings.h>

#include "framing.h"

/* Headers a request may carry once: two of them could be read as either. folded: no header
 * name begins with this one, so a longer one is a folded line (a tool's parameter may well be
 * named SessionId, making Mcp-Param-SessionId a header of its own). */
static const struct {
        const char *name;
        const char *why;
        bool folded;
} single[] = {
        {"Content-Length", "repeated Content-Length header: the body's length is ambiguous", true},
        {"Transfer-Encoding", "repeated Transfer-Encoding header: the body's length is ambiguous",
         true},
        {"Host", "repeated Host header (RFC 9112 §3.2)", true},
        /* The token: a proxy that checks one and a server that checks another disagree. */
        {"Authorization", "repeated Authorization header", true},
        {"Content-Type", "repeated Content-Type header", false},
        {"Origin", "repeated Origin header", false},
        /* What the shipped nginx configuration routes on, and what 2026-07-28 mirrors. */
        {"Mcp-Session-Id", "repeated Mcp-Session-Id header", true},
        {"Mcp-Param-Session", "repeated Mcp-Param-Session header", false},
        {"MCP-Protocol-Version", "repeated MCP-Protocol-Version header", false},
        {"Mcp-Method", "repeated Mcp-Method header", false},
        {"Mcp-Name", "repeated Mcp-Name header", false},
};

/* tchar of RFC 9110 §5.6.2. */
static bool is_token(const char *s, size_t n)
{
        static const char extra[] = "!#$%&'*+-.^_`|~";
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)s[i];
                bool alnum = (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
                if (!alnum && (!c || !strchr(extra, c)))
                        return false;
        }
        return n > 0;
}

/* Whether name is longer than prefix and begins with it, in any case. */
static bool extends(const char *name, size_t n, const char *prefix)
{
        size_t k = strlen(prefix);
        return n > k && strncasecmp(name, prefix, k) == 0;
}

static bool same_name(const char *name, size_t n, const char *known)
{
        return strlen(known) == n && strncasecmp(name, known, n) == 0;
}

static void fault(struct framing *f, const char *why)
{
        if (!f->why)
                f->why = why;
}

void framing_note(struct framing *f, const char *name, size_t name_len, const char *value,
                  size_t value_len)
{
        if (!is_token(name, name_len))
                fault(f, "a header name that is not a token (whitespace before the colon, or a "
                         "folded line)");
        for (size_t i = 0; i < value_len; i++) {
                unsigned char c = (unsigned char)value[i];
                if ((c < 0x20 && c != '\t') || c == 0x7f) {
                        fault(f, "a control character in a header value");
                        break;
                }
        }
        for (size_t i = 0; i < sizeof(single) / sizeof(single[0]); i++) {
                if (single[i].folded && extends(name, name_len, single[i].name))
                        fault(f, "a folded header line (obs-fold) on a header that frames, "
                                 "authorizes or routes the request");
                if (!same_name(name, name_len, single[i].name))
                        continue;
                if (f->repeats & (1u << i))
                        fault(f, single[i].why);
                f->repeats |= 1u << i;
        }
        if (same_name(name, name_len, "Content-Length"))
                f->content_lengths++;
        if (same_name(name, name_len, "Transfer-Encoding")) {
                f->transfer_encodings++;
                f->chunked = same_name(value, value_len, "chunked");
        }
}

unsigned framing_verdict(const struct framing *f, bool http_1_0, const char **ret_why)
{
        const char *why = f->why;
        if (!why && f->transfer_encodings && f->content_lengths)
                why = "both Content-Length and Transfer-Encoding: the body's length is ambiguous";
        else if (!why && f->transfer_encodings && http_1_0)
                why = "Transfer-Encoding in an HTTP/1.0 request";
        else if (!why && f->transfer_encodings && !f->chunked)
                why = "Transfer-Encoding must be exactly \"chunked\" (no other coding is "
                      "accepted)";
        if (!why)
                return 0;
        *ret_why = why;
        return 400;
}
