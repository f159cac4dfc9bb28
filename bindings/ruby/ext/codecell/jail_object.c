/* CodeCell::Native::Jail: one codecell_jail (include/codecell.h), for CodeCell.jail
 * (lib/codecell/jail.rb). Ruby forks with its own fork (Process.fork), both the child and
 * the jailed process, so that its after-fork work runs (threads of the parent marked dead,
 * its timer made anew, the random seed renewed, at-fork hooks): the child calls
 * #enter_namespaces, forks, and #keep; the jailed process #enter_walls and #answer; the parent
 * #wait, which releases the GVL. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ruby/thread.h>

#include "codecell_ext.h"

static const rb_data_type_t jail_type;

static void jail_free(void *p)
{
        codecell_jail_free(p);
}

static const rb_data_type_t jail_type = {
        .wrap_struct_name = "codecell_jail",
        .function = {.dfree = jail_free},
        .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

/* CodeCell::UnsupportedPlatformError (lib/codecell/jail_errors.rb) for a missing layer, else
 * as every other call raises. */
NORETURN(static void jail_raise(const codecell_error *err));
static void jail_raise(const codecell_error *err)
{
        if (err->kind == CODECELL_ERR_UNSUPPORTED)
                rb_raise(rb_path2class("CodeCell::UnsupportedPlatformError"), "%s", err->message);
        rbcc_raise(err);
}

static VALUE jail_alloc(VALUE klass)
{
        return TypedData_Wrap_Struct(klass, &jail_type, NULL);
}

static codecell_jail *open_jail(VALUE self)
{
        codecell_jail *j = rb_check_typeddata(self, &jail_type);
        if (!j)
                rb_raise(rbcc_eError, "this jail is closed");
        return j;
}

/* Raises unless every entry of list is a String without a NUL. */
static void check_paths(VALUE list, const char *what)
{
        Check_Type(list, T_ARRAY);
        for (long i = 0; i < RARRAY_LEN(list); i++) {
                VALUE s = rb_ary_entry(list, i);
                if (!RB_TYPE_P(s, T_STRING))
                        rb_raise(rb_eTypeError, "%s[%ld] must be a String", what, i);
                (void)StringValueCStr(s);
        }
}

/* A NULL-terminated array of the strings of a checked list (which keeps them alive); nothing
 * here raises but allocation. */
static const char **path_list(VALUE list)
{
        long n = RARRAY_LEN(list);
        const char **paths = ALLOC_N(const char *, n + 1);
        for (long i = 0; i < n; i++)
                paths[i] = RSTRING_PTR(rb_ary_entry(list, i));
        paths[n] = NULL;
        return paths;
}

/* The -1-terminated descriptors of a list of Integers (lib/codecell/jail.rb made them from
 * IO objects); the library checks that each is open. */
static int *fd_list(VALUE list)
{
        Check_Type(list, T_ARRAY);
        long n = RARRAY_LEN(list);
        for (long i = 0; i < n; i++) {
                if (!RB_INTEGER_TYPE_P(rb_ary_entry(list, i)))
                        rb_raise(rb_eTypeError, "keep_open[%ld] must be an Integer", i);
                (void)NUM2LONG(rb_ary_entry(list, i)); /* raises before anything is allocated */
        }
        int *fds = ALLOC_N(int, n + 1);
        for (long i = 0; i < n; i++) {
                long fd = NUM2LONG(rb_ary_entry(list, i));
                fds[i] = fd < 0 || fd > INT32_MAX ? -2 : (int)fd; /* -2: refused as negative */
        }
        fds[n] = -1;
        return fds;
}

