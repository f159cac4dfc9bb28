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

struct pump {
        struct sandbox *sb;
        struct output_buffer *out, *err; /* where output goes; may change between phases */
        struct frame_reader frames;
        bool ctl_open, out_open, err_open;
        bool ready;           /* the prelude said "ready" */
        bool exec_sent;       /* the code was handed over: "call" and "result" are allowed */
        int64_t exec_id;      /* the id of that exec, which its result must carry */
        struct rpc *rpc;      /* host calls of this execution; NULL before exec */
        json_t *result_frame; /* owned */
        struct image_list *images; /* where "image" frames go; NULL before exec */
        /* CPU budget, checked while reading: the sandbox's CPU time must stay below
         * cpu_limit_ms (0: not checked). */
        struct cpu_meter cpu;
        double cpu_limit_ms;
        bool cpu_exhausted;
        /* Cancellation: readable when the caller cancels (-1: none). */
        int cancel_fd;
        bool cancelled;
        /* Progress reports while the code runs (progress NULL: none). */
        codecell_progress_fn progress;
        void *progress_userdata;
        double progress_every_ms, next_progress_ms, progress_start_ms;
        /* Output handed on as it comes (output NULL: none), up to output_cap per stream. */
        codecell_output_fn output;
        void *output_userdata;
        size_t output_cap, output_sent[2];
        char output_last[2]; /* the last byte handed on, per stream */
        char protocol_error[256];
};

void pump_init(struct pump *p, struct sandbox *sb, size_t max_frame);
/* Applies a run's options (NULL: none) from exec_start (now_ms() clock) until pump_options_end. */
void pump_options_begin(struct pump *p, const codecell_run_options *options, double exec_start);
void pump_options_end(struct pump *p);
/* Stops handing output on: after the pipes are drained, which is after pump_options_end. */
void pump_output_end(struct pump *p);
void pump_free(struct pump *p);
/* Reads until done(p) holds or the deadline (now_ms() clock) passes; true when it passed. */
bool pump_until(struct pump *p, double deadline, bool (*done)(const struct pump *));
/* Takes what the output pipes hold now, without waiting for more. The prelude flushes its
 * output before it sends the result frame, so after that frame this is all of it. */
void pump_drain_now(struct pump *p);
bool pump_is_ready(const struct pump *p);
bool pump_has_result(const struct pump *p);
bool pump_drained(const struct pump *p);
/* Records the first protocol violation and stops reading the control socket. */
void pump_protocol_error(struct pump *p, const char *msg);

#endif
