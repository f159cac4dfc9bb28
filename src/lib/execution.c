/* One execution: start a sandbox, hand it the code, collect output and the result until the
 * deadline, tear everything down and decide the status from what the kernel says. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cell.h"
#include "cleanup.h"
#include "error.h"
#include "frame.h"
#include "result.h"
#include "sandbox.h"
#include "util.h"

/* The interpreter and prelude must be ready this long after the sandbox exists. Start-up is
 * not counted in the execution's own wall clock (which starts at `exec`). */
#define STARTUP_TIMEOUT_MS 10000
/* Output still in the pipes after the result frame is drained for at most this long. */
#define DRAIN_MS 500

static const char *const guest_env[] = {
        "PATH=/usr/bin:/bin", "HOME=/work",      "TMPDIR=/tmp", "LANG=C.UTF-8",
        "USER=sandbox",       "LOGNAME=sandbox", NULL,
};

struct pump {
        struct sandbox *sb;
        codecell_result *res;
        struct frame_reader frames;
        bool ctl_open, out_open, err_open;
        json_t *result_frame; /* owned */
        json_t *ready_frame;  /* owned */
        char protocol_error[256];
};

static int read_output(int *fd, bool *open_flag, struct output_buffer *b)
{
        char buf[65536];
        ssize_t n = read(*fd, buf, sizeof(buf));
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return 0;
        if (n <= 0) {
                *open_flag = false;
                return 0;
        }
        return output_append(b, buf, (size_t)n);
}

static void protocol_error(struct pump *p, const char *msg)
{
        if (!p->protocol_error[0])
                snprintf(p->protocol_error, sizeof(p->protocol_error), "%s", msg);
        p->ctl_open = false;
}

/* A host RPC request. No host tools are registered in this version, so every name is
 * unknown; the guest gets SB::UnknownTool, which its code can rescue. */
static void answer_call(struct pump *p, json_t *frame)
{
        json_t *id = json_object_get(frame, "id");
        const char *name = json_string_value(json_object_get(frame, "name"));
        if (!json_is_integer(id) || !name) {
                protocol_error(p, "call frame without an integer \"id\" and a string \"name\"");
                return;
        }
        char message[300];
        snprintf(message, sizeof(message), "unknown tool \"%.200s\" (this cell has no host tools)",
                 name);
        json_t *reply = json_pack("{s:s, s:O, s:b, s:{s:s, s:s}}", "t", "reply", "id", id, "ok", 0,
                                  "error", "class", "SB::UnknownTool", "message", message);
        codecell_error e;
        if (!reply || frame_send(p->sb->ctl_fd, reply, 1000, &e) < 0)
                protocol_error(p, "could not answer a host call");
        json_decref(reply);
}

