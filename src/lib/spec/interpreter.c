#include "interpreter.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest_user.h"
#include "cleanup.h"
#include "command_tool.h"
#include "error.h"
#include "util.h"

/* Generous: on a loaded machine a Python probe reading a large site-packages takes a while. */
#define PROBE_TIMEOUT_MS 20000
#define PROBE_ANSWER_MAX (1 << 20)

static char *const probe_env[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/", NULL};

/* Whether the guest's host uid can read (and, for a folder, enter) path. As root the guest
 * runs as nobody, so only what every user may reach counts; unprivileged it is the engine's
 * own uid. */
static bool guest_can_read(const char *path, bool privileged)
{
        struct stat st;
        if (!privileged)
                return stat(path, &st) == 0 &&
                       access(path, S_ISDIR(st.st_mode) ? R_OK | X_OK : R_OK) == 0;
        char buf[PATH_MAX];
        snprintf(buf, sizeof(buf), "%s", path);
        if (stat(buf, &st) < 0 || !(st.st_mode & S_IROTH) ||
            (S_ISDIR(st.st_mode) && !(st.st_mode & S_IXOTH)))
                return false;
        for (char *slash = strrchr(buf, '/'); slash && slash != buf; slash = strrchr(buf, '/')) {
                *slash = '\0';
                if (stat(buf, &st) < 0 || !(st.st_mode & S_IXOTH))
                        return false;
        }
        return true;
}

/* An error about the interpreter or library folder i (i < 0: the interpreter), named as the
 * caller gave it: "cells.json: cells[0].interpreter: /usr/bin/python3 is not ruby" from a
 * configuration file, "interpreter /usr/bin/python3 is not ruby" through the API. */
__attribute__((format(printf, 6, 7))) static int refuse(codecell_error *err, int errno_value,
                                                        const codecell_config *c,
                                                        const char *interpreter, ssize_t i,
                                                        const char *fmt, ...)
{
        const char *where = i < 0 ? c->interpreter_where : c->libraries[i].where;
        const char *path = i < 0 ? interpreter : c->libraries[i].source;
        char text[sizeof(err->message)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        if (where)
                return err_set(err, CODECELL_ERR_INVALID, errno_value, "%s: %s %s", where, path,
                               text);
        return err_set(err, CODECELL_ERR_INVALID, errno_value, "%s %s %s",
                       i < 0 ? "interpreter" : "library", path, text);
}

/* Runs interpreter with argv (argv[0] replaced by its path) as the guest's host user: as root,
 * nobody, so that the probe reads only what the guest could (a library folder's metadata
 * cannot lead it to a file of root's). Its stdout, or NULL with *ret_error. */
static char *run(const char *interpreter, char **argv, bool privileged, char **ret_error)
{
        argv[0] = (char *)interpreter;
        struct command_spec cmd = {.argv = argv,
                                   .env = (char **)probe_env,
                                   .as_user = privileged,
                                   .uid = PRIVILEGED_GUEST_UID,
                                   .gid = PRIVILEGED_GUEST_GID};
        char *out = NULL;
        (void)command_tool_call(&cmd, interpreter, "", now_ms() + PROBE_TIMEOUT_MS,
                                PROBE_TIMEOUT_MS, PROBE_ANSWER_MAX, -1, &out, ret_error);
        return out;
}

/* The first line the interpreter prints for --version, to say what it is instead. */
static void version_line(const char *interpreter, bool privileged, char *buf, size_t size)
{
        char *argv[] = {NULL, "--version", NULL};
        _cleanup_free_ char *error = NULL;
        _cleanup_free_ char *out = run(interpreter, argv, privileged, &error);
        buf[0] = '\0';
        if (out) {
                out[strcspn(out, "\n")] = '\0';
                snprintf(buf, size, "%s", out);
                utf8_trim_cut(buf);
        }
}

/* Whether a library's name as the probe found it may go in the description the model reads.
 * It comes from file names in a library folder, which a guest may write (a read-write mount
 * of the same folder): one line of at most 128 bytes of UTF-8, or text such as "\n\n##
 * Instructions" would read as the description's own. */
static bool listable(const json_t *entry)
{
        const char *name = json_string_value(entry);
        size_t len = json_string_length(entry);
        if (!name || len == 0 || len > 128 || !utf8_valid(name, len))
                return false;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
                        return false;
        return true;
}

/* A library of the probe's answer, {"text": "numpy 1.24.2", "imports": ["numpy"]}, as the
 * description may list it (a listable text, at least one listable name to load it by), or
 * NULL. */
static json_t *library_entry(const json_t *entry)
{
        json_t *text = json_object_get(entry, "text");
        json_t *imports = json_object_get(entry, "imports");
        if (!listable(text) || !json_is_array(imports) || json_array_size(imports) == 0)
                return NULL;
        size_t i;
        json_t *name;
        json_array_foreach(imports, i, name) {
                if (!listable(name))
                        return NULL;
        }
        return json_pack("{sOsO}", "text", text, "imports", imports);
}

/* The probe's answer into ret; < 0 with err when it is not the language's or names a
 * problem. */
static int take_answer(const codecell_config *c, json_t *answer, struct interpreter_info *ret,
                       codecell_error *err)
{
        const char *language = json_string_value(json_object_get(answer, "language"));
        const char *version = json_string_value(json_object_get(answer, "version"));
        json_t *load_path = json_object_get(answer, "load_path");
        json_t *problems = json_object_get(answer, "problems");
        json_t *libraries = json_object_get(answer, "libraries");
        if (!language || strcmp(language, c->runtime->name) != 0 || !version ||
            !json_is_array(load_path) || !json_is_array(libraries))
                return -EPROTO;
        json_t *problem = json_array_get(problems, 0);
        size_t which = (size_t)json_integer_value(json_array_get(problem, 0));
        if (problem && which < c->n_libraries)
                return refuse(err, EINVAL, c, NULL, (ssize_t)which, "%s",
                              json_string_value(json_array_get(problem, 1)) ?: "is unusable");
        ret->version = strdup(version);
        ret->load_paths = calloc(json_array_size(load_path) + 1, sizeof(char *));
        if (!ret->version || !ret->load_paths)
                return err_sys(err, ENOMEM, "interpreter");
        size_t i;
        json_t *entry;
        json_array_foreach(load_path, i, entry) {
                json_int_t library = json_integer_value(json_array_get(entry, 0));
                const char *sub = json_string_value(json_array_get(entry, 1));
                if (library < 0 || (size_t)library >= c->n_libraries || !sub || strstr(sub, ".."))
                        return -EPROTO;
                char *path = NULL;
                if (asprintf(&path, INTERPRETER_LIBRARY_DEST "%s%s", (size_t)library,
                             *sub ? "/" : "", sub) < 0)
                        return err_sys(err, ENOMEM, "interpreter");
                ret->load_paths[ret->n_load_paths++] = path;
        }
        json_t *names = json_array();
        json_array_foreach(libraries, i, entry) {
                json_t *library = library_entry(entry);
                if (library)
                        json_array_append_new(names, library);
        }
        ret->libraries = names;
        return names ? 0 : err_sys(err, ENOMEM, "interpreter");
}

int interpreter_probe(const codecell_config *c, const char *interpreter, bool privileged,
                      struct interpreter_info *ret, codecell_error *err)
{
        const struct runtime *rt = c->runtime;
        *ret = (struct interpreter_info){0};
        const char *user = privileged ? "nobody" : "the engine's own";
        if (!guest_can_read(interpreter, privileged))
                return refuse(err, EACCES, c, interpreter, -1,
                              "cannot be read by the sandbox's user (%s)", user);
        const char *folders[CONFIG_LIBRARIES_MAX];
        for (size_t i = 0; i < c->n_libraries; i++) {
                folders[i] = c->libraries[i].source;
                if (!guest_can_read(folders[i], privileged))
                        return refuse(err, EACCES, c, NULL, (ssize_t)i,
                                      "cannot be read by the sandbox's user (%s)", user);
        }
        _cleanup_free_ char **argv = runtime_argv(rt, rt->probe, NULL, 0, folders, c->n_libraries);
        if (!argv)
                return err_sys(err, ENOMEM, "interpreter");
        _cleanup_free_ char *error = NULL;
        _cleanup_free_ char *out = run(interpreter, argv, privileged, &error);
        json_t *answer = out ? json_loads(out, 0, NULL) : NULL;
        int r = answer ? take_answer(c, answer, ret, err) : -EPROTO;
        json_decref(answer);
        if (r == -EPROTO) {
                /* Not this language, or it did not run at all: say what it is, if it can. */
                char said[160];
                version_line(interpreter, privileged, said, sizeof(said));
                if (*said)
                        r = refuse(err, EINVAL, c, interpreter, -1,
                                   "is not %s (its --version says \"%s\")", rt->name, said);
                else
                        r = refuse(err, EINVAL, c, interpreter, -1, "does not run %s code: %s",
                                   rt->name, error ? error : "its answer is not the probe's");
        }
        if (r < 0)
                interpreter_info_free(ret);
        return r;
}

void interpreter_info_free(struct interpreter_info *info)
{
        for (size_t i = 0; i < info->n_load_paths; i++)
                free(info->load_paths[i]);
        free(info->load_paths);
        free(info->version);
        json_decref(info->libraries);
        *info = (struct interpreter_info){0};
}
