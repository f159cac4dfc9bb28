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

#include "cleanup.h"
#include "disposal.h"
#include "egress_policy.h"
#include "error.h"
#include "error_hint.h"
#include "frame.h"
#include "pool.h"
#include "result.h"
#include "run_input.h"
#include "run_network.h"
#include "standby.h"
#include "util.h"

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

/* One execution under way. */
struct execution {
        struct cell_plan *plan;
        struct tool_table *tools;
        struct standby *s;
        const codecell_run_options *options; /* NULL: none */
        codecell_result *res;
        bool keep;                  /* a session's: its sandbox goes on after "ok" and "error" */
        int64_t id;                 /* of the exec, which the guest's frames must carry */
        uint64_t timeout_ms;        /* the cell's wall-clock limit, or the run's when narrower */
        double start, deadline;     /* now_ms() clock */
        struct rpc rpc;             /* its host calls */
        struct call_record *record; /* a session eval's journal of them, or NULL */
};

/* What an execution came to: the facts its status is decided from, and what it used. */
struct outcome {
        struct pump_seen seen;     /* what the pump saw; owns the result frame */
        struct run_outcome facts;  /* result_frame and protocol_error point into seen */
        int init_status;           /* init's exit code once torn down without a result, or -1 */
        bool goes_on;              /* a session's sandbox, kept for its next exec */
        double cpu_ms;             /* the CPU time the code used */
        int64_t memory_peak_bytes; /* -1: unknown */
};

/* Why the sandbox gave no result: a cancel, a broken protocol, or the interpreter's end. */
static void explain_sandbox_error(codecell_result *res, const struct outcome *outcome)
{
        const struct run_outcome *o = &outcome->facts;
        int sig = sandbox_guest_signal(outcome->init_status);
        int code = sandbox_guest_exit_code(outcome->init_status);
        if (o->cancelled) {
                res->cancelled = true;
                set_error_text(res, "the run was cancelled by the caller before it finished");
        } else if (o->protocol_error) {
                set_error_text(res, "the guest broke the protocol: %s", o->protocol_error);
        } else if (sig) {
                set_error_text(res,
                               "the interpreter was killed by signal %d (%s) before returning a "
                               "result",
                               sig, strsignal(sig));
        } else if (code >= 0) {
                set_error_text(res, "the interpreter exited with code %d before returning a result",
                               code);
        } else {
                set_error_text(res, "the interpreter ended before returning a result");
        }
}

/* The guest's error, with a hint when what stopped the code was a wall of the sandbox
 * (error_hint.h). A copy: the frame's own object is left as the guest sent it. */
static json_t *hinted_error(const codecell_config *c, const json_t *error)
{
        _cleanup_free_ const char **dests = calloc(c->n_mounts + 1, sizeof(*dests));
        for (size_t i = 0; dests && i < c->n_mounts; i++)
                dests[i] = c->mounts[i].dest;
        const char *allowed =
                c->network_policy ? egress_policy_allowed_text(c->network_policy) : NULL;
        struct sandbox_shape shape = {.mounts = dests,
                                      .n_mounts = dests ? c->n_mounts : 0,
                                      .interpreter = c->interpreter,
                                      .subprocesses = c->subprocesses,
                                      .network_allowed = allowed};
        json_t *copy = json_copy((json_t *)error);
        /* A hint is the engine's word: the guest may not send one of its own. */
        if (copy)
                json_object_del(copy, "hint");
        char *hint = copy && dests ? error_hint(error, &shape) : NULL;
        if (hint)
                json_object_set_new(copy, "hint", json_string(hint));
        free(hint);
        return copy;
}

/* The status of what the execution came to, and what the model is told of it. */
static void judge(const struct execution *x, const struct outcome *outcome)
{
        const uint64_t *lim = x->plan->config->limits;
        const struct run_outcome *o = &outcome->facts;
        codecell_result *res = x->res;
        res->status = outcome_classify(o);
        switch (res->status) {
        case CODECELL_STATUS_OK:
                if (result_set_value(res, o->result_frame) < 0) {
                        res->status = CODECELL_STATUS_SANDBOX_ERROR;
                        set_error_text(res, "the guest broke the protocol: its value is not "
                                            "one JSON value");
                }
                set_exit_status(res, o->result_frame);
                result_take_idle_interrupts(res, o->result_frame);
                /* Only out of memory fails it; what the guest got wrong is a note. */
                (void)display_take(&res->display, o->result_frame, lim[CODECELL_LIMIT_MODEL_CHARS],
                                   lim[CODECELL_LIMIT_IMAGE_BYTES]);
                break;
        case CODECELL_STATUS_ERROR:
                res->error = json_is_object(json_object_get(o->result_frame, "error"))
                                     ? hinted_error(x->plan->config,
                                                    json_object_get(o->result_frame, "error"))
                                     : NULL;
                if (!json_is_object(res->error)) {
                        json_decref(res->error);
                        res->error = json_pack("{s:s, s:s}", "class", "Unknown", "message",
                                               "the guest reported an error without details");
                }
                set_exit_status(res, o->result_frame);
                result_take_idle_interrupts(res, o->result_frame);
                break;
        case CODECELL_STATUS_TIMEOUT:
                set_error_text(res,
                               "execution timed out after %llu ms (the wall-clock limit) "
                               "before finishing; make the code faster, do less in each call, "
                               "or split the work across calls",
                               (unsigned long long)x->timeout_ms);
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
                explain_sandbox_error(res, outcome);
                break;
        }
}

