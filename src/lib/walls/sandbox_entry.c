/* The one sequence from "process made" to "guest code may run" (sandbox_entry.h), for exec'd
 * sandboxes, forked ones and the jail. The order, and why each step stands where it does:
 *
 *  1. parent death   PR_SET_PDEATHSIG SIGKILL, then the parent's watch descriptor checked.
 *                    First: the process dies with its parent from here on, so that no later
 *                    step waits forever on a parent that is gone (the caller's own part waits
 *                    for init or a handshake) and no guest runs unsupervised. The check closes
 *                    the race with a parent that died before the prctl, which sends nothing.
 *  2. the caller's   prepare(): into the sandbox (namespaces, the id maps, a session, the wait
 *     own part       for init to hold the guest's /proc files), and only the guest's
 *                    descriptors left. Before every wall: it mounts, enters namespaces and
 *                    writes uid_map, which Landlock and seccomp refuse; Landlock grants the
 *                    /proc files by inode, which must be held first; a dup2 onto a descriptor
 *                    above RLIMIT_NOFILE fails, and the limit must count the guest's only.
 *  3. working folder chdir: after 2, so that it is looked up in the sandbox's own mount
 *                    namespace (the zygote's child enters it in 2).
 *  4. signals        SIGXFSZ ignored, the rest reset (flags): the process's own state, set
 *  5. umask          while nothing refuses it, and inherited by the guest through exec.
 *  6. no_new_privs   Before Landlock (landlock_restrict_self requires it without
 *                    CAP_SYS_ADMIN) and before seccomp, which after step 9 loads only under
 *                    it; and before the exec, which it keeps from granting back what step 9
 *                    takes (a setuid or file-capability program).
 *  7. Landlock       After 6. Before the limits: making the ruleset takes a descriptor, and
 *                    each rule one more (O_PATH); an exec'd guest still holds the engine's
 *                    close-on-exec descriptors until its exec, and with more of them than the
 *                    cell's open_files allows, a limit set first refused every new sandbox
 *                    (test_forked.py, ExecCellsBesideManySandboxes). The jail and the
 *                    zygote's child used to set their limits first, harmless for them (the
 *                    jail sets no RLIMIT_NOFILE; a forked interpreter has closed the zygote's
 *                    descriptors by then): all three now take the order safe for every one.
 *  8. rlimits        After 7 (above). Raising a hard limit takes CAP_SYS_RESOURCE in the
 *                    host's user namespace, which none of these processes holds (each is in a
 *                    user namespace of its own by now), so the drop after it changes nothing
 *                    here; before seccomp, which may refuse setrlimit.
 *  9. capabilities   Every one gone (but keep_caps, a zygote's two) from every set, bounding
 *                    included. After everything that needs one (step 2's mounts and setns),
 *                    before seccomp (a filter may refuse capset and prctl).
 * 10. seccomp        Last: the filter refuses what the steps before it call (unshare, setns,
 *                    mount; a stricter filter prctl, landlock_*, setrlimit, capset). After it
 *                    come only the caller's exec or return into the guest's code.
 *
 * Landlock, the capability sets and the filter are each a property of the calling thread:
 * the caller is single-threaded (a raw clone's child, a fork's). Nothing here allocates or
 * takes a lock of the C library's (the exec'd guest is a clone of a multithreaded engine, the
 * zygote's child a fork of an interpreter). */
#include "sandbox_entry.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capabilities.h"

typedef int (*entry_step)(const struct sandbox_entry *e, struct sandbox_entry_failure *f);

int sandbox_entry_failed(struct sandbox_entry_failure *f, int errno_value, const char *what,
                         const char *path)
{
        *f = (struct sandbox_entry_failure){.errno_value = errno_value, .what = what, .path = path};
        return -(errno_value > 0 ? errno_value : EIO);
}

static int parent_death(const struct sandbox_entry *e, struct sandbox_entry_failure *f)
{
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                return sandbox_entry_failed(f, errno, "set the parent-death signal", NULL);
        if (e->parent_watch < 0)
                return 0;
        struct pollfd p = {.fd = e->parent_watch, .events = e->parent_watch_events};
        if (poll(&p, 1, 0) < 0 || (p.revents & (POLLERR | POLLHUP))) {
                int r = sandbox_entry_failed(f, ESRCH, "the parent is gone", NULL);
                f->parent_gone = true;
                return r;
        }
        return 0;
}

