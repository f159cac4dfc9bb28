/* The cell's libraries, loaded in its sandbox: guest/<language>/loads.* runs as the cell's
 * code, with the candidates' import names on stdin and the first to try in argv, and answers
 * one line per candidate on stdout as it goes. A candidate that ends the run (too much memory
 * or time for the cell, or a crash) is the one after the last answer: it is left out and the
 * next run starts after it. The lines are the guest's words, so a library could forge some;
 * it can only change what the description says of the libraries of its own cell. */
#include "library_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "error.h"
#include "result.h"

#define ANSWER_PREFIX "codecell-loads "

enum verdict { UNKNOWN, LOADS, FAILS };

struct candidates {
        json_t *entries;    /* [{text, imports}], borrowed */
        size_t n;           /* how many */
        enum verdict *says; /* one each */
        char **why;         /* of a FAILS: the error it raised, or the run's end */
};

/* Takes the answers of one run's stdout; the highest index answered, or -1. */
static ssize_t take_answers(struct candidates *cs, const char *out, size_t len)
{
        ssize_t last = -1;
        for (const char *line = out, *end = out + len; line < end;) {
                const char *nl = memchr(line, '\n', (size_t)(end - line));
                size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
                /* The guest cuts a reason at 300 characters: up to 1,200 bytes of UTF-8. */
                char buf[2048];
                if (n > strlen(ANSWER_PREFIX) && n < sizeof(buf) &&
                    memcmp(line, ANSWER_PREFIX, strlen(ANSWER_PREFIX)) == 0) {
                        memcpy(buf, line, n);
                        buf[n] = '\0';
                        char *rest = NULL;
                        unsigned long i = strtoul(buf + strlen(ANSWER_PREFIX), &rest, 10);
                        if (i < cs->n && rest && *rest == ' ') {
                                bool ok = strcmp(rest + 1, "ok") == 0;
                                bool failed = strncmp(rest + 1, "failed ", 7) == 0;
                                if (ok || failed) {
                                        cs->says[i] = ok ? LOADS : FAILS;
                                        free(cs->why[i]);
                                        cs->why[i] = failed ? strdup(rest + 8) : NULL;
                                        if ((ssize_t)i > last)
                                                last = (ssize_t)i;
                                }
                        }
                }
                line = nl ? nl + 1 : end;
        }
        return last;
}

/* Runs the check from candidate `first` on; the index after the last answered, or < 0 with
 * err when the engine could not run it. *ret_status: the run's. */
static int check_from(struct codecell_cell *cell, struct candidates *cs, const char *input,
                      size_t first, codecell_status *ret_status, char *why, size_t why_size,
                      codecell_error *err)
{
        char start[24];
        snprintf(start, sizeof(start), "%zu", first);
        const char *argv[] = {start, NULL};
        /* An import that hangs costs at most this per run, not the cell's whole timeout: the
         * check holds up the cell's first description. */
        codecell_run_options options = {.argv = argv,
                                        .stdin_data = input,
                                        .stdin_len = strlen(input),
                                        .timeout_ms = LIBRARY_CHECK_RUN_MS};
        const char *code = cell->config->runtime->loads;
        codecell_result *res = NULL;
        int r = codecell_cell_run_with(cell, code, strlen(code), &options, &res, err);
        if (r < 0)
                return r;
        size_t len = 0;
        const char *out = codecell_result_stdout(res, &len);
        ssize_t last = take_answers(cs, out ? out : "", out ? len : 0);
        *ret_status = codecell_result_status(res);
        const char *text = json_is_string(res->error) ? json_string_value(res->error) : NULL;
        snprintf(why, why_size, "%s%s%s", codecell_status_name(*ret_status), text ? ": " : "",
                 text ? text : "");
        codecell_result_free(res);
        return last < 0 ? (int)first : (int)last + 1;
}

/* The probe's entry whose first import name is name, or NULL. */
static json_t *probed(const json_t *libraries, const char *name)
{
        size_t i;
        json_t *entry;
        json_array_foreach(libraries, i, entry) {
                const char *first =
                        json_string_value(json_array_get(json_object_get(entry, "imports"), 0));
                if (first && strcmp(first, name) == 0)
                        return entry;
        }
        return NULL;
}

/* The candidates of a hand-written list: each name, with the probe's text when it found it. */
static json_t *listed_candidates(const codecell_config *c, const json_t *libraries)
{
        json_t *out = json_array();
        size_t i;
        json_t *name;
        json_array_foreach(c->listed_libraries, i, name) {
                json_t *found = probed(libraries, json_string_value(name));
                json_t *text = found ? json_object_get(found, "text") : name;
                if (!out || json_array_append_new(out, json_pack("{sOs[O]}", "text", text,
                                                                 "imports", name)) < 0) {
                        json_decref(out);
                        return NULL;
                }
        }
        return out;
}