/* The result: its status, what the code used, how long it took, its output. */
static void finish(const struct execution *x, const struct outcome *o)
{
        codecell_result *res = x->res;
        judge(x, o);
        res->cpu_ms = o->cpu_ms;
        res->memory_peak_bytes = o->memory_peak_bytes;
        res->duration_ms = now_ms() - x->start;
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
        int r = run_input_check(options, plan->config->limits, err);
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

/* The size of one output file: file_out_bytes, but never more than fits a frame as base64
 * (with room for its name), or the frame would end the run. */
static uint64_t frame_room(const uint64_t *lim)
{
        uint64_t frame = lim[CODECELL_LIMIT_FRAME_BYTES];
        return frame > 8192 ? (frame - 4096) / 4 * 3 : 1024;
}

static uint64_t file_out_cap(const uint64_t *lim)
{
        uint64_t fits = frame_room(lim);
        return lim[CODECELL_LIMIT_FILE_OUT_BYTES] < fits ? lim[CODECELL_LIMIT_FILE_OUT_BYTES]
                                                         : fits;
}

/* Where the result's output and pictures go, within the cell's limits. */
static void prepare_result(const struct execution *x)
{
        const uint64_t *lim = x->plan->config->limits;
        codecell_result *res = x->res;
        output_init(&res->out, lim[CODECELL_LIMIT_OUTPUT_BYTES]);
        output_init(&res->err, lim[CODECELL_LIMIT_OUTPUT_BYTES]);
        image_list_init(&res->images, lim[CODECELL_LIMIT_IMAGES], lim[CODECELL_LIMIT_IMAGE_BYTES]);
        file_list_init(&res->files, lim[CODECELL_LIMIT_FILES_OUT], file_out_cap(lim));
}

/* The exec frame: the code, what the prelude may hand back as pictures (the host checks it
 * again), the cell's MCP tools (which the prelude binds as Memory.create_entities and so on)
 * and the run's input. NULL when out of memory. */
static json_t *exec_frame(const struct execution *x, const char *code, size_t len)
{
        const codecell_config *c = x->plan->config;
        json_t *exec = json_pack("{s:s, s:I, s:s%, s:{s:I, s:I, s:s?}}", "t", "exec", "id",
                                 (json_int_t)x->id, "code", code, len, "images", "max",
                                 (json_int_t)c->limits[CODECELL_LIMIT_IMAGES], "max_bytes",
                                 (json_int_t)c->limits[CODECELL_LIMIT_IMAGE_BYTES], "folder",
                                 c->output_folder);

        /* How much of the last value's rich forms the prelude may send (docs/results.md). */
        json_t *display = json_pack(
                "{s:I, s:I, s:I}", "max_chars", (json_int_t)c->limits[CODECELL_LIMIT_MODEL_CHARS],
                "max_bytes", (json_int_t)c->limits[CODECELL_LIMIT_IMAGE_BYTES], "max_frame_bytes",
                (json_int_t)c->limits[CODECELL_LIMIT_FRAME_BYTES]);
        if (exec && display)
                json_object_set(exec, "display", display);
        json_decref(display);
        /* The output folder's other files: the prelude sends each as a "file" frame within
         * these caps (a picture among them within the images'), and never reads more of one
         * than a frame holds (read_bytes), whatever the caps. */
        if (exec && c->output_folder)
                json_object_set_new(exec, "files_out",
                                    json_pack("{s:I, s:I, s:I}", "max",
                                              (json_int_t)c->limits[CODECELL_LIMIT_FILES_OUT],
                                              "max_bytes", (json_int_t)file_out_cap(c->limits),
                                              "read_bytes", (json_int_t)frame_room(c->limits)));
        json_t *bindings = tool_table_bindings(x->tools);
        if (exec && bindings)
                json_object_set(exec, "bindings", bindings);
        json_decref(bindings);
        if (exec && run_input_add(exec, x->options) < 0) {
                json_decref(exec);
                exec = NULL;
        }
        return exec;
}

/* Hands the code to the guest and starts its CPU budget; from then on the pump answers its
 * host calls and awaits its result. False, with a protocol error in the pump, when the code
 * could not be handed over. */
static bool hand_over(struct execution *x, const char *code, size_t len)
{
        const uint64_t *lim = x->plan->config->limits;
        struct pump *p = &x->s->pump;
        json_t *exec = exec_frame(x, code, len);
        if (!exec) {
                pump_protocol_error(p, "cannot encode the code");
                return false;
        }
        standby_arm(x->s, lim[CODECELL_LIMIT_CPU_MS]);
        codecell_error e = {0};
        int r = frame_send(x->s->sb.ctl_fd, exec, (int)x->timeout_ms, &e);
        json_decref(exec);
        if (r < 0) {
                pump_protocol_error(p, e.message);
                return false;
        }
        struct rpc_limits rl = {.calls = lim[CODECELL_LIMIT_TOOL_CALLS],
                                .request_bytes = lim[CODECELL_LIMIT_TOOL_REQUEST_BYTES],
                                .answer_bytes = lim[CODECELL_LIMIT_TOOL_ANSWER_BYTES],
                                .call_ms = lim[CODECELL_LIMIT_TOOL_CALL_MS],
                                .concurrency = lim[CODECELL_LIMIT_TOOL_CONCURRENCY],
                                .approval_ms = lim[CODECELL_LIMIT_APPROVAL_MS]};
        rpc_init(&x->rpc, x->tools, &rl, x->deadline, x->s->sb.ctl_fd);
        x->rpc.syntax = &x->plan->config->runtime->tools;
        x->rpc.run_userdata = x->options ? x->options->userdata : NULL;
        x->rpc.record = x->record;
        pump_exec_sent(p, &x->rpc, x->options, x->start);
        return true;
}

/* The facts the status is decided from, as far as the pump saw them. */
static void take_what_was_seen(const struct execution *x, struct outcome *o)
{
        o->facts = (struct run_outcome){
                .cancelled = o->seen.cancelled,
                .timed_out = o->seen.timed_out,
                .memory_by_rlimit = !x->plan->cgroup_place.backend,
                .protocol_error = o->seen.protocol_error[0] ? o->seen.protocol_error : NULL,
                .result_frame = o->seen.result_frame,
                .out_of_memory_class = x->plan->config->runtime->out_of_memory_class,
        };
}

static void count_memory(struct outcome *o, const struct cgroup_stats *st)
{
        o->facts.oom_killed = st->oom_kills > 0;
        o->facts.memory_refused = st->memory_failures > 0;
        o->memory_peak_bytes = st->memory_peak_bytes;
}

/* The result is in hand and the sandbox is still whole: a session's goes on after "ok" and
 * "error" (a limit ends it). Otherwise it is killed now, and can do nothing more the host
 * would see unless it may write to the host's files: a write already under way would land
 * after the caller has the result. Only then does the caller wait for the kernel to finish it;
 * otherwise execution_run hands it to the cell's disposal thread. */
static void end_after_result(const struct execution *x, struct outcome *o)
{
        codecell_status status = outcome_classify(&o->facts);
        o->goes_on = x->keep && (status == CODECELL_STATUS_OK || status == CODECELL_STATUS_ERROR);
        if (o->goes_on)
                return;
        if (x->keep || x->plan->writes_host)
                (void)standby_teardown(x->s, END_NOW, NULL, NULL);
        else
                standby_kill(x->s);
}

/* How a sandbox that gave no usable result ends: a guest that broke the protocol or was
 * cancelled gets no more time; one over its deadline or budget is killed and reaped by init
 * (its CPU time is counted); one that is ending by itself is given a moment. */
static enum standby_end ending_without_result(const struct outcome *o)
{
        if (o->facts.protocol_error || o->facts.cancelled)
                return END_NOW;
        if (o->facts.timed_out || (o->seen.cpu_exhausted && !o->seen.result_frame))
                return END_GUEST_FIRST;
        return END_WAIT;
}

/* Ends the sandbox as the outcome calls for, measuring once what the code used: its CPU time
 * since exec and the sandbox's memory. */
static void end_sandbox(const struct execution *x, struct outcome *o)
{
        struct standby *s = x->s;
        struct cgroup_stats st = {.memory_peak_bytes = -1};
        struct rusage usage = {0};
        /* Read before any teardown: processes killed with the sandbox are reaped by the
         * kernel as init exits, and their time may not reach init's rusage. */
        double cpu = standby_cpu_ms(s);
        if (o->facts.result_frame && !o->facts.protocol_error) {
                standby_stats(s, &st);
                count_memory(o, &st);
                end_after_result(x, o);
        } else {
                o->init_status = standby_teardown(s, ending_without_result(o), &usage, &st);
                count_memory(o, &st);
                int sig = sandbox_guest_signal(o->init_status);
                o->facts.cpu_exhausted =
                        !o->seen.result_frame && (o->seen.cpu_exhausted || sig == SIGXCPU);
        }
        if (rusage_ms(&usage) > cpu)
                cpu = rusage_ms(&usage);
        o->cpu_ms = cpu > s->boot_cpu_ms ? cpu - s->boot_cpu_ms : 0;
}

/* Cancelled before it began: the code is never handed over, and a session's kernel,
 * untouched, goes on. */
static bool refuse_cancelled(const struct execution *x)
{
        x->res->status = CODECELL_STATUS_SANDBOX_ERROR;
        x->res->cancelled = true;
        set_error_text(x->res, "the run was cancelled by the caller before it started");
        if (x->keep)
                return true;
        (void)standby_teardown(x->s, END_NOW, NULL, NULL);
        return false;
}

/* The execution from the exec to the result; true when its sandbox goes on (a session's).
 * ret_end says how one that does not go on ended. */
static bool run_on(struct execution *x, const char *code, size_t len, struct execution_end *ret_end)
{
        struct pump *p = &x->s->pump;
        prepare_result(x);
        if (x->options && codecell_cancel_triggered(x->options->cancel))
                return refuse_cancelled(x);
        x->id = new_exec_id();
        x->start = now_ms();
        x->deadline = x->start + (double)x->timeout_ms;
        pump_exec_begin(p, &(struct pump_exec){.id = x->id,
                                               .out = &x->res->out,
                                               .err = &x->res->err,
                                               .images = &x->res->images,
                                               .files = &x->res->files});
        /* The cell's proxy serves this execution only: what the code opens through it closes
         * with the execution, before its result. */
        bool no_proxy = false;
        codecell_error net_err = {0};
        struct egress *net = run_network_begin(x->plan->config, x->plan->egress_tls,
                                               x->s->sb.proxy_fd, x->deadline, &no_proxy, &net_err);
        if (no_proxy)
                pump_protocol_error(p, net_err.message);
        else if (hand_over(x, code, len))
                pump_exec_wait(p, x->deadline);
        struct outcome o = {.init_status = -1};
        pump_exec_end(p, &o.seen);
        /* A tool still running is not this execution's any more. */
        rpc_end(&x->rpc);
        run_network_end(net, x->res);
        take_what_was_seen(x, &o);
        end_sandbox(x, &o);
        finish(x, &o);
        *ret_end = (struct execution_end){.untaken = !o.seen.taken && !o.seen.result_frame &&
                                                     !o.seen.cancelled && !o.seen.timed_out &&
                                                     !o.facts.cpu_exhausted,
                                          .init_status = o.init_status};
        json_decref(o.seen.result_frame);
        return o.goes_on;
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

/* The wall clock the run gets: the cell's limit, or the caller's for this run when it is
 * narrower (a caller may tighten a cell it shares with others, never loosen it). */
static uint64_t run_timeout_ms(const struct cell_plan *plan, const codecell_run_options *options)
{
        uint64_t cell = plan->config->limits[CODECELL_LIMIT_TIMEOUT_MS];
        if (options && options->timeout_ms && (uint64_t)options->timeout_ms < cell)
                return (uint64_t)options->timeout_ms;
        return cell;
}

bool execution_on(struct cell_plan *plan, struct tool_table *tools, struct standby *s,
                  const char *code, size_t len, bool keep, struct call_record *record,
                  const codecell_run_options *options, codecell_result *res,
                  struct execution_end *ret_end)
{
        struct execution x = {.plan = plan,
                              .tools = tools,
                              .s = s,
                              .options = options,
                              .res = res,
                              .keep = keep,
                              .record = record,
                              .timeout_ms = run_timeout_ms(plan, options)};
        struct execution_end end = {.init_status = -1};
        bool alive = run_on(&x, code, len, &end);
        if (ret_end)
                *ret_end = end;
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
        (void)execution_on(plan, tools, s, code, len, false, NULL, options, res, NULL);
        if (s->sb.pid > 0)
                disposal_add(disposal, s); /* killed, not yet collected */
        else
                standby_free(s);
}
