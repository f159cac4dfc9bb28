/* The result object (DESIGN §6) and the host's decision of its status. */
#ifndef CODECELL_RESULT_H
#define CODECELL_RESULT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "codecell.h"
#include "display.h"
#include "images.h"
#include "out_files.h"
#include "output.h"

struct codecell_result {
        codecell_status status;
        double duration_ms;
        /* ok: the last expression as JSON text, exactly as the guest wrote it (validated):
         * jansson holds 64-bit integers and prints doubles with a fixed precision, so the value
         * never goes through a json_t. NULL: null. */
        char *value_json;
        int64_t exit_status; /* the code called exit: its status */
        bool has_exit_status;
        json_t *error; /* error: {class, message, backtrace}; limits, sandbox_error: a string */
        struct output_buffer out, err;
        double cpu_ms;
        int64_t memory_peak_bytes;     /* -1: unknown */
        json_t *layers;                /* array of the layers in force */
        json_t *warnings;              /* array, or NULL */
        bool cancelled;                /* stopped by codecell_cancel_trigger() */
        struct image_list images;      /* pictures the run handed back */
        struct result_display display; /* ok: the last value's rich forms */
        struct file_list files;        /* other files it wrote to its output folder */
        /* A session's: what reached its main thread between evals and was discarded, as the
         * prelude noted it ([{class, message}], NULL: nothing); and why its state was lost
         * (NULL: it was not). */
        json_t *idle_interrupts;
        char *state_lost;
        /* A parked session's restore before this eval: 1 restored (restored_evals replayed in
         * restored_ms), -1 it stopped (why in state_lost), 0 none. */
        int restored;
        size_t restored_evals;
        double restored_ms;
        /* Why the session can no longer be restored once parked (its journal went over its
         * bound with this eval), or NULL. */
        char *not_restorable;
        /* The connections it made through its cell's egress proxy, [{host, port, bytes_out,
         * bytes_in, refused?}], or NULL: none, or a cell without a network policy. */
        json_t *network;
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

codecell_result *result_new(void);

/* Takes the value of a result frame: "value_json" (the text the preludes send) or "value" (a
 * JSON value). -EBADMSG when the text is not exactly one JSON value, -ENOMEM. */
int result_set_value(codecell_result *r, const json_t *frame);
/* "images" ([{mime_type, bytes}]) and "images_omitted" ({count, reason}) when there are. */
int result_set_images(json_t *obj, const codecell_result *r);
/* "files" ([{name, mime_type, size}], with "text" or "base64" when content) and
 * "files_omitted" ({count, files: [{name, reason}]}) when there are. */
int result_set_files(json_t *obj, const codecell_result *r, bool content);
/* Takes connections (the proxy's record of a run; NULL or empty: none). */
void result_take_network(codecell_result *r, json_t *connections);
/* "network" when the run made connections. */
int result_set_network(json_t *obj, const codecell_result *r);
/* "network_refused", one line naming what the proxy refused, only when it refused any. */
int result_set_network_summary(json_t *obj, const codecell_result *r);
/* "idle_interrupts" and "state_lost" when there are (a session's). */
int result_set_session_notes(json_t *obj, const codecell_result *r);
/* Takes a result frame's "idle_interrupts" as far as it is well formed: at most
 * RESULT_MAX_INTERRUPTS of {class, message}, each string cut to RESULT_INTERRUPT_CHARS bytes. */
#define RESULT_MAX_INTERRUPTS 10
#define RESULT_INTERRUPT_CHARS 300
void result_take_idle_interrupts(codecell_result *r, const json_t *frame);
/* {"status": …, "value": value (JSON text, omitted when NULL), then the members of rest}.
 * NULL when out of memory. */
char *result_json_splice(const codecell_result *r, const char *value, const json_t *rest,
                         bool pretty);
/* The one nesting rule of values (docs/results.md): a run's value, a tool's arguments and a
 * tool's answer hold at most this many arrays and objects one inside the other ([[1]] is 2).
 * The preludes keep the same figure (MAX_DEPTH), and say it in the same words. */
#define JSON_MAX_DEPTH 200
#define JSON_TOO_DEEP "nested deeper than 200 levels of arrays and objects (the limit)"

enum json_text { JSON_TEXT_OK, JSON_TEXT_INVALID, JSON_TEXT_TOO_DEEP };
/* Whether text[0..len) is exactly one JSON value (RFC 8259, valid UTF-8, no lone surrogate
 * escapes, no number a double reader would take for infinity, integers of any size), and at
 * most JSON_MAX_DEPTH levels deep. */
enum json_text json_text_check(const char *text, size_t len);
bool json_text_valid(const char *text, size_t len);
/* A copy of text[0..len), one valid JSON value (json_text_valid), without the whitespace
 * between its tokens: no line break is left in it. NULL when out of memory. */
char *json_text_compact(const char *text, size_t len);

#endif
