#include "approval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void approval_clock_init(struct approval_clock *c)
{
        *c = (struct approval_clock){0};
        pthread_mutex_init(&c->lock, NULL);
        pthread_cond_init(&c->settled, NULL);
}

void approval_clock_destroy(struct approval_clock *c)
{
        pthread_cond_destroy(&c->settled);
        pthread_mutex_destroy(&c->lock);
}

/* The part of a wait under way that parks the clock. Under lock. */
static double ongoing(const struct approval_clock *c, double now)
{
        if (!c->waiting)
                return 0;
        double d = now - c->since;
        return d < c->bound_ms ? d : c->bound_ms;
}

double approval_clock_parked(struct approval_clock *c)
{
        pthread_mutex_lock(&c->lock);
        double parked = c->parked_ms + ongoing(c, now_ms());
        pthread_mutex_unlock(&c->lock);
        return parked;
}

void approval_clock_settle(struct approval_clock *c)
{
        pthread_mutex_lock(&c->lock);
        c->closed = true;
        while (c->waiting)
                pthread_cond_wait(&c->settled, &c->lock);
        pthread_mutex_unlock(&c->lock);
}

/* False once the execution is ending: then no callback may start. */
static bool park(struct approval_clock *c, double now, uint64_t wait_ms)
{
        pthread_mutex_lock(&c->lock);
        if (c->closed) {
                pthread_mutex_unlock(&c->lock);
                return false;
        }
        if (c->waiting++ == 0) {
                c->since = now;
                c->bound_ms = 0;
        }
        if ((double)wait_ms > c->bound_ms)
                c->bound_ms = (double)wait_ms;
        pthread_mutex_unlock(&c->lock);
        return true;
}

/* Overlapping waits (calls at once) park the clock once, from the first one's start to the
 * last one's end. Returns the time this wait parked. */
static double unpark(struct approval_clock *c, double start, uint64_t wait_ms)
{
        double now = now_ms();
        pthread_mutex_lock(&c->lock);
        if (c->waiting == 1) {
                double d = now - c->since;
                c->parked_ms += d < c->bound_ms ? d : c->bound_ms;
                pthread_cond_broadcast(&c->settled);
        }
        c->waiting--;
        pthread_mutex_unlock(&c->lock);
        double d = now - start;
        return d < (double)wait_ms ? d : (double)wait_ms;
}

char *approval_ask(struct tool_table *t, struct approval_clock *c, const char *tool,
                   const char *args_json, uint64_t wait_ms, void *run_userdata,
                   double *ret_waited_ms, bool *ret_refused)
{
        *ret_waited_ms = 0;
        *ret_refused = true;
        pthread_mutex_lock(&t->lock);
        codecell_approval_fn fn = t->approval_fn;
        void *userdata = t->approval_userdata;
        pthread_mutex_unlock(&t->lock);
        pthread_mutex_lock(&c->lock);
        bool refused = c->refused;
        pthread_mutex_unlock(&c->lock);
        if (refused)
                return str_printf("approval declined: an earlier call of this run was refused "
                                  "approval, so \"%s\" is not asked about again; it did not run",
                                  tool);
        if (!fn)
                return str_printf(
                        "approval needed: \"%s\" runs only when a person allows each call, "
                        "and this host has nobody to ask; it did not run",
                        tool);
        codecell_approval_request request = {.tool = tool,
                                             .args_json = args_json,
                                             .wait_ms = wait_ms,
                                             .run_userdata = run_userdata};
        char *reason = NULL;
        double start = now_ms();
        if (!park(c, start, wait_ms))
                return str_printf("approval needed: the run ended before \"%s\" could be asked "
                                  "about; it did not run",
                                  tool);
        int answer = fn(&request, &reason, userdata);
        *ret_waited_ms = unpark(c, start, wait_ms);
        bool late = now_ms() - start > (double)wait_ms;
        /* The reason is the host's words, but it goes to the guest and into a JSON frame. */
        char *clean = reason ? utf8_sanitize(reason, strnlen(reason, 400), NULL) : NULL;
        free(reason);
        char cut[420];
        snprintf(cut, sizeof(cut), "%s%s", clean && *clean ? ": " : "", clean ? clean : "");
        utf8_trim_cut(cut);
        free(clean);
        char *m = NULL;
        if (late) {
                char bound[64];
                snprintf(bound, sizeof(bound), "%llu ms", (unsigned long long)wait_ms);
                m = str_printf("approval needed: nobody allowed \"%s\" within %s (approval_ms); it "
                               "did not run",
                               tool, bound);
        } else if (answer == CODECELL_APPROVAL_ACCEPT) {
                *ret_refused = false;
                return NULL;
        } else if (answer == CODECELL_APPROVAL_DECLINE) {
                m = str_printf(
                        "approval declined: the call of \"%s\" was not allowed%s; it did not "
                        "run",
                        tool, cut);
        } else {
                m = str_printf("approval needed: \"%s\" could not be approved%s; it did not run",
                               tool, cut);
        }
        pthread_mutex_lock(&c->lock);
        c->refused = true;
        pthread_mutex_unlock(&c->lock);
        return m;
}
