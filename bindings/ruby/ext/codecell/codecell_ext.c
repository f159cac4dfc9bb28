/* CodeCell::Native: libcodecell for Ruby. The engine is compiled into this extension (the
 * gemspec copies its sources here), so the installed gem needs nothing else.
 *
 * Two rules shape this file:
 *  - a run or a session eval releases the GVL (other Ruby threads go on) and is cancelled
 *    through a codecell_cancel token when Ruby interrupts the thread (Ctrl-C, Thread#kill);
 *  - host tools are Ruby blocks, but the engine calls its handlers on threads Ruby does not
 *    know, which may never touch a Ruby object. A handler queues the call and waits; one Ruby
 *    thread (the dispatcher, lib/codecell/dispatcher.rb) takes calls off the queue with
 *    Native.next_call and answers each from its own Ruby thread. A handler gives up after the
 *    tool's time limit (and a margin), so an engine thread never waits on a Ruby that stopped
 *    answering; a call answered late is freed by whichever side lets go of it last. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ruby.h>
#include <ruby/encoding.h>
#include <ruby/thread.h>

#include "codecell.h"

static VALUE mNative, cNativeCell, cNativeResult, cCall, eError;

static void raise_error(const codecell_error *err)
{
        rb_raise(err->kind == CODECELL_ERR_INVALID ? rb_eArgError : eError, "%s", err->message);
}

/* ---- results ------------------------------------------------------------------------- */

static void result_free(void *p)
{
        codecell_result_free(p);
}

static const rb_data_type_t result_type = {
        .wrap_struct_name = "CodeCell::Native::Result",
        .function = {.dfree = result_free},
        .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static codecell_result *result_of(VALUE self)
{
        return rb_check_typeddata(self, &result_type);
}

static VALUE utf8_string(const char *s, size_t len)
{
        return rb_enc_str_new(s, (long)len, rb_utf8_encoding());
}

/* Takes ownership of a malloc'd string. */
static VALUE take_string(char *s)
{
        if (!s)
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        VALUE v = utf8_string(s, strlen(s));
        free(s);
        return v;
}

static VALUE result_to_json(VALUE self)
{
        return take_string(codecell_result_to_json(result_of(self), false));
}

static VALUE result_model_json(VALUE self, VALUE max_chars, VALUE details)
{
        return take_string(
                codecell_result_to_model_json(result_of(self), NUM2SIZET(max_chars), RTEST(details)));
}

static VALUE result_value_json(VALUE self)
{
        const char *v = codecell_result_value(result_of(self));
        return v ? utf8_string(v, strlen(v)) : Qnil;
}

/* [[mime_type, bytes], …] */
static VALUE result_images(VALUE self)
{
        codecell_result *r = result_of(self);
        size_t n = codecell_result_image_count(r);
        VALUE list = rb_ary_new_capa((long)n);
        for (size_t i = 0; i < n; i++) {
                size_t len = 0;
                const char *mime = NULL;
                const void *bytes = codecell_result_image(r, i, &len, &mime);
                if (!bytes)
                        break;
                rb_ary_push(list, rb_ary_new_from_args(2, rb_str_new_cstr(mime),
                                                       rb_str_new(bytes, (long)len)));
        }
        return list;
}

/* ---- host tool calls ------------------------------------------------------------------- */

/* One call from the guest, shared by the engine thread that waits for it and the Ruby object
 * that answers it; freed by the last of the two to let go. */
struct call {
        struct call *next;
        int refs; /* under queue_lock */
        bool answered;
        int status;
        char *tool_id; /* which tool: the key the dispatcher finds the block by */
        char *args_json;
        char *answer; /* JSON when status is 0, else the error message */
        pthread_cond_t answered_cond;
};

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static struct call *queue_head, *queue_tail;
static bool queue_wake; /* the dispatcher is asked to return to Ruby (an interrupt) */

static void call_unref_locked(struct call *c)
{
        if (--c->refs > 0)
                return;
        pthread_cond_destroy(&c->answered_cond);
        free(c->tool_id);
        free(c->args_json);
        free(c->answer);
        free(c);
}

/* What a handler's userdata holds: the tool's key, and how long to wait for Ruby (the cell's
 * tool_call_ms). */
struct tool_ref {
        char *id;
        uint64_t wait_ms;
};

static int tool_handler(const char *args_json, char **ret_json, char **ret_error, void *userdata)
{
        struct tool_ref *tool = userdata;
        struct call *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->tool_id = strdup(tool->id);
        c->args_json = strdup(args_json);
        if (!c->tool_id || !c->args_json) {
                free(c->tool_id);
                free(c->args_json);
                free(c);
                return -ENOMEM;
        }
        c->refs = 2; /* this thread, and the queue (then the Ruby object) */
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&c->answered_cond, &attr);
        pthread_condattr_destroy(&attr);

        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += (time_t)(tool->wait_ms / 1000);
        deadline.tv_nsec += (long)(tool->wait_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
        }

        pthread_mutex_lock(&queue_lock);
        if (queue_tail)
                queue_tail->next = c;
        else
                queue_head = c;
        queue_tail = c;
        pthread_cond_broadcast(&queue_cond);
        while (!c->answered) {
                if (pthread_cond_timedwait(&c->answered_cond, &queue_lock, &deadline) == ETIMEDOUT)
                        break;
        }
        int r;
        if (c->answered) {
                r = c->status;
                if (!c->answer) /* no memory for the message */
                        r = -ENOMEM;
                if (r == 0)
                        *ret_json = c->answer;
                else
                        *ret_error = c->answer;
                c->answer = NULL;
        } else {
                r = -ETIMEDOUT;
                char message[128];
                snprintf(message, sizeof(message),
                         "the tool did not answer within %llu ms (the limit tool_call_ms)",
                         (unsigned long long)tool->wait_ms);
                *ret_error = strdup(message);
        }
        call_unref_locked(c);
        pthread_mutex_unlock(&queue_lock);
        return r;
}

