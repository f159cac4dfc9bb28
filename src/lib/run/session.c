#include "session.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "deadline.h"
#include "error.h"
#include "execution.h"
#include "journal.h"
#include "pump.h"
#include "result.h"
#include "session_restore.h"
#include "standby.h"
#include "util.h"

#define SESSION_NAME_MAX 64

/* Lock order: a session's run_lock, then its table's lock (session_table.lock); never the
 * other way round, and the table's lock is never held across an eval or a kernel's teardown.
 * run_lock guards kernel and exec_id: whoever reads or frees s->kernel holds it (the reaper
 * alone reads it under the table's lock, when users is 0, so no eval or closer can hold
 * run_lock). A user (users > 0) keeps the struct itself alive. */
struct session {
        char name[SESSION_NAME_MAX + 1];
        struct standby *kernel;   /* NULL: not started yet, or ended; guarded by run_lock */
        pthread_mutex_t run_lock; /* one eval at a time */
        /* A cancelled eval ended the kernel: its result may never have reached anyone (MCP
         * answers nothing to a cancelled request), so the next eval says so too. Guarded by
         * run_lock. */
        bool cancel_ended;
        /* Every eval that completed on the kernel, to restore the session once parked
         * (journal.h). Guarded by run_lock. */
        struct journal journal;
        /* Guarded by the table's lock: */
        double last_used;   /* now_ms() */
        double cpu_at_rest; /* the kernel's CPU time when its last eval ended */
        unsigned users;     /* evals waiting or running, and closers */
        bool closed;        /* out of the table: the last user frees it */
        /* Its kernel was ended while idle (idle timeout, or room made for another session)
         * and its journal kept: the next eval restores it. Not counted against the cell's
         * sessions. */
        bool parked;
};

/* The words of every result that tells of lost state: the error's end when an eval ends the
 * session, and the result's "state_lost" then and when an eval finds its kernel ended. */
#define STATE_WORDS                                                                                \
        "the session's state (variables, definitions, loaded libraries, files in /work) was lost"
static const char state_lost[] = "; " STATE_WORDS ", and the next eval starts a fresh session";

const char *session_name_problem(const char *name)
{
        if (!name || !*name)
                return "must not be empty";
        if (strlen(name) > SESSION_NAME_MAX)
                return "must be at most 64 characters";
        for (const char *p = name; *p; p++)
                if (!isalnum((unsigned char)*p) && !strchr("_.-", *p))
                        return "may hold only letters, digits, '_', '.' and '-'";
        return NULL;
}

static void session_free(struct session *s)
{
        standby_free(s->kernel);
        journal_free(&s->journal);
        pthread_mutex_destroy(&s->run_lock);
        free(s);
}

/* Drops a user; frees a closed session once nobody uses it. Called with the table locked. */
static void release(struct session_table *t, struct session *s)
{
        s->users--;
        if (s->closed && s->users == 0)
                session_free(s);
        pthread_cond_broadcast(&t->changed);
}

static void unlink_session(struct session_table *t, size_t i)
{
        t->items[i]->closed = true;
        t->items[i] = t->items[--t->n];
}

/* The CPU time of a session's interpreter so far, or -1. */
static double kernel_cpu_ms(const struct session *s)
{
        struct cpu_meter meter;
        if (!s->kernel ||
            !cpu_meter_init(&meter, s->kernel->sb.pid, s->kernel->guest, s->kernel->whole_tree,
                            s->kernel->have_cg ? &s->kernel->cg : NULL))
                return -1;
        return cpu_meter_read(&meter);
}

/* Between evals nothing runs a session's code, unless the code left a thread behind: one that
 * has spent a whole eval's CPU budget since the last eval ended closes the session. */
static bool spinning(const struct session *s, double budget_ms)
{
        double cpu = kernel_cpu_ms(s);
        return cpu >= 0 && cpu - s->cpu_at_rest > budget_ms;
}

/* Why a cell's sessions keep no journal, or NULL: what their code did outside the sandbox, a
 * replay would do a second time. A read-write folder would be written again; a network cell's
 * requests would reach their servers again (a POST, a payment), and the answers, which the
 * engine does not keep, could differ. */
