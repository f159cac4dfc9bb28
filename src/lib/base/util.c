#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"

char *str_printf(const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        return s;
}

double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

int write_file(const char *path, const char *text)
{
        /* O_CREAT so the same code works on a fake cgroupfs in the unit tests; on the real
         * cgroupfs the control files always exist already. */
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        size_t len = strlen(text);
        ssize_t n = write(fd, text, len);
        if (n < 0)
                return -errno;
        return (size_t)n == len ? 0 : -EIO;
}

ssize_t read_file(const char *path, char *buf, size_t size)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t used = 0;
        while (used + 1 < size) {
                ssize_t n = read(fd, buf + used, size - 1 - used);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                used += (size_t)n;
        }
        buf[used] = '\0';
        return (ssize_t)used;
}

/* Length of the valid UTF-8 sequence starting at s (1-4), or 0 when it is invalid. Rejects
 * overlong forms, surrogates and code points above U+10FFFF. */
static size_t utf8_seq_len(const unsigned char *s, size_t left)
{
        unsigned char c = s[0];
        if (c < 0x80)
                return 1;
        size_t n;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
                n = 2;
                cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
                n = 3;
                cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
                n = 4;
                cp = c & 0x07;
        } else {
                return 0;
        }
        if (left < n)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

size_t utf8_char_len(const char *s, size_t left)
{
        size_t n = *s ? utf8_seq_len((const unsigned char *)s, left) : 0;
        return n ? n : 1;
}

bool utf8_valid(const char *s, size_t len)
{
        const unsigned char *p = (const unsigned char *)s;
        for (size_t i = 0; i < len;) {
                size_t n = utf8_seq_len(p + i, len - i);
                if (n == 0)
                        return false;
                i += n;
        }
        return true;
}

static char *sanitize(const char *s, size_t len, bool keep_nul, size_t *ret_len)
{
        const unsigned char *p = (const unsigned char *)s;
        char *out = malloc(len * 3 + 1); /* each bad byte may grow to 3 */
        if (!out)
                return NULL;
        size_t o = 0;
        for (size_t i = 0; i < len;) {
                size_t n = p[i] == 0 && !keep_nul ? 0 : utf8_seq_len(p + i, len - i);
                if (n == 0) {
                        memcpy(out + o, "\xef\xbf\xbd", 3);
                        o += 3;
                        i++;
                } else {
                        memcpy(out + o, p + i, n);
                        o += n;
                        i += n;
                }
        }
        out[o] = '\0';
        if (ret_len)
                *ret_len = o;
        return out;
}

char *utf8_sanitize(const char *s, size_t len, size_t *ret_len)
{
        return sanitize(s, len, false, ret_len);
}

char *utf8_sanitize_keep_nul(const char *s, size_t len, size_t *ret_len)
{
        return sanitize(s, len, true, ret_len);
}

/* The length of the sequence a lead byte announces, or 0 for a continuation or invalid byte. */
static size_t utf8_lead_len(unsigned char c)
{
        if (c < 0x80)
                return 1;
        if (c >= 0xc0 && c <= 0xdf)
                return 2;
        if (c >= 0xe0 && c <= 0xef)
                return 3;
        if (c >= 0xf0 && c <= 0xf7)
                return 4;
        return 0;
}

size_t utf8_cut(const char *s, size_t len, size_t max)
{
        if (len <= max)
                return len;
        /* s[max] is the first byte left out: while it continues a character, that character
         * began inside the prefix, so the cut moves back to where it began. */
        size_t n = max;
        for (size_t back = 0; n > 0 && back < 3 && ((unsigned char)s[n] & 0xc0) == 0x80; back++)
                n--;
        return n;
}

int utf8_prefix(const char *s, size_t max)
{
        if (max >= INT_MAX)
                max = INT_MAX - 1;
        return (int)utf8_cut(s, strnlen(s, max + 1), max);
}

size_t utf8_complete_len(const char *s, size_t len)
{
        for (size_t back = 1; back <= 4 && back <= len; back++) {
                unsigned char c = (unsigned char)s[len - back];
                if ((c & 0xc0) == 0x80)
                        continue;
                return utf8_lead_len(c) > back ? len - back : len;
        }
        return len;
}

void utf8_trim_cut(char *s)
{
        s[utf8_complete_len(s, strlen(s))] = '\0';
}

int write_all(int fd, const void *data, size_t n)
{
        const char *p = data;
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -1;
                if (w == 0) {
                        errno = EIO;
                        return -1;
                }
                p += w;
                n -= (size_t)w;
        }
        return 0;
}
