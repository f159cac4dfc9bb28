/* Host tools written as Ruby blocks. The engine calls a tool's handler on a thread of its own,
 * which Ruby does not know and which may never touch a Ruby object: the handler queues the call
 * and waits for its answer, for at most the cell's tool_call_ms. One Ruby thread (the
 * dispatcher, lib/codecell/dispatcher.rb) takes the calls off the queue with Native.next_call,
 * the GVL released while it waits, and answers each from a Ruby thread of its own through
 * CodeCell::Native::Call. A call answered after its handler gave up is freed by whichever side
 * lets go of it last. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ruby/thread.h>

#include "codecell_ext.h"

static VALUE cCall;

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

/* The text of a JSON string the dispatcher wrote (Answer.json): its escapes are left as they
 * are, which is enough for a reason the guest reads. malloc'd, or NULL. */
static char *steal_json_string(const char *json)
{
        size_t len = strlen(json);
        return strndup(json + 1, len - 2);
}

int rbcc_tool_handler(const char *args_json, char **ret_json, char **ret_error, void *userdata)
{
        struct rbcc_tool *tool = userdata;
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

int rbcc_approval(const codecell_approval_request *request, char **ret_reason, void *userdata)
{
        const struct rbcc_tool *approve = userdata;
        /* The tool's name is of [A-Za-z0-9_.-] and the arguments are valid JSON: spliced. */
        size_t n = strlen(request->tool) + strlen(request->args_json) + 32;
        char *args = malloc(n);
        if (!args)
                return -ENOMEM;
        snprintf(args, n, "{\"tool\":\"%s\",\"args\":%s}", request->tool, request->args_json);
        struct rbcc_tool asked = {.id = approve->id, .wait_ms = request->wait_ms};
        char *json = NULL, *error = NULL;
        int r = rbcc_tool_handler(args, &json, &error, &asked);
        free(args);
        if (r < 0) {
                *ret_reason = error;
                free(json);
                return r;
        }
        free(error);
        int verdict = CODECELL_APPROVAL_DECLINE;
        if (json && strcmp(json, "true") == 0)
                verdict = CODECELL_APPROVAL_ACCEPT;
        else if (json && json[0] == '"' && strlen(json) > 2)
                *ret_reason = steal_json_string(json);
        free(json);
        return verdict;
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
        return rbcc_utf8(call_of(self)->args_json, strlen(call_of(self)->args_json));
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
                rb_raise(rbcc_eError, "this tool call was answered already");
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

void rbcc_define_tool_calls(VALUE mNative)
{
        rb_define_module_function(mNative, "next_call", native_next_call, 0);
        cCall = rb_define_class_under(mNative, "Call", rb_cObject);
        rb_undef_alloc_func(cCall);
        rb_define_method(cCall, "tool_id", call_tool_id, 0);
        rb_define_method(cCall, "args_json", call_args_json, 0);
        rb_define_method(cCall, "reply", call_reply, 1);
        rb_define_method(cCall, "fail", call_fail, 1);
}
