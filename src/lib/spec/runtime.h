/* The guest languages: which interpreter runs, with which flags, the prelude it loads, and how
 * the model is told to use it. Adding a language means one entry in runtime.c and one
 * guest/<language>/prelude file. */
#ifndef CODECELL_RUNTIME_H
#define CODECELL_RUNTIME_H

#include <stddef.h>

/* How the description writes a tool call in this language. */
struct tool_syntax {
        const char *lang;    /* "ruby" or "python": how bindings and signatures read */
        const char *intro;   /* the paragraph under "## Tools" */
        const char *call;    /* printf format of the call's start: SB.call("%s" */
        const char *keyword; /* printf format of one keyword argument: ", %s: " */
        /* The language's names for the JSON Schema types. */
        const char *string, *integer, *number, *boolean, *array, *object, *null;
};

struct runtime {
        const char *name;        /* "ruby" */
        const char *extension;   /* of script files: ".rb" */
        const char *interpreter; /* the default: absolute path on the host and in the sandbox */
        /* argv for execve: argv0, flags, then each load path (after library_flag, or after the
         * program when library_flag is NULL), program_flag and the program (boot or probe). */
        const char *argv0;
        const char *const *flags; /* NULL-terminated */
        const char *library_flag;
        const char *program_flag;
        const char *boot;         /* the program that runs the prelude (guest/<language>/boot.*) */
        const char *probe;        /* the program that describes it (guest/<language>/probe.*) */
        const char *prelude_path; /* where the prelude appears inside the sandbox */
        const char *prelude;      /* NUL-terminated source, embedded at build time */
        /* The prelude compiled at build time, which the interpreter loads instead of compiling
         * the source at every start, or NULL. Its size may be 0 (nothing could be compiled). */
        const char *compiled_path;
        const char *compiled;
        const size_t *compiled_size;
        const char *package_hint; /* what to install when the interpreter is missing */
        /* The guest error class that means the interpreter ran out of memory. */
        const char *out_of_memory_class;
        /* The description's fixed text (seed 000), around the sandbox's rules. */
        const char *how_to_use;  /* what it is, and "It runs as … with:"; %s: the version */
        const char *how_results; /* how output, values and errors come back */
        struct tool_syntax tools;
};

const struct runtime *runtime_find(const char *name);
/* The argv that starts interpreter (its path is argv[0]'s source, not part of argv) with the
 * runtime's flags, each of load_paths on the load path, then `program` and `args`. NULL when
 * out of memory; free with free() (one array; its strings are the callers'). */
char **runtime_argv(const struct runtime *rt, const char *program, const char *const *load_paths,
                    size_t n_load_paths, const char *const *args, size_t n_args);
/* The runtime whose scripts end in the extension of path, or NULL. */
const struct runtime *runtime_for_file(const char *path);
/* "ruby, python": the languages, for error messages. */
void runtime_names(char *buf, size_t size);

#endif
