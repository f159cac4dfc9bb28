/* A sandbox standing by: namespaces and mounts built, interpreter and prelude loaded, the
 * prelude's "ready" received, waiting for the code. The pool keeps some; a cold run makes one
 * on the spot. Each serves exactly one execution. */
#include "standby.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "error.h"
#include "pipe_write.h"
#include "util.h"
#include "zygote.h"
#include "zygote_protocol.h"

#define STARTUP_TIMEOUT_MS SANDBOX_STARTUP_TIMEOUT_MS
/* Output written while booting is not any execution's; a little is kept for diagnostics. */
#define BOOT_OUTPUT_BYTES 4096

/* Detached, idmapped copies of the user's mounts, made by the privileged engine because only
 * it may idmap a host file system. The sandbox attaches them where they belong. */
static int prepare_idmapped_trees(const struct cell_plan *plan, int *tree_fds, codecell_error *err)
{
        for (size_t i = 0; i < plan->mounts.n_ops; i++) {
                const struct mount_op *op = &plan->mounts.ops[i];
                tree_fds[i] = -1;
                if (op->kind != OP_BIND || op->user_mount < 0 ||
                    plan->idmap_fds[op->user_mount] < 0)
                        continue;
                int fd = (int)syscall(SYS_open_tree, AT_FDCWD, op->source,
                                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
                if (fd < 0)
                        return err_sys(err, errno, "mount %s: open_tree", op->dest);
                tree_fds[i] = fd;
                struct mount_attr attr = {
                        .attr_set = MOUNT_ATTR_IDMAP | mount_op_attributes(op),
                        .userns_fd = (uint64_t)plan->idmap_fds[op->user_mount],
                };
                if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
                            sizeof(attr)) < 0)
                        return err_sys(err, errno, "mount %s: idmap", op->dest);
        }
        return 0;
}

static void fill_spec(const struct cell_plan *plan, const struct standby *s,
                      struct sandbox_spec *spec, const int *tree_fds, bool session)
{
        *spec = (struct sandbox_spec){
                .plan = &plan->mounts,
                .tree_fds = tree_fds,
                .landlock = &plan->landlock,
                .seccomp = &plan->seccomp,
                .interpreter = plan->interpreter,
                .argv = (const char *const *)plan->argv,
                .envp = plan->envp,
                .host_uid = plan->host_uid,
                .host_gid = plan->host_gid,
                .may_set_groups = plan->privileged,
                .netns_fd = s->netns_fd,
                .cgroup = s->have_cg ? &s->cg : NULL,
                .network = config_network(plan->config) != NULL,
        };
        spec->n_rlimits = cell_plan_rlimits(plan, session, spec->rlimits);
}

void standby_free(struct standby *s)
{
        if (!s)
                return;
        (void)standby_teardown(s, END_NOW, NULL, NULL);
        output_free(&s->boot_out);
        output_free(&s->boot_err);
        free(s);
}

double standby_cpu_ms(const struct standby *s)
{
        return s->pump.cpu_limit_ms > 0 ? cpu_meter_read(&s->pump.cpu) : 0;
}

void standby_stats(struct standby *s, struct cgroup_stats *ret)
{
        if (s->have_cg)
                s->cg.backend->stats(&s->cg, ret);
}

int standby_teardown(struct standby *s, enum standby_end how, struct rusage *ret_usage,
                     struct cgroup_stats *ret_stats)
{
        if (how == END_GUEST_FIRST)
                sandbox_kill_guest(&s->sb);
        int status = sandbox_destroy(&s->sb, how == END_NOW ? 0 : 200, ret_usage);
        /* Nothing of the sandbox runs any more: a chmod its threads made between a session's
         * evals is put back for good. */
        if (s->mount_roots)
                mount_roots_restore(s->mount_roots);
        /* Every process of the sandbox is gone: its namespace can serve the next one. */
        if (s->netns_fd >= 0) {
                netns_stock_give_back(s->netns_stock, s->netns_fd);
                s->netns_fd = -1;
        }
        if (s->have_cg) {
                if (ret_stats)
                        s->cg.backend->stats(&s->cg, ret_stats);
                s->cg.backend->destroy(&s->cg);
                s->have_cg = false;
        }
        pump_free(&s->pump);
        return status;
}

static void close_trees(int *tree_fds)
{
        for (size_t i = 0; i < MOUNT_PLAN_MAX_OPS; i++)
                close_fd(&tree_fds[i]);
}

/* A fresh sandbox exec'ing the interpreter. It is born in its cgroup (sandbox_spawn moves init
 * before it forks the interpreter): moving it again would only wait for another RCU grace
 * period on cgroup v1. */
