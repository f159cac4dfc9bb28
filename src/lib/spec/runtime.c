#include "runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecell.h"

/* The files of guest/<language>/, embedded by the build (cmake/guest_languages.cmake). */
extern const char codecell_prelude_ruby[], codecell_boot_ruby[], codecell_probe_ruby[],
        codecell_loads_ruby[];
extern const char codecell_prelude_ruby_compiled[];
extern const size_t codecell_prelude_ruby_compiled_size;
extern const char codecell_prelude_python[], codecell_boot_python[], codecell_probe_python[],
        codecell_loads_python[];
extern const char codecell_prelude_python_compiled[];
extern const size_t codecell_prelude_python_compiled_size;

/* --disable-gems: RubyGems costs ~50 ms of start-up; the standard library and Debian's
 * vendor_ruby packages stay requirable without it. The program, guest/ruby/boot.rb, runs the
 * compiled prelude; library folders go on $LOAD_PATH with -I. */
static const char *const ruby_flags[] = {"--disable-gems", NULL};

/* -I: no user site, no PYTHON* variables, no script folder on sys.path. -S: no site.py (the
 * prelude adds the system's dist-packages itself, without running .pth files). The program,
 * guest/python/boot.py, runs the compiled prelude, after putting its arguments (the library
 * folders) on sys.path. */
static const char *const python_flags[] = {"-I", "-S", NULL};

/* Python's keywords cannot be attribute names in code: an MCP tool's binding named like one
 * gets a '_' (guest/python/prelude.py). */
static const char *const python_keywords[] = {
        "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
        "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
        "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
        "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield",    NULL};

