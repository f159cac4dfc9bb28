/* The engine's side of one sandbox's I/O: control frames on fd 3 and the two output pipes,
 * read as they come until a condition holds or a deadline passes. */
#include "pump.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cancel.h"
#include "deadline.h"
#include "util.h"

/* Output still in the pipes after the result frame is drained for at most this long. */
#define DRAIN_MS 500

void pump_init(struct pump *p, struct sandbox *sb, size_t max_frame)
{
        *p = (struct pump){
                .sb = sb, .ctl_open = true, .out_open = true, .err_open = true, .cancel_fd = -1};
        frame_reader_init(&p->frames, max_frame);
}

void pump_free(struct pump *p)
{
        json_decref(p->result_frame);
        p->result_frame = NULL;
        frame_reader_free(&p->frames);
}

void pump_output_to(struct pump *p, struct output_buffer *out, struct output_buffer *err)
{
        p->out = out;
        p->err = err;
}

/* Keeps what was read in the stream's buffer, if it has one. */
static int keep_output(struct pump *p, int stream, const char *buf, size_t n)
{
        struct output_buffer *b = stream == 1 ? p->out : p->err;
        return b ? output_append(b, buf, n) : 0;
}

/* Hands what was read on to the run's output callback, up to the cap of the stream. */
static void pass_output(struct pump *p, int stream, const char *buf, size_t n)
{
        size_t *sent = &p->output_sent[stream - 1];
        if (!p->output || *sent >= p->output_cap)
                return;
        if (n > p->output_cap - *sent)
                n = p->output_cap - *sent;
        *sent += n;
        if (n > 0)
                p->output_last[stream - 1] = buf[n - 1];
        p->output(stream, buf, n, p->output_userdata);
}

static int read_output(struct pump *p, int stream)
{
        int *fd = stream == 1 ? &p->sb->out_fd : &p->sb->err_fd;
        bool *open_flag = stream == 1 ? &p->out_open : &p->err_open;
        char buf[65536];
        ssize_t n = read(*fd, buf, sizeof(buf));
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return 0;
        if (n <= 0) {
                *open_flag = false;
                return 0;
        }
        pass_output(p, stream, buf, (size_t)n);
        return keep_output(p, stream, buf, (size_t)n);
}

void pump_protocol_error(struct pump *p, const char *msg)
{
        if (!p->protocol_error[0]) {
                snprintf(p->protocol_error, sizeof(p->protocol_error), "%s", msg);
                utf8_trim_cut(p->protocol_error);
        }
        p->ctl_open = false;
}

/* What a guest may write while an answer of the engine waits for it to read (SB.parallel and
 * asyncio.gather send all their calls first): the calls of a full queue (rpc.c) and a frame. */
#define BACKLOG_BYTES (48ULL * 1024 * 1024)

static void send_reply(struct pump *p, json_t *reply)
{
        codecell_error e;
        size_t backlog = BACKLOG_BYTES + p->frames.max_frame;
        if (!reply || rpc_send(p->rpc, reply, &p->frames, backlog, &e) < 0)
                pump_protocol_error(p, "could not answer a host call");
        json_decref(reply);
}

/* A host RPC request: answered now (an error, an unknown tool) or by a tool in the background. */
static void answer_call(struct pump *p, json_t *frame)
{
        const char *why = NULL;
        json_t *reply = p->rpc ? rpc_call(p->rpc, frame, &why) : NULL;
        if (!p->rpc)
                why = "a call before the code was handed over";
        if (why)
                pump_protocol_error(p, why);
        else if (reply)
                send_reply(p, reply);
}

