/* Flags shared by the verbs that build a cell: --mount, and the language of a file. */
#include "cell_flags.h"
#include "commands.h"
#include "units.h"
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SRC:DST[:ro|rw|exec] */
int add_mount_flag(const char *who, codecell_config *config, const char *spec, codecell_error *err)
{
        char *copy = strdup(spec);
        if (!copy)
                return -ENOMEM;
        codecell_mount_mode how = CODECELL_MOUNT_READ_ONLY;
        char *first = strchr(copy, ':');
        char *mode = first ? strchr(first + 1, ':') : NULL;
        int r;
        if (!first) {
                fprintf(stderr, "%s: --mount %s: expected SRC:DST[:ro|rw|exec]\n", who, spec);
                free(copy);
                return -EINVAL;
        }
        *first = '\0';
        if (mode) {
                *mode++ = '\0';
                if (!codecell_mount_mode_parse(mode, &how)) {
                        fprintf(stderr, "%s: --mount %s: mode must be ro, rw or exec, not \"%s\"\n",
                                who, spec, mode);
                        free(copy);
                        return -EINVAL;
                }
        }
        r = codecell_config_add_mount_mode(config, copy, first + 1, how, NULL, err);
        if (r < 0)
                fprintf(stderr, "%s: %s\n", who, err->message);
        free(copy);
        return r;
}

/* DIR[:ro|exec] */
static int add_library_flag(const char *who, codecell_config *config, const char *spec,
                            codecell_error *err)
{
        char *copy = strdup(spec);
        if (!copy)
                return -ENOMEM;
        codecell_mount_mode how = CODECELL_MOUNT_READ_ONLY;
        char *mode = strrchr(copy, ':');
        int r = 0;
        if (mode) {
                *mode++ = '\0';
                if (!codecell_mount_mode_parse(mode, &how) || how == CODECELL_MOUNT_READ_WRITE) {
                        fprintf(stderr, "%s: --library %s: mode must be ro or exec, not \"%s\"\n",
                                who, spec, mode);
                        r = -EINVAL;
                }
        }
        if (r == 0 && (r = codecell_config_add_library(config, copy, how, err)) < 0)
                fprintf(stderr, "%s: --library: %s\n", who, err->message);
        free(copy);
        return r;
}

const char *language_of(const char *path)
{
        const char *lang = codecell_language_of(path);
        return lang ? lang : "ruby";
}

/* The --allow-net flags as the cell's network policy, {"allow": [...]}: the library checks
 * each pattern and names the one it refuses. */
static int set_allow_net(const struct cell_flags *f, codecell_config *config, codecell_error *err)
{
        json_t *allow = json_array();
        for (size_t i = 0; allow && i < f->n_allow_net; i++)
                if (json_array_append_new(allow, json_string(f->allow_net[i])) < 0) {
                        json_decref(allow);
                        allow = NULL;
                }
        json_t *policy = allow ? json_pack("{s:o}", "allow", allow) : NULL;
        char *text = policy ? json_dumps(policy, JSON_COMPACT) : NULL;
        json_decref(policy);
        int r = text ? codecell_config_set_network(config, text, err) : -1;
        if (!text)
                fprintf(stderr, "%s: --allow-net: out of memory\n", f->who);
        else if (r < 0)
                fprintf(stderr, "%s: --allow-net: %s\n", f->who, err->message);
        free(text);
        return text ? r : -1;
}