static const char *never_replayed(const struct cell_plan *plan)
{
        if (plan->writes_host)
                return "its cell has read-write mounts, which a replay would write to a second "
                       "time";
        if (config_network(plan->config))
                return "its cell reaches the network, and a replay would send its requests a "
                       "second time";
        return NULL;
}

/* Whether a session can be parked: its journal holds all it did, and nothing it did reached
 * outside the sandbox (never_replayed). Guarded by run_lock, or by the table's lock when users
 * is 0. */
static bool restorable(const struct session_table *t, const struct session *s)
{
        return !s->journal.over && !never_replayed(t->plan) &&
               t->plan->config->limits[CODECELL_LIMIT_SESSION_RETENTION_MS] > 0;
}

/* Parks a session nobody uses (users is 0, the table locked): its kernel is taken away, to be
 * freed by the caller once the table's lock is let go. */
static struct standby *park(struct session *s)
{
        struct standby *kernel = s->kernel;
        s->kernel = NULL;
        s->parked = true;
        return kernel;
}

/* Parks sessions idle for longer than the cell's limit (closes those that cannot be
 * restored), and forgets parked ones past their retention, waking when the next one is due,
 * and at least every second to catch one that computes while idle (that one is closed). */
static void *reap(void *arg)
{
        struct session_table *t = arg;
        const uint64_t *lim = t->plan->config->limits;
        double idle = (double)lim[CODECELL_LIMIT_SESSION_IDLE_MS];
        double retention = (double)lim[CODECELL_LIMIT_SESSION_RETENTION_MS];
        double budget = (double)lim[CODECELL_LIMIT_CPU_MS];
        pthread_mutex_lock(&t->lock);
        while (!t->stopping) {
                double now = now_ms(), next = now + 1000.0;
                for (size_t i = 0; i < t->n;) {
                        struct session *s = t->items[i];
                        if (s->users == 0 && !s->parked && now - s->last_used >= idle &&
                            !spinning(s, budget) && restorable(t, s)) {
                                struct standby *kernel = park(s);
                                pthread_mutex_unlock(&t->lock);
                                standby_free(kernel);
                                pthread_mutex_lock(&t->lock);
                                i = 0;
                                continue;
                        }
                        /* Only when nobody uses it: an eval holds its kernel. */
                        bool due = s->users == 0 &&
                                   (s->parked ? now - s->last_used >= retention
                                              : now - s->last_used >= idle || spinning(s, budget));
                        if (due) {
                                unlink_session(t, i);
                                /* Nobody uses it: free it here, the kernel's teardown with it. */
                                pthread_mutex_unlock(&t->lock);
                                session_free(s);
                                pthread_mutex_lock(&t->lock);
                                i = 0;
                                continue;
                        }
                        double at = s->last_used + (s->parked ? retention : idle);
                        if (s->users == 0 && at < next)
                                next = at;
                        i++;
                }
                /* A thread a session's code left running may chmod a read-write folder between
                 * evals: put it back at every tick (at least once a second). */
                mount_roots_restore(&t->plan->mount_roots);
                /* The lock was let go while a session was freed above: a stop may have been
                 * signalled then, and would not be signalled again. */
                if (t->stopping)
                        break;
                if (t->n == 0) {
                        /* Nothing to watch until a session opens (which signals). */
                        pthread_cond_wait(&t->changed, &t->lock);
                        continue;
                }
                double soonest = now_ms() + 1;
                (void)cond_wait_until(&t->changed, &t->lock, next > soonest ? next : soonest);
        }
        pthread_mutex_unlock(&t->lock);
        return NULL;
}

void session_table_init(struct session_table *t, struct cell_plan *plan, struct tool_table *tools)
{
        *t = (struct session_table){.plan = plan, .tools = tools};
        pthread_mutex_init(&t->lock, NULL);
        cond_init_monotonic(&t->changed);
}