static void handle_frame(struct pump *p, json_t *frame)
{
        const char *t = json_string_value(json_object_get(frame, "t"));
        if (strcmp(t, "ready") == 0 && !p->ready) {
                p->ready = true;
        } else if (strcmp(t, "taken") == 0 && p->exec_sent && !p->taken && !p->result_frame) {
                /* Sent by the prelude as soon as it has read the exec, before any of the code
                 * runs: the id proves it is the prelude's (the code cannot know it yet). */
                if (json_integer_value(json_object_get(frame, "id")) != p->exec_id) {
                        pump_protocol_error(p, "taken frame without the exec's id");
                        return;
                }
                p->taken = true;
        } else if (strcmp(t, "result") == 0 && p->exec_sent && !p->result_frame) {
                if (json_integer_value(json_object_get(frame, "id")) != p->exec_id ||
                    !json_is_boolean(json_object_get(frame, "ok"))) {
                        pump_protocol_error(p, "result frame without the exec's id and a boolean "
                                               "\"ok\"");
                        return;
                }
                p->result_frame = json_incref(frame);
        } else if (strcmp(t, "call") == 0 && p->exec_sent && !p->result_frame) {
                answer_call(p, frame);
        } else if (strcmp(t, "image") == 0 && p->exec_sent && !p->result_frame && p->images) {
                if (json_integer_value(json_object_get(frame, "id")) != p->exec_id) {
                        pump_protocol_error(p, "image frame without the exec's id");
                        return;
                }
                int r = image_list_take(p->images, frame);
                if (r < 0)
                        pump_protocol_error(p, r == -ENOMEM ? "out of memory taking an image"
                                                            : "image frame whose data is not "
                                                              "base64");
        } else if (strcmp(t, "file") == 0 && p->exec_sent && !p->result_frame && p->files &&
                   p->images) {
                if (json_integer_value(json_object_get(frame, "id")) != p->exec_id) {
                        pump_protocol_error(p, "file frame without the exec's id");
                        return;
                }
                int r = file_list_take(p->files, p->images, frame);
                if (r < 0)
                        pump_protocol_error(p, r == -ENOMEM ? "out of memory taking a file"
                                                            : "file frame without a name or "
                                                              "whose data is not base64");
        } else {
                char msg[128];
                snprintf(msg, sizeof(msg), "unexpected \"%.*s\" frame", utf8_prefix(t, 40), t);
                pump_protocol_error(p, msg);
        }
}

static void read_control(struct pump *p)
{
        char buf[65536];
        ssize_t n = read(p->sb->ctl_fd, buf, sizeof(buf));
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return;
        if (n <= 0) {
                p->ctl_open = false;
                return;
        }
        if (frame_reader_feed(&p->frames, buf, (size_t)n) < 0) {
                pump_protocol_error(p, "out of memory reading a frame");
                return;
        }
        for (;;) {
                json_t *frame = NULL;
                codecell_error e = {0};
                int r = frame_reader_next(&p->frames, &frame, &e);
                if (r < 0) {
                        char msg[sizeof(p->protocol_error)];
                        /* Most likely a result too big to return: say what to do instead. */
                        snprintf(msg, sizeof(msg), "%s%s", e.message,
                                 r == -EMSGSIZE && p->exec_sent
                                         ? " (a value or tool call this large cannot be passed: "
                                           "return less, or write it to a file in /work or a "
                                           "read-write folder)"
                                         : "");
                        pump_protocol_error(p, msg);
                        return;
                }
                if (r == 0)
                        return;
                handle_frame(p, frame);
                json_decref(frame);
                if (!p->ctl_open || p->result_frame)
                        return;
        }
}

/* How often the CPU budget is checked while the guest runs. */
#define CPU_CHECK_MS 10

static bool over_cpu_budget(struct pump *p)
{
        if (p->cpu_limit_ms <= 0 || p->cpu_exhausted)
                return p->cpu_exhausted;
        p->cpu_exhausted = cpu_meter_read(&p->cpu) >= p->cpu_limit_ms;
        return p->cpu_exhausted;
}

static void options_begin(struct pump *p, const codecell_run_options *options, double exec_start)
{
        p->cancelled = false;
        p->cancel = options ? options->cancel : NULL;
        p->cancel_fd = cancel_fd(p->cancel);
        p->interrupts_sent = 0;
        p->output = options ? options->output : NULL;
        p->output_userdata = options ? options->userdata : NULL;
        /* The head the result keeps of output over its cap; its tail follows at the end
         * (execution.c). */
        p->output_cap = p->out ? p->out->cap / 2 : 0;
        p->output_sent[0] = p->output_sent[1] = 0;
        p->output_last[0] = p->output_last[1] = '\n';
        p->progress = options ? options->progress : NULL;
        if (!p->progress)
                return;
        p->progress_userdata = options->userdata;
        p->progress_every_ms =
                options->progress_interval_ms ? (double)options->progress_interval_ms : 1000.0;
        p->progress_start_ms = exec_start;
        p->next_progress_ms = exec_start + p->progress_every_ms;
}