static const struct runtime runtimes[] = {
        {
                .name = "ruby",
                .extension = ".rb",
                .interpreter = "/usr/bin/ruby",
                .argv0 = "ruby",
                .flags = ruby_flags,
                .library_flag = "-I",
                .program_flag = "-e",
                .boot = codecell_boot_ruby,
                .probe = codecell_probe_ruby,
                .loads = codecell_loads_ruby,
                .prelude_path = "/codecell/prelude.rb",
                .compiled_path = "/codecell/prelude.rb.iseq",
                .compiled = codecell_prelude_ruby_compiled,
                .compiled_size = &codecell_prelude_ruby_compiled_size,
                .prelude = codecell_prelude_ruby,
                .package_hint = "the Debian package \"ruby\"",
                .out_of_memory_class = "NoMemoryError",
                .how_to_use =
                        "Executes Ruby code inside a secure sandbox and returns what it produced.\n"
                        "\n"
                        "## How to use\n"
                        "\n"
                        "Pass a complete, self-contained Ruby script as the `code` argument. It "
                        "runs\n"
                        "as a fresh Ruby%s process with:\n",
                .how_results =
                        "Capture progress with `puts` (returned as `stdout`) and end with a value "
                        "or\n"
                        "a JSON-serializable data structure (returned as `value`; "
                        "non-serializable\n"
                        "objects come back as their inspect string). If the code raises, the "
                        "error\n"
                        "class, message and backtrace are returned so you can fix and retry. A "
                        "last\n"
                        "value that answers `to_markdown` (or `to_html`, `to_svg`, `to_png`) also "
                        "comes\n"
                        "back in that form: end with one to show a table.",
                .libraries_verb = "require",
                .more_libraries = "look in the folders of `$LOAD_PATH`",
                .tools =
                        {
                                .intro = "Call these host functions from your code with `SB.call`. "
                                         "They run outside the\n"
                                         "sandbox and return plain Ruby data (hashes with string "
                                         "keys, arrays, strings,\n"
                                         "numbers). Arguments must be JSON data. A failure raises "
                                         "`SB::ToolError` and an\n"
                                         "unknown name raises `SB::UnknownTool` (a kind of "
                                         "`SB::ToolError`); both can be\n"
                                         "rescued. A `?` marks an optional argument.",
                                .concurrent =
                                        "Up to %llu calls run at once: `SB.parallel { |p| "
                                        "p.call(\"x\", q: 1); p.call(\"y\") }`\n"
                                        "sends the block's calls together and returns their "
                                        "answers in order, so it\ntakes as long as the slowest "
                                        "call, not the sum. A failed call raises its\n"
                                        "`SB::ToolError` from `SB.parallel` once all have "
                                        "finished. Calls from threads\nrun one at a time.",
                                .call = "SB.call(\"%s\"",
                                .keyword = ", %s: ",
                                .string = "String",
                                .integer = "Integer",
                                .number = "Float",
                                .boolean = "true | false",
                                .array = "Array",
                                .object = "Hash",
                                .null = "nil",
                                .any = "Object",
                                .true_literal = "true",
                                .false_literal = "false",
                                .list_open = "Array<",
                                .list_close = ">",
                                .optional = "?",
                                .optional_wraps_union = true,
                                .server_module = true,
                                .bindings_intro =
                                        "The tools of MCP servers are also methods of a module "
                                        "named for the server:\n`Memory.create_entities(entities: "
                                        "[...])` is `SB.call(\"memory.create_entities\", "
                                        "entities: [...])`\n(also `SB::MCP::Memory`). A tool "
                                        "answers with plain data; its failure raises "
                                        "`SB::ToolError`\nwith the tool's message. Arguments are "
                                        "checked against the signature before the call.",
                                .describe = "SB.describe",
                        },
        },
        {
                .name = "python",
                .extension = ".py",
                .interpreter = "/usr/bin/python3",
                .argv0 = "python3",
                .flags = python_flags,
                .program_flag = "-c",
                .boot = codecell_boot_python,
                .probe = codecell_probe_python,
                .loads = codecell_loads_python,
                .prelude_path = "/codecell/prelude.py",
                .prelude = codecell_prelude_python,
                .compiled_path = "/codecell/prelude.pyc",
                .compiled = codecell_prelude_python_compiled,
                .compiled_size = &codecell_prelude_python_compiled_size,
                .package_hint = "the Debian package \"python3\"",
                .out_of_memory_class = "MemoryError",
                .how_to_use =
                        "Executes Python code inside a secure sandbox and returns what it "
                        "produced.\n"
                        "\n"
                        "## How to use\n"
                        "\n"
                        "Pass a complete, self-contained Python script as the `code` argument. It\n"
                        "runs as a fresh Python%s process with:\n",
                .how_results =
                        "Capture progress with `print` (returned as `stdout`). If the last "
                        "statement\n"
                        "is an expression, its value is returned as `value`, as in a notebook "
                        "cell\n"
                        "(JSON-serializable data as it is; other objects as their repr string). "
                        "If\n"
                        "the code raises, the exception's class, message and traceback are\n"
                        "returned so you can fix and retry. An object with `_repr_markdown_` (or\n"
                        "`_repr_html_`, `_repr_svg_`, `_repr_png_`, `_repr_json_`) also comes back "
                        "in\n"
                        "that form, and a pandas DataFrame as a markdown table of its first and "
                        "last\n"
                        "rows and its shape.",
                .libraries_verb = "import",
                .more_libraries = "list them with `help(\"modules\")`",
                .own_images = "Figures drawn with matplotlib come back as PNG images: those "
                              "shown with `plt.show()` and those still open when the code ends.",
                .tools =
                        {
                                .intro = "Call these host functions from your code with `sb.call` "
                                         "(`sb` is always\n"
                                         "defined). They run outside the sandbox and return plain "
                                         "data (dicts, lists,\n"
                                         "str, numbers). Arguments must be JSON data. A failure "
                                         "raises `sb.ToolError`\n"
                                         "and an unknown name raises `sb.UnknownTool` (a kind of "
                                         "`sb.ToolError`); both\n"
                                         "can be caught. A `?` marks an optional argument.",
                                .concurrent =
                                        "Up to %llu calls run at once. `await sb.acall(name, "
                                        "key=value)` is the coroutine\nof `sb.call`, and `await` "
                                        "works at the top of the code:\n`a, b = await "
                                        "asyncio.gather(sb.acall(\"x\", q=1), sb.acall(\"y\"))` "
                                        "takes as long\nas the slowest call, not the sum, and "
                                        "each answer reaches its own caller.\n`sb.call` from "
                                        "several threads runs at once too.",
                                .call = "sb.call(\"%s\"",
                                .keyword = ", %s=",
                                .string = "str",
                                .integer = "int",
                                .number = "float",
                                .boolean = "bool",
                                .array = "list",
                                .object = "dict",
                                .null = "None",
                                .any = "Any",
                                .true_literal = "True",
                                .false_literal = "False",
                                .list_open = "list[",
                                .list_close = "]",
                                .optional = " = None",
                                .reserved = python_keywords,
                                .bindings_intro =
                                        "The tools of MCP servers are also functions of an object "
                                        "named for the server:\n`memory.create_entities(entities="
                                        "[...])` is `sb.call(\"memory.create_entities\", "
                                        "entities=[...])`\n(also `sb.mcp.memory`). A tool answers "
                                        "with plain data; its failure raises `sb.ToolError`\nwith "
                                        "the tool's message. Arguments are checked against the "
                                        "signature before the call.\nEach has a coroutine twin "
                                        "named with an `a` before it:\n`await "
                                        "memory.acreate_entities(entities=[...])`.",
                                .describe = "sb.describe",
                        },
                .block_opener = ":",
        },
};