void session_close_all(struct session_table *t)
{
        for (;;) {
                pthread_mutex_lock(&t->lock);
                const char *name = t->n ? t->items[0]->name : NULL;
                char copy[SESSION_NAME_MAX + 1] = "";
                if (name)
                        snprintf(copy, sizeof(copy), "%s", name);
                pthread_mutex_unlock(&t->lock);
                if (!*copy)
                        return;
                (void)session_close(t, copy, NULL);
        }
}

void session_table_free(struct session_table *t)
{
        session_close_all(t);
        pthread_mutex_lock(&t->lock);
        t->stopping = true;
        pthread_cond_broadcast(&t->changed);
        pthread_mutex_unlock(&t->lock);
        if (t->reaper_started)
                pthread_join(t->reaper, NULL);
        free(t->items);
        pthread_mutex_destroy(&t->lock);
        pthread_cond_destroy(&t->changed);
}

static size_t lim_journal(const struct session_table *t)
{
        return (size_t)t->plan->config->limits[CODECELL_LIMIT_SESSION_JOURNAL_BYTES];
}

/* The session of that name, made if missing; with one more user. A parked one is no longer
 * parked (its kernel is to be restored), so it counts against the cell's sessions again. */
static int acquire(struct session_table *t, const char *name, struct session **ret,
                   codecell_error *err)
{
        int r = 0;
        pthread_mutex_lock(&t->lock);
        struct session *s = NULL;
        for (size_t i = 0; i < t->n && !s; i++)
                if (strcmp(t->items[i]->name, name) == 0)
                        s = t->items[i];
        uint64_t max = t->plan->config->limits[CODECELL_LIMIT_SESSIONS];
        size_t live = 0;
        for (size_t i = 0; i < t->n; i++)
                live += !t->items[i]->parked;
        if ((!s || s->parked) && live >= max) {
                r = err_set(err, CODECELL_ERR_UNSUPPORTED, EMFILE,
                            "session \"%s\": %zu sessions are open, the most this cell allows; "
                            "close one first",
                            name, live);
                goto out;
        }
        if (s && s->parked)
                s->parked = false; /* its eval restores it */
        if (!s) {
                struct session **grown = realloc(t->items, (t->n + 1) * sizeof(*grown));
                s = calloc(1, sizeof(*s));
                if (grown)
                        t->items = grown;
                if (!grown || !s) {
                        free(s);
                        r = err_sys(err, ENOMEM, "session");
                        goto out;
                }
                snprintf(s->name, sizeof(s->name), "%s", name);
                pthread_mutex_init(&s->run_lock, NULL);
                journal_init(&s->journal, lim_journal(t));
                s->last_used = now_ms();
                t->items[t->n++] = s;
                if (!t->reaper_started && pthread_create(&t->reaper, NULL, reap, t) == 0)
                        t->reaper_started = true;
        }
        s->users++;
        *ret = s;
out:
        pthread_mutex_unlock(&t->lock);
        return r;
}

static void append_error(codecell_result *res, const char *text)
{
        const char *was = json_string_value(res->error);
        size_t len = (was ? strlen(was) : 0) + strlen(text) + 1;
        char *joined = malloc(len);
        if (!joined)
                return;
        snprintf(joined, len, "%s%s", was ? was : "", text);
        json_decref(res->error);
        res->error = json_string(joined);
        free(joined);
}

/* Sets the result's "state_lost": why the session's state went, and what that means. */
static void set_state_lost(codecell_result *res, const char *why, const char *then)
{
        free(res->state_lost);
        if (asprintf(&res->state_lost, "%s: " STATE_WORDS ", and %s", why, then) < 0)
                res->state_lost = NULL;
}

/* How a session's kernel ended (init's exit code as sandbox_destroy gives it), and when, in
 * why. */
static void describe_end(int status, const char *when, char *why, size_t n)
{
        int sig = sandbox_guest_signal(status), code = sandbox_guest_exit_code(status);
        if (sig)
                snprintf(why, n,
                         "the session's kernel ended %s (its interpreter was killed by signal %d, "
                         "%s)",
                         when, sig, strsignal(sig));
        else if (code >= 0)
                snprintf(why, n,
                         "the session's kernel ended %s (its interpreter exited with code %d)",
                         when, code);
        else
                snprintf(why, n, "the session's kernel could not go on %s", when);
}