/* Stops handing output on: after the pipes are drained, which is after options_end. */
static void output_end(struct pump *p)
{
        p->output = NULL;
}

static void options_end(struct pump *p)
{
        p->cancel = NULL;
        p->cancel_fd = -1;
        p->progress = NULL;
}

/* The last line of what the guest wrote to stdout, without its newline, at most 200 bytes. */
static void report_progress(struct pump *p, double now)
{
        /* An MCP server's own progress of the call the guest waits for says more. */
        char upstream[256];
        if (p->rpc && rpc_progress(p->rpc, upstream, sizeof(upstream))) {
                p->progress((uint64_t)(now - p->progress_start_ms), upstream, strlen(upstream),
                            p->progress_userdata);
                p->next_progress_ms = now + p->progress_every_ms;
                return;
        }
        const char *data = p->out && p->out->data ? p->out->data : "";
        size_t end = p->out ? p->out->len : 0;
        while (end > 0 && (data[end - 1] == '\n' || data[end - 1] == '\r'))
                end--;
        size_t start = end;
        while (start > 0 && data[start - 1] != '\n' && end - start < 200)
                start--;
        p->progress((uint64_t)(now - p->progress_start_ms), data + start, end - start,
                    p->progress_userdata);
        p->next_progress_ms = now + p->progress_every_ms;
}

/* The token was written: a trigger stops the run; each interrupt asked for since the last look
 * becomes one SIGINT, once the interpreter has taken the code (before, its prelude would only
 * note it), so that the code raises it as a person's Ctrl-C. */
static void take_cancel(struct pump *p)
{
        cancel_drain(p->cancel);
        if (codecell_cancel_triggered(p->cancel)) {
                p->cancelled = true;
                return;
        }
        if (!p->taken)
                return;
        for (unsigned asked = cancel_interrupts(p->cancel); p->interrupts_sent < asked;
             p->interrupts_sent++)
                sandbox_interrupt_guest(p->sb, p->guest);
}

/* Polls until `done` holds, the CPU budget is spent, the run is cancelled or the deadline
 * passes. True when the deadline passed. */
bool pump_until(struct pump *p, double deadline, bool (*done)(const struct pump *))
{
        while (!done(p) && !over_cpu_budget(p) && !p->cancelled) {
                struct pollfd fds[4];
                int n = 0;
                if (p->ctl_open)
                        fds[n++] = (struct pollfd){.fd = p->sb->ctl_fd, .events = POLLIN};
                if (p->out_open)
                        fds[n++] = (struct pollfd){.fd = p->sb->out_fd, .events = POLLIN};
                if (p->err_open)
                        fds[n++] = (struct pollfd){.fd = p->sb->err_fd, .events = POLLIN};
                if (n == 0)
                        return false;
                if (p->cancel_fd >= 0)
                        fds[n++] = (struct pollfd){.fd = p->cancel_fd, .events = POLLIN};
                double now = now_ms();
                /* A call waiting for a person's approval parks the run's clock. */
                double left = deadline + rpc_parked_ms(p->rpc) - now;
                if (left <= 0)
                        return true;
                if (p->progress && now >= p->next_progress_ms)
                        report_progress(p, now);
                int wait = poll_timeout(left);
                if (p->cpu_limit_ms > 0 && wait > CPU_CHECK_MS)
                        wait = CPU_CHECK_MS;
                if (p->progress && wait > poll_timeout(p->next_progress_ms - now))
                        wait = poll_timeout(p->next_progress_ms - now);
                int k = poll(fds, (nfds_t)n, wait);
                if (k < 0 && errno != EINTR)
                        return false;
                for (int i = 0; i < n && k > 0; i++) {
                        if (!fds[i].revents)
                                continue;
                        if (fds[i].fd == p->cancel_fd)
                                take_cancel(p);
                        else if (fds[i].fd == p->sb->ctl_fd)
                                read_control(p);
                        else if (fds[i].fd == p->sb->out_fd)
                                (void)read_output(p, 1);
                        else
                                (void)read_output(p, 2);
                }
                /* What completes `done` after the deadline came too late: a guest whose tool
                 * call the deadline stopped answers just after it, and must not pass for one
                 * that finished in time. */
                if (k > 0 && done(p) && now_ms() > deadline + rpc_parked_ms(p->rpc))
                        return true;
                /* Interrupts asked for before the interpreter said "taken" go now that it has. */
                if (p->cancel && p->taken && p->interrupts_sent < cancel_interrupts(p->cancel))
                        take_cancel(p);
        }
        return false;
}

