/* CodeCell::Native::Result: a codecell_result, read by lib/codecell/result.rb. */
#include <string.h>

#include "codecell_ext.h"

static VALUE cResult;

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

static VALUE result_to_json(VALUE self)
{
        return rbcc_take_string(codecell_result_to_json(result_of(self), false));
}

static VALUE result_model_json(VALUE self, VALUE max_chars, VALUE details)
{
        return rbcc_take_string(codecell_result_to_model_json(result_of(self), NUM2SIZET(max_chars),
                                                              RTEST(details)));
}

static VALUE result_value_json(VALUE self)
{
        const char *v = codecell_result_value(result_of(self));
        return v ? rbcc_utf8(v, strlen(v)) : Qnil;
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

/* [[name, mime_type, bytes], …]: the output folder's other files. */
static VALUE result_files(VALUE self)
{
        codecell_result *r = result_of(self);
        size_t n = codecell_result_file_count(r);
        VALUE list = rb_ary_new_capa((long)n);
        for (size_t i = 0; i < n; i++) {
                size_t len = 0;
                const char *name = NULL, *mime = NULL;
                const void *bytes = codecell_result_file(r, i, &name, &mime, &len);
                if (!bytes)
                        break;
                rb_ary_push(list, rb_ary_new_from_args(3, rbcc_utf8(name, strlen(name)),
                                                       rb_str_new_cstr(mime),
                                                       rb_str_new(bytes, (long)len)));
        }
        return list;
}

VALUE rbcc_result_wrap(codecell_result *result)
{
        return TypedData_Wrap_Struct(cResult, &result_type, result);
}

void rbcc_define_result(VALUE mNative)
{
        cResult = rb_define_class_under(mNative, "Result", rb_cObject);
        rb_undef_alloc_func(cResult);
        rb_define_method(cResult, "to_json", result_to_json, 0);
        rb_define_method(cResult, "model_json", result_model_json, 2);
        rb_define_method(cResult, "value_json", result_value_json, 0);
        rb_define_method(cResult, "images", result_images, 0);
        rb_define_method(cResult, "files", result_files, 0);
}