static void call_object_free(void *p)
{
        struct call *c = p;
        pthread_mutex_lock(&queue_lock);
        /* The Ruby thread that had it ended without an answer (Thread#kill): the guest need
         * not wait for the limit. */
        if (!c->answered) {
                c->answered = true;
                c->status = -EIO;
                c->answer = strdup("the Ruby thread answering this call ended without an answer");
                pthread_cond_signal(&c->answered_cond);
        }
        call_unref_locked(c);
        pthread_mutex_unlock(&queue_lock);
}

static const rb_data_type_t call_type = {
        .wrap_struct_name = "CodeCell::Native::Call",
        .function = {.dfree = call_object_free},
        .flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static void *wait_for_call(void *arg)
{
        struct call **ret = arg;
        pthread_mutex_lock(&queue_lock);
        while (!queue_head && !queue_wake)
                pthread_cond_wait(&queue_cond, &queue_lock);
        queue_wake = false;
        *ret = queue_head;
        if (queue_head) {
                queue_head = queue_head->next;
                if (!queue_head)
                        queue_tail = NULL;
                (*ret)->next = NULL;
        }
        pthread_mutex_unlock(&queue_lock);
        return NULL;
}

static void wake_dispatcher(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&queue_lock);
        queue_wake = true;
        pthread_cond_broadcast(&queue_cond);
        pthread_mutex_unlock(&queue_lock);
}

/* Native.next_call: the next call from any engine thread (the GVL released while waiting), or
 * nil when the thread was interrupted (its interrupt is then raised here). */
static VALUE native_next_call(VALUE self)
{
        (void)self;
        struct call *c = NULL;
        rb_thread_call_without_gvl(wait_for_call, &c, wake_dispatcher, NULL);
        if (!c) {
                rb_thread_check_ints();
                return Qnil;
        }
        /* The queue's reference becomes the object's. */
        return TypedData_Wrap_Struct(cCall, &call_type, c);
}

