/* What the files of CodeCell::Native share (codecell_ext.c describes the whole). */
#ifndef CODECELL_EXT_H
#define CODECELL_EXT_H

#include <stdint.h>

#include <ruby.h>

#include "codecell.h"

/* CodeCell::Error, for failures of the engine; bad input raises ArgumentError. */
extern VALUE rbcc_eError;
NORETURN(void rbcc_raise(const codecell_error *err));
VALUE rbcc_utf8(const char *s, size_t len);
/* Takes ownership of a malloc'd string (NULL: out of memory, raised). */
VALUE rbcc_take_string(char *s);

/* result_object.c: CodeCell::Native::Result, which owns a codecell_result. */
VALUE rbcc_result_wrap(codecell_result *result);
void rbcc_define_result(VALUE mNative);

/* tool_calls.c: a host tool's handler on engine threads, and the calls it queues for Ruby
 * (Native.next_call, CodeCell::Native::Call). */
struct rbcc_tool {
        char *id;         /* the key the dispatcher finds the block by */
        uint64_t wait_ms; /* how long to wait for Ruby: the cell's tool_call_ms */
};
int rbcc_tool_handler(const char *args_json, char **ret_json, char **ret_error, void *userdata);
/* The approval callback: asks the approve block filed under the rbcc_tool's id (userdata) as
 * a call with {"tool": name, "args": arguments}, for at most the request's wait_ms. Its answer
 * true accepts, a string declines with that reason, anything else declines. */
int rbcc_approval(const codecell_approval_request *request, char **ret_reason, void *userdata);
void rbcc_define_tool_calls(VALUE mNative);

/* run_given.c: a run's options from a Ruby Hash ({timeout_ms:, stdin:, argv: [String],
 * env: ["NAME=VALUE"], files: [[name, content]], output: callable}), in memory of their own for
 * the run without the GVL. */
struct rbcc_run_given {
        char *stdin_data;
        size_t stdin_len;
        char **argv, **env;      /* NULL-terminated, or NULL */
        codecell_file *files;    /* ended by a NULL name (names and data malloc'd), or NULL */
        VALUE output;            /* called with (:stdout | :stderr, text); the Hash holds it */
        codecell_cancel *cancel; /* the run's, triggered when output raises */
        int raised;              /* rb_protect's state of what output raised; 0: nothing */
};
/* Fills in and o from hash (nil: nothing); raises on a bad value, after which
 * rbcc_run_given_free still frees what was copied. */
void rbcc_run_given_read(VALUE hash, struct rbcc_run_given *in, codecell_run_options *o);
void rbcc_run_given_free(struct rbcc_run_given *in);
void rbcc_run_output(int stream, const char *data, size_t len, void *userdata);

/* jail_object.c: CodeCell::Native::Jail, for CodeCell.jail. */
void rbcc_define_jail(VALUE mNative);

#endif