/* new(timeout_ms, cpu_ms, memory_bytes, fs_allow, fs_read_allow, network, policy, keep_open) */
static VALUE jail_initialize(int argc, VALUE *argv, VALUE self)
{
        rb_check_arity(argc, 8, 8);
        VALUE timeout_ms = argv[0], cpu_ms = argv[1], memory_bytes = argv[2];
        VALUE fs_allow = argv[3], fs_read_allow = argv[4], network = argv[5], policy = argv[6];
        if (DATA_PTR(self))
                rb_raise(rbcc_eError, "jail already initialized");
        VALUE allow = rb_ary_dup(fs_allow), read = rb_ary_dup(fs_read_allow);
        check_paths(allow, "fs_allow");
        check_paths(read, "fs_read_allow");
        uint64_t limits[3] = {NUM2ULL(timeout_ms), NUM2ULL(cpu_ms), NUM2ULL(memory_bytes)};
        int on_unsupported = NUM2INT(policy);
        Check_Type(argv[7], T_ARRAY);
        VALUE keep_list = rb_ary_dup(argv[7]);
        int *keep = fd_list(keep_list);
        const char **allow_paths = path_list(allow);
        const char **read_paths = path_list(read);
        codecell_jail_options o = {
                .timeout_ms = limits[0],
                .cpu_ms = limits[1],
                .memory_bytes = limits[2],
                .fs_allow = allow_paths,
                .fs_read_allow = read_paths,
                .network = RTEST(network),
                .on_unsupported = (codecell_policy)on_unsupported,
                .keep_open = keep,
        };
        codecell_error err = {0};
        codecell_jail *j = codecell_jail_new(&o, &err);
        xfree(allow_paths);
        xfree(read_paths);
        xfree(keep);
        RB_GC_GUARD(allow);
        RB_GC_GUARD(read);
        RB_GC_GUARD(keep_list);
        if (!j)
                jail_raise(&err);
        DATA_PTR(self) = j;
        return self;
}

static VALUE jail_warnings(VALUE self)
{
        codecell_jail *j = open_jail(self);
        VALUE list = rb_ary_new();
        const char *w;
        for (size_t i = 0; (w = codecell_jail_warning(j, i)); i++)
                rb_ary_push(list, rbcc_utf8(w, strlen(w)));
        return list;
}

static VALUE jail_layers(VALUE self)
{
        const char *layers = codecell_jail_layers(open_jail(self));
        return rb_str_split(rbcc_utf8(layers, strlen(layers)), ",");
}

/* In the child: its namespaces; then Ruby forks the jailed process (Process.fork, so that
 * Ruby's own state, its timer among it, sees that fork too). */
static VALUE jail_enter_namespaces(VALUE self)
{
        codecell_jail_enter_namespaces(open_jail(self));
        return Qnil;
}

/* In the jailed process: the last walls. */
static VALUE jail_enter_walls(VALUE self)
{
        codecell_jail_enter_walls(open_jail(self));
        return Qnil;
}

/* In the child, once it forked the jailed process (pid, or nil when that fork failed): reaps
 * it and reports to the parent; never returns. */
static VALUE jail_keep(VALUE self, VALUE pid)
{
        codecell_jail_keep(open_jail(self), NIL_P(pid) ? -1 : NUM2INT(pid));
        return Qnil;
}

/* In the jailed process: answer(outcome, bytes). */
static VALUE jail_answer(VALUE self, VALUE outcome, VALUE data)
{
        StringValue(data);
        int r = codecell_jail_answer(open_jail(self), (codecell_jail_outcome)NUM2INT(outcome),
                                     RSTRING_PTR(data), (size_t)RSTRING_LEN(data));
        if (r < 0)
                rb_syserr_fail(-r, "codecell: answer");
        return Qnil;
}

struct wait_call {
        codecell_jail *jail;
        int pid;
        int pidfd; /* the child, for the unblocking function: never a recycled pid */
        codecell_jail_result result;
        codecell_error err;
        int r;
};

static void *wait_nogvl(void *p)
{
        struct wait_call *c = p;
        c->r = codecell_jail_wait(c->jail, c->pid, &c->result, &c->err);
        return NULL;
}