static void drain_pipe(struct pump *p, int stream)
{
        int fd = stream == 1 ? p->sb->out_fd : p->sb->err_fd;
        bool *open_flag = stream == 1 ? &p->out_open : &p->err_open;
        char buf[65536];
        while (*open_flag) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n > 0) {
                        pass_output(p, stream, buf, (size_t)n);
                        (void)keep_output(p, stream, buf, (size_t)n);
                } else if (n == 0) {
                        *open_flag = false;
                } else if (errno != EINTR) {
                        return; /* EAGAIN: the pipe is empty */
                }
        }
}

/* Takes what the output pipes hold now, without waiting for more. The prelude flushes its
 * output before it sends the result frame, so after that frame this is all of it. */
static void drain_now(struct pump *p)
{
        drain_pipe(p, 1);
        drain_pipe(p, 2);
}

bool pump_is_ready(const struct pump *p)
{
        return p->ready || !p->ctl_open;
}
static bool has_result(const struct pump *p)
{
        return p->result_frame || !p->ctl_open;
}
static bool drained(const struct pump *p)
{
        return !p->out_open && !p->err_open;
}

void pump_exec_begin(struct pump *p, const struct pump_exec *exec)
{
        pump_output_to(p, NULL, NULL);
        drain_now(p);
        pump_output_to(p, exec->out, exec->err);
        p->images = exec->images;
        p->files = exec->files;
        p->exec_id = exec->id;
        p->cpu_limit_ms = 0;
        p->cpu_exhausted = p->timed_out = p->cancelled = false;
}

void pump_exec_sent(struct pump *p, struct rpc *rpc, const codecell_run_options *options,
                    double exec_start)
{
        p->exec_sent = true;
        p->rpc = rpc;
        options_begin(p, options, exec_start);
}

void pump_exec_wait(struct pump *p, double deadline)
{
        p->timed_out = pump_until(p, deadline, has_result);
        options_end(p);
        if (p->cancelled && !p->result_frame) {
                /* Nothing more is wanted from it. */
        } else if (p->result_frame || p->protocol_error[0]) {
                /* Output written before the result is in the pipes already; a guest that
                 * broke the protocol gets no more time. */
                drain_now(p);
        } else if (!p->timed_out && !p->cpu_exhausted) {
                /* The guest died: what it wrote ends at EOF. */
                double until = now_ms() + DRAIN_MS;
                (void)pump_until(p, until < deadline ? until : deadline, drained);
        }
        output_end(p);
}

void pump_exec_end(struct pump *p, struct pump_seen *ret)
{
        *ret = (struct pump_seen){.result_frame = p->result_frame,
                                  .timed_out = p->timed_out,
                                  .cancelled = p->cancelled && !p->result_frame,
                                  .cpu_exhausted = p->cpu_exhausted,
                                  .taken = p->taken};
        snprintf(ret->protocol_error, sizeof(ret->protocol_error), "%s", p->protocol_error);
        p->result_frame = NULL;
        p->exec_sent = p->taken = false;
        p->rpc = NULL;
        p->images = NULL;
        p->files = NULL;
        pump_output_to(p, NULL, NULL);
        options_end(p);
        output_end(p);
}
