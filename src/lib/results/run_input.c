/* The guest's prelude applies these before the code: ARGV / sys.argv, ENV / os.environ, and
 * its stdin (fd 0) read from a file it writes in /tmp. Stdin travels base64-encoded, since a
 * frame is JSON text and stdin need not be UTF-8. */
#include "run_input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "util.h"

#define MAX_ARGS 1024
#define MAX_VARS 256

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

int run_input_check(const codecell_run_options *o, codecell_error *err)
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
        return 0;
}

static char *base64(const unsigned char *in, size_t n)
{
        static const char digits[] =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *out = malloc((n + 2) / 3 * 4 + 1);
        if (!out)
                return NULL;
        char *p = out;
        for (size_t i = 0; i < n; i += 3) {
                unsigned v = (unsigned)in[i] << 16;
                if (i + 1 < n)
                        v |= (unsigned)in[i + 1] << 8;
                if (i + 2 < n)
                        v |= in[i + 2];
                *p++ = digits[(v >> 18) & 63];
                *p++ = digits[(v >> 12) & 63];
                *p++ = i + 1 < n ? digits[(v >> 6) & 63] : '=';
                *p++ = i + 2 < n ? digits[v & 63] : '=';
        }
        *p = '\0';
        return out;
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
                char *text = base64((const unsigned char *)o->stdin_data, o->stdin_len);
                bad |= !text || json_object_set_new(exec, "stdin_b64", json_string(text));
                free(text);
        }
        return bad ? -ENOMEM : 0;
}