/* A kernel found ended before its code was delivered (killed from outside, or by a thread of
 * its own between evals; or it spoke while idle): torn down, and how it ended written into
 * why. */
static void bury_kernel(struct standby *kernel, char *why, size_t n)
{
        describe_end(standby_teardown(kernel, END_WAIT, NULL, NULL), "after its last eval", why, n);
        standby_free(kernel);
}

/* Said once, in the result of the eval that took the journal over its bound. */
static void note_not_restorable(const struct session_table *t, codecell_result *res)
{
        free(res->not_restorable);
        if (asprintf(&res->not_restorable,
                     "this session's journal went over the cell's session_journal_bytes (%llu "
                     "bytes): its state is kept while it is in use, but once it is idle for "
                     "session_idle_ms it is closed instead of parked, and cannot be restored; "
                     "a reset starts a new journal",
                     (unsigned long long)lim_journal(t)) < 0)
                res->not_restorable = NULL;
}

/* A parked session's state brought back on a fresh kernel: seeds, then its journal replayed.
 * Into res what came of it; when it stopped, the kernel is ended, the journal forgotten, and
 * ended says why (for the fresh session the eval then runs in). Under run_lock. */
static void restore_parked(struct session_table *t, struct session *s,
                           const codecell_run_options *options, codecell_result *res, char *ended,
                           size_t n)
{
        codecell_error e = {0};
        struct replay_outcome ro = {0};
        if (pool_spawn(t->pool, &s->kernel, &e) < 0) {
                s->kernel = NULL;
                snprintf(ro.why, sizeof(ro.why), "its kernel could not be started (%s)", e.message);
        } else if (session_seed(t->plan, t->tools, s->kernel, s->journal.seed, ro.why,
                                sizeof(ro.why)) &&
                   session_replay(t->plan, t->tools, s->kernel, &s->journal,
                                  options ? options->cancel : NULL, &ro)) {
                res->restored = 1;
                res->restored_evals = ro.evals;
                res->restored_ms = ro.ms;
                return;
        }
        res->restored = -1;
        standby_free(s->kernel);
        s->kernel = NULL;
        size_t evals = s->journal.n;
        journal_reset(&s->journal);
        snprintf(ended, n,
                 "the session was parked while idle and restoring it by running its %zu "
                 "earlier eval%s again stopped: %s",
                 evals, evals == 1 ? "" : "s", ro.why);
}

/* Runs the code on the session's kernel, started first if it has none; ended says why the
 * state of an earlier kernel was lost ("" when it was not). False when the kernel ended
 * before it took the code, unless last: none of the code ran, the kernel is gone, and why
 * says how it ended. */
