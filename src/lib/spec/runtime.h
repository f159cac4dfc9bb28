/* The guest languages: one `struct runtime` each, in the table of runtime.c. Everything the
 * engine does differently per language is a field of its entry: how the interpreter starts,
 * the programs it runs (guest/<language>/), the description's fixed text, how a tool call and
 * an MCP tool's signature read, how an interactive prompt reads an entry. Data where the
 * languages differ in text, a function only where they would differ in behaviour. No other
 * file asks which language a cell has: it reads the cell's entry (config->runtime), and what
 * goes over every language (codecell check, an error's list of names) walks the table
 * (runtime_at). Only runtime_find, and the parsing of a configuration, read a language's name.
 *
 * Adding a language means, and needs nothing else in the engine or its build:
 *  - a folder guest/<language>/ with prelude.<ext>, boot.<ext>, probe.<ext> and loads.<ext>
 *    (docs/languages.md says what each does), and compile.cmake when the build can compile
 *    the prelude; the build finds the folder and embeds its files as the arrays
 *    codecell_prelude_<language>, codecell_boot_<language>, codecell_probe_<language>,
 *    codecell_loads_<language> and
 *    codecell_prelude_<language>_compiled (cmake/guest_languages.cmake);
 *  - its entry in runtime.c's table, which names those arrays;
 *  - its tests: the C end-to-end tests run per language (tests/CMakeLists.txt,
 *    tests/integration/languages.h), and so do the Python ones and the bindings' (each lists
 *    its languages). */
#ifndef CODECELL_RUNTIME_H
#define CODECELL_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

/* How the description writes a tool call and an MCP tool's signature in this language
 * (tools.c, tool_signatures.c), and how the guest names an MCP server's bindings. */
struct tool_syntax {
        const char *intro; /* the paragraph under "## Tools" */
        /* The paragraph on calls that run at once: a printf format of the cell's
         * tool_concurrency (%llu); shown when it is above 1. */
        const char *concurrent;
        const char *call;    /* printf format of the call's start: SB.call("%s" */
        const char *keyword; /* printf format of one keyword argument: ", %s: " */
        /* The language's names for the JSON Schema types, and for any value. */
        const char *string, *integer, *number, *boolean, *array, *object, *null, *any;
        const char *true_literal, *false_literal; /* an enum's or const's true: "true" */
        const char *list_open, *list_close;       /* around a list's item type: "Array<" ">" */
        /* After an optional argument's type: "?". Wrapped, a union's parentheses keep the
         * suffix off its last member: ("a" | "b")?. */
        const char *optional;
        bool optional_wraps_union;
        /* A server's tools are methods of a module named by guest_module_name (my_docs ->
         * MyDocs: Ruby's constants); else functions of an object named as the server. */
        bool server_module;
        /* Names a binding cannot take as they are, to which the guest adds '_' (Python's
         * keywords): NULL-terminated, or NULL. */
        const char *const *reserved;
        const char *bindings_intro; /* the paragraph on the bindings of MCP servers' tools */
        const char *describe;       /* the function that answers a tool's entry: SB.describe */
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
        const char *boot;  /* the program that runs the prelude (guest/<language>/boot.*) */
        const char *probe; /* the program that describes it (guest/<language>/probe.*) */
        /* The code, run in the cell, that says which of the probe's libraries load
         * (guest/<language>/loads.*). */
        const char *loads;
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
        /* Its Libraries section: "the code can require:", and where to find those not named
         * ("look in the folders of `$LOAD_PATH`"). */
        const char *libraries_verb;
        const char *more_libraries;
        /* Its Pictures section: the sentence on images the prelude hands back by itself
         * (matplotlib's figures), or NULL. */
        const char *own_images;
        struct tool_syntax tools;
        /* For an interactive prompt (codecell repl): a first line that ends in this opens a
         * block, which only an empty line closes (Python's ':'); NULL when none does. */
        const char *block_opener;
};

const struct runtime *runtime_find(const char *name);
/* The i-th language of the table, or NULL past its end: for what goes over every language. */
const struct runtime *runtime_at(size_t i);
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