static struct call *call_of(VALUE self)
{
        return rb_check_typeddata(self, &call_type);
}

static VALUE call_tool_id(VALUE self)
{
        return rb_str_new_cstr(call_of(self)->tool_id);
}

static VALUE call_args_json(VALUE self)
{
        return utf8_string(call_of(self)->args_json, strlen(call_of(self)->args_json));
}

static VALUE call_answer(VALUE self, int status, VALUE text)
{
        struct call *c = call_of(self);
        char *copy = strndup(RSTRING_PTR(text), (size_t)RSTRING_LEN(text));
        if (!copy)
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        pthread_mutex_lock(&queue_lock);
        if (c->answered) {
                pthread_mutex_unlock(&queue_lock);
                free(copy);
                rb_raise(eError, "this tool call was answered already");
        }
        c->answered = true;
        c->status = status;
        c->answer = copy;
        pthread_cond_signal(&c->answered_cond);
        pthread_mutex_unlock(&queue_lock);
        return Qnil;
}

/* Call#reply(json): the block's value as JSON text. */
static VALUE call_reply(VALUE self, VALUE json)
{
        StringValue(json);
        return call_answer(self, 0, json);
}

/* Call#fail(message): the guest gets SB::ToolError with this message. */
static VALUE call_fail(VALUE self, VALUE message)
{
        StringValue(message);
        return call_answer(self, -EIO, message);
}

/* ---- cells ------------------------------------------------------------------------------ */

struct native_cell {
        codecell_cell *cell;
        struct tool_ref **tools;
        size_t tool_count;
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
                rb_raise(eError, "the cell is closed");
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
                raise_error(err);
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
                        raise_error(err);
        }
        for (long i = 0; i < RARRAY_LEN(a->limits); i++) {
                VALUE pair = rb_ary_entry(a->limits, i); /* [limit number, value] */
                if (codecell_config_set_limit(a->config, NUM2INT(rb_ary_entry(pair, 0)),
                                              NUM2ULL(rb_ary_entry(pair, 1)), err) < 0)
                        raise_error(err);
        }
        VALUE pool = hash_get(a->options, "pool");
        if (!NIL_P(pool) && codecell_config_set_pool(a->config, NUM2SIZET(pool), err) < 0)
                raise_error(err);
        VALUE policy = hash_get(a->options, "policy");
        if (!NIL_P(policy))
                codecell_config_set_policy(a->config, NUM2INT(policy));
        VALUE image_folder = hash_get(a->options, "image_folder");
        if (!NIL_P(image_folder) &&
            codecell_config_set_image_folder(a->config, StringValueCStr(image_folder), err) < 0)
                raise_error(err);
        codecell_config_set_subprocesses(a->config, RTEST(hash_get(a->options, "subprocesses")));
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
                raise_error(&a->config.err);
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
                rb_raise(eError, "the cell is initialized already");
        rb_ensure(initialize_body, (VALUE)&a, free_config, (VALUE)&a.config);
        return self;
}

/* add_tool(name, description, schema_json, tool_id) */
static VALUE native_cell_add_tool(VALUE self, VALUE name, VALUE description, VALUE schema,
                                  VALUE tool_id)
{
        struct native_cell *nc = open_cell(self);
        struct tool_ref **grown = realloc(nc->tools, (nc->tool_count + 1) * sizeof(*grown));
        if (!grown)
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        nc->tools = grown;
        struct tool_ref *t = calloc(1, sizeof(*t));
        if (!t || !(t->id = strdup(StringValueCStr(tool_id)))) {
                free(t);
                rb_raise(rb_eNoMemError, "codecell: out of memory");
        }
        t->wait_ms = nc->tool_wait_ms;
        codecell_error err = {0};
        if (codecell_cell_add_tool(nc->cell, StringValueCStr(name),
                                   NIL_P(description) ? NULL : StringValueCStr(description),
                                   NIL_P(schema) ? NULL : StringValueCStr(schema), tool_handler, t,
                                   &err) < 0) {
                free(t->id);
                free(t);
                raise_error(&err);
        }
        nc->tools[nc->tool_count++] = t;
        return Qnil;
}

