/* The result object (DESIGN §6) and the host's decision of its status. */
#ifndef CODECELL_RESULT_H
#define CODECELL_RESULT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "codecell.h"

struct output_buffer {
        char *data;
        size_t len;
        size_t cap; /* bytes kept at most */
        bool truncated;
};

struct codecell_result {
        codecell_status status;
        double duration_ms;
        json_t *value; /* ok: the last expression */
        json_t *error; /* error: {class, message, backtrace}; limits, sandbox_error: a string */
        struct output_buffer out, err;
        double cpu_ms;
        int64_t memory_peak_bytes; /* -1: unknown */
        json_t *layers;            /* array of the layers in force */
        json_t *warnings;          /* array, or NULL */
        bool cancelled;            /* stopped by codecell_cancel_trigger() */
};

/* What the host observed of one execution. The status comes from these facts, never from
 * what the guest claims: a guest can only say "my code finished" or "my code raised". */
struct run_outcome {
        bool cancelled;             /* the caller cancelled it */
        bool timed_out;             /* the engine killed it at the wall-clock deadline */
        bool oom_killed;            /* the memory cgroup killed a process */
        bool memory_refused;        /* the memory cgroup refused an allocation at the limit */
        bool memory_by_rlimit;      /* no memory cgroup: RLIMIT_AS was the limit */
        bool cpu_exhausted;         /* RLIMIT_CPU fired (SIGXCPU, or SIGKILL at the hard limit) */
        const char *protocol_error; /* the guest broke the protocol: why */
        const json_t *result_frame; /* the guest's result frame, if one arrived */
        const char *out_of_memory_class; /* the runtime's OOM error class */
};

codecell_status outcome_classify(const struct run_outcome *o);

void output_init(struct output_buffer *b, size_t cap);
/* Keeps what fits under the cap and marks the rest as truncated. -ENOMEM on failure. */
int output_append(struct output_buffer *b, const char *data, size_t n);

codecell_result *result_new(void);

#endif