static bool eval_on_kernel(struct session_table *t, struct session *s, const char *code, size_t len,
                           const codecell_run_options *options, const char *ended, bool last,
                           codecell_result *res, char *why, size_t n)
{
        codecell_error e = {0};
        char unseeded[300] = "";
        if (!s->kernel) {
                /* A fresh session: a journal of its own from here, and its seeds. */
                journal_reset(&s->journal);
                if (pool_spawn(t->pool, &s->kernel, &e) < 0) {
                        s->kernel = NULL;
                } else if (!session_seed(t->plan, t->tools, s->kernel, s->journal.seed, unseeded,
                                         sizeof(unseeded))) {
                        standby_free(s->kernel);
                        s->kernel = NULL;
                        snprintf(e.message, sizeof(e.message), "%s", unseeded);
                }
        }
        if (!s->kernel) {
                res->status = CODECELL_STATUS_SANDBOX_ERROR;
                char text[sizeof(e.message) + 64];
                snprintf(text, sizeof(text), "the session could not be started: %s", e.message);
                _cleanup_free_ char *clean = utf8_sanitize(text, strlen(text), NULL);
                res->error = json_string(clean ? clean : "the session could not be started");
                if (*ended)
                        set_state_lost(res, ended, "the next eval tries a fresh session again");
                return true;
        }
        struct execution_end end = {.init_status = -1};
        /* A cell whose code reaches outside the sandbox keeps no journal: it could not be
         * replayed. */
        bool was_over = s->journal.over;
        bool kept = !never_replayed(t->plan) && journal_begin(&s->journal, code, len, options);
        if (execution_on(t->plan, t->tools, s->kernel, code, len, true,
                         kept ? &s->journal.pending.calls : NULL, options, res, &end)) {
                /* Kept when its code ran to the end ("ok" or "error"): one cancelled before it
                 * started never ran, and a replay must not run it. */
                (void)journal_end(&s->journal,
                                  res->status == CODECELL_STATUS_OK ||
                                          res->status == CODECELL_STATUS_ERROR,
                                  res->status == CODECELL_STATUS_OK);
                if (!was_over && s->journal.over)
                        note_not_restorable(t, res);
                if (*ended)
                        set_state_lost(res, ended, "this eval ran in a fresh session");
                return true;
        }
        journal_reset(&s->journal);
        standby_free(s->kernel);
        s->kernel = NULL;
        if (end.untaken && !last) {
                describe_end(end.init_status, "before it took this eval's code", why, n);
                return false;
        }
        s->cancel_ended = res->cancelled;
        append_error(res, state_lost);
        set_state_lost(res, *ended ? ended : "this eval ended the session",
                       "the next eval starts a fresh session");
        return true;
}

int session_eval(struct session_table *t, const char *name, const char *code, size_t len,
                 const codecell_run_options *options, codecell_result **ret_result,
                 codecell_error *err)
{
        *ret_result = NULL;
        const char *problem = session_name_problem(name);
        if (problem)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "session name \"%s\": %s",
                               name ? name : "", problem);
        codecell_result *res = NULL;
        int r = execution_accept(t->plan, code, len, options, &res, err);
        if (r < 0)
                return r;
        struct session *s = NULL;
        r = acquire(t, name, &s, err);
        if (r < 0) {
                codecell_result_free(res);
                return r;
        }
        pthread_mutex_lock(&s->run_lock);
        /* A kernel found dead before the code is delivered is replaced, and the code runs
         * there: the caller gets a fresh session's result, which says the state was lost. */
        char ended[1000] = "";
        if (s->kernel && !standby_alive(s->kernel)) {
                bury_kernel(s->kernel, ended, sizeof(ended));
                s->kernel = NULL;
        } else if (!s->kernel && s->cancel_ended) {
                snprintf(ended, sizeof(ended),
                         "the session's last eval was cancelled, which ended its kernel");
        } else if (!s->kernel && s->journal.n > 0) {
                /* Parked: only a parked session has no kernel and a journal. */
                restore_parked(t, s, options, res, ended, sizeof(ended));
        }
        s->cancel_ended = false;
        /* One found dead only as the code went to it (killed a moment before, or as its init
         * ended) never took the code: the code runs once more, on a fresh kernel, as the
         * seed's Repl does. Only once: a kernel that dies at every start does not loop. (A
         * thread the earlier code left could read the code off the channel and end the
         * kernel: the code then runs twice, each time within the limits.) */
        bool retried = false;
        while (!eval_on_kernel(t, s, code, len, options, ended, retried, res, ended,
                               sizeof(ended))) {
                retried = true;
                codecell_result_free(res);
                if ((r = execution_accept(t->plan, code, len, options, &res, err)) < 0)
                        break;
        }
        /* Read while run_lock is held: once it is let go, a close or a reset waiting for it
         * frees the kernel. */
        double cpu = kernel_cpu_ms(s);
        pthread_mutex_unlock(&s->run_lock);
        pthread_mutex_lock(&t->lock);
        s->last_used = now_ms();
        s->cpu_at_rest = cpu;
        release(t, s);
        pthread_mutex_unlock(&t->lock);
        *ret_result = res;
        return r;
}

