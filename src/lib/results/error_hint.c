/* Each hint is a rule over the words the interpreters use (CPython 3 and Ruby 3 on Linux, as
 * the tests see them: tests/integration/test_hints.py), matched on the class, the message and
 * the frames, never on the code. A rule that misses adds nothing; one that fires says only what
 * the sandbox is, which stays true whatever the code did. */
#include "error_hint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* What the resolver and the socket calls answer without a network (the sandbox has no
 * interface but a down loopback, and seccomp refuses every socket but AF_UNIX). */
static const char *const no_network[] = {
        "Name or service not known",            /* EAI_NONAME: getaddrinfo, Python and Ruby */
        "Temporary failure in name resolution", /* EAI_AGAIN */
        "No address associated with hostname",  /* EAI_NODATA */
        "getaddrinfo:",                         /* Ruby's SocketError, Net::HTTP's wrapper */
        "Address family not supported",         /* EAFNOSUPPORT: socket(AF_INET…) */
        "Network is unreachable",               /* ENETUNREACH */
        "NameResolutionError",                  /* urllib3, under requests */
        NULL,
};

/* Frames of code that starts a process: Python's subprocess and multiprocessing (os.popen
 * and asyncio's subprocesses go through them), Ruby's methods that spawn (fork, spawn, popen,
 * `, system, exec, Open3). */
static const char *const spawning_frames[] = {
        "/subprocess.py:",
        "/multiprocessing/",
        "in `fork'",
        "in `_fork'",
        "in `spawn'",
        "in `popen'",
        "in ``'",
        "in `system'",
        "in `exec'",
        "/open3.rb:",
        /* Ruby 3.4 names frames 'Kernel#fork' and quotes them with apostrophes. */
        "#fork'",
        "#_fork'",
        "#spawn'",
        "#popen'",
        "#`'",
        "#system'",
        "#exec'",
        NULL,
};

/* The folders at the top of every sandbox (the tmpfs root: docs/security.md). */
static const char *const own_roots[] = {"bin",   "codecell", "dev",    "etc",  "lib",
                                        "lib32", "lib64",    "libx32", "proc", "sbin",
                                        "tmp",   "usr",      "work",   NULL};

static bool contains_any(const char *text, const char *const *needles)
{
        for (size_t i = 0; text && needles[i]; i++)
                if (strstr(text, needles[i]))
                        return true;
        return false;
}

static bool any_frame(const json_t *frames, const char *const *needles)
{
        size_t i;
        const json_t *frame;
        json_array_foreach(frames, i, frame) {
                if (contains_any(json_string_value(frame), needles))
                        return true;
        }
        return false;
}

/* Where a connect is made: Python's socket module, Ruby's connect(2) and its callers. */
static const char *const connecting_frames[] = {
        "/socket.py:", "in `connect'", "in `initialize'", "/net/http.rb:", NULL,
};

/* In a network cell, Landlock refuses a connect anywhere but the proxy's port (EACCES):
 * Python's "[Errno 13] Permission denied" from socket.py, Ruby's "Permission denied -
 * connect(2) for ...". */
static bool connect_refused(const char *cls, const char *message, const json_t *frames)
{
        if (strstr(message, "connect(2)") && strcmp(cls, "Errno::EACCES") == 0)
                return true;
        return strcmp(cls, "PermissionError") == 0 &&
               strcmp(message, "[Errno 13] Permission denied") == 0 &&
               any_frame(frames, connecting_frames);
}

/* Refused by seccomp: fork, clone of a process, execve (EPERM). Python words it "[Errno 1]
 * Operation not permitted" with no file name; Ruby as Errno::EPERM of fork(2) or of the
 * command. */
static bool spawn_refused(const char *cls, const char *message, const json_t *frames)
{
        bool python = strcmp(cls, "PermissionError") == 0 &&
                      strcmp(message, "[Errno 1] Operation not permitted") == 0;
        bool ruby = strcmp(cls, "Errno::EPERM") == 0;
        if (!python && !ruby)
                return false;
        return strstr(message, "fork(2)") || any_frame(frames, spawning_frames);
}

/* The top folder of the path a "no such file" error names ("data" of '/data/x.csv'), into
 * top; false when it names none (a relative path, or another error). Python: "[Errno 2] No
 * such file or directory: '/data/x.csv'"; Ruby: "No such file or directory @ rb_sysopen -
 * /data/x.csv". */
static bool missing_top(const char *cls, const char *message, char *top, size_t size)
{
        const char *path = NULL;
        if (strcmp(cls, "FileNotFoundError") == 0) {
                const char *p = strstr(message, "No such file or directory: ");
                if (p) {
                        p += strlen("No such file or directory: ");
                        path = (*p == '\'' || *p == '"') ? p + 1 : NULL;
                }
        } else if (strcmp(cls, "Errno::ENOENT") == 0) {
                const char *at = strstr(message, "No such file or directory @ ");
                const char *dash = at ? strstr(at, " - ") : NULL;
                path = dash ? dash + 3 : NULL;
        }
        if (!path || path[0] != '/')
                return false;
        size_t n = strcspn(path + 1, "/'\"");
        if (n == 0 || n >= size)
                return false;
        memcpy(top, path + 1, n);
        top[n] = '\0';
        return true;
}

/* Whether path ("/in/sales", "/opt/py/bin/python3") lies under the top folder top. */
static bool under_top(const char *path, const char *top)
{
        size_t n = strlen(top);
        return path && path[0] == '/' && strncmp(path + 1, top, n) == 0 &&
               (path[1 + n] == '/' || path[1 + n] == '\0');
}

static bool top_exists(const char *top, const struct sandbox_shape *shape)
{
        for (size_t i = 0; own_roots[i]; i++)
                if (strcmp(own_roots[i], top) == 0)
                        return true;
        for (size_t i = 0; i < shape->n_mounts; i++)
                if (under_top(shape->mounts[i], top))
                        return true;
        return under_top(shape->interpreter, top);
}

static char *unmounted_hint(const char *top, const struct sandbox_shape *shape)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return NULL;
        fprintf(f, "nothing is mounted at /%s; ", top);
        if (shape->n_mounts == 0)
                fputs("this cell has no mounts (scratch space: /work, /tmp)", f);
        for (size_t i = 0; i < shape->n_mounts; i++)
                fprintf(f, "%s%s", i ? ", " : "mounts: ", shape->mounts[i]);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

char *error_hint(const json_t *error, const struct sandbox_shape *shape)
{
        const char *cls = json_string_value(json_object_get(error, "class"));
        const char *message = json_string_value(json_object_get(error, "message"));
        const json_t *frames = json_object_get(error, "backtrace");
        if (!cls || !message)
                return NULL;
        if (contains_any(message, no_network) ||
            (shape->network_allowed && connect_refused(cls, message, frames)))
                return shape->network_allowed
                               ? str_printf("this sandbox reaches the network only through its "
                                            "proxy (HTTPS_PROXY, HTTP_PROXY; names are resolved "
                                            "there), and only to: %s",
                                            shape->network_allowed)
                               : strdup("this sandbox has no network");
        if (!shape->subprocesses && spawn_refused(cls, message, frames))
                return strdup("subprocesses are off in this cell");
        char top[256];
        if (missing_top(cls, message, top, sizeof(top)) && !top_exists(top, shape))
                return unmounted_hint(top, shape);
        return NULL;
}