int cell_from_flags(const struct cell_flags *f, codecell_cell **ret)
{
        *ret = NULL;
        codecell_error err = {0};
        int exit_code = EXIT_USAGE;
        codecell_cell *cell = NULL;
        codecell_config *config = codecell_config_new(f->lang, &err);
        if (!config) {
                fprintf(stderr, "%s: --lang: %s\n", f->who, err.message);
                return EXIT_USAGE;
        }
        codecell_config_set_policy(config, f->policy);
        codecell_config_set_subprocesses(config, f->subprocesses);
        (void)codecell_config_set_pool(config, 0, &err);
        /* One sandbox per process: a zygote would only add a fork to the interpreter's boot.
         * CODECELL_START sets another default (the security suite runs both ways). */
        const char *start = f->start ? f->start : getenv("CODECELL_START");
        if (start && !*start)
                start = NULL;
        bool fork_start = start && strcmp(start, "fork") == 0;
        if (start && !fork_start && strcmp(start, "exec") != 0) {
                fprintf(stderr, "%s: %s %s: expected fork or exec\n", f->who,
                        f->start ? "--start" : "CODECELL_START", start);
                goto out;
        }
        (void)codecell_config_set_start(
                config, fork_start ? CODECELL_START_FORK : CODECELL_START_EXEC, &err);
        for (size_t i = 0; i < f->n_mounts; i++)
                if (add_mount_flag(f->who, config, f->mounts[i], &err) < 0)
                        goto out;
        /* After the mounts: the folder may be in a read-write one. */
        if (f->output_folder &&
            codecell_config_set_output_folder(config, f->output_folder, &err) < 0) {
                fprintf(stderr, "%s: --output-folder: %s\n", f->who, err.message);
                goto out;
        }
        if (f->interpreter && codecell_config_set_interpreter(config, f->interpreter, &err) < 0) {
                fprintf(stderr, "%s: --interpreter: %s\n", f->who, err.message);
                goto out;
        }
        for (size_t i = 0; i < f->n_libraries; i++)
                if (add_library_flag(f->who, config, f->libraries[i], &err) < 0)
                        goto out;
        if (f->n_allow_net > 0 && set_allow_net(f, config, &err) < 0)
                goto out;
        for (int l = 0; l < CODECELL_LIMIT__COUNT; l++)
                if (f->limits[l] &&
                    codecell_config_set_limit(config, (codecell_limit)l, f->limits[l], &err) < 0) {
                        fprintf(stderr, "%s: %s (from \"%s\")\n", f->who, err.message,
                                f->limit_text[l] ? f->limit_text[l] : "");
                        goto out;
                }
        cell = codecell_cell_new(config, &err);
        if (!cell) {
                fprintf(stderr, "%s: %s\n", f->who, err.message);
                exit_code = err.kind == CODECELL_ERR_INVALID ? EXIT_USAGE : EXIT_SANDBOX;
                goto out;
        }
        if (f->tools && codecell_cell_load_tools(cell, f->tools, &err) < 0) {
                fprintf(stderr, "%s: --tools %s\n", f->who, err.message);
                codecell_cell_free(cell);
                cell = NULL;
                goto out;
        }
        *ret = cell;
        exit_code = EXIT_OK;
out:
        codecell_config_free(config);
        return exit_code;
}

int cell_flags_limit(struct cell_flags *f, codecell_limit limit, bool duration, const char *arg)
{
        int r = duration ? parse_duration_ms(arg, &f->limits[limit])
                         : parse_size(arg, &f->limits[limit]);
        if (r == 0)
                f->limit_text[limit] = arg;
        return r;
}

bool cell_flags_take(struct cell_flags *f, int opt, const char *arg)
{
        switch (opt) {
        case CELL_OPT_LANG:
                f->lang = arg;
                return true;
        case CELL_OPT_MOUNT:
                /* More mounts than fit are refused by the library's own cap anyway. */
                if (f->n_mounts < sizeof(f->mounts) / sizeof(f->mounts[0]))
                        f->mounts[f->n_mounts++] = arg;
                return true;
        case CELL_OPT_TOOLS:
                f->tools = arg;
                return true;
        case CELL_OPT_SUBPROCESSES:
                f->subprocesses = true;
                return true;
        case CELL_OPT_INTERPRETER:
                f->interpreter = arg;
                return true;
        case CELL_OPT_START:
                f->start = arg;
                return true;
        case CELL_OPT_ALLOW_NET:
                if (f->n_allow_net < sizeof(f->allow_net) / sizeof(f->allow_net[0]))
                        f->allow_net[f->n_allow_net++] = arg;
                return true;
        case CELL_OPT_LIBRARY:
                /* The 17th is kept, so that the library's own cap words the refusal. */
                if (f->n_libraries < sizeof(f->libraries) / sizeof(f->libraries[0]))
                        f->libraries[f->n_libraries++] = arg;
                return true;
        }
        return false;
}