int session_close(struct session_table *t, const char *name, codecell_error *err)
{
        struct session *s = NULL;
        pthread_mutex_lock(&t->lock);
        for (size_t i = 0; i < t->n && !s; i++)
                if (strcmp(t->items[i]->name, name ? name : "") == 0) {
                        s = t->items[i];
                        unlink_session(t, i);
                }
        if (s)
                s->users++;
        pthread_mutex_unlock(&t->lock);
        if (!s)
                return err_set(err, CODECELL_ERR_INVALID, ENOENT, "session \"%s\": no such session",
                               name ? name : "");
        /* After an eval in progress, if any: then the kernel goes. */
        pthread_mutex_lock(&s->run_lock);
        standby_free(s->kernel);
        s->kernel = NULL;
        pthread_mutex_unlock(&s->run_lock);
        pthread_mutex_lock(&t->lock);
        release(t, s);
        pthread_mutex_unlock(&t->lock);
        return 0;
}

/* The least recently used session of prefix that runs and nobody uses, and its place in the
 * table (*ret_at); or NULL. The table locked. */
static struct session *oldest_idle(struct session_table *t, const char *prefix, size_t *ret_at)
{
        size_t prefix_len = strlen(prefix);
        struct session *s = NULL;
        for (size_t i = 0; i < t->n; i++) {
                struct session *x = t->items[i];
                if (x->users == 0 && !x->parked && strncmp(x->name, prefix, prefix_len) == 0 &&
                    (!s || x->last_used < s->last_used)) {
                        s = x;
                        *ret_at = i;
                }
        }
        return s;
}

int session_close_idle(struct session_table *t, const char *prefix, char **ret_name,
                       codecell_error *err)
{
        if (ret_name)
                *ret_name = NULL;
        pthread_mutex_lock(&t->lock);
        size_t at = 0;
        struct session *s = oldest_idle(t, prefix, &at);
        char *name = s && ret_name ? strdup(s->name) : NULL;
        if (s && ret_name && !name)
                s = NULL;
        if (s)
                unlink_session(t, at); /* users is 0: nobody else holds it; it is ours to free */
        pthread_mutex_unlock(&t->lock);
        if (!s)
                return err_set(err, CODECELL_ERR_INVALID, ENOENT, "no idle session to close");
        session_free(s);
        if (ret_name)
                *ret_name = name;
        return 0;
}

/* The session of that name with one more user, or NULL. */
static struct session *find_used(struct session_table *t, const char *name)
{
        struct session *s = NULL;
        pthread_mutex_lock(&t->lock);
        for (size_t i = 0; i < t->n && !s; i++)
                if (strcmp(t->items[i]->name, name ? name : "") == 0)
                        s = t->items[i];
        if (s)
                s->users++;
        pthread_mutex_unlock(&t->lock);
        return s;
}

/* Why a session cannot be parked, for an error. */
static const char *unparkable(const struct session_table *t, const struct session *s)
{
        const char *why = never_replayed(t->plan);
        if (why)
                return why;
        if (s->journal.over)
                return "its journal went over the cell's session_journal_bytes";
        return "the cell's session_retention_ms is 0";
}

int session_park(struct session_table *t, const char *name, codecell_error *err)
{
        struct session *s = find_used(t, name);
        if (!s)
                return err_set(err, CODECELL_ERR_INVALID, ENOENT, "session \"%s\": no such session",
                               name ? name : "");
        int r = 0;
        /* After an eval in progress, if any. */
        pthread_mutex_lock(&s->run_lock);
        if (!restorable(t, s)) {
                r = err_set(err, CODECELL_ERR_UNSUPPORTED, EPERM,
                            "session \"%s\" cannot be parked: %s", name, unparkable(t, s));
        } else {
                standby_free(s->kernel);
                s->kernel = NULL;
        }
        pthread_mutex_lock(&t->lock);
        if (r == 0 && !s->closed)
                s->parked = true;
        pthread_mutex_unlock(&t->lock);
        pthread_mutex_unlock(&s->run_lock);
        pthread_mutex_lock(&t->lock);
        release(t, s);
        pthread_mutex_unlock(&t->lock);
        return r;
}