static void handle_frame(struct pump *p, json_t *frame)
{
        const char *t = json_string_value(json_object_get(frame, "t"));
        if (strcmp(t, "ready") == 0 && !p->ready_frame) {
                p->ready_frame = json_incref(frame);
        } else if (strcmp(t, "result") == 0 && p->ready_frame && !p->result_frame) {
                if (json_integer_value(json_object_get(frame, "id")) != 1 ||
                    !json_is_boolean(json_object_get(frame, "ok"))) {
                        protocol_error(p, "result frame without id 1 and a boolean \"ok\"");
                        return;
                }
                p->result_frame = json_incref(frame);
        } else if (strcmp(t, "call") == 0 && p->ready_frame && !p->result_frame) {
                answer_call(p, frame);
        } else {
                char msg[128];
                snprintf(msg, sizeof(msg), "unexpected \"%.40s\" frame", t);
                protocol_error(p, msg);
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
                protocol_error(p, "out of memory reading a frame");
                return;
        }
        for (;;) {
                json_t *frame = NULL;
                codecell_error e = {0};
                int r = frame_reader_next(&p->frames, &frame, &e);
                if (r < 0) {
                        protocol_error(p, e.message);
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

/* Polls until `done` holds or the deadline passes. True when the deadline passed. */
static bool pump_until(struct pump *p, double deadline, bool (*done)(const struct pump *))
{
        while (!done(p)) {
                struct pollfd fds[3];
                int n = 0;
                if (p->ctl_open)
                        fds[n++] = (struct pollfd){.fd = p->sb->ctl_fd, .events = POLLIN};
                if (p->out_open)
                        fds[n++] = (struct pollfd){.fd = p->sb->out_fd, .events = POLLIN};
                if (p->err_open)
                        fds[n++] = (struct pollfd){.fd = p->sb->err_fd, .events = POLLIN};
                if (n == 0)
                        return false;
                double left = deadline - now_ms();
                if (left <= 0)
                        return true;
                int k = poll(fds, (nfds_t)n, (int)left + 1);
                if (k < 0 && errno != EINTR)
                        return false;
                for (int i = 0; i < n && k > 0; i++) {
                        if (!fds[i].revents)
                                continue;
                        if (fds[i].fd == p->sb->ctl_fd)
                                read_control(p);
                        else if (fds[i].fd == p->sb->out_fd)
                                (void)read_output(&p->sb->out_fd, &p->out_open, &p->res->out);
                        else
                                (void)read_output(&p->sb->err_fd, &p->err_open, &p->res->err);
                }
        }
        return false;
}

static bool is_ready(const struct pump *p)
{
        return p->ready_frame || !p->ctl_open;
}
static bool has_result(const struct pump *p)
{
        return p->result_frame || !p->ctl_open;
}
static bool drained(const struct pump *p)
{
        return !p->out_open && !p->err_open;
}

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

/* Detached, idmapped copies of the user's mounts, made by the privileged engine because only
 * it may idmap a host file system. The sandbox attaches them where they belong. */
static int prepare_idmapped_trees(struct codecell_cell *cell, int *tree_fds, codecell_error *err)
{
        for (size_t i = 0; i < cell->plan.n_ops; i++) {
                const struct mount_op *op = &cell->plan.ops[i];
                tree_fds[i] = -1;
                if (op->kind != OP_BIND || op->user_mount < 0 ||
                    cell->idmap_fds[op->user_mount] < 0)
                        continue;
                int fd = (int)syscall(SYS_open_tree, AT_FDCWD, op->source,
                                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
                if (fd < 0)
                        return err_sys(err, errno, "mount %s: open_tree", op->dest);
                tree_fds[i] = fd;
                struct mount_attr attr = {
                        .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                    (op->writable ? 0 : MOUNT_ATTR_RDONLY),
                        .userns_fd = (uint64_t)cell->idmap_fds[op->user_mount],
                };
                if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
                            sizeof(attr)) < 0)
                        return err_sys(err, errno, "mount %s: idmap", op->dest);
        }
        return 0;
}

static void fill_spec(struct codecell_cell *cell, struct sandbox_spec *spec, const int *tree_fds)
{
        const uint64_t *lim = cell->config->limits;
        rlim_t cpu_s = (rlim_t)((lim[CODECELL_LIMIT_CPU_MS] + 999) / 1000);
        *spec = (struct sandbox_spec){
                .plan = &cell->plan,
                .tree_fds = tree_fds,
                .landlock = &cell->landlock,
                .seccomp = &cell->seccomp,
                .interpreter = cell->config->runtime->interpreter,
                .argv = cell->config->runtime->argv,
                .envp = guest_env,
                .host_uid = cell->host_uid,
                .host_gid = cell->host_gid,
                .may_set_groups = cell->privileged,
        };
        struct sandbox_rlimit rl[] = {
                /* SIGXCPU at the budget, SIGKILL one second later if the guest ignores it. */
                {RLIMIT_CPU, {cpu_s, cpu_s + 1}},
                {RLIMIT_NOFILE, {lim[CODECELL_LIMIT_OPEN_FILES], lim[CODECELL_LIMIT_OPEN_FILES]}},
                {RLIMIT_FSIZE, {lim[CODECELL_LIMIT_FILE_BYTES], lim[CODECELL_LIMIT_FILE_BYTES]}},
                /* Counted per user namespace: this caps the sandbox's own threads. */
                {RLIMIT_NPROC, {lim[CODECELL_LIMIT_PIDS], lim[CODECELL_LIMIT_PIDS]}},
                {RLIMIT_CORE, {0, 0}},
        };
        memcpy(spec->rlimits, rl, sizeof(rl));
        spec->n_rlimits = sizeof(rl) / sizeof(rl[0]);
        if (!cell->cgroup_place.backend) {
                /* Without a memory cgroup, address space is the only memory limit we have.
                 * The interpreter reserves virtual ranges it never touches (seed 003's sharp
                 * edge), so the cap gets 128 MiB of headroom over the configured limit. */
                rlim_t as = (rlim_t)(lim[CODECELL_LIMIT_MEMORY_BYTES] + (128ULL << 20));
                spec->rlimits[spec->n_rlimits++] = (struct sandbox_rlimit){RLIMIT_AS, {as, as}};
        }
}

static void finish(struct codecell_cell *cell, codecell_result *res, struct pump *p,
                   const struct run_outcome *o, int init_status, double exec_start)
{
        const uint64_t *lim = cell->config->limits;
        res->status = outcome_classify(o);
        switch (res->status) {
        case CODECELL_STATUS_OK:
                res->value = json_incref(json_object_get(p->result_frame, "value"));
                if (!res->value)
                        res->value = json_null();
                break;
        case CODECELL_STATUS_ERROR:
                res->error = json_incref(json_object_get(p->result_frame, "error"));
                if (!json_is_object(res->error)) {
                        json_decref(res->error);
                        res->error = json_pack("{s:s, s:s}", "class", "Unknown", "message",
                                               "the guest reported an error without details");
                }
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
                if (p->protocol_error[0]) {
                        set_error_text(res, "the guest broke the protocol: %s", p->protocol_error);
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
}

int execution_run(struct codecell_cell *cell, const char *code, size_t len, codecell_result *res,
                  codecell_error *err)
{
        const uint64_t *lim = cell->config->limits;
        struct cgroup cg = {0};
        bool have_cg = false;
        int tree_fds[MOUNT_PLAN_MAX_OPS];
        struct sandbox sb = {.pid = -1, .ctl_fd = -1, .out_fd = -1, .err_fd = -1};
        struct pump p = {.sb = &sb, .res = res};
        frame_reader_init(&p.frames, lim[CODECELL_LIMIT_FRAME_BYTES]);
        output_init(&res->out, lim[CODECELL_LIMIT_OUTPUT_BYTES]);
        output_init(&res->err, lim[CODECELL_LIMIT_OUTPUT_BYTES]);
        res->layers = json_incref(cell->layers);
        res->warnings = json_incref(cell->warnings);
        double exec_start = 0;
        int init_status = -1;
        struct rusage usage = {0};
        struct run_outcome o = {.out_of_memory_class = cell->config->runtime->out_of_memory_class,
                                .memory_by_rlimit = !cell->cgroup_place.backend};
        codecell_error e = {0};

        for (size_t i = 0; i < MOUNT_PLAN_MAX_OPS; i++)
                tree_fds[i] = -1;
        if (cell->cgroup_place.backend) {
                char name[64];
                cgroup_unique_name(name, sizeof(name));
                struct cgroup_limits cl = {.memory_bytes = lim[CODECELL_LIMIT_MEMORY_BYTES],
                                           .pids = lim[CODECELL_LIMIT_PIDS]};
                if (cell->cgroup_place.backend->create(&cell->cgroup_place, name, &cl, &cg, &e) < 0)
                        goto sandbox_failed;
                have_cg = true;
        }
        if (cell->privileged && prepare_idmapped_trees(cell, tree_fds, &e) < 0)
                goto sandbox_failed;

        struct sandbox_spec spec;
        fill_spec(cell, &spec, tree_fds);
        if (sandbox_spawn(&spec, &sb, &e) < 0)
                goto sandbox_failed;
        if (have_cg && sandbox_attach_cgroup(&sb, &cg, &e) < 0) {
                sandbox_destroy(&sb, 0, NULL);
                goto sandbox_failed;
        }
        for (size_t i = 0; i < MOUNT_PLAN_MAX_OPS; i++)
                if (tree_fds[i] >= 0) {
                        close(tree_fds[i]);
                        tree_fds[i] = -1;
                }
        p.ctl_open = p.out_open = p.err_open = true;

        /* 1. Wait for the prelude's "ready". */
        if (pump_until(&p, now_ms() + STARTUP_TIMEOUT_MS, is_ready) || !p.ready_frame) {
                if (!p.protocol_error[0])
                        snprintf(p.protocol_error, sizeof(p.protocol_error),
                                 "the interpreter did not become ready");
                goto teardown;
        }
        /* 2. Hand over the code; the wall clock starts now. */
        exec_start = now_ms();
        double deadline = exec_start + (double)lim[CODECELL_LIMIT_TIMEOUT_MS];
        json_t *exec = json_pack("{s:s, s:i, s:s%}", "t", "exec", "id", 1, "code", code, len);
        if (!exec) {
                protocol_error(&p, "cannot encode the code");
                goto teardown;
        }
        int sent = frame_send(sb.ctl_fd, exec, (int)lim[CODECELL_LIMIT_TIMEOUT_MS], &e);
        json_decref(exec);
        if (sent < 0) {
                protocol_error(&p, e.message);
                goto teardown;
        }
        /* 3. Until the result, the guest's death, or the deadline. */
        o.timed_out = pump_until(&p, deadline, has_result);
        /* 4. Output written before the result belongs to this execution: drain the pipes. */
        if (!o.timed_out) {
                double drain_until = now_ms() + DRAIN_MS;
                (void)pump_until(&p, drain_until < deadline ? drain_until : deadline, drained);
        }
teardown:
        if (o.timed_out)
                sandbox_kill_guest(&sb);
        init_status = sandbox_destroy(&sb, 200, &usage);
        res->cpu_ms = (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000.0 +
                      (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000.0;
        if (have_cg) {
                struct cgroup_stats st = {.memory_peak_bytes = -1};
                cg.backend->stats(&cg, &st);
                cg.backend->destroy(&cg);
                o.oom_killed = st.oom_kills > 0;
                o.memory_refused = st.memory_failures > 0;
                res->memory_peak_bytes = st.memory_peak_bytes;
        }
        int sig = sandbox_guest_signal(init_status);
        o.cpu_exhausted = !p.result_frame &&
                          (sig == SIGXCPU ||
                           (sig == SIGKILL && res->cpu_ms >= (double)lim[CODECELL_LIMIT_CPU_MS]));
        o.protocol_error = p.protocol_error[0] ? p.protocol_error : NULL;
        o.result_frame = p.result_frame;
        finish(cell, res, &p, &o, init_status, exec_start);
        json_decref(p.result_frame);
        json_decref(p.ready_frame);
        frame_reader_free(&p.frames);
        (void)err;
        return 0;

sandbox_failed:
        for (size_t i = 0; i < MOUNT_PLAN_MAX_OPS; i++)
                if (tree_fds[i] >= 0)
                        close(tree_fds[i]);
        if (have_cg)
                cg.backend->destroy(&cg);
        res->status = CODECELL_STATUS_SANDBOX_ERROR;
        set_error_text(res, "the sandbox could not be started: %s", e.message);
        frame_reader_free(&p.frames);
        return 0;
}