static int callers_part(const struct sandbox_entry *e, struct sandbox_entry_failure *f)
{
        return e->prepare ? e->prepare(e->prepare_ctx, f) : 0;
}

static int working_folder(const struct sandbox_entry *e, struct sandbox_entry_failure *f)
{
        if (e->workdir && chdir(e->workdir) < 0)
                return sandbox_entry_failed(f, errno, "chdir ", e->workdir);
        return 0;
}

/* Through the kernel's call: the C library's sigaction refuses the two real-time signals it
 * keeps for itself (32 and 33), which an engine may still have inherited ignored, and exec
 * keeps them so. Handlers go first, so that none of the engine's runs here once the mask is
 * empty; exec would reset them anyway. SIGXFSZ keeps what step 4 gave it. */
static void reset_signals(void)
{
        /* The kernel's struct: handler, flags, restorer, mask. */
        const struct {
                void (*handler)(int);
                unsigned long flags;
                void (*restorer)(void);
                unsigned long mask;
        } default_action = {SIG_DFL, 0, NULL, 0};
        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGXFSZ && sig != SIGKILL && sig != SIGSTOP)
                        (void)syscall(SYS_rt_sigaction, sig, &default_action, NULL,
                                      sizeof(default_action.mask));
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
}

static int signals(const struct sandbox_entry *e, struct sandbox_entry_failure *f)
{
        (void)f;
        /* An ignored signal stays ignored across exec. */
        if (e->signals & SANDBOX_ENTRY_IGNORE_SIGXFSZ)
                signal(SIGXFSZ, SIG_IGN);
        if (e->signals & SANDBOX_ENTRY_RESET_SIGNALS)
                reset_signals();
        return 0;
}

static int file_mode_mask(const struct sandbox_entry *e, struct sandbox_entry_failure *f)
{
        (void)f;
        /* Whatever the parent's: the guest creates nothing group- or world-writable unless it
         * sets its own umask. */
        if (e->guest_umask >= 0)
                umask((mode_t)e->guest_umask);
        return 0;
}

static int no_new_privs(const struct sandbox_entry *e, struct sandbox_entry_failure *f)
{
        (void)e;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return sandbox_entry_failed(f, errno, "no_new_privs", NULL);
        return 0;
}

static int landlock(const struct sandbox_entry *e, struct sandbox_entry_failure *f)
{
        if (!e->landlock || e->landlock->abi <= 0)
                return 0;
        const char *where = NULL;
        int r = landlock_apply(e->landlock, &where);
        return r < 0 ? sandbox_entry_failed(f, -r, "landlock ", where) : 0;
}

static int limits(const struct sandbox_entry *e, struct sandbox_entry_failure *f)
{
        for (size_t i = 0; i < e->n_rlimits; i++)
                if (setrlimit(e->rlimits[i].resource, &e->rlimits[i].value) < 0)
                        return sandbox_entry_failed(f, errno, "setrlimit", NULL);
        return 0;
}

/* Security invariant: from here the process holds no capability in any namespace but
 * keep_caps (a zygote's, in its own user namespace), and no_new_privs keeps exec from
 * granting one back. */
static int capabilities(const struct sandbox_entry *e, struct sandbox_entry_failure *f)
{
        if (capabilities_keep_only(e->keep_caps) < 0)
                return sandbox_entry_failed(f, errno, "drop capabilities", NULL);
        return 0;
}

/* The raw call of a prepared program: the zygote's fork server has no libseccomp. */
static int seccomp_filter(const struct sandbox_entry *e, struct sandbox_entry_failure *f)
{
        if (e->seccomp && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, e->seccomp) < 0)
                return sandbox_entry_failed(f, errno, "seccomp", NULL);
        return 0;
}

/* In the order above: each step's place is argued there, once. */
static const entry_step steps[] = {
        parent_death, callers_part, working_folder, signals,      file_mode_mask,
        no_new_privs, landlock,     limits,         capabilities, seccomp_filter,
};

int sandbox_entry_run(const struct sandbox_entry *entry, struct sandbox_entry_failure *ret_failure)
{
        *ret_failure = (struct sandbox_entry_failure){0};
        for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
                int r = steps[i](entry, ret_failure);
                if (r < 0) {
                        if (!ret_failure->what)
                                ret_failure->what = "set-up"; /* a hook that said nothing */
                        return r;
                }
        }
        return 0;
}
