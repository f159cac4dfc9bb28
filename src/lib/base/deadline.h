/* Deadlines, all on one clock: now_ms()'s (CLOCK_MONOTONIC, in milliseconds), which a change of
 * the wall clock cannot move. A deadline is a double, now_ms() + how long; poll waits for what
 * is left of one, and a condition variable made by cond_init_monotonic waits until one. */
#ifndef CODECELL_DEADLINE_H
#define CODECELL_DEADLINE_H

#include <pthread.h>

/* A poll timeout for ms milliseconds (fractional): 0 when ms <= 0, else rounded up and one
 * more, so that poll does not wake just before the time and spin until it; INT_MAX at most. */
int poll_timeout(double ms);
/* What is left of deadline as a poll timeout: 0 once it has passed. */
int deadline_poll_ms(double deadline);

/* A condition variable whose timed waits count on now_ms()'s clock (the default, the wall
 * clock, would make a wait as long as the clock was set back). */
void cond_init_monotonic(pthread_cond_t *cond);
/* Waits on cond (made by cond_init_monotonic, lock held) until signalled or deadline passes:
 * pthread_cond_timedwait's answer (0, or ETIMEDOUT when the deadline passed). At once, and
 * without letting go of the lock, when it has passed already. */
int cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, double deadline);

#endif
