/* One execution: take a sandbox standing by (or start one), hand it the code, collect output
 * and the result until the deadline, tear it down and decide the status from what the kernel
 * says. */
#include "execution.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include "disposal.h"
#include "error.h"
#include "frame.h"
#include "pool.h"
#include "result.h"
#include "run_input.h"
#include "standby.h"
#include "util.h"

/* Output still in the pipes after the result frame is drained for at most this long. */
#define DRAIN_MS 500

static void set_error_text(codecell_result *res, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void set_error_text(codecell_result *res, const char *fmt, ...)
{
        char text[600];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        json_decref(res->error);
        res->error = json_string(text);
}

/* The code called exit (Ruby's exit, Python's sys.exit): the prelude says with what status. */
static void set_exit_status(codecell_result *res, const json_t *frame)
{
        const json_t *status = json_object_get(frame, "exit_status");
        if (json_is_integer(status)) {
                res->exit_status = json_integer_value(status);
                res->has_exit_status = true;
        }
}

static void finish(const struct cell_plan *plan, codecell_result *res, const struct run_outcome *o,
                   int init_status, double exec_start)
{
        const uint64_t *lim = plan->config->limits;
        res->status = outcome_classify(o);
        switch (res->status) {
        case CODECELL_STATUS_OK:
                if (result_set_value(res, o->result_frame) < 0) {
                        res->status = CODECELL_STATUS_SANDBOX_ERROR;
                        set_error_text(res, "the guest broke the protocol: its value is not "
                                            "one JSON value");
                }
                set_exit_status(res, o->result_frame);
                break;
        case CODECELL_STATUS_ERROR:
                res->error = json_incref(json_object_get(o->result_frame, "error"));
                if (!json_is_object(res->error)) {
                        json_decref(res->error);
                        res->error = json_pack("{s:s, s:s}", "class", "Unknown", "message",
                                               "the guest reported an error without details");
                }
                set_exit_status(res, o->result_frame);
                break;
        case CODECELL_STATUS_TIMEOUT:
                set_error_text(res,
                               "execution timed out after %llu ms (the wall-clock limit) "
                               "before finishing; make the code do less work or raise the timeout",
                               (unsigned long long)lim[CODECELL_LIMIT_TIMEOUT_MS]);
                break;
        case CODECELL_STATUS_FUEL_EXHAUSTED:
                set_error_text(res,
                               "execution used its CPU budget of %llu ms before finishing; "
                               "use a cheaper algorithm or less data",
                               (unsigned long long)lim[CODECELL_LIMIT_CPU_MS]);
                break;
        case CODECELL_STATUS_MEMORY_LIMIT:
                set_error_text(res,
                               "execution exceeded the sandbox memory limit of %llu MiB; "
                               "process the data in smaller pieces or stream it",
                               (unsigned long long)(lim[CODECELL_LIMIT_MEMORY_BYTES] >> 20));
                break;
        case CODECELL_STATUS_SANDBOX_ERROR:
                if (o->cancelled) {
                        res->cancelled = true;
                        set_error_text(res, "the run was cancelled by the caller before it "
                                            "finished");
                } else if (o->protocol_error) {
                        set_error_text(res, "the guest broke the protocol: %s", o->protocol_error);
                } else {
                        int sig = sandbox_guest_signal(init_status);
                        int code = sandbox_guest_exit_code(init_status);
                        if (sig)
                                set_error_text(res,
                                               "the interpreter was killed by signal %d (%s) "
                                               "before returning a result",
                                               sig, strsignal(sig));
                        else if (code >= 0)
                                set_error_text(res,
                                               "the interpreter exited with code %d before "
                                               "returning a result",
                                               code);
                        else
                                set_error_text(res,
                                               "the interpreter ended before returning a result");
                }
                break;
        }
        res->duration_ms = exec_start > 0 ? now_ms() - exec_start : 0;
        /* The head, a marker and the tail of output that went over its cap (without memory
         * for that, the head alone stays). */
        (void)output_finish(&res->out);
        (void)output_finish(&res->err);
}

static double rusage_ms(const struct rusage *u)
{
        return (double)(u->ru_utime.tv_sec + u->ru_stime.tv_sec) * 1000.0 +
               (double)(u->ru_utime.tv_usec + u->ru_stime.tv_usec) / 1000.0;
}

/* An exec id the guest cannot guess: its result frame must carry it, so a frame the guest's
 * code writes by hand on fd 3 is a protocol error unless that code found the id in the
 * prelude's memory (then it could only have returned the same value itself). 53 bits: exact
 * as a number in every JSON reader. */
static int64_t new_exec_id(void)
{
        uint64_t id = 0;
        if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
                id = (uint64_t)(now_ms() * 1000.0) ^ ((uint64_t)getpid() << 32);
        id &= (1ULL << 53) - 1;
        return id > 1 ? (int64_t)id : 2;
}

static int check_code(const struct cell_plan *plan, const char *code, size_t len,
                      codecell_error *err)
{
        uint64_t max = plan->config->limits[CODECELL_LIMIT_CODE_BYTES];
        if (!code)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "code: missing");
        if (len > max)
                return err_set(err, CODECELL_ERR_INVALID, E2BIG,
                               "code: %zu bytes is over the %llu-byte limit", len,
                               (unsigned long long)max);
        if (!utf8_valid(code, len))
                return err_set(err, CODECELL_ERR_INVALID, EILSEQ, "code: not valid UTF-8");
        if (memchr(code, '\0', len))
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "code: contains a NUL byte");
        return 0;
}