struct run_args {
        struct native_cell *nc;
        codecell_cell *cell;
        const char *session; /* NULL: a run */
        char *code;
        size_t len;
        codecell_cancel *cancel;
        codecell_result *result;
        codecell_error err;
        int r;
};

static void *run_nogvl(void *p)
{
        struct run_args *a = p;
        codecell_run_options options = {.cancel = a->cancel};
        if (a->session)
                a->r = codecell_session_eval_with(a->cell, a->session, a->code, a->len, &options,
                                                  &a->result, &a->err);
        else
                a->r = codecell_cell_run_with(a->cell, a->code, a->len, &options, &a->result,
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
        return Qnil;
}

static VALUE cell_run_or_eval(VALUE self, VALUE session, VALUE code)
{
        struct native_cell *nc = open_cell(self);
        StringValue(code);
        struct run_args a = {.nc = nc, .cell = nc->cell, .len = (size_t)RSTRING_LEN(code)};
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
                raise_error(&a.err);
        }
        nc->busy++; /* run_cleanup counts it down */
        rb_ensure(run_body, (VALUE)&a, run_cleanup, (VALUE)&a);
        RB_GC_GUARD(session_copy);
        RB_GC_GUARD(self);
        if (a.r < 0) {
                codecell_result_free(a.result);
                raise_error(&a.err);
        }
        /* An interrupt that cancelled the run is raised now; the result is dropped. */
        VALUE result = TypedData_Wrap_Struct(cNativeResult, &result_type, a.result);
        rb_thread_check_ints();
        if (!a.result) /* an interrupt came before the run started, and did not raise */
                rb_raise(eError, "the run was interrupted before it started");
        return result;
}

static VALUE native_cell_run(VALUE self, VALUE code)
{
        return cell_run_or_eval(self, Qnil, code);
}

static VALUE native_cell_session_eval(VALUE self, VALUE name, VALUE code)
{
        StringValue(name);
        return cell_run_or_eval(self, name, code);
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
                raise_error(&a.err);
        return Qtrue;
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
                raise_error(&a.err);
        return self;
}

static VALUE native_cell_description(VALUE self)
{
        const char *d = codecell_cell_description(open_cell(self)->cell);
        return utf8_string(d, strlen(d));
}

