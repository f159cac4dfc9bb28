#include "cell.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "description.h"
#include "error.h"
#include "execution.h"
#include "library_check.h"

codecell_cell *codecell_cell_new(const codecell_config *config, codecell_error *err)
{
        if (!config) {
                err_set(err, CODECELL_ERR_INVALID, EINVAL, "no configuration");
                return NULL;
        }
        struct codecell_cell *cell = calloc(1, sizeof(*cell));
        if (!cell) {
                err_sys(err, ENOMEM, "cell");
                return NULL;
        }
        tool_table_init(&cell->tools);
        pthread_mutex_init(&cell->description_lock, NULL);
        cell->config = config_copy(config);
        session_table_init(&cell->sessions, &cell->plan, &cell->tools);
        if (!cell->config) {
                err_sys(err, ENOMEM, "cell");
                goto fail;
        }
        if (cell_plan_build(&cell->plan, cell->config, err) < 0 ||
            disposal_start(&cell->disposal, err) < 0 ||
            pool_start(&cell->plan, cell->config->pool, &cell->pool, err) < 0)
                goto fail;
        /* Sessions' kernels are started on the pool's threads (pool_spawn). */
        cell->sessions.pool = cell->pool;
        /* A hand-written list of libraries is the configuration's promise, checked now as its
         * interpreter and folders are: each name must load in the sandbox. */
        if (cell->config->listed_libraries) {
                struct cell_plan *plan = &cell->plan;
                if (!plan->probe.version &&
                    interpreter_probe(cell->config, plan->interpreter, plan->privileged,
                                      &plan->probe, err) < 0)
                        goto fail;
                if (library_check(cell, err) < 0)
                        goto fail;
        }
        return cell;
fail:
        codecell_cell_free(cell);
        return NULL;
}

void codecell_cell_free(codecell_cell *cell)
{
        if (!cell)
                return;
        /* First the sessions, then the pool whose threads started their kernels: both use
         * everything below. */
        session_table_free(&cell->sessions);
        pool_stop(cell->pool);
        disposal_stop(cell->disposal);
        cell_plan_free(&cell->plan);
        free(cell->description);
        tool_table_free(&cell->tools);
        pthread_mutex_destroy(&cell->description_lock);
        codecell_config_free(cell->config);
        free(cell);
}

int codecell_cell_warmup(codecell_cell *cell, codecell_error *err)
{
        /* Settled: the sandboxes of finished runs collected, the pool full. */
        disposal_flush(cell->disposal);
        return pool_warmup(cell->pool, err);
}

/* The description, built the first time it is wanted: the system's interpreter is probed for
 * its version and libraries then, and which of those load is asked in the sandbox (one run,
 * or a few: library_check.h), not when a cell that only runs code is made. Both are kept for
 * the cell's life. Holding description_lock. */
static char *description_locked(struct codecell_cell *cell)
{
        if (!cell->description) {
                /* A system interpreter that cannot be probed still runs code: its description
                 * just names no version and no libraries. */
                struct cell_plan *plan = &cell->plan;
                if (!plan->probe.version)
                        (void)interpreter_probe(cell->config, plan->interpreter, plan->privileged,
                                                &plan->probe, NULL);
                /* One that cannot be checked keeps the probe's list (library_check.h). */
                if (plan->probe.version && !plan->probe.libraries_checked)
                        (void)library_check(cell, NULL);
                cell->description = description_build(cell->config, &plan->probe, &cell->tools);
        }
        return cell->description;
}

const char *codecell_cell_warning(const codecell_cell *cell, size_t i)
{
        return json_string_value(json_array_get(cell->plan.warnings, i));
}

const char *codecell_cell_description(const codecell_cell *const_cell)
{
        /* Filled once, under the lock: the cell looks the same to its callers. */
        struct codecell_cell *cell = (struct codecell_cell *)const_cell;
        pthread_mutex_lock(&cell->description_lock);
        const char *text = description_locked(cell);
        pthread_mutex_unlock(&cell->description_lock);
        return text ? text : "";
}

int cell_add_tool(codecell_cell *cell, struct tool *tool, codecell_error *err)
{
        int r = tool_table_add(&cell->tools, tool, err);
        if (r < 0)
                return r;
        /* The next codecell_cell_description() builds it with the tool. */
        pthread_mutex_lock(&cell->description_lock);
        free(cell->description);
        cell->description = NULL;
        pthread_mutex_unlock(&cell->description_lock);
        return 0;
}

