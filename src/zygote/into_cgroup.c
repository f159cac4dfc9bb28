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
void cc_sigreturn(void);
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
        /* The SIGSYS handler's return (its sa_restorer): rt_sigreturn made from inside the
         * range, so that the handler may leave the trap armed. */
        ".globl cc_sigreturn\n.hidden cc_sigreturn\n.type cc_sigreturn,@function\n"
        "cc_sigreturn:\n  mov $15, %eax\n  syscall\n  hlt\n"
        ".size cc_sigreturn, .-cc_sigreturn\n"
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
/* The runtime wants SIGSYS blocked (it was when armed: Ruby's fork blocks every signal first;
 * or a trapped sigprocmask blocked it: glibc 2.41's _Fork does). A trap while SIGSYS is
 * blocked would kill the zygote (the kernel forces the default action), so it stays unblocked
 * while armed, and the runtime's wish is applied the moment the trap is spent. */
static bool sigsys_wanted_blocked;
static bool armed; /* between into_cgroup_arm and into_cgroup_disarm */

#define SIGSYS_BIT (1ULL << (SIGSYS - 1))

static sigset_t only_sigsys(void)
{
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGSYS);
        return set;
}
static struct sigaction runtime_sigsys;

/* The fork's clone (flags, no stack, the thread-id pointers), and nothing else: a thread's, a
 * vfork's or one with a stack is made as it was asked. */
static bool fork_shaped(unsigned long flags, long stack)
{
        const unsigned long fork_flags =
                CSIGNAL | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | CLONE_PARENT_SETTID;
        return stack == 0 && (flags & ~fork_flags) == 0;
}

/* x86-64's clone(flags, stack, parent_tid, child_tid, tls), as clone3 with the cgroup. A
 * refusal is the fork's answer, never a plain clone instead: the refused clone3 took a pid
 * (2 in init's namespace, the one init waits for), and the fork after it would get the next. */
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
        born_parent = r > 0;
        return r;
}

/* rt_sigprocmask, trapped while the trap stays armed: made on the mask the handler's return
 * puts back (or the return would undo it), as the runtime sees it: SIGSYS as it asked, though
 * kept unblocked until the trap is spent. The kernel's order: the new set read, then the old
 * one written (they may be the same memory); SIGKILL and SIGSTOP never blocked. */
static long sigprocmask_on(ucontext_t *uc, const long *a)
{
        if ((size_t)a[3] != sizeof(uint64_t))
                return -EINVAL;
        uint64_t *mask = (uint64_t *)(void *)&uc->uc_sigmask;
        const uint64_t seen = *mask | (sigsys_wanted_blocked ? SIGSYS_BIT : 0);
        uint64_t next = seen;
        if (a[1]) {
                uint64_t set;
                memcpy(&set, (const void *)a[1], sizeof(set));
                switch (a[0]) {
                case SIG_BLOCK:
                        next |= set;
                        break;
                case SIG_UNBLOCK:
                        next &= ~set;
                        break;
                case SIG_SETMASK:
                        next = set;
                        break;
                default:
                        return -EINVAL;
                }
        }
        next &= ~((1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1)));
        if (a[2])
                memcpy((void *)a[2], &seen, sizeof(seen));
        sigsys_wanted_blocked = (next & SIGSYS_BIT) != 0;
        *mask = next & ~SIGSYS_BIT;
        return 0;
}

/* The trap is spent: the mask the handler's return puts back is the runtime's own. */
static void spend(ucontext_t *uc)
{
        if (sigsys_wanted_blocked)
                *(uint64_t *)(void *)&uc->uc_sigmask |= SIGSYS_BIT;
        sigsys_wanted_blocked = false;
}

static void on_sigsys(int sig, siginfo_t *info, void *context)
{
        selector = SYSCALL_DISPATCH_FILTER_ALLOW; /* the handler's own calls are not trapped */
        if (info->si_code != SYS_USER_DISPATCH) {
                /* Not ours (none is expected in the zygote): the runtime's disposition, as
                 * soon as this handler returns, and never armed again on a handler that is
                 * no longer there. */
                ready = false;
                sigaction(SIGSYS, &runtime_sigsys, NULL);
                raise(sig);
                return;
        }
        ucontext_t *uc = context;
        greg_t *regs = uc->uc_mcontext.gregs;
        const long a[6] = {regs[REG_RDI], regs[REG_RSI], regs[REG_RDX],
                           regs[REG_R10], regs[REG_R8],  regs[REG_R9]};
        if (info->si_syscall == SYS_clone && fork_shaped((unsigned long)a[0], a[1])) {
                /* The fork: one shot, in the parent and in the child. */
                regs[REG_RAX] = clone_into(a);
                spend(uc);
        } else if (info->si_syscall == SYS_rt_sigprocmask) {
                /* A fork's own (glibc 2.41's _Fork blocks every signal before its clone):
                 * answered here, and the trap stays armed for the clone that follows. The
                 * handler returns through cc_sigreturn, inside the range. */
                regs[REG_RAX] = sigprocmask_on(uc, a);
                selector = SYSCALL_DISPATCH_FILTER_BLOCK;
        } else {
                /* Anything else is made by the kernel, as the program made it, with nothing of
                 * this handler in between (a thread's clone, a call that depends on the
                 * stack or the signal mask): the syscall instruction (2 bytes) again, the trap
                 * spent, and this fork moved by the engine. */
                regs[REG_RIP] -= 2;
                regs[REG_RAX] = info->si_syscall;
                spend(uc);
        }
}

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

/* The kernel's struct sigaction on x86-64: glibc's sigaction would put its own restorer,
 * outside the range, in sa_restorer. */
struct kernel_sigaction {
        void (*handler)(int, siginfo_t *, void *);
        unsigned long flags;
        void (*restorer)(void);
        uint64_t mask;
};

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
        struct kernel_sigaction on = {.handler = on_sigsys,
                                      .flags = SA_SIGINFO | SA_RESTART | SA_RESTORER,
                                      .restorer = cc_sigreturn};
        if (sigaction(SIGSYS, NULL, &runtime_sigsys) < 0 ||
            syscall(SYS_rt_sigaction, SIGSYS, &on, NULL, sizeof(on.mask)) < 0)
                return false;
        ready = true;
        return true;
}

bool into_cgroup_arm(int cgroup_dir)
{
        born_parent = born_child = false;
        sigsys_wanted_blocked = false;
        if (!ready || cgroup_dir < 0)
                return false;
        sigset_t now, sigsys = only_sigsys();
        if (pthread_sigmask(SIG_SETMASK, NULL, &now) != 0)
                return false;
        if (sigismember(&now, SIGSYS) && pthread_sigmask(SIG_UNBLOCK, &sigsys, NULL) != 0)
                return false;
        target = cgroup_dir;
        selector = SYSCALL_DISPATCH_FILTER_ALLOW;
        if (prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON,
                  (unsigned long)cc_dispatch_begin,
                  (unsigned long)(cc_dispatch_end - cc_dispatch_begin), &selector) < 0) {
                if (sigismember(&now, SIGSYS))
                        (void)pthread_sigmask(SIG_BLOCK, &sigsys, NULL);
                return false;
        }
        sigsys_wanted_blocked = sigismember(&now, SIGSYS);
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
        /* Never trapped (nothing reached the kernel): SIGSYS as the runtime left it. */
        if (sigsys_wanted_blocked) {
                sigset_t sigsys = only_sigsys();
                (void)pthread_sigmask(SIG_BLOCK, &sigsys, NULL);
                sigsys_wanted_blocked = false;
        }
        return born_parent;
}

bool into_cgroup_born(void)
{
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
