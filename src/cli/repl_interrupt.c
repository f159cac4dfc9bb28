/* SIGINT is taken by a thread of its own with sigwait(), as serve takes it, rather than by a
 * handler: the token it interrupts is changed and freed by the main thread under a lock, and
 * no engine call the main thread is in sees EINTR.
 *
 * The first two Ctrl-Cs of an entry interrupt its code (Interrupt, KeyboardInterrupt), which
 * may rescue them; the third stops it for certain, which ends the session as a timeout does
 * (its result says the state was lost). */
#include "repl_interrupt.h"

#include <pthread.h>
#include <signal.h>

#define INTERRUPTS_BEFORE_STOP 2

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static codecell_cancel *target; /* guarded by lock */
static unsigned presses;        /* of the target; guarded by lock */

static void *take_sigints(void *arg)
{
        const sigset_t *set = arg;
        for (;;) {
                int sig = 0;
                if (sigwait(set, &sig) != 0)
                        continue;
                pthread_mutex_lock(&lock);
                if (target && ++presses > INTERRUPTS_BEFORE_STOP)
                        codecell_cancel_trigger(target);
                else if (target)
                        codecell_cancel_interrupt(target);
                pthread_mutex_unlock(&lock);
        }
        return NULL;
}

int repl_interrupts_start(void)
{
        static sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
                return -1;
        pthread_t thread;
        if (pthread_create(&thread, NULL, take_sigints, &set) != 0) {
                (void)pthread_sigmask(SIG_UNBLOCK, &set, NULL);
                return -1;
        }
        (void)pthread_detach(thread);
        return 0;
}

unsigned repl_interrupts_target(codecell_cancel *cancel)
{
        pthread_mutex_lock(&lock);
        unsigned taken = presses;
        target = cancel;
        presses = 0;
        pthread_mutex_unlock(&lock);
        return taken;
}
