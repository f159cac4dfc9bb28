/* What a run or a session eval is given besides its code (Cell#run's timeout_ms:, stdin:,
 * argv:, env:, files:, on_output:), copied out of Ruby's heap before the GVL is released, and the
 * output callback, which the engine calls on the thread that waits for the run: that thread
 * released the GVL, so the callback takes it back for the block and lets go again. */
#include <stdlib.h>
#include <string.h>

#include <ruby/thread.h>

#include "codecell_ext.h"

static VALUE hash_get(VALUE hash, const char *key)
{
        return rb_hash_aref(hash, ID2SYM(rb_intern(key)));
}

static char *copy(VALUE s)
{
        char *c = strdup(StringValueCStr(s)); /* raises ArgumentError on a NUL */
        if (!c)
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        return c;
}

/* A NULL-terminated copy of an Array of Strings, into *ret (freed by rbcc_run_given_free even
 * when a later element raises). */
static void copy_list(VALUE list, char ***ret)
{
        if (NIL_P(list))
                return;
        Check_Type(list, T_ARRAY);
        long n = RARRAY_LEN(list);
        if (!(*ret = calloc((size_t)n + 1, sizeof(char *))))
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        for (long i = 0; i < n && i < RARRAY_LEN(list); i++)
                (*ret)[i] = copy(rb_ary_entry(list, i));
}

static char *copy_bytes(VALUE s, size_t *ret_len)
{
        StringValue(s);
        size_t len = (size_t)RSTRING_LEN(s);
        char *c = malloc(len + 1); /* + 1: a pointer of its own even for an empty file */
        if (!c)
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        memcpy(c, RSTRING_PTR(s), len);
        c[len] = '\0';
        *ret_len = len;
        return c;
}

/* The files as Cell.run_input checked them, an Array of [name, content] pairs, copied into
 * *ret: the run reads its own copies, since Ruby's GC may move or free the strings once the
 * GVL is released, and other threads may change them. An entry is filled name first, so the
 * list stays ended by a NULL name whatever raises (rbcc_run_given_free frees it all). */
static void copy_files(VALUE list, codecell_file **ret)
{
        if (NIL_P(list))
                return;
        Check_Type(list, T_ARRAY);
        long n = RARRAY_LEN(list);
        if (!(*ret = calloc((size_t)n + 1, sizeof(codecell_file))))
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        for (long i = 0; i < n && i < RARRAY_LEN(list); i++) {
                VALUE pair = rb_ary_entry(list, i);
                Check_Type(pair, T_ARRAY);
                if (RARRAY_LEN(pair) != 2)
                        rb_raise(rb_eArgError, "files[%ld]: a [name, content] pair", i);
                VALUE data = rb_ary_entry(pair, 1);
                StringValue(data); /* before the name: what raises leaves the list ended */
                (*ret)[i].name = copy(rb_ary_entry(pair, 0));
                (*ret)[i].data = copy_bytes(data, &(*ret)[i].len);
        }
}

void rbcc_run_given_read(VALUE hash, struct rbcc_run_given *in, codecell_run_options *o)
{
        if (NIL_P(hash))
                return;
        Check_Type(hash, T_HASH);
        VALUE timeout = hash_get(hash, "timeout_ms");
        if (!NIL_P(timeout))
                o->timeout_ms = NUM2SIZET(timeout);
        VALUE stdin_data = hash_get(hash, "stdin");
        if (!NIL_P(stdin_data)) {
                StringValue(stdin_data);
                in->stdin_len = (size_t)RSTRING_LEN(stdin_data);
                if (!(in->stdin_data = malloc(in->stdin_len + 1)))
                        rb_raise(rb_eNoMemError, "codecell: out of memory");
                memcpy(in->stdin_data, RSTRING_PTR(stdin_data), in->stdin_len);
                o->stdin_data = in->stdin_data;
                o->stdin_len = in->stdin_len;
        }
        copy_list(hash_get(hash, "argv"), &in->argv);
        copy_list(hash_get(hash, "env"), &in->env);
        o->argv = (const char *const *)in->argv;
        o->env = (const char *const *)in->env;
        copy_files(hash_get(hash, "files"), &in->files);
        o->files = in->files;
        in->output = hash_get(hash, "output");
        if (!NIL_P(in->output)) {
                o->output = rbcc_run_output;
                o->userdata = in;
        }
}

static void free_list(char **list)
{
        for (char **p = list; p && *p; p++)
                free(*p);
        free(list);
}

static void free_files(codecell_file *files)
{
        for (codecell_file *f = files; f && f->name; f++) {
                free((char *)f->name);
                free((void *)f->data);
        }
        free(files);
}

void rbcc_run_given_free(struct rbcc_run_given *in)
{
        free(in->stdin_data);
        free_files(in->files);
        in->files = NULL;
        free_list(in->argv);
        free_list(in->env);
        in->stdin_data = NULL;
        in->argv = in->env = NULL; /* raised stays: the caller raises it after this */
}

struct output_piece {
        struct rbcc_run_given *in;
        int stream;
        const char *data;
        size_t len;
};

static VALUE call_output(VALUE arg)
{
        struct output_piece *p = (struct output_piece *)arg;
        VALUE stream = ID2SYM(rb_intern(p->stream == 1 ? "stdout" : "stderr"));
        return rb_funcall(p->in->output, rb_intern("call"), 2, stream, rbcc_utf8(p->data, p->len));
}

/* Under the GVL. Whatever the block raises (or a throw, or Thread#kill) is held, the run is
 * cancelled, and the run's caller raises it once the run has ended. */
static void *output_with_gvl(void *arg)
{
        struct output_piece *p = arg;
        rb_protect(call_output, (VALUE)p, &p->in->raised);
        if (p->in->raised)
                codecell_cancel_trigger(p->in->cancel);
        return NULL;
}

void rbcc_run_output(int stream, const char *data, size_t len, void *userdata)
{
        struct rbcc_run_given *in = userdata;
        if (in->raised)
                return; /* the run is being cancelled: nothing more reaches the block */
        struct output_piece p = {in, stream, data, len};
        rb_thread_call_with_gvl(output_with_gvl, &p);
}
