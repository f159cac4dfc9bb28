/* The engine's side of one sandbox's I/O (DESIGN §5): frames on the control socket, stdout
 * and stderr read as they come. */
#ifndef CODECELL_PUMP_H
#define CODECELL_PUMP_H

#include <jansson.h>
#include <stdbool.h>
#include <time.h>

#include "cpu_time.h"
#include "frame.h"
#include "result.h"
#include "rpc.h"
#include "sandbox.h"

#define PUMP_ERROR_MAX 256

struct pump {
        struct sandbox *sb;
        struct output_buffer *out, *err; /* where output goes (NULL: thrown away) */
        struct frame_reader frames;
        bool ctl_open, out_open, err_open;
        bool ready;                /* the prelude said "ready" */
        bool exec_sent;            /* the code was handed over: "call" and "result" are allowed */
        bool taken;                /* the prelude said "taken": it read the code, which may run */
        int64_t exec_id;           /* the id of that exec, which its result must carry */
        struct rpc *rpc;           /* host calls of this execution; NULL before exec */
        json_t *result_frame;      /* owned */
        struct image_list *images; /* where "image" frames go; NULL before exec */
        struct file_list *files;   /* where "file" frames go (NULL: refused), with images */
        /* CPU budget, checked while reading: the sandbox's CPU time must stay below
         * cpu_limit_ms (0: not checked). */
        struct cpu_meter cpu;
        double cpu_limit_ms;
        bool cpu_exhausted;
        bool timed_out; /* the execution's deadline passed before its result */
        /* Cancellation: readable when the caller cancels or interrupts (-1: none). */
        const codecell_cancel *cancel;
        int cancel_fd;
        bool cancelled;
        unsigned interrupts_sent; /* SIGINTs passed on of the token's interrupts */
        pid_t guest;              /* the interpreter, where they go (standby.c sets it) */
        /* Progress reports while the code runs (progress NULL: none). */
        codecell_progress_fn progress;
        void *progress_userdata;
        double progress_every_ms, next_progress_ms, progress_start_ms;
        /* Output handed on as it comes (output NULL: none), up to output_cap per stream. */
        codecell_output_fn output;
        void *output_userdata;
        size_t output_cap, output_sent[2];
        char output_last[2]; /* the last byte handed on, per stream */
        char protocol_error[PUMP_ERROR_MAX];
};

/* Where an execution's output and pictures go, and the id its frames must carry. */
struct pump_exec {
        int64_t id;
        struct output_buffer *out, *err;
        struct image_list *images;
        struct file_list *files;
};

/* What the pump saw of one execution, handed over at its end. */
struct pump_seen {
        json_t *result_frame;                /* owned by the receiver, or NULL */
        char protocol_error[PUMP_ERROR_MAX]; /* "" when none */
        bool timed_out;                      /* the deadline passed before the result */
        bool cancelled;                      /* the caller cancelled before the result */
        bool cpu_exhausted;                  /* the CPU budget was spent */
        /* The prelude said it read the code. Without it, a guest that ended never ran any of
         * the code: a session's eval may run it on a fresh kernel instead (session.c). */
        bool taken;
};

void pump_init(struct pump *p, struct sandbox *sb, size_t max_frame);
void pump_free(struct pump *p);
/* Output goes to out and err from now on (NULL: thrown away). */
void pump_output_to(struct pump *p, struct output_buffer *out, struct output_buffer *err);
/* Reads until done(p) holds or the deadline (now_ms() clock) passes; true when it passed. */
bool pump_until(struct pump *p, double deadline, bool (*done)(const struct pump *));
bool pump_is_ready(const struct pump *p);
/* Records the first protocol violation and stops reading the control socket. */
void pump_protocol_error(struct pump *p, const char *msg);

/* One execution, from its start to its end: */
/* Starts it. What the output pipes hold now is not its output (the threads of a session's
 * earlier code wrote it) and is thrown away; then its output and pictures go to exec's
 * places. The CPU budget is off until armed (standby_arm). */
void pump_exec_begin(struct pump *p, const struct pump_exec *exec);
/* The code was handed over: its host calls go to rpc and its result is awaited; options
 * (NULL: none) apply from exec_start (now_ms() clock). */
void pump_exec_sent(struct pump *p, struct rpc *rpc, const codecell_run_options *options,
                    double exec_start);
/* Reads until the result, the guest's death, the CPU budget, a cancel or the deadline, then
 * takes the output written before the result (or until the dead guest's pipes close). */
void pump_exec_wait(struct pump *p, double deadline);
/* Ends it: what was seen goes to ret; host calls, pictures, output and options are let go.
 * A session's pump is then ready for its next execution. */
void pump_exec_end(struct pump *p, struct pump_seen *ret);

#endif