int execution_accept(const struct cell_plan *plan, const char *code, size_t len,
                     const codecell_run_options *options, codecell_result **ret,
                     codecell_error *err)
{
        *ret = NULL;
        int r = run_input_check(options, err);
        r = r ?: check_code(plan, code, len, err);
        if (r < 0)
                return r;
        codecell_result *res = result_new();
        if (!res)
                return err_sys(err, ENOMEM, "result");
        res->layers = json_incref(plan->layers);
        res->warnings = json_incref(plan->warnings);
        *ret = res;
        return 0;
}

static bool run_on(struct cell_plan *plan, struct tool_table *tools, struct standby *s,
                   const char *code, size_t len, bool keep, const codecell_run_options *options,
                   codecell_result *res)
{
        int64_t exec_id = new_exec_id();
        const uint64_t *lim = plan->config->limits;
        struct pump *p = &s->pump;
        struct run_outcome o = {.out_of_memory_class = plan->config->runtime->out_of_memory_class,
                                .memory_by_rlimit = !plan->cgroup_place.backend};
        struct rusage usage = {0};
        struct rpc rpc = {0};
        struct cgroup_stats st = {.memory_peak_bytes = -1};
        codecell_error e = {0};
        /* What an earlier eval's threads wrote since its result is not this eval's output. */
        struct output_buffer stale = {.cap = 0};
        p->out = p->err = &stale;
        pump_drain_now(p);
        output_free(&stale);
        output_init(&res->out, lim[CODECELL_LIMIT_OUTPUT_BYTES]);
        output_init(&res->err, lim[CODECELL_LIMIT_OUTPUT_BYTES]);
        p->out = &res->out;
        p->err = &res->err;
        image_list_init(&res->images, lim[CODECELL_LIMIT_IMAGES], lim[CODECELL_LIMIT_IMAGE_BYTES]);
        p->images = &res->images;
        p->exec_id = exec_id;
        if (options && codecell_cancel_triggered(options->cancel)) {
                /* Cancelled before it began: the code is never handed over, and a session's
                 * kernel, untouched, goes on. */
                res->status = CODECELL_STATUS_SANDBOX_ERROR;
                res->cancelled = true;
                set_error_text(res, "the run was cancelled by the caller before it started");
                if (keep)
                        return true;
                (void)standby_teardown(s, END_NOW, NULL, NULL);
                return false;
        }

        double exec_start = now_ms();
        double deadline = exec_start + (double)lim[CODECELL_LIMIT_TIMEOUT_MS];
        /* What the prelude may hand back as pictures: the host checks it again. */
        json_t *exec = json_pack("{s:s, s:I, s:s%, s:{s:I, s:I, s:s?}}", "t", "exec", "id",
                                 (json_int_t)exec_id, "code", code, len, "images", "max",
                                 (json_int_t)lim[CODECELL_LIMIT_IMAGES], "max_bytes",
                                 (json_int_t)lim[CODECELL_LIMIT_IMAGE_BYTES], "folder",
                                 plan->config->image_folder);
        /* The cell's MCP tools, which the prelude binds as Memory.create_entities and so on. */
        json_t *bindings = tool_table_bindings(tools);
        if (exec && bindings)
                json_object_set(exec, "bindings", bindings);
        json_decref(bindings);
        if (!exec || run_input_add(exec, options) < 0) {
                pump_protocol_error(p, "cannot encode the code");
        } else if (standby_arm(s, lim[CODECELL_LIMIT_CPU_MS]),
                   frame_send(s->sb.ctl_fd, exec, (int)lim[CODECELL_LIMIT_TIMEOUT_MS], &e) < 0) {
                pump_protocol_error(p, e.message);
        } else {
                p->exec_sent = true;
                rpc_init(&rpc, tools,
                         &(struct rpc_limits){.calls = lim[CODECELL_LIMIT_TOOL_CALLS],
                                              .request_bytes =
                                                      lim[CODECELL_LIMIT_TOOL_REQUEST_BYTES],
                                              .answer_bytes = lim[CODECELL_LIMIT_TOOL_ANSWER_BYTES],
                                              .call_ms = lim[CODECELL_LIMIT_TOOL_CALL_MS]},
                         deadline, s->sb.ctl_fd);
                rpc.syntax = &plan->config->runtime->tools;
                p->rpc = &rpc;
                pump_options_begin(p, options, exec_start);
                /* Until the result, the guest's death, the CPU budget, a cancel or the
                 * deadline. */
                o.timed_out = pump_until(p, deadline, pump_has_result);
                o.cancelled = p->cancelled && !p->result_frame;
                pump_options_end(p);
                if (o.cancelled) {
                        /* Nothing more is wanted from it. */
                } else if (p->result_frame || p->protocol_error[0]) {
                        /* Output written before the result is in the pipes already; a guest
                         * that broke the protocol gets no more time. */
                        pump_drain_now(p);
                } else if (!o.timed_out && !p->cpu_exhausted) {
                        /* The guest died: what it wrote ends at EOF. */
                        double until = now_ms() + DRAIN_MS;
                        (void)pump_until(p, until < deadline ? until : deadline, pump_drained);
                }
                pump_output_end(p);
        }
        json_decref(exec);
        /* A tool still running is not this execution's any more. */
        rpc_end(&rpc);
        p->rpc = NULL;

        json_t *result_frame = json_incref(p->result_frame);
        char protocol_error[sizeof(p->protocol_error)];
        snprintf(protocol_error, sizeof(protocol_error), "%s", p->protocol_error);
        o.protocol_error = protocol_error[0] ? protocol_error : NULL;
        o.result_frame = result_frame;
        bool cpu_spent = p->cpu_exhausted && !result_frame;
        double cpu_at_exec = s->boot_cpu_ms;
        bool alive = false;

        if (result_frame && !o.protocol_error) {
                /* The result is in hand: the CPU the code used, from the interpreter's clock. */
                double cpu = p->cpu_limit_ms > 0 ? cpu_meter_read(&p->cpu) : 0;
                res->cpu_ms = cpu > cpu_at_exec ? cpu - cpu_at_exec : 0;
                standby_stats(s, &st);
                o.oom_killed = st.oom_kills > 0;
                o.memory_refused = st.memory_failures > 0;
                res->memory_peak_bytes = st.memory_peak_bytes;
                codecell_status status = outcome_classify(&o);
                /* A session goes on after "ok" and "error"; a limit ends it. */
                alive = keep && (status == CODECELL_STATUS_OK || status == CODECELL_STATUS_ERROR);
                if (alive) {
                        finish(plan, res, &o, -1, exec_start);
                        json_decref(p->result_frame);
                        p->result_frame = NULL;
                        p->exec_sent = false;
                        p->cpu_limit_ms = 0;
                        json_decref(result_frame);
                        return true;
                }
                /* The result is in hand. Killed now, the sandbox can do nothing more the host
                 * would see unless it may write to the host's files: a write already under
                 * way would land after the caller has the result. Only then does the caller
                 * wait for the kernel to finish it; otherwise execution_run hands it to the
                 * cell's disposal thread. */
                if (keep || plan->writes_host)
                        (void)standby_teardown(s, END_NOW, NULL, NULL);
                else
                        standby_kill(s);
                finish(plan, res, &o, -1, exec_start);
                json_decref(result_frame);
                return false;
        }

        enum standby_end how = END_WAIT;
        if (o.protocol_error || o.cancelled)
                how = END_NOW;
        else if (o.timed_out || cpu_spent)
                how = END_GUEST_FIRST;
        /* Read before the teardown too: processes killed with the sandbox are reaped by the
         * kernel as init exits, and their time may not reach init's rusage. */
        double metered = p->cpu_limit_ms > 0 ? cpu_meter_read(&p->cpu) : 0;
        int init_status = standby_teardown(s, how, &usage, &st);
        double cpu = rusage_ms(&usage);
        if (metered > cpu)
                cpu = metered;
        res->cpu_ms = cpu > cpu_at_exec ? cpu - cpu_at_exec : 0;
        res->memory_peak_bytes = st.memory_peak_bytes;
        o.oom_killed = st.oom_kills > 0;
        o.memory_refused = st.memory_failures > 0;
        int sig = sandbox_guest_signal(init_status);
        o.cpu_exhausted = cpu_spent || (!result_frame && sig == SIGXCPU);
        finish(plan, res, &o, init_status, exec_start);
        json_decref(result_frame);
        return false;
}

