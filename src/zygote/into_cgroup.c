/* Children born in their cgroup v2: the reasoning is in into_cgroup.h. */
#include "into_cgroup.h"

#include <errno.h>
#include <linux/prctl.h>
#include <linux/sched.h> /* struct clone_args, CLONE_INTO_CGROUP */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>

#ifndef SYS_USER_DISPATCH
#define SYS_USER_DISPATCH 2 /* si_code of a system call syscall user dispatch trapped */
#endif

#if defined(__x86_64__) && defined(PR_SET_SYSCALL_USER_DISPATCH)
#define HAVE_DISPATCH 1
#endif

/* Two system-call stubs, the only code the armed thread may make system calls from without a
 * trap (the range given to the kernel): the handler's own calls, and a clone on a stack of its
 * own. cc_raw_syscall6(nr, a0..a5) returns the kernel's answer, -errno included. */
long cc_raw_syscall6(long nr, long a0, long a1, long a2, long a3, long a4, long a5);
pid_t cc_clone3_on_stack(struct clone_args *args, size_t size, int (*fn)(void *), void *arg);
extern const char cc_dispatch_begin[], cc_dispatch_end[];

#if defined(__x86_64__)
__asm__(".pushsection .text.cc_dispatch,\"ax\",@progbits\n"
        ".globl cc_dispatch_begin\n.hidden cc_dispatch_begin\ncc_dispatch_begin:\n"
        ".globl cc_raw_syscall6\n.hidden cc_raw_syscall6\n.type cc_raw_syscall6,@function\n"
        "cc_raw_syscall6:\n"
        "  mov %rdi, %rax\n  mov %rsi, %rdi\n  mov %rdx, %rsi\n  mov %rcx, %rdx\n"
        "  mov %r8, %r10\n  mov %r9, %r8\n  mov 8(%rsp), %r9\n  syscall\n  ret\n"
        ".size cc_raw_syscall6, .-cc_raw_syscall6\n"
        /* (args, size, fn, arg): fn and arg in registers the system call keeps, which the child
         * has too; the child starts on its new stack, with nothing to return to. */
        ".globl cc_clone3_on_stack\n.hidden cc_clone3_on_stack\n"
        ".type cc_clone3_on_stack,@function\n"
        "cc_clone3_on_stack:\n"
        "  mov %rdx, %r9\n  mov %rcx, %r8\n  mov $435, %eax\n  syscall\n"
        "  test %rax, %rax\n  jz 1f\n  ret\n"
        "1:\n  xor %ebp, %ebp\n  mov %r8, %rdi\n  call *%r9\n"
        "  mov %eax, %edi\n  mov $60, %eax\n  syscall\n  hlt\n"
        ".size cc_clone3_on_stack, .-cc_clone3_on_stack\n"
        ".globl cc_dispatch_end\n.hidden cc_dispatch_end\ncc_dispatch_end:\n"
        ".popsection\n");
#endif

pid_t clone3_on_stack(struct clone_args *args, int (*fn)(void *), void *arg)
{
#if defined(__x86_64__)
        return cc_clone3_on_stack(args, sizeof(*args), fn, arg);
#else
        (void)args;
        (void)fn;
        (void)arg;
        return -ENOSYS;
#endif
}

#ifdef HAVE_DISPATCH

/* Read by the kernel at every system call of the armed thread from outside the stubs. */
static volatile char selector = SYSCALL_DISPATCH_FILTER_ALLOW;
static bool ready;
static int target = -1;
static bool born_parent, born_child;
/* SIGSYS was blocked when armed (Ruby's fork blocks every signal first): unblocked for the
 * trap, blocked again on both sides of the fork. */
static bool sigsys_unblocked;
static bool armed; /* between into_cgroup_arm and into_cgroup_disarm */

static sigset_t only_sigsys(void)
{
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGSYS);
        return set;
}
static struct sigaction runtime_sigsys;

/* The clone of glibc's fork (flags, no stack, the thread-id pointers), and nothing else: a
 * thread's, a vfork's or one with a stack goes on as it was. */
static bool fork_shaped(unsigned long flags, long stack)
{
        const unsigned long fork_flags =
                CSIGNAL | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | CLONE_PARENT_SETTID;
        return stack == 0 && (flags & ~fork_flags) == 0;
}

/* x86-64's clone(flags, stack, parent_tid, child_tid, tls), as clone3 with the cgroup; made
 * as it was asked when clone3 refuses (an old kernel, a cgroup it may not enter). */
static long clone_into(const long *a)
{
        struct clone_args args = {.flags = ((unsigned long)a[0] & ~(unsigned long)CSIGNAL) |
                                           CLONE_INTO_CGROUP,
                                  .exit_signal = (unsigned long)a[0] & CSIGNAL,
                                  .parent_tid = (uint64_t)a[2],
                                  .child_tid = (uint64_t)a[3],
                                  .cgroup = (uint64_t)target};
        long r = cc_raw_syscall6(SYS_clone3, (long)&args, sizeof(args), 0, 0, 0, 0);
        if (r == 0)
                born_child = true;
        if (r >= 0) {
                born_parent = r > 0;
                return r;
        }
        return cc_raw_syscall6(SYS_clone, a[0], a[1], a[2], a[3], a[4], 0);
}

