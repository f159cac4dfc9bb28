/* One sandbox: clone into fresh namespaces, build the file system, drop every privilege, exec
 * the interpreter. The engine keeps the control socket and the output pipes. */
#ifndef CODECELL_SANDBOX_H
#define CODECELL_SANDBOX_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "cgroup.h"
#include "codecell.h"
#include "landlock.h"
#include "mount_plan.h"
#include "sandbox_entry.h" /* struct sandbox_rlimit */
#include "seccomp_filter.h"

/* The ids the guest has inside its user namespace. */
#define SANDBOX_INNER_UID 1000
#define SANDBOX_INNER_GID 1000

struct sandbox_spec {
        const struct mount_plan *plan;
        const int *tree_fds;                  /* per op, prepared by the engine, or NULL */
        const struct landlock_plan *landlock; /* abi 0: not applied */
        const struct seccomp_program *seccomp;
        const char *interpreter;
        const char *const *argv;
        const char *const *envp;
        struct sandbox_rlimit rlimits[8];
        size_t n_rlimits;
        uid_t host_uid; /* the guest's uid as the host sees it */
        gid_t host_gid;
        bool may_set_groups; /* the engine is privileged: the guest's groups can be cleared */
        int netns_fd; /* an empty network namespace to join (see netns.h), or -1: a new one */
        const struct cgroup *cgroup; /* init's, which it moves into at once; or NULL */
        /* A cell's zygote (zygote.h): its interpreter must make its children's namespaces and
         * mounts, so it gets no Landlock and no seccomp filter (each child gets both). */
        bool zygote;
        /* A zygote whose children are born in their cgroups (cgroup v2): it stays in the
         * engine's cgroup namespace, which must see the sandboxes' cgroups for clone3 to place
         * a child there (a cgroup2 tree mounted with nsdelegate, as systemd mounts it, refuses
         * a cgroup outside the caller's namespace). Its children each get their own. */
        bool host_cgroup_namespace;
        /* A network cell's (proxy_listener.h): a sandbox gets a new network namespace
         * (netns_fd -1) with its loopback up and the listener, which the engine takes as
         * proxy_fd; a zygote keeps CAP_NET_ADMIN to do the same for each of its children. */
        bool network;
};

struct sandbox {
        pid_t pid;  /* the sandbox's init (PID 1 inside) */
        int ctl_fd; /* control socket, the guest's fd 3 */
        int out_fd; /* the guest's stdout */
        int err_fd; /* the guest's stderr */
        /* Forked from a cell's zygote (zygote.h), which is its parent: the engine holds its
         * pidfd, and reads how it ended (struct zygote_exit) from exit_fd. -1 otherwise. */
        bool forked;
        int pidfd;
        int exit_fd;
        /* Forked: the interpreter, PID 2 of init's pid namespace but the zygote's child (a
         * pidfd: the zygote may reap it at any time). -1 otherwise. */
        pid_t guest;
        int guest_pidfd;
        /* A network cell's: the listener on 127.0.0.1:CODECELL_PROXY_PORT inside the
         * sandbox's network namespace (proxy_listener.h), held by the engine alone, for its
         * proxy to accept on; closed with the sandbox. -1 otherwise. */
        int proxy_fd;
};

/* A sandbox that is not there (pid -1, every fd -1). */
#define SANDBOX_NONE                                                                               \
        ((struct sandbox){.pid = -1,                                                               \
                          .ctl_fd = -1,                                                            \
                          .out_fd = -1,                                                            \
                          .err_fd = -1,                                                            \
                          .pidfd = -1,                                                             \
                          .exit_fd = -1,                                                           \
                          .guest = -1,                                                             \
                          .guest_pidfd = -1,                                                       \
                          .proxy_fd = -1})

/* Starts a sandbox and returns once the interpreter has been exec'd (or failed to be). On
 * failure nothing is left: no process, no fd. */
int sandbox_spawn(const struct sandbox_spec *spec, struct sandbox *ret, codecell_error *err);
/* The interpreter's host pid (init's child, or a forked sandbox's guest), or -1. */
pid_t sandbox_guest_pid(const struct sandbox *sb);
/* Which of a forked sandbox's init and interpreter has ended, by their pidfds: "init", "its
 * interpreter", or NULL while both live. */
const char *sandbox_forked_gone(const struct sandbox *sb);
/* Kills the interpreter (not init, which then reaps it and exits by itself). */
void sandbox_kill_guest(const struct sandbox *sb);
/* SIGINT to the interpreter (guest: its pid as sandbox_guest_pid gave it), for the code to
 * raise as a person's Ctrl-C; nothing once it has ended. */
void sandbox_interrupt_guest(const struct sandbox *sb, pid_t guest);
/* Kills the whole sandbox (its pid namespace dies with its init) after giving it grace_ms to
 * exit by itself, and reaps it. Returns init's exit code, which encodes how the guest ended
 * (see sandbox_guest_signal), or -1 when init had to be killed. An init killed from outside
 * before that reads as an interpreter killed by SIGKILL (its pid namespace died with init).
 * Closes the fds. */
int sandbox_destroy(struct sandbox *sb, int grace_ms, struct rusage *ret_usage);
/* From init's exit code: the signal that ended the interpreter, or 0. */
int sandbox_guest_signal(int init_status);
/* The interpreter's exit code, or -1 when it was killed by a signal or never ran. */
int sandbox_guest_exit_code(int init_status);

#endif