static int spawn_sandbox(struct cell_plan *plan, struct standby *s, int *tree_fds, bool session,
                         codecell_error *err)
{
        int r;
        if (plan->privileged && (r = prepare_idmapped_trees(plan, tree_fds, err)) < 0)
                return r;
        /* A network cell's sandbox makes a namespace of its own (proxy_listener.h): one of
         * the stock belongs to the host's user namespace, where its init could not bring the
         * loopback up, and one a guest used is never given to another. */
        if (plan->privileged && !config_network(plan->config)) {
                s->netns_stock = &plan->netns;
                if ((s->netns_fd = r = netns_stock_take(&plan->netns, err)) < 0)
                        return r;
        }
        struct sandbox_spec spec;
        fill_spec(plan, s, &spec, tree_fds, session);
        r = sandbox_spawn(&spec, &s->sb, err);
        close_trees(tree_fds);
        return r;
}

/* What the zygote needs to start: a sandbox's spec, with the idmapped trees of its mounts. */
struct zygote_start {
        struct cell_plan *plan;
        struct standby *s;
        int tree_fds[MOUNT_PLAN_MAX_OPS];
};

static int make_zygote_spec(void *ctx, struct sandbox_spec *spec, codecell_error *err)
{
        struct zygote_start *z = ctx;
        int r = z->plan->privileged ? prepare_idmapped_trees(z->plan, z->tree_fds, err) : 0;
        if (r == 0)
                fill_spec(z->plan, z->s, spec, z->tree_fds, true);
        return r;
}

static void release_zygote_spec(void *ctx)
{
        close_trees(((struct zygote_start *)ctx)->tree_fds);
}

/* A copy of the cell's zygote, in its cgroup with its init before it runs anything of the
 * guest's: on cgroup v2 both are born there (the zygote gets the cgroup's directory); on v1,
 * or where the zygote could not, they are moved, and the interpreter waits for the word
 * inside fork(), before the runtime's after-fork work. What it touches from then on counts in
 * its own limit and peak. (The pages it shares with the zygote stay charged where the zygote's
 * are.) */
static int fork_sandbox(struct cell_plan *plan, struct standby *s, bool session,
                        codecell_error *err)
{
        struct zygote_start ctx = {.plan = plan, .s = s};
        for (size_t i = 0; i < MOUNT_PLAN_MAX_OPS; i++)
                ctx.tree_fds[i] = -1;
        struct zygote_starter starter = {
                .make_spec = make_zygote_spec, .release = release_zygote_spec, .ctx = &ctx};
        _cleanup_close_ int cgroup_dir = -1;
        if (s->have_cg && s->cg.backend->open_dir &&
            (cgroup_dir = s->cg.backend->open_dir(&s->cg, err)) < 0)
                return cgroup_dir;
        uint32_t born = 0;
        int r = zygote_fork(plan->zygote, &starter, session, cgroup_dir, &s->sb, &born, err);
        /* A network cell's sandbox comes with its listener, and only a network cell's. */
        if (r == 0 && (s->sb.proxy_fd >= 0) != (config_network(plan->config) != NULL))
                r = err_set(err, CODECELL_ERR_SYSTEM, EPROTO,
                            "sandbox: the forked sandbox came %s the proxy's listener",
                            s->sb.proxy_fd >= 0 ? "with" : "without");
        /* Born there by the zygote's word, which is checked: a zygote that lied (or a cgroup
         * that lost a process) gets the move. */
        if (r == 0 && born && !(s->cg.backend->holds && s->cg.backend->holds(&s->cg, s->sb.pid)))
                born &= ~ZYGOTE_BORN_INIT;
        if (r == 0 && born && !(s->cg.backend->holds && s->cg.backend->holds(&s->cg, s->sb.guest)))
                born &= ~ZYGOTE_BORN_GUEST;
        bool move_init = s->have_cg && !(born & ZYGOTE_BORN_INIT);
        bool move_guest = s->have_cg && !(born & ZYGOTE_BORN_GUEST);
        /* The second move follows the first at once: on cgroup v1 only the first waits. */
        if (r == 0 && move_init)
                r = s->cg.backend->attach(&s->cg, s->sb.pid, err);
        if (r == 0 && move_guest)
                r = s->cg.backend->attach(&s->cg, s->sb.guest, err);
        /* Moved by pid: both must still be the processes their pidfds name (the zygote reaps
         * them, and a pid can be reused, the moment they end). */
        const char *gone = r == 0 && (move_init || move_guest) ? sandbox_forked_gone(&s->sb) : NULL;
        if (gone) {
                /* How it ended, from the zygote, for whoever has to find out why. */
                int status = sandbox_destroy(&s->sb, 0, NULL);
                r = err_set(err, CODECELL_ERR_SYSTEM, ESRCH,
                            "sandbox: the forked sandbox's %s ended before its set-up was done "
                            "(its end as the zygote reported it: %d)",
                            gone, status);
        }
        /* An interpreter not born in its cgroup puts up its walls once told it is there. */
        if (r == 0 && !(born & ZYGOTE_BORN_GUEST) && pipe_write(s->sb.ctl_fd, "g", 1) != 1)
                r = err_sys(err, errno, "sandbox: release the forked child");
        return r;
}