/* Live output stopped at the head the result keeps (pump.c): what the result kept beyond it —
 * the rest of output under its cap, or the marker and the tail of output over it — is handed
 * on now, so that the reader has seen what the result holds. */
static void hand_on_the_rest(const struct pump *p, const codecell_run_options *options,
                             const codecell_result *res)
{
        if (!options || !options->output)
                return;
        for (int stream = 1; stream <= 2; stream++) {
                const struct output_buffer *b = stream == 1 ? &res->out : &res->err;
                size_t sent = p->output_sent[stream - 1];
                size_t from = b->truncated ? b->head : sent;
                if (!b->data || from >= b->len)
                        continue;
                if (b->truncated && b->data[from] != '\n' && p->output_last[stream - 1] != '\n')
                        options->output(stream, "\n", 1, options->userdata);
                options->output(stream, b->data + from, b->len - from, options->userdata);
        }
}

bool execution_on(struct cell_plan *plan, struct tool_table *tools, struct standby *s,
                  const char *code, size_t len, bool keep, const codecell_run_options *options,
                  codecell_result *res)
{
        bool alive = run_on(plan, tools, s, code, len, keep, options, res);
        hand_on_the_rest(&s->pump, options, res);
        /* A sandbox torn down has had its folders put back (standby_teardown); a session's
         * goes on, and its eval's chmods are put back now. */
        if (alive)
                mount_roots_restore(&plan->mount_roots);
        return alive;
}

void execution_run(struct cell_plan *plan, struct tool_table *tools, struct pool *pool,
                   struct disposal *disposal, const char *code, size_t len,
                   const codecell_run_options *options, codecell_result *res)
{
        struct standby *s = pool_take(pool);
        if (!s) {
                codecell_error e = {0};
                if (standby_start(plan, false, &s, &e) < 0) {
                        res->status = CODECELL_STATUS_SANDBOX_ERROR;
                        set_error_text(res, "the sandbox could not be started: %s", e.message);
                        return;
                }
        }
        (void)execution_on(plan, tools, s, code, len, false, options, res);
        if (s->sb.pid > 0)
                disposal_add(disposal, s); /* killed, not yet collected */
        else
                standby_free(s);
}