int session_park_idle(struct session_table *t, const char *prefix, char **ret_name,
                      bool *ret_parked, codecell_error *err)
{
        if (ret_name)
                *ret_name = NULL;
        *ret_parked = false;
        pthread_mutex_lock(&t->lock);
        size_t at = 0;
        struct session *s = oldest_idle(t, prefix, &at);
        char *name = s && ret_name ? strdup(s->name) : NULL;
        if (s && ret_name && !name)
                s = NULL;
        struct standby *kernel = NULL;
        /* users is 0: nobody else holds it. */
        if (s && restorable(t, s)) {
                kernel = park(s);
                *ret_parked = true;
        } else if (s) {
                unlink_session(t, at);
        }
        pthread_mutex_unlock(&t->lock);
        if (!s)
                return err_set(err, CODECELL_ERR_INVALID, ENOENT, "no idle session to park");
        if (*ret_parked)
                standby_free(kernel);
        else
                session_free(s);
        if (ret_name)
                *ret_name = name;
        return 0;
}

int session_fork(struct session_table *t, const char *from, const char *as, codecell_error *err)
{
        const char *problem = session_name_problem(as);
        if (problem)
                return err_set(err, CODECELL_ERR_INVALID, EINVAL, "session name \"%s\": %s",
                               as ? as : "", problem);
        struct session *s = find_used(t, from);
        if (!s)
                return err_set(err, CODECELL_ERR_INVALID, ENOENT, "session \"%s\": no such session",
                               from ? from : "");
        struct session *fork = calloc(1, sizeof(*fork));
        int r = fork ? 0 : err_sys(err, ENOMEM, "session");
        /* After an eval in progress: its journal is whole then. */
        pthread_mutex_lock(&s->run_lock);
        if (r == 0 && !restorable(t, s))
                r = err_set(err, CODECELL_ERR_UNSUPPORTED, EPERM,
                            "session \"%s\" cannot be forked: %s", from, unparkable(t, s));
        if (r == 0 && journal_copy(&fork->journal, &s->journal) < 0)
                r = err_sys(err, ENOMEM, "session");
        pthread_mutex_unlock(&s->run_lock);
        pthread_mutex_lock(&t->lock);
        bool taken = false;
        for (size_t i = 0; i < t->n && !taken; i++)
                taken = strcmp(t->items[i]->name, as) == 0;
        struct session **grown = NULL;
        if (r == 0 && taken)
                r = err_set(err, CODECELL_ERR_INVALID, EEXIST,
                            "session \"%s\" is open already: close it first, or fork under "
                            "another name",
                            as);
        if (r == 0 && !(grown = realloc(t->items, (t->n + 1) * sizeof(*grown))))
                r = err_sys(err, ENOMEM, "session");
        if (r == 0) {
                /* Parked from the start: its first eval replays its source's journal. */
                snprintf(fork->name, sizeof(fork->name), "%s", as);
                pthread_mutex_init(&fork->run_lock, NULL);
                fork->parked = true;
                fork->last_used = now_ms();
                t->items = grown;
                t->items[t->n++] = fork;
                pthread_cond_broadcast(&t->changed);
        }
        release(t, s);
        pthread_mutex_unlock(&t->lock);
        if (r < 0 && fork) {
                journal_free(&fork->journal);
                free(fork);
        }
        return r;
}

bool session_is_parked(struct session_table *t, const char *name)
{
        bool parked = false;
        pthread_mutex_lock(&t->lock);
        for (size_t i = 0; i < t->n; i++)
                if (strcmp(t->items[i]->name, name ? name : "") == 0)
                        parked = t->items[i]->parked;
        pthread_mutex_unlock(&t->lock);
        return parked;
}

char **session_list(struct session_table *t)
{
        pthread_mutex_lock(&t->lock);
        char **names = calloc(t->n + 1, sizeof(*names));
        for (size_t i = 0; names && i < t->n; i++)
                if (!(names[i] = strdup(t->items[i]->name))) {
                        for (size_t k = 0; k < i; k++)
                                free(names[k]);
                        free(names);
                        names = NULL;
                }
        pthread_mutex_unlock(&t->lock);
        return names;
}
