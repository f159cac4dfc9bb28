/* The guest's prelude applies these before the code: ARGV / sys.argv, ENV / os.environ, its
 * stdin (fd 0) read from a file it writes in /tmp, and the files it writes into /work. Stdin
 * and files travel base64-encoded, since a frame is JSON text and they need not be UTF-8.
 * Every name is checked here, so the prelude only ever meets plain relative paths; what it
 * finds on the way in a session's /work (a link, a FIFO the code made) it checks itself. */
#include "run_input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "error.h"
#include "util.h"

#define MAX_ARGS 1024
#define MAX_VARS 256
#define FILE_NAME_MAX 1024
#define FILE_PART_MAX 255

static bool valid_name(const char *s, size_t n)
{
        if (n == 0 || n > 255 || (s[0] >= '0' && s[0] <= '9'))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
                      (s[i] >= '0' && s[i] <= '9')))
                        return false;
        return true;
}

const char *run_input_file_name_problem(const char *name)
{
        size_t len = strlen(name);
        if (len == 0)
                return "is empty";
        if (len > FILE_NAME_MAX)
                return "is longer than 1024 bytes";
        if (!utf8_valid(name, len))
                return "is not valid UTF-8";
        if (name[0] == '/')
                return "is absolute: give a path relative to /work";
        /* C0, DEL and C1 (U+0080-U+009F, 0xc2 0x80-0x9f in UTF-8): names a terminal or a log
         * would show as something else. */
        for (const unsigned char *p = (const unsigned char *)name; *p; p++)
                if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
                        return "holds a control character";
        for (const char *part = name;;) {
                size_t n = strcspn(part, "/");
                if (n == 0)
                        return "has an empty part (\"//\", or a '/' at its end)";
                if (n > FILE_PART_MAX)
                        return "has a part longer than 255 bytes";
                if ((n == 1 && part[0] == '.') || (n == 2 && part[0] == '.' && part[1] == '.'))
                        return "has a \".\" or \"..\" part: give a plain path inside /work";
                if (!part[n])
                        return NULL;
                part += n + 1;
        }
}

/* name as a message shows it: at most 200 bytes of it, cut on a character, its control
 * characters as \xNN (a newline in a name must not start a line of its own in a log). buf
 * holds 200 bytes shown as four characters each. */
static const char *shown(const char *name, char buf[static 820])
{
        size_t out = 0, len = strlen(name);
        /* Not UTF-8: every byte past ASCII is shown as \xNN, so the message still is. */
        bool valid = utf8_valid(name, len);
        const unsigned char *p = (const unsigned char *)name;
        const unsigned char *end =
                p + (valid ? (size_t)utf8_prefix(name, 200) : (len < 200 ? len : 200));
        for (; p < end; p++) {
                bool c1 = valid && p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
                if (*p < 0x20 || *p == 0x7f || c1 || (!valid && *p >= 0x80)) {
                        out += (size_t)sprintf(buf + out, c1 ? "\\x%02x\\x%02x" : "\\x%02x", p[0],
                                               p[1]);
                        p += c1;
                } else {
                        buf[out++] = (char)*p;
                }
        }
        buf[out] = '\0';
        return buf;
}

/* The files' names, count and sizes, against the cell's limits. */
static int check_files(const codecell_file *files, const uint64_t *limits, codecell_error *err)
{
        uint64_t total = 0;
        char buf[820];
        for (size_t i = 0; files && files[i].name; i++) {
                const codecell_file *f = &files[i];
                if (i == limits[CODECELL_LIMIT_FILES_IN])
                        return err_set(err, CODECELL_ERR_INVALID, E2BIG,
                                       "files: more than %llu files (the cell's files_in limit)",
                                       (unsigned long long)limits[CODECELL_LIMIT_FILES_IN]);
                const char *problem = run_input_file_name_problem(f->name);
                if (problem)
                        return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                                       "files[%zu].name: \"%s\" %s", i, shown(f->name, buf),
                                       problem);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(files[j].name, f->name) == 0)
                                return err_set(err, CODECELL_ERR_INVALID, EEXIST,
                                               "files[%zu].name: \"%s\" is given twice (also "
                                               "files[%zu])",
                                               i, shown(f->name, buf), j);
                if (f->len && !f->data)
                        return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                                       "files[%zu]: len without data", i);
                if (f->len > limits[CODECELL_LIMIT_FILE_BYTES])
                        return err_set(err, CODECELL_ERR_INVALID, EFBIG,
                                       "files[%zu] (\"%s\"): %zu bytes is over the %llu-byte "
                                       "limit of one file (file_bytes)",
                                       i, shown(f->name, buf), f->len,
                                       (unsigned long long)limits[CODECELL_LIMIT_FILE_BYTES]);
                total += f->len;
                if (total > limits[CODECELL_LIMIT_FILES_IN_BYTES])
                        return err_set(err, CODECELL_ERR_INVALID, EFBIG,
                                       "files: %llu bytes together (up to files[%zu]) is over "
                                       "the %llu-byte limit (files_in_bytes)",
                                       (unsigned long long)total, i,
                                       (unsigned long long)limits[CODECELL_LIMIT_FILES_IN_BYTES]);
        }
        return 0;
}

