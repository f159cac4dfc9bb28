/* CodeCell::Native: libcodecell for Ruby. The engine is compiled into this extension (the
 * gemspec copies its sources into engine/), so the installed gem needs nothing else. This file
 * is CodeCell::Native::Cell; result_object.c the results; tool_calls.c the host tools, Ruby
 * blocks the engine calls from its own threads; run_given.c what a run is given besides its
 * code.
 *
 * A run or a session eval releases the GVL (other Ruby threads go on) and is cancelled through
 * a codecell_cancel token when Ruby interrupts the thread (Ctrl-C, Thread#kill, Timeout). Every
 * other call that may wait (creating, warming up or freeing a cell, closing a session) releases
 * the GVL too. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ruby/encoding.h>
#include <ruby/thread.h>

#include "codecell_ext.h"

VALUE rbcc_eError;
static VALUE mNative, cNativeCell;

void rbcc_raise(const codecell_error *err)
{
        rb_raise(err->kind == CODECELL_ERR_INVALID ? rb_eArgError : rbcc_eError, "%s",
                 err->message);
}

VALUE rbcc_utf8(const char *s, size_t len)
{
        return rb_enc_str_new(s, (long)len, rb_utf8_encoding());
}

VALUE rbcc_take_string(char *s)
{
        if (!s)
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        VALUE v = rbcc_utf8(s, strlen(s));
        free(s);
        return v;
}

struct native_cell {
        codecell_cell *cell;
        struct rbcc_tool **tools;
        size_t tool_count;
        /* The approve block's key (tool_calls.c asks it like a tool); NULL: none. Replaced
         * ones stay until the cell is freed: a call may still be asking one. */
        struct rbcc_tool **approvals;
        size_t approval_count;
        uint64_t tool_wait_ms;
        size_t model_chars;
        long busy; /* runs, evals and warmups in progress (changed under the GVL only) */
};

static void *cell_free_nogvl(void *p)
{
        codecell_cell_free(p);
        return NULL;
}

/* Frees the engine's cell (which waits for its sandboxes) and then the tools' userdata, which
 * no handler uses once the cell is gone. */
static void native_cell_release(struct native_cell *nc, bool with_gvl)
{
        if (nc->cell) {
                codecell_cell *cell = nc->cell;
                nc->cell = NULL;
                if (with_gvl)
                        rb_thread_call_without_gvl(cell_free_nogvl, cell, RUBY_UBF_IO, NULL);
                else
                        codecell_cell_free(cell);
        }
        for (size_t i = 0; i < nc->tool_count; i++) {
                free(nc->tools[i]->id);
                free(nc->tools[i]);
        }
        free(nc->tools);
        nc->tools = NULL;
        nc->tool_count = 0;
        for (size_t i = 0; i < nc->approval_count; i++) {
                free(nc->approvals[i]->id);
                free(nc->approvals[i]);
        }
        free(nc->approvals);
        nc->approvals = NULL;
        nc->approval_count = 0;
}

static void native_cell_free(void *p)
{
        /* Reached only when #close was not called (the finalizer in lib/codecell/cell.rb calls
         * it); at exit, or after a failed initialize. */
        native_cell_release(p, false);
        free(p);
}