int codecell_cell_add_tool(codecell_cell *cell, const char *name, const char *description,
                           const char *input_schema_json, codecell_tool_handler handler,
                           void *userdata, codecell_error *err)
{
        const char *problem = tool_name_problem(name);
        if (problem)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "tool \"%s\": name %s",
                               name ? name : "", problem);
        if (!handler)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "tool \"%s\": no handler", name);
        json_error_t jerr;
        json_t *schema = input_schema_json
                                 ? json_loads(input_schema_json, JSON_REJECT_DUPLICATES, &jerr)
                                 : json_pack("{s:s, s:{}}", "type", "object", "properties");
        if (!schema)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL,
                               "tool \"%s\": input schema is not valid JSON: %s", name, jerr.text);
        char why[384];
        problem = tool_schema_problem(schema, why, sizeof(why));
        if (problem) {
                json_decref(schema);
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "tool \"%s\": input schema %s",
                               name, problem);
        }
        struct tool *tool = calloc(1, sizeof(*tool));
        if (!tool) {
                json_decref(schema);
                return err_sys(err, ENOMEM, "tool");
        }
        tool->name = strdup(name);
        tool->description = strdup(description ? description : "");
        tool->input_schema = schema;
        tool->handler = handler;
        tool->userdata = userdata;
        if (!tool->name || !tool->description) {
                tool_free(tool);
                return err_sys(err, ENOMEM, "tool");
        }
        return cell_add_tool(cell, tool, err);
}

void codecell_cell_set_approval(codecell_cell *cell, codecell_approval_fn fn, void *userdata)
{
        pthread_mutex_lock(&cell->tools.lock);
        cell->tools.approval_fn = fn;
        cell->tools.approval_userdata = userdata;
        pthread_mutex_unlock(&cell->tools.lock);
}

int codecell_cell_require_approval(codecell_cell *cell, const char *tool, codecell_error *err)
{
        if (!tool || !tool_table_require_approval(&cell->tools, tool))
                return err_set(err, CODECELL_ERR_INVALID, ENOENT,
                               "tool \"%s\": the cell has no tool of that name", tool ? tool : "");
        /* The description tells the model which calls wait for a person. */
        pthread_mutex_lock(&cell->description_lock);
        free(cell->description);
        cell->description = NULL;
        pthread_mutex_unlock(&cell->description_lock);
        return 0;
}

int codecell_cell_run_with(codecell_cell *cell, const char *code, size_t len,
                           const codecell_run_options *options, codecell_result **ret_result,
                           codecell_error *err)
{
        *ret_result = NULL;
        int r = execution_accept(&cell->plan, code, len, options, ret_result, err);
        if (r == 0)
                execution_run(&cell->plan, &cell->tools, cell->pool, cell->disposal, code, len,
                              options, *ret_result);
        return r;
}

int codecell_cell_run(codecell_cell *cell, const char *code, size_t len,
                      codecell_result **ret_result, codecell_error *err)
{
        return codecell_cell_run_with(cell, code, len, NULL, ret_result, err);
}

void codecell_cell_info_get(codecell_cell *cell, codecell_cell_info *ret)
{
        const codecell_config *c = cell->config;
        *ret = (codecell_cell_info){.language = c->runtime->name, .pool_size = c->pool};
        for (size_t i = 0; i < c->n_mounts; i++)
                ret->writes_host |= c->mounts[i].read_write;
        memcpy(ret->limits, c->limits, sizeof(c->limits)); /* the rest stays 0 */
        ret->pool_ready = pool_ready_count(cell->pool);
        ret->network = config_network_policy(c) != NULL;
        pthread_mutex_lock(&cell->tools.lock);
        ret->tools = cell->tools.n;
        ret->tool_calls = atomic_load(&cell->tools.calls);
        ret->tool_refusals = atomic_load(&cell->tools.refused);
        pthread_mutex_unlock(&cell->tools.lock);
        pthread_mutex_lock(&cell->sessions.lock);
        ret->sessions_open = cell->sessions.n;
        pthread_mutex_unlock(&cell->sessions.lock);
}

int codecell_session_eval(codecell_cell *cell, const char *name, const char *code, size_t len,
                          codecell_result **ret_result, codecell_error *err)
{
        return session_eval(&cell->sessions, name, code, len, NULL, ret_result, err);
}

int codecell_session_eval_with(codecell_cell *cell, const char *name, const char *code, size_t len,
                               const codecell_run_options *options, codecell_result **ret_result,
                               codecell_error *err)
{
        return session_eval(&cell->sessions, name, code, len, options, ret_result, err);
}

int codecell_session_close(codecell_cell *cell, const char *name, codecell_error *err)
{
        return session_close(&cell->sessions, name, err);
}

int codecell_session_close_idle(codecell_cell *cell, const char *prefix, char **ret_name,
                                codecell_error *err)
{
        return session_close_idle(&cell->sessions, prefix, ret_name, err);
}

int codecell_session_park(codecell_cell *cell, const char *name, codecell_error *err)
{
        return session_park(&cell->sessions, name, err);
}

int codecell_session_park_idle(codecell_cell *cell, const char *prefix, char **ret_name,
                               bool *ret_parked, codecell_error *err)
{
        return session_park_idle(&cell->sessions, prefix, ret_name, ret_parked, err);
}

int codecell_session_fork(codecell_cell *cell, const char *from, const char *as,
                          codecell_error *err)
{
        return session_fork(&cell->sessions, from, as, err);
}

bool codecell_session_parked(codecell_cell *cell, const char *name)
{
        return session_is_parked(&cell->sessions, name);
}

void codecell_session_close_all(codecell_cell *cell)
{
        session_close_all(&cell->sessions);
}

char **codecell_session_list(codecell_cell *cell)
{
        return session_list(&cell->sessions);
}