/* rt_sigprocmask, trapped: made on the mask the handler's return puts back, or the return
 * would undo it. SIGKILL and SIGSTOP stay unblockable, as the kernel keeps them. */
static long sigprocmask_on(ucontext_t *uc, const long *a)
{
        if ((size_t)a[3] != sizeof(uint64_t))
                return -EINVAL;
        uint64_t *mask = (uint64_t *)(void *)&uc->uc_sigmask;
        if (a[2])
                memcpy((void *)a[2], mask, sizeof(*mask));
        if (!a[1])
                return 0;
        uint64_t set;
        memcpy(&set, (const void *)a[1], sizeof(set));
        set &= ~((1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1)));
        switch (a[0]) {
        case SIG_BLOCK:
                *mask |= set;
                break;
        case SIG_UNBLOCK:
                *mask &= ~set;
                break;
        case SIG_SETMASK:
                *mask = set;
                break;
        default:
                return -EINVAL;
        }
        return 0;
}

static void on_sigsys(int sig, siginfo_t *info, void *context)
{
        selector = SYSCALL_DISPATCH_FILTER_ALLOW; /* one shot */
        if (info->si_code != SYS_USER_DISPATCH) {
                /* Not ours (none is expected in the zygote): the runtime's disposition, as
                 * soon as this handler returns. */
                sigaction(SIGSYS, &runtime_sigsys, NULL);
                raise(sig);
                return;
        }
        ucontext_t *uc = context;
        greg_t *regs = uc->uc_mcontext.gregs;
        const long a[6] = {regs[REG_RDI], regs[REG_RSI], regs[REG_RDX],
                           regs[REG_R10], regs[REG_R8],  regs[REG_R9]};
        long r;
        if (info->si_syscall == SYS_clone && fork_shaped((unsigned long)a[0], a[1]))
                r = clone_into(a);
        else if (info->si_syscall == SYS_rt_sigprocmask)
                r = sigprocmask_on(uc, a);
        else
                r = cc_raw_syscall6(info->si_syscall, a[0], a[1], a[2], a[3], a[4], a[5]);
        regs[REG_RAX] = r;
}

bool into_cgroup_setup(void)
{
        if (ready)
                return true;
        /* Whether the kernel has it: switched on and straight off again. */
        selector = SYSCALL_DISPATCH_FILTER_ALLOW;
        if (prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON,
                  (unsigned long)cc_dispatch_begin,
                  (unsigned long)(cc_dispatch_end - cc_dispatch_begin), &selector) < 0)
                return false;
        (void)prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0);
        struct sigaction on = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO | SA_RESTART};
        sigemptyset(&on.sa_mask);
        if (sigaction(SIGSYS, &on, &runtime_sigsys) < 0)
                return false;
        ready = true;
        return true;
}

static void reblock_sigsys(void)
{
        if (!sigsys_unblocked)
                return;
        sigset_t sigsys = only_sigsys();
        (void)pthread_sigmask(SIG_BLOCK, &sigsys, NULL);
        sigsys_unblocked = false;
}

bool into_cgroup_arm(int cgroup_dir)
{
        born_parent = born_child = false;
        if (!ready || cgroup_dir < 0)
                return false;
        /* A trap while SIGSYS is blocked would kill the zygote (the kernel forces the default
         * action): unblocked until the fork has returned, or not armed. */
        sigset_t now, sigsys = only_sigsys();
        if (pthread_sigmask(SIG_SETMASK, NULL, &now) != 0)
                return false;
        if (sigismember(&now, SIGSYS)) {
                if (pthread_sigmask(SIG_UNBLOCK, &sigsys, NULL) != 0)
                        return false;
                sigsys_unblocked = true;
        }
        target = cgroup_dir;
        selector = SYSCALL_DISPATCH_FILTER_ALLOW;
        if (prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON,
                  (unsigned long)cc_dispatch_begin,
                  (unsigned long)(cc_dispatch_end - cc_dispatch_begin), &selector) < 0) {
                reblock_sigsys();
                return false;
        }
        selector = SYSCALL_DISPATCH_FILTER_BLOCK;
        armed = true;
        return true;
}

bool into_cgroup_disarm(void)
{
        /* Not armed (cgroup v1, or init not born): nothing to undo, and no system call spent
         * on a fork of the hot path. */
        if (!armed)
                return false;
        armed = false;
        selector = SYSCALL_DISPATCH_FILTER_ALLOW;
        (void)prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0);
        target = -1;
        reblock_sigsys();
        return born_parent;
}

bool into_cgroup_born(void)
{
        reblock_sigsys();
        return born_child;
}

void into_cgroup_forget(void)
{
        if (ready)
                sigaction(SIGSYS, &runtime_sigsys, NULL);
        ready = false;
        born_child = false;
}

#else /* no syscall user dispatch here: every interpreter is moved */

bool into_cgroup_setup(void)
{
        return false;
}

bool into_cgroup_arm(int cgroup_dir)
{
        (void)cgroup_dir;
        return false;
}

bool into_cgroup_disarm(void)
{
        return false;
}

bool into_cgroup_born(void)
{
        return false;
}

void into_cgroup_forget(void) {}

#endif