static const rb_data_type_t cell_type = {
        .wrap_struct_name = "CodeCell::Native::Cell",
        .function = {.dfree = native_cell_free},
        .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE native_cell_alloc(VALUE klass)
{
        struct native_cell *nc;
        return TypedData_Make_Struct(klass, struct native_cell, &cell_type, nc);
}

static struct native_cell *open_cell(VALUE self)
{
        struct native_cell *nc = rb_check_typeddata(self, &cell_type);
        if (!nc->cell)
                rb_raise(rbcc_eError, "the cell is closed");
        return nc;
}

struct config_args {
        VALUE language, mounts, limits, options;
        codecell_config *config;
        codecell_error err;
};

static VALUE hash_get(VALUE hash, const char *key)
{
        return rb_hash_aref(hash, ID2SYM(rb_intern(key)));
}

/* Builds the configuration; raises (after the caller's ensure frees it) on any bad input. */
static VALUE build_config(VALUE arg)
{
        struct config_args *a = (struct config_args *)arg;
        codecell_error *err = &a->err;
        a->config = codecell_config_new(StringValueCStr(a->language), err);
        if (!a->config)
                rbcc_raise(err);
        for (long i = 0; i < RARRAY_LEN(a->mounts); i++) {
                VALUE m = rb_ary_entry(a->mounts, i);
                Check_Type(m, T_HASH);
                VALUE source = hash_get(m, "source"), dest = hash_get(m, "dest");
                VALUE mode = hash_get(m, "mode"), description = hash_get(m, "description");
                codecell_mount_mode parsed = CODECELL_MOUNT_READ_ONLY;
                if (!NIL_P(mode) && !codecell_mount_mode_parse(StringValueCStr(mode), &parsed))
                        rb_raise(rb_eArgError, "mount %" PRIsVALUE ": mode must be ro, rw or exec",
                                 dest);
                if (codecell_config_add_mount_mode(
                            a->config, StringValueCStr(source), StringValueCStr(dest), parsed,
                            NIL_P(description) ? NULL : StringValueCStr(description), err) < 0)
                        rbcc_raise(err);
        }
        for (long i = 0; i < RARRAY_LEN(a->limits); i++) {
                VALUE pair = rb_ary_entry(a->limits, i); /* [limit number, value] */
                if (codecell_config_set_limit(a->config, NUM2INT(rb_ary_entry(pair, 0)),
                                              NUM2ULL(rb_ary_entry(pair, 1)), err) < 0)
                        rbcc_raise(err);
        }
        VALUE pool = hash_get(a->options, "pool");
        if (!NIL_P(pool) && codecell_config_set_pool(a->config, NUM2SIZET(pool), err) < 0)
                rbcc_raise(err);
        VALUE policy = hash_get(a->options, "policy");
        if (!NIL_P(policy))
                codecell_config_set_policy(a->config, NUM2INT(policy));
        VALUE output_folder = hash_get(a->options, "output_folder");
        if (!NIL_P(output_folder) &&
            codecell_config_set_output_folder(a->config, StringValueCStr(output_folder), err) < 0)
                rbcc_raise(err);
        codecell_config_set_subprocesses(a->config, RTEST(hash_get(a->options, "subprocesses")));
        VALUE network = hash_get(a->options, "network"); /* JSON text, made by Cell.native_args */
        if (!NIL_P(network) &&
            codecell_config_set_network(a->config, StringValueCStr(network), err) < 0)
                rbcc_raise(err);
        return Qnil;
}

static VALUE free_config(VALUE arg)
{
        struct config_args *a = (struct config_args *)arg;
        codecell_config_free(a->config);
        a->config = NULL;
        return Qnil;
}

struct cell_new_args {
        codecell_config *config;
        codecell_cell *cell;
        codecell_error *err;
};

static void *cell_new_nogvl(void *p)
{
        struct cell_new_args *a = p;
        a->cell = codecell_cell_new(a->config, a->err);
        return NULL;
}

/* Native::Cell.check(language, mounts, limits, options): the configuration is valid (the
 * seed's class-definition errors), without creating a cell. */
static VALUE native_cell_check(VALUE klass, VALUE language, VALUE mounts, VALUE limits,
                               VALUE options)
{
        (void)klass;
        struct config_args a = {language, mounts, limits, options, NULL, {0}};
        Check_Type(mounts, T_ARRAY);
        Check_Type(limits, T_ARRAY);
        Check_Type(options, T_HASH);
        rb_ensure(build_config, (VALUE)&a, free_config, (VALUE)&a);
        return Qtrue;
}

struct initialize_args {
        struct config_args config;
        struct native_cell *nc;
};

static VALUE initialize_body(VALUE arg)
{
        struct initialize_args *a = (struct initialize_args *)arg;
        build_config((VALUE)&a->config);
        struct cell_new_args n = {a->config.config, NULL, &a->config.err};
        rb_thread_call_without_gvl(cell_new_nogvl, &n, RUBY_UBF_IO, NULL);
        if (!n.cell)
                rbcc_raise(&a->config.err);
        a->nc->cell = n.cell;
        /* The engine waits for an in-process handler as long as it takes; a block is given
         * the time a command tool gets. */
        a->nc->tool_wait_ms =
                codecell_config_get_limit(a->config.config, CODECELL_LIMIT_TOOL_CALL_MS);
        a->nc->model_chars =
                codecell_config_get_limit(a->config.config, CODECELL_LIMIT_MODEL_CHARS);
        return Qnil;
}

static VALUE native_cell_initialize(VALUE self, VALUE language, VALUE mounts, VALUE limits,
                                    VALUE options)
{
        Check_Type(mounts, T_ARRAY);
        Check_Type(limits, T_ARRAY);
        Check_Type(options, T_HASH);
        struct initialize_args a = {{language, mounts, limits, options, NULL, {0}},
                                    rb_check_typeddata(self, &cell_type)};
        if (a.nc->cell)
                rb_raise(rbcc_eError, "the cell is initialized already");
        rb_ensure(initialize_body, (VALUE)&a, free_config, (VALUE)&a.config);
        return self;
}

/* add_tool(name, description, schema_json, tool_id) */
static VALUE native_cell_add_tool(VALUE self, VALUE name, VALUE description, VALUE schema,
                                  VALUE tool_id)
{
        struct native_cell *nc = open_cell(self);
        struct rbcc_tool **grown = realloc(nc->tools, (nc->tool_count + 1) * sizeof(*grown));
        if (!grown)
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        nc->tools = grown;
        struct rbcc_tool *t = calloc(1, sizeof(*t));
        if (!t || !(t->id = strdup(StringValueCStr(tool_id)))) {
                free(t);
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        }
        t->wait_ms = nc->tool_wait_ms;
        codecell_error err = {0};
        if (codecell_cell_add_tool(nc->cell, StringValueCStr(name),
                                   NIL_P(description) ? NULL : StringValueCStr(description),
                                   NIL_P(schema) ? NULL : StringValueCStr(schema),
                                   rbcc_tool_handler, t, &err) < 0) {
                free(t->id);
                free(t);
                rbcc_raise(&err);
        }
        nc->tools[nc->tool_count++] = t;
        return Qnil;
}

/* set_approval(key or nil): the block filed under key answers each approval (tool_calls.c). */
static VALUE native_cell_set_approval(VALUE self, VALUE key)
{
        struct native_cell *nc = open_cell(self);
        if (NIL_P(key)) {
                codecell_cell_set_approval(nc->cell, NULL, NULL);
                return Qnil;
        }
        struct rbcc_tool **grown =
                realloc(nc->approvals, (nc->approval_count + 1) * sizeof(*grown));
        if (!grown)
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        nc->approvals = grown;
        struct rbcc_tool *t = calloc(1, sizeof(*t));
        if (!t || !(t->id = strdup(StringValueCStr(key)))) {
                free(t);
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        }
        nc->approvals[nc->approval_count++] = t;
        codecell_cell_set_approval(nc->cell, rbcc_approval, t);
        return Qnil;
}

/* require_approval(name) */
static VALUE native_cell_require_approval(VALUE self, VALUE name)
{
        struct native_cell *nc = open_cell(self);
        codecell_error err = {0};
        if (codecell_cell_require_approval(nc->cell, StringValueCStr(name), &err) < 0)
                rbcc_raise(&err);
        return Qnil;
}

struct run_args {
        struct native_cell *nc;
        codecell_cell *cell;
        const char *session; /* NULL: a run */
        char *code;
        size_t len;
        codecell_cancel *cancel;
        VALUE given; /* the options Hash (run_given.c), or nil */
        struct rbcc_run_given in;
        codecell_run_options options;
        codecell_result *result;
        codecell_error err;
        int r;
};

static void *run_nogvl(void *p)
{
        struct run_args *a = p;
        if (a->session)
                a->r = codecell_session_eval_with(a->cell, a->session, a->code, a->len, &a->options,
                                                  &a->result, &a->err);
        else
                a->r = codecell_cell_run_with(a->cell, a->code, a->len, &a->options, &a->result,
                                              &a->err);
        return NULL;
}

static void cancel_run(void *p)
{
        codecell_cancel_trigger(((struct run_args *)p)->cancel);
}

static VALUE run_body(VALUE arg)
{
        struct run_args *a = (struct run_args *)arg;
        a->options.cancel = a->in.cancel = a->cancel;
        rbcc_run_given_read(a->given, &a->in, &a->options);
        rb_thread_call_without_gvl(run_nogvl, a, cancel_run, a);
        return Qnil;
}

/* Calls fn without the GVL while the cell counts as busy (see native_cell_close). */
static void call_busy(struct native_cell *nc, void *(*fn)(void *), void *arg)
{
        nc->busy++;
        rb_thread_call_without_gvl(fn, arg, RUBY_UBF_IO, NULL);
        nc->busy--;
}

static VALUE run_cleanup(VALUE arg)
{
        struct run_args *a = (struct run_args *)arg;
        a->nc->busy--;
        free(a->code);
        codecell_cancel_free(a->cancel);
        rbcc_run_given_free(&a->in);
        return Qnil;
}

static VALUE cell_run_or_eval(VALUE self, VALUE session, VALUE code, VALUE given)
{
        struct native_cell *nc = open_cell(self);
        StringValue(code);
        struct run_args a = {
                .nc = nc, .cell = nc->cell, .len = (size_t)RSTRING_LEN(code), .given = given};
        /* The run reads its own copies: Ruby may move or change the strings meanwhile. */
        VALUE session_copy = Qnil;
        if (!NIL_P(session)) {
                session_copy = rb_str_new_frozen(session);
                a.session = StringValueCStr(session_copy);
        }
        a.code = malloc(a.len + 1);
        if (!a.code)
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        memcpy(a.code, RSTRING_PTR(code), a.len);
        a.code[a.len] = '\0';
        a.cancel = codecell_cancel_new(&a.err);
        if (!a.cancel) {
                free(a.code);
                rbcc_raise(&a.err);
        }
        nc->busy++; /* run_cleanup counts it down */
        rb_ensure(run_body, (VALUE)&a, run_cleanup, (VALUE)&a);
        RB_GC_GUARD(session_copy);
        RB_GC_GUARD(self);
        RB_GC_GUARD(given); /* holds the output block the engine called */
        if (a.in.raised) {  /* the output block raised: the run was cancelled for it */
                codecell_result_free(a.result);
                rb_jump_tag(a.in.raised);
        }
        if (a.r < 0) {
                codecell_result_free(a.result);
                rbcc_raise(&a.err);
        }
        /* An interrupt that cancelled the run is raised now; the result is dropped. */
        VALUE result = rbcc_result_wrap(a.result);
        rb_thread_check_ints();
        if (!a.result) /* an interrupt came before the run started, and did not raise */
                rb_raise(rbcc_eError, "the run was interrupted before it started");
        return result;
}

/* run(code, options): options as run_given.c reads them, or nil. */
static VALUE native_cell_run(VALUE self, VALUE code, VALUE options)
{
        return cell_run_or_eval(self, Qnil, code, options);
}

static VALUE native_cell_session_eval(VALUE self, VALUE name, VALUE code, VALUE options)
{
        StringValue(name);
        return cell_run_or_eval(self, name, code, options);
}

struct close_args {
        codecell_cell *cell;
        const char *name;
        codecell_error err;
        int r;
};

static void *session_close_nogvl(void *p)
{
        struct close_args *a = p;
        a->r = codecell_session_close(a->cell, a->name, &a->err);
        return NULL;
}

/* session_close(name): true when a session was closed, false when there was none. */
static VALUE native_cell_session_close(VALUE self, VALUE name)
{
        struct native_cell *nc = open_cell(self);
        VALUE copy = rb_str_new_frozen(name);
        struct close_args a = {nc->cell, StringValueCStr(copy), {0}, 0};
        call_busy(nc, session_close_nogvl, &a);
        RB_GC_GUARD(copy);
        if (a.r == -ENOENT)
                return Qfalse;
        if (a.r < 0)
                rbcc_raise(&a.err);
        return Qtrue;
}

struct park_args {
        codecell_cell *cell;
        const char *name, *as; /* as: a fork's name, or NULL to park name */
        codecell_error err;
        int r;
};

static void *session_park_nogvl(void *p)
{
        struct park_args *a = p;
        a->r = a->as ? codecell_session_fork(a->cell, a->name, a->as, &a->err)
                     : codecell_session_park(a->cell, a->name, &a->err);
        return NULL;
}

/* session_park(name) and session_fork(name, as) (docs/sessions.md, Parked sessions): nil, or
 * raise. Both wait for an eval of name in progress, so without the GVL. */
static VALUE park_or_fork(VALUE self, VALUE name, VALUE as)
{
        struct native_cell *nc = open_cell(self);
        VALUE copy = rb_str_new_frozen(name);
        VALUE as_copy = NIL_P(as) ? Qnil : rb_str_new_frozen(as);
        struct park_args a = {nc->cell,
                              StringValueCStr(copy),
                              NIL_P(as_copy) ? NULL : StringValueCStr(as_copy),
                              {0},
                              0};
        call_busy(nc, session_park_nogvl, &a);
        RB_GC_GUARD(copy);
        RB_GC_GUARD(as_copy);
        if (a.r < 0)
                rbcc_raise(&a.err);
        return Qnil;
}

static VALUE native_cell_session_park(VALUE self, VALUE name)
{
        return park_or_fork(self, name, Qnil);
}

static VALUE native_cell_session_fork(VALUE self, VALUE name, VALUE as)
{
        StringValue(as);
        return park_or_fork(self, name, as);
}

static VALUE native_cell_sessions(VALUE self)
{
        char **names = codecell_session_list(open_cell(self)->cell);
        if (!names)
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        VALUE list = rb_ary_new();
        for (char **n = names; *n; n++) {
                rb_ary_push(list, rb_str_new_cstr(*n));
                free(*n);
        }
        free(names);
        return list;
}

struct warmup_args {
        codecell_cell *cell;
        codecell_error err;
        int r;
};

static void *warmup_nogvl(void *p)
{
        struct warmup_args *a = p;
        a->r = codecell_cell_warmup(a->cell, &a->err);
        return NULL;
}

static VALUE native_cell_warmup(VALUE self)
{
        struct native_cell *nc = open_cell(self);
        struct warmup_args a = {nc->cell, {0}, 0};
        call_busy(nc, warmup_nogvl, &a);
        if (a.r < 0)
                rbcc_raise(&a.err);
        return self;
}

static VALUE native_cell_description(VALUE self)
{
        const char *d = codecell_cell_description(open_cell(self)->cell);
        return rbcc_utf8(d, strlen(d));
}

static VALUE native_cell_warnings(VALUE self)
{
        codecell_cell *cell = open_cell(self)->cell;
        VALUE list = rb_ary_new();
        const char *w;
        for (size_t i = 0; (w = codecell_cell_warning(cell, i)); i++)
                rb_ary_push(list, rbcc_utf8(w, strlen(w)));
        return list;
}

static VALUE native_cell_model_chars(VALUE self)
{
        return SIZET2NUM(open_cell(self)->model_chars);
}

/* info: a Hash of the cell's state now. */
static VALUE native_cell_info(VALUE self)
{
        codecell_cell_info info;
        codecell_cell_info_get(open_cell(self)->cell, &info);
        VALUE h = rb_hash_new();
        rb_hash_aset(h, ID2SYM(rb_intern("language")), rb_str_new_cstr(info.language));
        rb_hash_aset(h, ID2SYM(rb_intern("pool_size")), SIZET2NUM(info.pool_size));
        rb_hash_aset(h, ID2SYM(rb_intern("pool_ready")), SIZET2NUM(info.pool_ready));
        rb_hash_aset(h, ID2SYM(rb_intern("sessions_open")), SIZET2NUM(info.sessions_open));
        rb_hash_aset(h, ID2SYM(rb_intern("tools")), SIZET2NUM(info.tools));
        return h;
}

static VALUE native_cell_close(VALUE self)
{
        struct native_cell *nc = rb_check_typeddata(self, &cell_type);
        /* The engine's cell must outlive every call into it. */
        if (nc->busy > 0)
                rb_raise(rbcc_eError, "close: %ld runs of this cell are still going on", nc->busy);
        native_cell_release(nc, true);
        return Qnil;
}

static VALUE native_cell_closed_p(VALUE self)
{
        return ((struct native_cell *)rb_check_typeddata(self, &cell_type))->cell ? Qfalse : Qtrue;
}

RUBY_FUNC_EXPORTED void Init_codecell_ext(void)
{
        VALUE mCodeCell = rb_define_module("CodeCell");
        rbcc_eError = rb_define_class_under(mCodeCell, "Error", rb_eStandardError);
        mNative = rb_define_module_under(mCodeCell, "Native");

        /* The limits by their names in the configuration file (docs/configuration.md), as the
         * engine names them. */
        VALUE limits = rb_hash_new();
        /* Up to the slots: a number no limit has yet has no name, and later ones do. */
        for (int i = 0; i < CODECELL_LIMIT_SLOTS; i++) {
                const char *name = codecell_limit_name((codecell_limit)i);
                if (name)
                        rb_hash_aset(limits, ID2SYM(rb_intern(name)), INT2NUM(i));
        }
        rb_obj_freeze(limits);
        rb_define_const(mNative, "LIMITS", limits);
        VALUE policies = rb_hash_new();
        rb_hash_aset(policies, ID2SYM(rb_intern("warn")), INT2NUM(CODECELL_POLICY_WARN));
        rb_hash_aset(policies, ID2SYM(rb_intern("raise")), INT2NUM(CODECELL_POLICY_RAISE));
        rb_hash_aset(policies, ID2SYM(rb_intern("ignore")), INT2NUM(CODECELL_POLICY_IGNORE));
        rb_obj_freeze(policies);
        rb_define_const(mNative, "POLICIES", policies);

        cNativeCell = rb_define_class_under(mNative, "Cell", rb_cObject);
        rb_define_alloc_func(cNativeCell, native_cell_alloc);
        rb_define_singleton_method(cNativeCell, "check", native_cell_check, 4);
        rb_define_method(cNativeCell, "initialize", native_cell_initialize, 4);
        rb_define_method(cNativeCell, "add_tool", native_cell_add_tool, 4);
        rb_define_method(cNativeCell, "set_approval", native_cell_set_approval, 1);
        rb_define_method(cNativeCell, "require_approval", native_cell_require_approval, 1);
        rb_define_method(cNativeCell, "run", native_cell_run, 2);
        rb_define_method(cNativeCell, "session_eval", native_cell_session_eval, 3);
        rb_define_method(cNativeCell, "session_close", native_cell_session_close, 1);
        rb_define_method(cNativeCell, "session_park", native_cell_session_park, 1);
        rb_define_method(cNativeCell, "session_fork", native_cell_session_fork, 2);
        rb_define_method(cNativeCell, "sessions", native_cell_sessions, 0);
        rb_define_method(cNativeCell, "warmup", native_cell_warmup, 0);
        rb_define_method(cNativeCell, "description", native_cell_description, 0);
        rb_define_method(cNativeCell, "warnings", native_cell_warnings, 0);
        rb_define_method(cNativeCell, "model_chars", native_cell_model_chars, 0);
        rb_define_method(cNativeCell, "info", native_cell_info, 0);
        rb_define_method(cNativeCell, "close", native_cell_close, 0);
        rb_define_method(cNativeCell, "closed?", native_cell_closed_p, 0);

        rbcc_define_result(mNative);
        rbcc_define_tool_calls(mNative);
        rbcc_define_jail(mNative);
}