/* The refusal of a hand-written list's name i that does not load. */
static int refuse(const codecell_config *c, const struct candidates *cs, size_t i,
                  codecell_error *err)
{
        const char *name = json_string_value(json_array_get(c->listed_libraries, i));
        const char *why = cs->why[i] ? cs->why[i] : "not checked: the checks ran out";
        if (c->listed_where)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                               "%s[%zu]: %s does not load in the sandbox (%s)", c->listed_where, i,
                               name, why);
        return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                       "listed library %s does not load in the sandbox (%s)", name, why);
}

static void candidates_free(struct candidates *cs)
{
        for (size_t i = 0; cs->why && i < cs->n; i++)
                free(cs->why[i]);
        free(cs->why);
        free(cs->says);
}

/* Runs until every candidate has an answer, or the runs are spent. 0, or 1 when the sandbox
 * could not run the check at all (nothing answered, and the run failed on its own). */
static int run_checks(struct codecell_cell *cell, struct candidates *cs, char *why, size_t why_size,
                      codecell_error *err)
{
        _cleanup_free_ char *input = NULL;
        json_t *names = json_array();
        size_t i;
        json_t *entry;
        json_array_foreach(cs->entries, i, entry) {
                json_array_append(names, json_object_get(entry, "imports"));
        }
        input = names ? json_dumps(names, JSON_COMPACT) : NULL;
        json_decref(names);
        if (!input)
                return err_sys(err, ENOMEM, "libraries");
        size_t first = 0;
        for (int run = 0; run < LIBRARY_CHECK_RUNS && first < cs->n; run++) {
                codecell_status status = CODECELL_STATUS_OK;
                int next = check_from(cell, cs, input, first, &status, why, why_size, err);
                if (next < 0)
                        return next;
                if (status == CODECELL_STATUS_OK)
                        return 0;
                if (run == 0 && (size_t)next == 0 && status == CODECELL_STATUS_SANDBOX_ERROR)
                        return 1;
                /* The candidate under way when the run ended is the one that ended it. */
                if ((size_t)next < cs->n) {
                        cs->says[next] = FAILS;
                        free(cs->why[next]);
                        cs->why[next] = strdup(why);
                }
                first = (size_t)next + 1;
        }
        return 0;
}

int library_check(struct codecell_cell *cell, codecell_error *err)
{
        const codecell_config *c = cell->config;
        struct interpreter_info *info = &cell->plan.probe;
        json_t *listed = c->listed_libraries ? listed_candidates(c, info->libraries) : NULL;
        if (c->listed_libraries && !listed)
                return err_sys(err, ENOMEM, "libraries");
        struct candidates cs = {.entries = listed ? listed : info->libraries};
        cs.n = cs.entries ? json_array_size(cs.entries) : 0;
        cs.says = calloc(cs.n + 1, sizeof(*cs.says));
        cs.why = calloc(cs.n + 1, sizeof(*cs.why));
        int r = 0;
        char why[700] = "";
        if (!cs.says || !cs.why) {
                r = err_sys(err, ENOMEM, "libraries");
                goto out;
        }
        r = cs.n ? run_checks(cell, &cs, why, sizeof(why), err) : 0;
        if (r < 0)
                goto out;
        if (r == 1 && !listed) {
                /* Unverifiable: the probe's list stands. */
                info->libraries_checked = true;
                r = 0;
                goto out;
        }
        if (r == 1) {
                r = c->listed_where
                            ? err_set(err, CODECELL_ERR_INVALID, EIO,
                                      "%s: could not be checked in the sandbox (%s)",
                                      c->listed_where, why)
                            : err_set(err, CODECELL_ERR_INVALID, EIO,
                                      "listed libraries could not be checked in the sandbox (%s)",
                                      why);
                goto out;
        }
        json_t *kept = json_array();
        for (size_t i = 0; kept && i < cs.n; i++) {
                if (cs.says[i] == LOADS)
                        json_array_append(kept, json_array_get(cs.entries, i));
                else if (listed) {
                        json_decref(kept);
                        r = refuse(c, &cs, i, err);
                        goto out;
                }
        }
        if (!kept) {
                r = err_sys(err, ENOMEM, "libraries");
                goto out;
        }
        json_decref(info->libraries);
        info->libraries = kept;
        info->libraries_checked = true;
out:
        candidates_free(&cs);
        json_decref(listed);
        return r;
}
