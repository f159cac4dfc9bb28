#include "deadline.h"

#include <errno.h>
#include <limits.h>
#include <time.h>

#include "util.h"

int poll_timeout(double ms)
{
        if (ms <= 0)
                return 0;
        if (ms >= (double)(INT_MAX - 1))
                return INT_MAX;
        return (int)ms + 1;
}

int deadline_poll_ms(double deadline)
{
        return poll_timeout(deadline - now_ms());
}

void cond_init_monotonic(pthread_cond_t *cond)
{
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(cond, &attr);
        pthread_condattr_destroy(&attr);
}

/* Far enough for any wait (about 300 years of uptime), near enough that the conversion to
 * time_t cannot overflow. */
#define DEADLINE_MAX_MS 1e13

int cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, double deadline)
{
        if (deadline <= now_ms())
                return ETIMEDOUT;
        /* now_ms() is CLOCK_MONOTONIC's reading in milliseconds: the deadline converts back
         * to that clock's timespec directly. */
        if (deadline > DEADLINE_MAX_MS)
                deadline = DEADLINE_MAX_MS;
        time_t sec = (time_t)(deadline / 1000.0);
        long nsec = (long)((deadline - (double)sec * 1000.0) * 1e6);
        if (nsec >= 1000000000L) {
                sec++;
                nsec -= 1000000000L;
        }
        if (nsec < 0)
                nsec = 0;
        struct timespec ts = {.tv_sec = sec, .tv_nsec = nsec};
        return pthread_cond_timedwait(cond, lock, &ts);
}
