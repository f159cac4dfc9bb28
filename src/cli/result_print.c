/* A result as a person reads it: the guest's output replayed, then "=> value" or the error. */
#include "result_print.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void print_result(const codecell_result *res)
{
        size_t n;
        const char *out = codecell_result_stdout(res, &n);
        fwrite(out, 1, n, stdout);
        const char *err = codecell_result_stderr(res, &n);
        fwrite(err, 1, n, stderr);
        print_outcome(res);
}

/* A string of the result whole: the guest's text may hold NUL bytes (JSON's \u0000), which
 * "%s" would stop at. Nothing for a member that is not a string. */
static void put_text(const json_t *s, FILE *f)
{
        fwrite(json_string_value(s) ? json_string_value(s) : "", 1, json_string_length(s), f);
}

static void put_line(const char *before, const json_t *s, FILE *f)
{
        fputs(before, f);
        put_text(s, f);
        fputc('\n', f);
}

void print_outcome(const codecell_result *res)
{
        print_outcome_of(res, true);
}

void print_live_output(int stream, const char *data, size_t len, void *userdata)
{
        (void)userdata;
        int fd = stream == 1 ? STDOUT_FILENO : STDERR_FILENO;
        while (len > 0) {
                ssize_t w = write(fd, data, len);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return; /* a closed terminal or pipe: the run goes on */
                data += w;
                len -= (size_t)w;
        }
}

/* A layer the host lacks is the same for every result of this process: a REPL's entries would
 * each repeat a warning of several hundred characters. Said once, with where to learn more. */
static void warn_once(const char *warning)
{
        static char *said[32];
        static size_t n_said;
        if (!warning)
                return;
        for (size_t k = 0; k < n_said; k++)
                if (strcmp(said[k], warning) == 0)
                        return;
        if (n_said < sizeof(said) / sizeof(said[0]) && (said[n_said] = strdup(warning)))
                n_said++;
        fprintf(stderr, "codecell: warning: %s (codecell check shows every layer of this host)\n",
                warning);
}

/* The output folder's files on stderr: each that came back, and each left out with why. obj
 * was read with integers as reals. */
static void print_files(const json_t *obj)
{
        json_t *files = json_object_get(obj, "files");
        size_t n = json_array_size(files);
        for (size_t i = 0; i < n; i++) {
                json_t *f = json_array_get(files, i);
                fprintf(stderr,
                        "codecell: the run handed back %s (%s, %.0f bytes; --save-outputs DIR)\n",
                        json_string_value(json_object_get(f, "name")),
                        json_string_value(json_object_get(f, "mime_type")),
                        json_number_value(json_object_get(f, "size")));
        }
        json_t *omitted = json_object_get(obj, "files_omitted");
        json_t *named = json_object_get(omitted, "files");
        for (size_t i = 0; i < json_array_size(named); i++) {
                json_t *f = json_array_get(named, i);
                fprintf(stderr, "codecell: %s left out: %s\n",
                        json_string_value(json_object_get(f, "name")),
                        json_string_value(json_object_get(f, "reason")));
        }
        long long count = (long long)json_number_value(json_object_get(omitted, "count"));
        if (count > (long long)json_array_size(named))
                fprintf(stderr, "codecell: %lld more files left out\n",
                        count - (long long)json_array_size(named));
}

void print_outcome_of(const codecell_result *res, bool echo_null)
{
        size_t n;
        const char *out = codecell_result_stdout(res, &n);
        bool open_line = n > 0 && out[n - 1] != '\n'; /* "=> value" goes on a line of its own */
        char *text = codecell_result_to_json(res, false);
        /* Integers as reals: a value's big integers need not be exact here, it is printed
         * from codecell_result_value(). */
        json_t *obj =
                text ? json_loads(text, JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, NULL) : NULL;
        free(text);
        json_t *error = json_object_get(obj, "error");
        if (json_is_true(json_object_get(obj, "stdout_truncated")))
                fputs("\ncodecell: stdout was over its cap: its middle was left out\n", stderr);
        if (json_is_true(json_object_get(obj, "stderr_truncated")))
                fputs("\ncodecell: stderr was over its cap: its middle was left out\n", stderr);
        size_t images = json_array_size(json_object_get(obj, "images"));
        if (images > 0)
                fprintf(stderr, "codecell: the run handed back %zu image%s (--save-images DIR)\n",
                        images, images == 1 ? "" : "s");
        json_t *omitted = json_object_get(obj, "images_omitted");
        if (omitted)
                fprintf(stderr, "codecell: %lld image(s) left out: %s\n",
                        (long long)json_integer_value(json_object_get(omitted, "count")),
                        json_string_value(json_object_get(omitted, "reason")));
        print_files(obj);
        switch (codecell_result_status(res)) {
        case CODECELL_STATUS_OK:
                fflush(stdout);
                if (echo_null || strcmp(codecell_result_value(res), "null") != 0)
                        printf("%s=> %s\n", open_line ? "\n" : "", codecell_result_value(res));
                else if (open_line)
                        putchar('\n');
                break;
        case CODECELL_STATUS_ERROR: {
                put_text(json_object_get(error, "class"), stderr);
                fputs(": ", stderr);
                put_text(json_object_get(error, "message"), stderr);
                fputc('\n', stderr);
                size_t i;
                json_t *frame;
                json_array_foreach(json_object_get(error, "backtrace"), i, frame)
                        put_line("\tfrom ", frame, stderr);
                if (json_is_string(json_object_get(error, "hint")))
                        put_line("hint: ", json_object_get(error, "hint"), stderr);
                break;
        }
        default:
                fprintf(stderr,
                        "codecell: %s: ", codecell_status_name(codecell_result_status(res)));
                put_text(error, stderr);
                fputc('\n', stderr);
        }
        size_t i;
        json_t *warning;
        json_array_foreach(json_object_get(obj, "warnings"), i, warning)
                warn_once(json_string_value(warning));
        json_decref(obj);
}
