/* Deadlines on now_ms()'s clock (deadline.h): poll timeouts rounded up and bounded, and timed
 * waits of a monotonic condition variable that end at the deadline, at once when it has passed,
 * and early when signalled. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <unistd.h>

#include "check.h"
#include "deadline.h"
#include "util.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static int flag;

static void *signal_soon(void *arg)
{
        (void)arg;
        usleep(20000);
        pthread_mutex_lock(&lock);
        flag = 1;
        pthread_cond_signal(&cond);
        pthread_mutex_unlock(&lock);
        return NULL;
}

/* Waits until the other thread's signal, with the deadline given: 0, and well before it. */
static void check_woken(double deadline)
{
        pthread_t t;
        flag = 0;
        pthread_mutex_lock(&lock);
        CHECK(pthread_create(&t, NULL, signal_soon, NULL) == 0);
        double start = now_ms();
        int r = 0;
        while (!flag && r == 0)
                r = cond_wait_until(&cond, &lock, deadline);
        CHECK(r == 0);
        CHECK(flag == 1);
        CHECK(now_ms() - start < 4000);
        pthread_mutex_unlock(&lock);
        pthread_join(t, NULL);
}

int main(void)
{
        /* Rounded up and one more, so that poll does not wake before the time. */
        CHECK(poll_timeout(-5) == 0);
        CHECK(poll_timeout(0) == 0);
        CHECK(poll_timeout(0.3) == 1);
        CHECK(poll_timeout(5) == 6);
        CHECK(poll_timeout(1e12) == INT_MAX);
        CHECK(deadline_poll_ms(now_ms() - 1) == 0);
        int left = deadline_poll_ms(now_ms() + 1000);
        CHECK(left >= 990 && left <= 1001);

        cond_init_monotonic(&cond);
        pthread_mutex_lock(&lock);
        /* Passed already: at once. */
        double start = now_ms();
        CHECK(cond_wait_until(&cond, &lock, start - 10) == ETIMEDOUT);
        CHECK(now_ms() - start < 5);
        /* In 50 ms: not before (a spurious wake-up answers 0). */
        start = now_ms();
        int r;
        while ((r = cond_wait_until(&cond, &lock, start + 50)) == 0)
                ;
        CHECK(r == ETIMEDOUT);
        CHECK(now_ms() - start >= 50);
        CHECK(now_ms() - start < 2000);
        pthread_mutex_unlock(&lock);

        /* A signal ends the wait early, and a deadline far off (or absurdly so) is no error. */
        check_woken(now_ms() + 5000);
        check_woken(1e300);
        pthread_cond_destroy(&cond);
        CHECK_DONE();
}