#define N_RUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))

const struct runtime *runtime_find(const char *name)
{
        if (!name)
                return NULL;
        for (size_t i = 0; i < N_RUNTIMES; i++)
                if (strcmp(runtimes[i].name, name) == 0)
                        return &runtimes[i];
        return NULL;
}

const struct runtime *runtime_at(size_t i)
{
        return i < N_RUNTIMES ? &runtimes[i] : NULL;
}

const struct runtime *runtime_for_file(const char *path)
{
        const char *dot = path ? strrchr(path, '.') : NULL;
        if (!dot || strchr(dot, '/'))
                return NULL;
        for (size_t i = 0; i < N_RUNTIMES; i++)
                if (strcmp(runtimes[i].extension, dot) == 0)
                        return &runtimes[i];
        return NULL;
}

char **runtime_argv(const struct runtime *rt, const char *program, const char *const *load_paths,
                    size_t n_load_paths, const char *const *args, size_t n_args)
{
        size_t n_flags = 0;
        while (rt->flags[n_flags])
                n_flags++;
        size_t n = 1 + n_flags + 2 * n_load_paths + 2 + n_args + 1;
        char **argv = calloc(n, sizeof(*argv));
        if (!argv)
                return NULL;
        size_t i = 0;
        argv[i++] = (char *)rt->argv0;
        for (size_t k = 0; k < n_flags; k++)
                argv[i++] = (char *)rt->flags[k];
        for (size_t k = 0; rt->library_flag && k < n_load_paths; k++) {
                argv[i++] = (char *)rt->library_flag;
                argv[i++] = (char *)load_paths[k];
        }
        argv[i++] = (char *)rt->program_flag;
        argv[i++] = (char *)program;
        for (size_t k = 0; !rt->library_flag && k < n_load_paths; k++)
                argv[i++] = (char *)load_paths[k];
        for (size_t k = 0; k < n_args; k++)
                argv[i++] = (char *)args[k];
        argv[i] = NULL;
        return argv;
}

void runtime_names(char *buf, size_t size)
{
        size_t used = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < N_RUNTIMES && used < size; i++)
                used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                                         runtimes[i].name);
}

const char *codecell_language_of(const char *path)
{
        const struct runtime *rt = runtime_for_file(path);
        return rt ? rt->name : NULL;
}

bool codecell_language_opens_block(const char *language, const char *line)
{
        const struct runtime *rt = runtime_find(language);
        if (!rt || !rt->block_opener || !*rt->block_opener || !line)
                return false;
        size_t n = strlen(line), k = strlen(rt->block_opener);
        return n >= k && strcmp(line + n - k, rt->block_opener) == 0;
}