/* Ruby interrupts the waiting thread (Ctrl-C, Thread#kill, Timeout): the child is killed, and
 * the jailed process with it, so the wait ends at once. */
static void wait_ubf(void *p)
{
        struct wait_call *c = p;
        if (c->pidfd >= 0)
                (void)syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
}

static VALUE outcome_symbol(codecell_jail_outcome o)
{
        return ID2SYM(rb_intern(codecell_jail_outcome_name(o)));
}

/* wait(pid): {outcome:, cpu:, signal:, exit_code:, data:, duration_ms:, cpu_ms:,
 * memory_peak_bytes:} */
static VALUE jail_wait(VALUE self, VALUE pid)
{
        struct wait_call c = {.jail = open_jail(self), .pid = NUM2INT(pid)};
        c.pidfd = (int)syscall(SYS_pidfd_open, c.pid, 0);
        rb_thread_call_without_gvl(wait_nogvl, &c, wait_ubf, &c);
        if (c.pidfd >= 0)
                close(c.pidfd);
        if (c.r < 0)
                jail_raise(&c.err);
        codecell_jail_result *r = &c.result;
        VALUE h = rb_hash_new();
        rb_hash_aset(h, ID2SYM(rb_intern("outcome")), outcome_symbol(r->outcome));
        rb_hash_aset(h, ID2SYM(rb_intern("cpu")), r->cpu ? Qtrue : Qfalse);
        rb_hash_aset(h, ID2SYM(rb_intern("signal")), INT2NUM(r->signal));
        rb_hash_aset(h, ID2SYM(rb_intern("exit_code")), INT2NUM(r->exit_code));
        rb_hash_aset(h, ID2SYM(rb_intern("data")),
                     r->data ? rb_str_new(r->data, (long)r->len) : rb_str_new(NULL, 0));
        rb_hash_aset(h, ID2SYM(rb_intern("duration_ms")), DBL2NUM(r->duration_ms));
        rb_hash_aset(h, ID2SYM(rb_intern("cpu_ms")), DBL2NUM(r->cpu_ms));
        rb_hash_aset(h, ID2SYM(rb_intern("memory_peak_bytes")), LL2NUM(r->memory_peak_bytes));
        codecell_jail_result_clear(r);
        return h;
}

static VALUE jail_close(VALUE self)
{
        codecell_jail *j = rb_check_typeddata(self, &jail_type);
        DATA_PTR(self) = NULL;
        codecell_jail_free(j);
        return Qnil;
}

void rbcc_define_jail(VALUE mNative)
{
        VALUE cJail = rb_define_class_under(mNative, "Jail", rb_cObject);
        rb_define_alloc_func(cJail, jail_alloc);
        rb_define_method(cJail, "initialize", jail_initialize, -1);
        rb_define_method(cJail, "warnings", jail_warnings, 0);
        rb_define_method(cJail, "layers", jail_layers, 0);
        rb_define_method(cJail, "enter_namespaces", jail_enter_namespaces, 0);
        rb_define_method(cJail, "enter_walls", jail_enter_walls, 0);
        rb_define_method(cJail, "keep", jail_keep, 1);
        rb_define_method(cJail, "answer", jail_answer, 2);
        rb_define_method(cJail, "wait", jail_wait, 1);
        rb_define_method(cJail, "close", jail_close, 0);
        static const codecell_jail_outcome answers[] = {CODECELL_JAIL_VALUE, CODECELL_JAIL_RAISED,
                                                        CODECELL_JAIL_FILESYSTEM,
                                                        CODECELL_JAIL_MEMORY};
        VALUE outcomes = rb_hash_new();
        for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
                rb_hash_aset(outcomes, outcome_symbol(answers[i]), INT2NUM(answers[i]));
        rb_obj_freeze(outcomes);
        rb_define_const(cJail, "ANSWERS", outcomes);
}
