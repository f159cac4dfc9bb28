/* One JSON line per event, written with a single write(2) under a lock: lines from concurrent
 * calls never interleave, and a file opened O_APPEND can be rotated by copytruncate or shared
 * with another writer. */
#include "oplog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const names[] = {"debug", "info", "warning", "error", "off"};

static struct {
        pthread_mutex_t lock;
        int fd;
        bool own_fd;
        enum oplog_level level;
        bool content;
        unsigned long long dropped; /* lines a stalled reader of stderr had no room for */
} log_state = {PTHREAD_MUTEX_INITIALIZER, STDERR_FILENO, false, OPLOG_INFO, false, 0};

/* Whether a line of len bytes can go to the log now. A file always can; stderr is often a pipe
 * that the program which started the server (an MCP client, a test) reads only now and then,
 * or never: a full pipe must not stop the calls that log, so their lines are counted as
 * dropped instead. poll says whether a pipe has a free page, which takes a line of up to a
 * page whole; a longer line (--log-content) needs that many pages free, counted from the bytes
 * waiting as if each page were full but one. */
static bool room_for(size_t len)
{
        if (log_state.own_fd)
                return true;
        struct pollfd p = {.fd = log_state.fd, .events = POLLOUT};
        if (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT))
                return false;
        if (len <= PIPE_BUF)
                return true;
        int size = fcntl(log_state.fd, F_GETPIPE_SZ);
        int queued = 0;
        if (size <= 0 || ioctl(log_state.fd, FIONREAD, &queued) < 0)
                return true; /* not a pipe: a terminal or a socket */
        size_t pages = (size_t)size / PIPE_BUF, used = (size_t)queued / PIPE_BUF + 1;
        return pages > used && (pages - used) * PIPE_BUF >= len + PIPE_BUF;
}

bool oplog_level_parse(const char *name, enum oplog_level *ret)
{
        for (int i = 0; i <= OPLOG_OFF; i++)
                if (strcmp(name, names[i]) == 0) {
                        *ret = (enum oplog_level)i;
                        return true;
                }
        return false;
}

int oplog_open(const char *path, enum oplog_level level, bool content)
{
        int fd = STDERR_FILENO;
        if (path) {
                fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
                if (fd < 0)
                        return -errno;
        }
        log_state.fd = fd;
        log_state.own_fd = path != NULL;
        log_state.level = level;
        log_state.content = content;
        return 0;
}

void oplog_close(void)
{
        pthread_mutex_lock(&log_state.lock);
        if (log_state.own_fd)
                close(log_state.fd);
        log_state.fd = STDERR_FILENO;
        log_state.own_fd = false;
        pthread_mutex_unlock(&log_state.lock);
}

bool oplog_enabled(enum oplog_level level)
{
        return level >= log_state.level && level < OPLOG_OFF;
}

bool oplog_content(void)
{
        return log_state.content;
}

/* RFC 3339 in UTC with milliseconds: sorts as text, reads the same in every time zone. */
static void now_text(char *buf, size_t size)
{
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + n, size - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

void oplog_event(enum oplog_level level, const char *event, json_t *fields)
{
        if (!oplog_enabled(level)) {
                json_decref(fields);
                return;
        }
        char time_text[40];
        now_text(time_text, sizeof(time_text));
        json_t *line = json_pack("{s:s, s:s, s:s}", "time", time_text, "level", names[level],
                                 "event", event);
        if (line && fields)
                json_object_update_missing(line, fields);
        json_decref(fields);
        /* Invalid UTF-8 cannot get here: jansson refuses it in every string it holds. */
        char *text =
                line ? json_dumps(line, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(9))
                     : NULL;
        json_decref(line);
        if (!text)
                return;
        size_t len = strlen(text);
        text[len] = '\n'; /* over the NUL: the line is written whole, in one call */
        pthread_mutex_lock(&log_state.lock);
        if (!room_for(len + 1)) {
                log_state.dropped++;
                len = (size_t)-1; /* nothing written */
        } else if (log_state.dropped > 0) {
                char note[96];
                int n = snprintf(note, sizeof(note),
                                 "{\"event\":\"log_dropped\",\"level\":\"warning\","
                                 "\"lines\":%llu}\n",
                                 log_state.dropped);
                if (write(log_state.fd, note, (size_t)n) == n)
                        log_state.dropped = 0;
        }
        for (size_t done = 0; len != (size_t)-1 && done <= len;) {
                ssize_t w = write(log_state.fd, text + done, len + 1 - done);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        break; /* a full disk or a closed stderr: the server goes on */
                done += (size_t)w;
        }
        pthread_mutex_unlock(&log_state.lock);
        free(text);
}