static VALUE native_cell_warnings(VALUE self)
{
        codecell_cell *cell = open_cell(self)->cell;
        VALUE list = rb_ary_new();
        const char *w;
        for (size_t i = 0; (w = codecell_cell_warning(cell, i)); i++)
                rb_ary_push(list, utf8_string(w, strlen(w)));
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
                rb_raise(eError, "close: %ld runs of this cell are still going on", nc->busy);
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
        eError = rb_define_class_under(mCodeCell, "Error", rb_eStandardError);
        mNative = rb_define_module_under(mCodeCell, "Native");

        /* The limits by their names in the configuration file (docs/configuration.md). */
        static const char *const limit_names[CODECELL_LIMIT__COUNT] = {
                [CODECELL_LIMIT_TIMEOUT_MS] = "timeout_ms",
                [CODECELL_LIMIT_CPU_MS] = "cpu_ms",
                [CODECELL_LIMIT_MEMORY_BYTES] = "memory_bytes",
                [CODECELL_LIMIT_PIDS] = "pids",
                [CODECELL_LIMIT_OUTPUT_BYTES] = "output_bytes",
                [CODECELL_LIMIT_TMP_BYTES] = "tmp_bytes",
                [CODECELL_LIMIT_WORK_BYTES] = "work_bytes",
                [CODECELL_LIMIT_OPEN_FILES] = "open_files",
                [CODECELL_LIMIT_FILE_BYTES] = "file_bytes",
                [CODECELL_LIMIT_CODE_BYTES] = "code_bytes",
                [CODECELL_LIMIT_FRAME_BYTES] = "frame_bytes",
                [CODECELL_LIMIT_TOOL_CALLS] = "tool_calls",
                [CODECELL_LIMIT_TOOL_REQUEST_BYTES] = "tool_request_bytes",
                [CODECELL_LIMIT_TOOL_ANSWER_BYTES] = "tool_answer_bytes",
                [CODECELL_LIMIT_TOOL_CALL_MS] = "tool_call_ms",
                [CODECELL_LIMIT_SESSIONS] = "sessions",
                [CODECELL_LIMIT_SESSION_IDLE_MS] = "session_idle_ms",
                [CODECELL_LIMIT_MODEL_CHARS] = "model_chars",
                [CODECELL_LIMIT_IMAGES] = "images",
                [CODECELL_LIMIT_IMAGE_BYTES] = "image_bytes",
        };
        VALUE limits = rb_hash_new();
        for (int i = 0; i < CODECELL_LIMIT__COUNT; i++)
                if (limit_names[i])
                        rb_hash_aset(limits, ID2SYM(rb_intern(limit_names[i])), INT2NUM(i));
        rb_obj_freeze(limits);
        rb_define_const(mNative, "LIMITS", limits);
        VALUE policies = rb_hash_new();
        rb_hash_aset(policies, ID2SYM(rb_intern("warn")), INT2NUM(CODECELL_POLICY_WARN));
        rb_hash_aset(policies, ID2SYM(rb_intern("raise")), INT2NUM(CODECELL_POLICY_RAISE));
        rb_hash_aset(policies, ID2SYM(rb_intern("ignore")), INT2NUM(CODECELL_POLICY_IGNORE));
        rb_obj_freeze(policies);
        rb_define_const(mNative, "POLICIES", policies);

        rb_define_module_function(mNative, "next_call", native_next_call, 0);

        cNativeCell = rb_define_class_under(mNative, "Cell", rb_cObject);
        rb_define_alloc_func(cNativeCell, native_cell_alloc);
        rb_define_singleton_method(cNativeCell, "check", native_cell_check, 4);
        rb_define_method(cNativeCell, "initialize", native_cell_initialize, 4);
        rb_define_method(cNativeCell, "add_tool", native_cell_add_tool, 4);
        rb_define_method(cNativeCell, "run", native_cell_run, 1);
        rb_define_method(cNativeCell, "session_eval", native_cell_session_eval, 2);
        rb_define_method(cNativeCell, "session_close", native_cell_session_close, 1);
        rb_define_method(cNativeCell, "sessions", native_cell_sessions, 0);
        rb_define_method(cNativeCell, "warmup", native_cell_warmup, 0);
        rb_define_method(cNativeCell, "description", native_cell_description, 0);
        rb_define_method(cNativeCell, "warnings", native_cell_warnings, 0);
        rb_define_method(cNativeCell, "model_chars", native_cell_model_chars, 0);
        rb_define_method(cNativeCell, "info", native_cell_info, 0);
        rb_define_method(cNativeCell, "close", native_cell_close, 0);
        rb_define_method(cNativeCell, "closed?", native_cell_closed_p, 0);

        cNativeResult = rb_define_class_under(mNative, "Result", rb_cObject);
        rb_undef_alloc_func(cNativeResult);
        rb_define_method(cNativeResult, "to_json", result_to_json, 0);
        rb_define_method(cNativeResult, "model_json", result_model_json, 2);
        rb_define_method(cNativeResult, "value_json", result_value_json, 0);
        rb_define_method(cNativeResult, "images", result_images, 0);

        cCall = rb_define_class_under(mNative, "Call", rb_cObject);
        rb_undef_alloc_func(cCall);
        rb_define_method(cCall, "tool_id", call_tool_id, 0);
        rb_define_method(cCall, "args_json", call_args_json, 0);
        rb_define_method(cCall, "reply", call_reply, 1);
        rb_define_method(cCall, "fail", call_fail, 1);
}