/* Stdin and the files travel base64 in the exec frame: together they must fit in one frame
 * (CODECELL_LIMIT_FRAME_BYTES), or the run would fail after it started instead of being
 * refused with a reason. */
static int check_frame_room(const codecell_run_options *o, const uint64_t *limits,
                            codecell_error *err)
{
        uint64_t encoded = (o->stdin_len + 2) / 3 * 4;
        for (size_t i = 0; o->files && o->files[i].name; i++)
                encoded += (o->files[i].len + 2) / 3 * 4 + strlen(o->files[i].name) + 32;
        if (encoded > limits[CODECELL_LIMIT_FRAME_BYTES])
                return err_set(err, CODECELL_ERR_INVALID, EFBIG,
                               "stdin and files: %llu bytes once base64-encoded is over the "
                               "%llu-byte limit of one frame (frame_bytes)",
                               (unsigned long long)encoded,
                               (unsigned long long)limits[CODECELL_LIMIT_FRAME_BYTES]);
        return 0;
}

int run_input_check(const codecell_run_options *o, const uint64_t *limits, codecell_error *err)
{
        if (!o)
                return 0;
        size_t n = 0;
        for (; o->argv && o->argv[n]; n++) {
                if (n == MAX_ARGS)
                        return err_set(err, CODECELL_ERR_INVALID, E2BIG, "more than %d arguments",
                                       MAX_ARGS);
                if (!utf8_valid(o->argv[n], strlen(o->argv[n])))
                        return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                                       "argument %zu is not UTF-8", n + 1);
        }
        for (n = 0; o->env && o->env[n]; n++) {
                const char *v = o->env[n], *eq = strchr(v, '=');
                if (n == MAX_VARS)
                        return err_set(err, CODECELL_ERR_INVALID, E2BIG,
                                       "more than %d environment variables", MAX_VARS);
                if (!eq || !valid_name(v, (size_t)(eq - v)))
                        return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                                       "environment variable \"%.*s\": expected NAME=VALUE, NAME "
                                       "of letters, digits and _",
                                       utf8_prefix(v, 64), v);
                if (!utf8_valid(v, strlen(v)))
                        return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                                       "environment variable %.*s is not UTF-8", (int)(eq - v), v);
        }
        if (o->stdin_len && !o->stdin_data)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "stdin_len without stdin_data");
        int r = check_files(o->files, limits, err);
        return r ?: check_frame_room(o, limits, err);
}

int run_input_add(json_t *exec, const codecell_run_options *o)
{
        if (!o)
                return 0;
        int bad = 0;
        if (o->argv) {
                json_t *argv = json_array();
                for (size_t i = 0; o->argv[i]; i++)
                        bad |= json_array_append_new(argv, json_string(o->argv[i]));
                bad |= json_object_set_new(exec, "argv", argv);
        }
        if (o->env) {
                json_t *env = json_object();
                for (size_t i = 0; o->env[i]; i++) {
                        const char *eq = strchr(o->env[i], '=');
                        char *name = strndup(o->env[i], (size_t)(eq - o->env[i]));
                        bad |= !name || json_object_set_new(env, name, json_string(eq + 1));
                        free(name);
                }
                bad |= json_object_set_new(exec, "env", env);
        }
        if (o->stdin_data) {
                char *text = base64_encode(o->stdin_data, o->stdin_len, NULL);
                bad |= !text || json_object_set_new(exec, "stdin_b64", json_string(text));
                free(text);
        }
        if (o->files) {
                json_t *files = json_array();
                for (size_t i = 0; files && o->files[i].name; i++) {
                        char *text = base64_encode(o->files[i].data ? o->files[i].data : "",
                                                   o->files[i].len, NULL);
                        bad |= !text || json_array_append_new(files, json_pack("{s:s, s:s}", "name",
                                                                               o->files[i].name,
                                                                               "b64", text));
                        free(text);
                }
                bad |= json_object_set_new(exec, "files", files);
        }
        return bad ? -ENOMEM : 0;
}