int standby_start(struct cell_plan *plan, bool session, struct standby **ret, codecell_error *err)
{
        const uint64_t *lim = plan->config->limits;
        int tree_fds[MOUNT_PLAN_MAX_OPS];
        for (size_t i = 0; i < MOUNT_PLAN_MAX_OPS; i++)
                tree_fds[i] = -1;
        struct standby *s = calloc(1, sizeof(*s));
        if (!s)
                return err_sys(err, ENOMEM, "sandbox");
        s->sb = SANDBOX_NONE;
        s->netns_fd = -1;
        pump_init(&s->pump, &s->sb, lim[CODECELL_LIMIT_FRAME_BYTES]);
        output_init(&s->boot_out, BOOT_OUTPUT_BYTES);
        output_init(&s->boot_err, BOOT_OUTPUT_BYTES);
        pump_output_to(&s->pump, &s->boot_out, &s->boot_err);
        int r = 0;
        if (plan->cgroup_place.backend) {
                char name[64];
                cgroup_unique_name(name, sizeof(name));
                struct cgroup_limits cl = {.memory_bytes = lim[CODECELL_LIMIT_MEMORY_BYTES],
                                           .pids = lim[CODECELL_LIMIT_PIDS],
                                           .cpu_accounting = plan->config->subprocesses};
                r = plan->cgroup_place.backend->create(&plan->cgroup_place, name, &cl, &s->cg, err);
                if (r < 0)
                        goto fail;
                s->have_cg = true;
        }
        if (plan->zygote) {
                if ((r = fork_sandbox(plan, s, session, err)) < 0)
                        goto fail;
        } else if ((r = spawn_sandbox(plan, s, tree_fds, session, err)) < 0) {
                goto fail;
        }
        s->whole_tree = plan->config->subprocesses;
        s->mount_roots = &plan->mount_roots;
        if (pump_until(&s->pump, now_ms() + STARTUP_TIMEOUT_MS, pump_is_ready) || !s->pump.ready) {
                const char *why = s->pump.protocol_error[0] ? s->pump.protocol_error : NULL;
                /* What the interpreter wrote: its first 300 bytes, cut on a character and
                 * made valid UTF-8, since the message may reach a JSON result. */
                const char *said = s->boot_err.data ? s->boot_err.data : "";
                _cleanup_free_ char *clean =
                        utf8_sanitize(said, utf8_cut(said, s->boot_err.len, 300), NULL);
                r = err_set(err, CODECELL_ERR_SYSTEM, EPROTO,
                            "the interpreter did not become ready%s%s%s%s", why ? ": " : "",
                            why ? why : "", s->boot_err.len ? "; it said: " : "",
                            clean ? clean : "");
                goto fail;
        }
        /* The interpreter said it is ready: it exists (a forked one is its zygote's child, and
         * was told to go on only once in its cgroup). */
        s->guest = sandbox_guest_pid(&s->sb);
        s->pump.guest = s->guest;
        *ret = s;
        return 0;
fail:
        /* Set-up may have failed part way through the trees (the pool retries every second:
         * each leaked fd would pin a mount). */
        close_trees(tree_fds);
        standby_free(s);
        return r;
}

void standby_kill(struct standby *s)
{
        /* init's death takes every other process of its pid namespace with it. */
        if (s->sb.forked)
                sandbox_kill_guest(&s->sb);
        else if (s->sb.pid > 0)
                kill(s->sb.pid, SIGKILL);
}

bool standby_alive(struct standby *s)
{
        /* Waiting for code, a healthy prelude writes nothing: anything readable on the control
         * socket (data or hang-up) means it is gone or misbehaving. */
        struct pollfd p = {.fd = s->sb.ctl_fd, .events = POLLIN};
        return poll(&p, 1, 0) == 0 && kill(s->sb.pid, 0) == 0;
}

void standby_arm(struct standby *s, uint64_t cpu_budget_ms)
{
        /* The budget counts from now, not from the interpreter's birth: the engine watches the
         * interpreter's CPU clock (RLIMIT_CPU, set at spawn, is only a backstop). */
        if (!cpu_meter_init(&s->pump.cpu, s->sb.pid, s->guest, s->whole_tree,
                            s->have_cg ? &s->cg : NULL))
                return; /* gone already: the run will find out */
        s->boot_cpu_ms = cpu_meter_read(&s->pump.cpu);
        s->pump.cpu_limit_ms = s->boot_cpu_ms + (double)cpu_budget_ms;
}
