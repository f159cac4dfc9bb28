/* codecell: run model-written code in a fresh Linux sandbox and get a structured result.
 *
 * The only header a user of libcodecell includes. Conventions for every declaration:
 *  - functions returning int return 0 on success and a negative errno on failure;
 *    functions returning a pointer return NULL on failure;
 *  - on failure they fill *err (when err is not NULL) with the errno, a kind and a
 *    one-line message that names the bad input;
 *  - strings passed in are copied; the caller keeps ownership of what it passes;
 *  - objects returned by *_new() or through ret_* are owned by the caller and released with
 *    the matching *_free(), which accepts NULL.
 * The library never prints and never exits the process. */
#ifndef CODECELL_H
#define CODECELL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CODECELL_API __attribute__((visibility("default")))
#else
#define CODECELL_API
#endif

/* ---- version and ABI --------------------------------------------------------------------- */

/* The version of this header. The build reads it from here (CMakeLists.txt), so the library,
 * the command, `codecell --version` and the MCP serverInfo all carry this one number. */
#define CODECELL_VERSION_MAJOR 0
#define CODECELL_VERSION_MINOR 1
#define CODECELL_VERSION_PATCH 0
#define CODECELL_VERSION "0.1.0"

/* The version of the library loaded at run time ("0.1.0"): it may be newer than the
 * CODECELL_VERSION a program was compiled with. Static string.
 *
 * ABI (docs/api.md, "ABI promise"): within one soname (libcodecell.so.0) functions are only
 * added, enum values are only appended, and the structs a caller allocates keep their size and
 * layout: codecell_error and codecell_layer_report are frozen; codecell_run_options and
 * codecell_cell_info end in reserved room that later fields take, so zero-initialize an input
 * struct ({0} or designated initializers). */
CODECELL_API const char *codecell_version(void);

/* ---- errors ---------------------------------------------------------------------------- */

typedef enum codecell_error_kind {
        CODECELL_ERR_NONE = 0,
        CODECELL_ERR_INVALID,     /* bad input from the caller: config, mount, code, flag */
        CODECELL_ERR_UNSUPPORTED, /* the host lacks a layer and the policy is "raise" */
        CODECELL_ERR_SYSTEM,      /* a system call failed in the engine itself */
} codecell_error_kind;

typedef struct codecell_error {
        int errno_value; /* positive errno, 0 when not applicable */
        codecell_error_kind kind;
        char message[512];
} codecell_error;

/* ---- configuration --------------------------------------------------------------------- */

typedef enum codecell_limit {
        CODECELL_LIMIT_TIMEOUT_MS, /* wall clock of one execution, from `exec`; default 30000 */
        CODECELL_LIMIT_CPU_MS, /* CPU time budget from `exec`; default 10000 (checked every 10 ms)
                                */
        CODECELL_LIMIT_MEMORY_BYTES, /* memory of the whole sandbox; default 256 MiB */
        CODECELL_LIMIT_PIDS,         /* processes and threads; default 64 */
        CODECELL_LIMIT_OUTPUT_BYTES, /* captured stdout and stderr, each; default 1 MiB */
        CODECELL_LIMIT_TMP_BYTES,    /* size of the /tmp tmpfs; default 64 MiB */
        CODECELL_LIMIT_WORK_BYTES,   /* size of the /work tmpfs; default 64 MiB */
        CODECELL_LIMIT_OPEN_FILES,   /* RLIMIT_NOFILE; default 256 */
        CODECELL_LIMIT_FILE_BYTES, /* RLIMIT_FSIZE, largest file the guest may write; default 64 MiB
                                    */
        CODECELL_LIMIT_CODE_BYTES, /* largest accepted code; default 1 MiB */
        CODECELL_LIMIT_FRAME_BYTES,        /* largest protocol frame; default 16 MiB */
        CODECELL_LIMIT_TOOL_CALLS,         /* SB.call calls per execution; default 1000 */
        CODECELL_LIMIT_TOOL_REQUEST_BYTES, /* JSON arguments of one call; default 1 MiB */
        CODECELL_LIMIT_TOOL_ANSWER_BYTES,  /* JSON answer of one call; default 1 MiB */
        CODECELL_LIMIT_TOOL_CALL_MS,    /* time of one call (a tool may set less); default 10000 */
        CODECELL_LIMIT_SESSIONS,        /* sessions open at once per cell; default 8 */
        CODECELL_LIMIT_SESSION_IDLE_MS, /* a session unused this long is parked; 300000 */
        /* Characters of a result's value, output and error shown to a model (MCP, and
         * codecell_result_to_model_json); default 20000. */
        CODECELL_LIMIT_MODEL_CHARS,
        CODECELL_LIMIT_IMAGES,         /* images a run hands back; default 8 */
        CODECELL_LIMIT_IMAGE_BYTES,    /* size of one of them; default 4 MiB */
        CODECELL_LIMIT_FILES_IN,       /* files given to a run (its "files"); default 32 */
        CODECELL_LIMIT_FILES_IN_BYTES, /* their bytes together; default 8 MiB */
        /* Host-tool calls outstanding at once per execution; default 8 (1: one at a time, in
         * the order the guest made them). */
        CODECELL_LIMIT_TOOL_CONCURRENCY,
        CODECELL_LIMIT_FILES_OUT,      /* files a run hands back from its output folder; 16 */
        CODECELL_LIMIT_FILE_OUT_BYTES, /* the size of one of them; default 8 MiB */
        /* Time a person has to allow a tool call marked for approval; default 120000. It does
         * not count against CODECELL_LIMIT_TIMEOUT_MS: the run's clock stops while it waits. */
        CODECELL_LIMIT_APPROVAL_MS,
        /* Bytes a session's journal may hold (its evals' code, files and tool calls, kept to
         * restore a parked session); default 8 MiB. Over it the session cannot be parked. */
        CODECELL_LIMIT_SESSION_JOURNAL_BYTES,
        /* Time the replay that restores a parked session may take; default 30000. */
        CODECELL_LIMIT_RESTORE_MS,
        /* A parked session unused this long is forgotten; default 86400000 (24 h). */
        CODECELL_LIMIT_SESSION_RETENTION_MS,
        CODECELL_LIMIT__COUNT
} codecell_limit;

/* The room codecell_cell_info keeps for limits: more limits can come without changing its
 * size. */
#define CODECELL_LIMIT_SLOTS 32
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(CODECELL_LIMIT__COUNT <= CODECELL_LIMIT_SLOTS, "codecell_cell_info has no room");
#endif

/* What to do when the host lacks an optional layer (Landlock, the cgroup). Namespaces and
 * seccomp are never optional: without them nothing runs. */
typedef enum codecell_policy {
        CODECELL_POLICY_WARN = 0, /* run; list the missing layer in the result's "warnings" */
        CODECELL_POLICY_RAISE,    /* refuse to create the cell (CODECELL_ERR_UNSUPPORTED) */
        CODECELL_POLICY_IGNORE,   /* run silently without it */
} codecell_policy;

/* How a cell makes its sandboxes (docs/performance.md, docs/security.md "Forked sandboxes").
 * Either way every run gets its own namespaces, file system, limits and walls. */
typedef enum codecell_start {
        /* Each sandbox is a copy of one interpreter the cell booted once with its prelude (the
         * default): several times the runs per second of booting one per run. */
        CODECELL_START_FORK = 0,
        /* Each sandbox execs a fresh interpreter: nothing at all in common with another run,
         * not even the address-space layout, at the cost of booting one per run. */
        CODECELL_START_EXEC,
} codecell_start;

typedef struct codecell_config codecell_config;

/* The language of a script file from its extension ("ruby" for .rb, "python" for .py), or
 * NULL. Static string. */
CODECELL_API const char *codecell_language_of(const char *path);
/* For an interactive prompt: whether `line` (without its newline), the first line of an entry
 * in `language`, opens a block that only an empty line closes, as Python's "for x in xs:"
 * does. false for an unknown language. */
CODECELL_API bool codecell_language_opens_block(const char *language, const char *line);

/* A new configuration for `language` ("ruby", "python"). NULL with CODECELL_ERR_INVALID for an
 * unknown language. */
CODECELL_API codecell_config *codecell_config_new(const char *language, codecell_error *err);
CODECELL_API void codecell_config_free(codecell_config *config);

/* How the guest may use a mounted folder. Every mount is nosuid and nodev, and read-only and
 * read-write ones are noexec: nothing on them is run or mapped executable, so nothing a guest
 * wrote ever starts as a program. READ_ONLY_EXEC is for native libraries the host put in a
 * folder (a virtualenv's C extensions, loaded through ctypes or Fiddle): mark exec only a
 * folder no guest can write, through this cell or any other, now or later. A cell refuses an
 * exec mount that overlaps one of its read-write mounts. */
typedef enum {
        CODECELL_MOUNT_READ_ONLY = 0,
        CODECELL_MOUNT_READ_WRITE = 1,
        CODECELL_MOUNT_READ_ONLY_EXEC = 2,
} codecell_mount_mode;

/* Adds a host folder `source` at `dest` inside the sandbox, read-only unless read_write.
 * Validated at once (seed rules): dest absolute and normalized, unique, not overlapping another
 * mount or a reserved tree (/work /usr /codecell /proc /dev /etc /tmp /bin /lib …); source an
 * existing directory. A relative source is resolved against the current directory.
 * description may be NULL. */
CODECELL_API int codecell_config_add_mount(codecell_config *config, const char *source,
                                           const char *dest, bool read_write,
                                           const char *description, codecell_error *err);
/* The mode named "ro", "rw" or "exec" (the names of the CLI and the configuration file) into
 * *ret; false for any other name. */
CODECELL_API bool codecell_mount_mode_parse(const char *name, codecell_mount_mode *ret);
/* The same with a mode (codecell_config_add_mount is READ_ONLY or READ_WRITE). */
CODECELL_API int codecell_config_add_mount_mode(codecell_config *config, const char *source,
                                                const char *dest, codecell_mount_mode mode,
                                                const char *description, codecell_error *err);

/* Sets one limit. 0 is refused for every limit. */
CODECELL_API int codecell_config_set_limit(codecell_config *config, codecell_limit limit,
                                           uint64_t value, codecell_error *err);
CODECELL_API uint64_t codecell_config_get_limit(const codecell_config *config,
                                                codecell_limit limit);
/* The limit's name in configuration files, the bindings and errors ("timeout_ms" for
 * CODECELL_LIMIT_TIMEOUT_MS), or NULL from CODECELL_LIMIT__COUNT on: counting up from 0 to the
 * first NULL lists every limit of the library loaded, in the enum's order. Static string. */
CODECELL_API const char *codecell_limit_name(codecell_limit limit);
/* The limit named `name` (codecell_limit_name's) into *ret; false for any other name. */
CODECELL_API bool codecell_limit_parse(const char *name, codecell_limit *ret);
CODECELL_API void codecell_config_set_policy(codecell_config *config, codecell_policy policy);

/* A folder inside the sandbox (under /work or /tmp, or in a read-write mount added before) whose
 * files written during a run come back in its result: pictures (PNG, JPEG, GIF, WebP, found
 * from the bytes) beside the figures a Python run draws with matplotlib, every other regular
 * file as a result file (codecell_result_file). Links, FIFOs, devices and subfolders are not
 * read. NULL: none (the default). */
CODECELL_API int codecell_config_set_output_folder(codecell_config *config, const char *path,
                                                   codecell_error *err);
/* The same, under its first name (when only images came back). */
CODECELL_API int codecell_config_set_image_folder(codecell_config *config, const char *path,
                                                  codecell_error *err);

/* Lets the guest start subprocesses: fork, and exec of the programs under /usr (never of files
 * it wrote itself). Off by default: then fork, vfork and exec answer EPERM/EACCES. Processes
 * still count against CODECELL_LIMIT_PIDS and all end with the run. */
CODECELL_API void codecell_config_set_subprocesses(codecell_config *config, bool allowed);

/* How the cell's sandboxes are made: CODECELL_START_FORK (the default) or CODECELL_START_EXEC.
 * -1 with err for another value. */
CODECELL_API int codecell_config_set_start(codecell_config *config, codecell_start start,
                                           codecell_error *err);

/* Sandboxes kept standing by (namespaces built, interpreter and prelude loaded) so that a run
 * starts in about a millisecond. Each serves exactly one execution and is replaced in the
 * background. Default 2; 0 starts every run cold. At most 64. */
CODECELL_API int codecell_config_set_pool(codecell_config *config, size_t size,
                                          codecell_error *err);

/* The cell's network policy, a JSON object (`json`, text), e.g. {"allow": ["example.org"]};
 * NULL clears it (the default: no network at all). A cell with one is a network cell: each of
 * its sandboxes has a network namespace of its own with only its loopback, where the one way
 * out is a listener on 127.0.0.1 that the engine holds (docs/security.md). Checked here only
 * to be an object. -1 with err when it is not. */
CODECELL_API int codecell_config_set_network(codecell_config *config, const char *json,
                                             codecell_error *err);

/* ---- interpreters and libraries -------------------------------------------------------- */

/* Runs the cell's code with the interpreter at `path` (a file on the host; relative to the
 * current directory) instead of /usr/bin/ruby or /usr/bin/python3. Checked when the cell is
 * made: it must run the probe of the configured language (a python3 given to a ruby cell is
 * refused). One outside /usr is made visible in the sandbox with the folder above its bin/
 * (its prefix, read-only, where its standard library lives). */
CODECELL_API int codecell_config_set_interpreter(codecell_config *config, const char *path,
                                                 codecell_error *err);
/* Makes the host folder `path` visible read-only in the sandbox and puts it on the
 * interpreter's load path: Python, a virtualenv (its lib/pythonX.Y/site-packages) or a folder
 * of packages (site-packages); Ruby, a gem home (each gem's lib) or a folder of .rb files.
 * mode READ_ONLY (native code on it cannot be loaded) or READ_ONLY_EXEC (C extensions such as
 * numpy's load; only for a folder no guest can write). At most 16; each an existing folder. */
CODECELL_API int codecell_config_add_library(codecell_config *config, const char *path,
                                             codecell_mount_mode mode, codecell_error *err);

/* ---- cells and runs -------------------------------------------------------------------- */

typedef struct codecell_cell codecell_cell;
typedef struct codecell_result codecell_result;

/* Creates a cell from a configuration (copied; the caller may free it afterwards). Checks the
 * interpreter, compiles the seccomp filter and finds the cgroup backend once. NULL on failure;
 * CODECELL_ERR_UNSUPPORTED when a layer is missing under the "raise" policy. */
CODECELL_API codecell_cell *codecell_cell_new(const codecell_config *config, codecell_error *err);
/* Fills the cell's pool and returns when every sandbox in it is ready (the seed's warmup), and
 * when the sandboxes of finished runs have been collected (see docs/api.md). For a cell without
 * a pool only the latter. Fails when sandboxes cannot be started on this host (the reason in
 * err). Thread-safe. */
CODECELL_API int codecell_cell_warmup(codecell_cell *cell, codecell_error *err);
/* Frees the cell. No sandbox of it outlives this call. */
CODECELL_API void codecell_cell_free(codecell_cell *cell);

/* Runs `code` (len bytes of UTF-8) in a fresh sandbox and stores the result in *ret_result.
 * Thread-safe: many threads may run code on one cell at once. A run takes a sandbox from the
 * pool, or starts one cold when the pool is empty rather than waiting.
 * Returns 0 whenever a result was produced, whatever its status (a sandbox that failed is a
 * result with status "sandbox_error"). Returns < 0 only for input the cell refuses (code not
 * UTF-8 or over CODECELL_LIMIT_CODE_BYTES: CODECELL_ERR_INVALID) or when the engine itself
 * cannot work (out of memory, fds: CODECELL_ERR_SYSTEM); *ret_result is then NULL. */
CODECELL_API int codecell_cell_run(codecell_cell *cell, const char *code, size_t len,
                                   codecell_result **ret_result, codecell_error *err);

/* ---- cancellation and progress ------------------------------------------------------- */

/* A token that stops a run from another thread. Trigger it once; a run that sees it ends at
 * once (its sandbox is killed) with status "sandbox_error" and "cancelled": true in its result;
 * a session eval so cancelled ends the session like a timeout. A token already triggered when
 * a run starts stops it before its code is handed over (a session then goes on untouched).
 * Not reusable after a trigger. */
typedef struct codecell_cancel codecell_cancel;
CODECELL_API codecell_cancel *codecell_cancel_new(codecell_error *err);
/* Thread-safe and idempotent. */
CODECELL_API void codecell_cancel_trigger(codecell_cancel *cancel);
/* Asks the running code to stop as Ctrl-C asks a program, without ending anything: SIGINT to
 * the interpreter, which raises Interrupt (Ruby) or KeyboardInterrupt (Python) in the code.
 * The run then ends with that error as the code's own, and a session keeps its state. Code
 * that rescues it goes on (its limits and codecell_cancel_trigger() still stop it), and so
 * does Python code that is in a call into C when the signal comes just before it blocks (it
 * raises when the call returns): interrupt again. Each call
 * sends one more SIGINT to the run that uses the token, once its interpreter has taken the
 * code (one made before the run starts waits for that): use a fresh token for each run.
 * Thread-safe and async-signal-safe (a SIGINT handler may call it); nothing once the token is
 * triggered. */
CODECELL_API void codecell_cancel_interrupt(codecell_cancel *cancel);
CODECELL_API bool codecell_cancel_triggered(const codecell_cancel *cancel);
/* Only once no run uses it any more. */
CODECELL_API void codecell_cancel_free(codecell_cancel *cancel);

/* Called on the engine thread that waits for the run, every progress_interval_ms while the code
 * runs: the time since `exec` and the last line the guest wrote to stdout so far (without its
 * newline, at most 200 bytes, not NUL-terminated; len 0 when none). It must return quickly. */
typedef void (*codecell_progress_fn)(uint64_t elapsed_ms, const char *last_line, size_t len,
                                     void *userdata);

/* Called on the engine thread that waits for the run with each piece of output as the guest
 * writes it (stream 1: stdout, 2: stderr), up to half of CODECELL_LIMIT_OUTPUT_BYTES per
 * stream; when the run ends, with the rest the result holds: the remaining output, or, for a
 * stream over its cap, a marker of what was left out ("[… 199,700 lines, 3.4 MB omitted …]",
 * on a line of its own) and the last bytes. data is not NUL-terminated. It must return
 * quickly: the guest's pipes are not read meanwhile. */
typedef void (*codecell_output_fn)(int stream, const char *data, size_t len, void *userdata);

/* A file given to a run: written into /work before its code starts (codecell_run_options'
 * files). name is a relative path under /work in UTF-8: parts of 1 to 255 bytes joined by
 * '/', none of them "." or "..", no NUL or control characters, at most 1024 bytes; missing
 * folders are made. data holds len bytes (any bytes; NULL only when len is 0). */
typedef struct codecell_file {
        const char *name;
        const void *data;
        size_t len;
} codecell_file;

typedef struct codecell_run_options {
        codecell_cancel *cancel;       /* NULL: the run cannot be cancelled */
        codecell_progress_fn progress; /* NULL: no progress reports */
        uint64_t progress_interval_ms; /* 0: every 1000 ms */
        void *userdata;                /* passed to progress and output */
        /* NULL: output is only in the result (since 0.1.0). */
        codecell_output_fn output;
        /* Arguments for the code (Ruby's ARGV, Python's sys.argv[1:]), NULL-terminated, each
         * UTF-8; NULL: none. */
        const char *const *argv;
        /* "NAME=VALUE" strings set in the guest's environment for this run, NULL-terminated;
         * NAME of letters, digits and _. NULL: the fixed environment only. */
        const char *const *env;
        /* What the guest reads on stdin (stdin_len bytes, any bytes); NULL: empty. It travels in
         * the exec frame (as base64) and counts against CODECELL_LIMIT_FRAME_BYTES. */
        const char *stdin_data;
        size_t stdin_len;
        /* Wall clock of this run (or eval) in ms, from exec; 0: the cell's
         * CODECELL_LIMIT_TIMEOUT_MS. It only narrows the cell's limit: a larger value gets the
         * cell's. A size_t, as wide as the void * whose slot it took on every ABI. */
        size_t timeout_ms;
        /* Files written into /work before the code starts, ended by an entry whose name is
         * NULL; NULL: none. At most CODECELL_LIMIT_FILES_IN of them, CODECELL_LIMIT_FILES_IN_BYTES
         * together and CODECELL_LIMIT_FILE_BYTES each; a session's files stay in its /work. A
         * bad entry refuses the run (CODECELL_ERR_INVALID, naming it) before anything starts. They
         * travel in the exec frame (as base64): with stdin, they must fit in
         * CODECELL_LIMIT_FRAME_BYTES once encoded. */
        const codecell_file *files;
        /* Zero: room for later options (ABI promise). */
        void *reserved[1];
} codecell_run_options;

/* codecell_cell_run() with options (NULL: none). */
CODECELL_API int codecell_cell_run_with(codecell_cell *cell, const char *code, size_t len,
                                        const codecell_run_options *options,
                                        codecell_result **ret_result, codecell_error *err);

/* The cell's description as the model sees it (seed 000): how to use, the folders, the tools.
 * Owned by the cell; valid until the next codecell_cell_add_tool()/_load_tools() or
 * codecell_cell_free(). */
CODECELL_API const char *codecell_cell_description(const codecell_cell *cell);

/* The cell's i-th warning for the operator (a layer this host lacks, under the "warn"
 * policy), or NULL past the last. Every result also lists them in its "warnings". Owned by
 * the cell. */
CODECELL_API const char *codecell_cell_warning(const codecell_cell *cell, size_t i);

/* ---- sessions ----------------------------------------------------------------------------- */

/* Runs code in the named session of the cell: a persistent sandbox (the same layers as a run)
 * whose interpreter keeps its state — variables, definitions, loaded libraries, files in
 * /work — from one eval to the next. The session is started on first use. Every caller of the
 * cell reaches the same session by the same name; evals of one session run one at a time.
 * name: 1-64 characters of [A-Za-z0-9_.-]. Limits apply per eval (wall clock, CPU budget) and
 * per session (memory, processes). An eval that hits a limit, or whose interpreter dies, ends
 * the session: its result says the state was lost, and the next eval starts a fresh session.
 * Returns like codecell_cell_run(); also < 0 (CODECELL_ERR_INVALID) for a bad name, or
 * (CODECELL_ERR_UNSUPPORTED, EMFILE) when CODECELL_LIMIT_SESSIONS sessions are open. */
CODECELL_API int codecell_session_eval(codecell_cell *cell, const char *name, const char *code,
                                       size_t len, codecell_result **ret_result,
                                       codecell_error *err);
/* codecell_session_eval() with options (NULL: none). */
CODECELL_API int codecell_session_eval_with(codecell_cell *cell, const char *name, const char *code,
                                            size_t len, const codecell_run_options *options,
                                            codecell_result **ret_result, codecell_error *err);
/* Ends the named session and frees everything it held (its state is discarded; the next eval
 * under that name starts afresh). Waits for an eval in progress to end. -ENOENT when there is
 * no such session. */
CODECELL_API int codecell_session_close(codecell_cell *cell, const char *name, codecell_error *err);
/* Closes the least recently used of the sessions whose names start with prefix that no eval
 * is using or waiting for: room for another caller, never at the cost of a run in progress.
 * With ret_name, its name (malloc'd: free it). -ENOENT when there is none. */
CODECELL_API int codecell_session_close_idle(codecell_cell *cell, const char *prefix,
                                             char **ret_name, codecell_error *err);
/* Parks the session (docs/sessions.md, Parked sessions): after an eval in progress, its kernel
 * ends and its memory is freed; its journal stays, and the next eval under the name restores
 * its state by running its evals again (codecell_result_restored). (CODECELL_ERR_UNSUPPORTED,
 * EPERM) for a session that cannot be restored: a cell with read-write mounts, or a journal
 * over CODECELL_LIMIT_SESSION_JOURNAL_BYTES. */
CODECELL_API int codecell_session_park(codecell_cell *cell, const char *name, codecell_error *err);
/* Like codecell_session_close_idle(), but the session is parked (*ret_parked true) unless it
 * cannot be restored, when it is closed: room for another caller at no cost of state. A parked
 * session does not count against CODECELL_LIMIT_SESSIONS. */
CODECELL_API int codecell_session_park_idle(codecell_cell *cell, const char *prefix,
                                            char **ret_name, bool *ret_parked, codecell_error *err);
/* A new session `as` made from the session `from` (docs/sessions.md, Forks): parked with a copy
 * of from's journal and seed, so its first eval runs from's evals again and then its own; from
 * goes on untouched (after an eval in progress). (CODECELL_ERR_INVALID, EEXIST) when `as` is
 * open, ENOENT when `from` is not; (CODECELL_ERR_UNSUPPORTED, EPERM) when from cannot be
 * restored. */
CODECELL_API int codecell_session_fork(codecell_cell *cell, const char *from, const char *as,
                                       codecell_error *err);
/* Whether the session of that name is parked (its kernel ended, its state to be restored by
 * its next eval); false for one running or not open. */
CODECELL_API bool codecell_session_parked(codecell_cell *cell, const char *name);
/* codecell_session_close() for every session of the cell. */
CODECELL_API void codecell_session_close_all(codecell_cell *cell);
/* Names of the open sessions, as a malloc'd NULL-terminated array of malloc'd strings (free
 * each and the array), or NULL when out of memory. */
CODECELL_API char **codecell_session_list(codecell_cell *cell);

/* ---- host tools ------------------------------------------------------------------------- */

/* A host function the guest reaches with SB.call(name, key: value) (Ruby). It runs on a worker
 * thread of the execution, while the guest waits; up to CODECELL_LIMIT_TOOL_CONCURRENCY calls
 * of one execution run at once (and executions run side by side), so a handler must be
 * thread-safe, userdata included. args_json is the arguments
 * object as NUL-terminated JSON. Return 0 and set *ret_json to a malloc'd JSON text (any JSON
 * value), or return < 0 and set *ret_error to a malloc'd message (or leave it NULL): the guest
 * then gets SB::ToolError with that message. The engine frees both strings. A handler that
 * never returns cannot be interrupted: the execution still ends at its wall-clock limit, and
 * its result waits at most half a second more for the handler; then the handler's thread is
 * left running until it returns, and its answer is dropped. */
typedef int (*codecell_tool_handler)(const char *args_json, char **ret_json, char **ret_error,
                                     void *userdata);

/* Registers a tool on the cell. name: 1-64 characters of [A-Za-z0-9_.-], starting with a
 * letter, unique in the cell. description: shown to the model (may be NULL). input_schema_json:
 * a JSON Schema object for the arguments ({"type":"object","properties":{…},"required":[…]}),
 * or NULL for no arguments. Thread-safe; tools cannot be removed. */
CODECELL_API int codecell_cell_add_tool(codecell_cell *cell, const char *name,
                                        const char *description, const char *input_schema_json,
                                        codecell_tool_handler handler, void *userdata,
                                        codecell_error *err);

/* ---- approval before effects ------------------------------------------------------------ */

/* One call of a tool marked for approval, about to run. The strings are valid during the
 * callback only. */
typedef struct codecell_approval_request {
        const char *tool;      /* the tool's name, as the guest called it */
        const char *args_json; /* its arguments, the JSON text the tool would get */
        uint64_t wait_ms;      /* how long the engine waits (CODECELL_LIMIT_APPROVAL_MS) */
        void *run_userdata;    /* the run's codecell_run_options.userdata, or NULL */
        void *reserved[2];     /* NULL: room for later fields (ABI promise) */
} codecell_approval_request;

#define CODECELL_APPROVAL_DECLINE 0
#define CODECELL_APPROVAL_ACCEPT 1

/* Asked, on an engine thread, before a marked tool runs, while the guest waits and the run's
 * clock is stopped. Return CODECELL_APPROVAL_ACCEPT to let the tool run, or
 * CODECELL_APPROVAL_DECLINE or < 0 (no answer, an error) to refuse it; the guest then gets
 * SB::ToolError ("approval declined"), and *ret_reason (malloc'd, freed by the engine; may be
 * left NULL) is added to its message. An answer later than request->wait_ms counts as a
 * timeout: the tool does not run. The run does not end while the callback runs (a cancel
 * waits for it), so return within wait_ms. */
typedef int (*codecell_approval_fn)(const codecell_approval_request *request, char **ret_reason,
                                    void *userdata);

/* Sets the cell's approval callback (NULL: none, and every marked call is refused with
 * "approval needed"). Thread-safe; calls already waiting keep the callback they were given. */
CODECELL_API void codecell_cell_set_approval(codecell_cell *cell, codecell_approval_fn fn,
                                             void *userdata);
/* Marks the cell's tool named as needing approval before each call (tools files and
 * mcp_servers entries mark theirs with "approval": "always"). CODECELL_ERR_INVALID when the
 * cell has no such tool. A mark cannot be taken back. */
CODECELL_API int codecell_cell_require_approval(codecell_cell *cell, const char *tool,
                                                codecell_error *err);

/* Registers the command tools of a JSON file (docs/tools.md): each runs a host command outside
 * the sandbox, with the arguments as JSON on stdin and its JSON result on stdout; a non-zero
 * exit becomes SB::ToolError carrying its stderr. Validated whole before any tool is added;
 * errors name the JSON path ("tools[1].command: …"). Every tool of the file's "mcp_servers"
 * is added too; those servers run until the cell is freed. */
CODECELL_API int codecell_cell_load_tools(codecell_cell *cell, const char *path,
                                          codecell_error *err);

/* ---- configuration files ---------------------------------------------------------------- */

/* The cells and host tools of one JSON configuration file (docs/configuration.md), as
 * `codecell serve` and `codecell describe --config` use them. */
typedef struct codecell_cellset codecell_cellset;

/* Cells start no sandboxes ahead of use (for describing them only). */
#define CODECELL_CELLSET_NO_POOL 1u

/* Loads the file and creates every cell in it (and registers the host tools each cell names).
 * The whole file is checked before anything is created (no MCP server started, no interpreter
 * probed, no cell); on any error nothing is left (what was started is stopped) and err names
 * the JSON path and what is wrong ("cells.json: cells[1].mounts[0].dest: overlaps the
 * reserved /work"). Relative mount sources and tool commands resolve against the file's
 * folder. The file's MCP servers ("mcp_servers") are started, initialised and listed here;
 * codecell_cellset_free() shuts them down. flags: 0 or CODECELL_CELLSET_NO_POOL. */
CODECELL_API codecell_cellset *codecell_cellset_load(const char *path, unsigned flags,
                                                     codecell_error *err);
/* What codecell_cellset_load_capped() tightens in every cell of the file, never loosens. */
typedef struct codecell_cellset_caps {
        /* By codecell_limit: each cell's limit becomes the smaller of its own and this one;
         * 0 keeps the file's. A cap the limit itself would refuse (a memory limit under the
         * minimum) is refused the same way. */
        uint64_t limits[CODECELL_LIMIT_SLOTS];
        /* Every cell refuses to start without a layer the host lacks, whatever the file says
         * (CODECELL_POLICY_RAISE); false keeps the file's "on_unsupported". */
        bool raise_unsupported;
        /* Room for later fields (ABI promise): zero them. */
        uint64_t reserved[7];
} codecell_cellset_caps;

/* codecell_cellset_load(), with every cell's limits and policy tightened by caps (NULL: as
 * codecell_cellset_load) before any cell is created (`codecell run --config F --timeout 1s`).
 * codecell_cell_info_get() then says what each cell kept: a cap above a cell's own limit
 * leaves that limit as it was. */
CODECELL_API codecell_cellset *codecell_cellset_load_capped(const char *path, unsigned flags,
                                                            const codecell_cellset_caps *caps,
                                                            codecell_error *err);
/* Frees every cell of the set. */
CODECELL_API void codecell_cellset_free(codecell_cellset *set);
CODECELL_API size_t codecell_cellset_size(const codecell_cellset *set);
/* The i-th cell, owned by the set; NULL past the end. */
CODECELL_API codecell_cell *codecell_cellset_cell(const codecell_cellset *set, size_t i);
/* Its name (also its MCP tool name) and its "description" key ("" when absent). */
CODECELL_API const char *codecell_cellset_name(const codecell_cellset *set, size_t i);
CODECELL_API const char *codecell_cellset_summary(const codecell_cellset *set, size_t i);
/* Whether the cell offers persistent sessions ("sessions": {"enabled": false} turns them off). */
CODECELL_API bool codecell_cellset_sessions(const codecell_cellset *set, size_t i);
/* Whether a call that names no session runs in a default one ("sessions": {"default": true}). */
CODECELL_API bool codecell_cellset_default_session(const codecell_cellset *set, size_t i);
/* The index of the cell of that name, or -1. */
CODECELL_API int codecell_cellset_find(const codecell_cellset *set, const char *name);

/* ---- cell information ------------------------------------------------------------------- */

typedef struct codecell_cell_info {
        const char *language; /* static */
        bool writes_host;     /* some mount is read-write */
        size_t pool_size;     /* sandboxes the pool keeps standing by */
        size_t pool_ready;    /* standing by now */
        size_t sessions_open; /* sessions alive now */
        size_t tools;         /* host tools registered */
        /* By codecell_limit; 0 past CODECELL_LIMIT__COUNT. */
        uint64_t limits[CODECELL_LIMIT_SLOTS];
        /* SB.call calls since the cell was made, and of those the ones refused before a tool
         * ran (unknown name, over CODECELL_LIMIT_TOOL_CALLS, arguments too large). */
        uint64_t tool_calls;
        uint64_t tool_refusals;
        /* 1: the cell has a network policy, its code reaches the hosts it allows through the
         * engine's proxy (docs/network.md); 0: no network. */
        uint64_t network;
        /* Room for later fields (ABI promise). */
        uint64_t reserved[5];
} codecell_cell_info;

/* A snapshot of the cell's state. Thread-safe. */
CODECELL_API void codecell_cell_info_get(codecell_cell *cell, codecell_cell_info *ret_info);

/* ---- results --------------------------------------------------------------------------- */

typedef enum codecell_status {
        CODECELL_STATUS_OK = 0,
        CODECELL_STATUS_ERROR,
        CODECELL_STATUS_TIMEOUT,
        CODECELL_STATUS_FUEL_EXHAUSTED,
        CODECELL_STATUS_MEMORY_LIMIT,
        CODECELL_STATUS_SANDBOX_ERROR,
} codecell_status;

CODECELL_API codecell_status codecell_result_status(const codecell_result *result);
/* "ok", "error", "timeout", "fuel_exhausted", "memory_limit", "sandbox_error". Static string. */
CODECELL_API const char *codecell_status_name(codecell_status status);
/* Captured output (not NUL-terminated, may be empty). Owned by the result. */
CODECELL_API const char *codecell_result_stdout(const codecell_result *result, size_t *ret_len);
CODECELL_API const char *codecell_result_stderr(const codecell_result *result, size_t *ret_len);
/* The DESIGN §6 JSON object, compact (or indented when pretty). Caller frees with free().
 * NULL only when out of memory. */
CODECELL_API char *codecell_result_to_json(const codecell_result *result, bool pretty);
/* What a model acts on, compact, within about max_chars characters of value, output, error
 * and the value's rich text: "status", "value", "stdout" and "stderr" when not empty, "error",
 * "exit_status", "cancelled", "display" and "display_notes" (docs/results.md, "Rich values").
 * A piece over its share keeps its head and its tail with a marker between them
 * ("[… 199,700 lines, 3.4 MB omitted …]", cut on line and character boundaries) and the result
 * says so ("stdout_truncated", "stderr_truncated", "value_truncated": the value is then a
 * string, the cut JSON text; "error_truncated"; "display_truncated"). With details, also
 * "duration_ms", "cpu_ms", "memory_peak_bytes" and "sandbox" (the layers): MCP's
 * structuredContent. Never "warnings", which are for the operator. Caller frees with free();
 * NULL only when out of memory. */
CODECELL_API char *codecell_result_to_model_json(const codecell_result *result, size_t max_chars,
                                                 bool details);
/* The same, for a client that shows the value's rich text as its own content (an MCP server):
 * "display"."markdown" and "display"."html" are {"chars": n} in the JSON, and their text, cut
 * within the same max_chars, is handed back in *ret_markdown and *ret_html (NULL when there is
 * none; the caller frees them with free()). */
CODECELL_API char *codecell_result_to_model_parts(const codecell_result *result, size_t max_chars,
                                                  bool details, char **ret_markdown,
                                                  char **ret_html);
/* The value of an "ok" result as JSON text, exactly as the guest gave it (integers of any
 * size, doubles in their shortest exact form): "null" when there was none. NULL for any
 * other status. Owned by the result. */
CODECELL_API const char *codecell_result_value(const codecell_result *result);
/* A session eval's: why the session's state (variables, definitions, loaded libraries, files in
 * /work) was lost — this eval ended the session (a limit, a dead interpreter), or the session's
 * kernel had ended since its last eval and this one ran in a fresh session — or NULL when it
 * was not. Also the result's "state_lost". Owned by the result. */
CODECELL_API const char *codecell_result_state_lost(const codecell_result *result);
/* A session eval's restore of its parked session (docs/sessions.md, Parked sessions): 1 when
 * the session was restored first (*ret_evals evals replayed in *ret_ms; either may be NULL),
 * -1 when the restore stopped (why, and the eval where, in codecell_result_state_lost()), 0
 * when there was none. Also the result's "restored". */
CODECELL_API int codecell_result_restored(const codecell_result *result, size_t *ret_evals,
                                          double *ret_ms);
/* The CPU time the code used, in milliseconds (the result's "cpu_ms"). */
CODECELL_API double codecell_result_cpu_ms(const codecell_result *result);
/* The most memory the sandbox used, in bytes (the result's "memory_peak_bytes"), or -1 when
 * unknown (no memory cgroup). */
CODECELL_API int64_t codecell_result_memory_peak_bytes(const codecell_result *result);
/* The class of the error the code raised (an "error" result's "error"."class"), as the guest
 * named it: untrusted text of any length. NULL when there is none. Owned by the result. */
CODECELL_API const char *codecell_result_error_class(const codecell_result *result);
/* The result's "error" as compact JSON text: an object {"class", "message", "backtrace"} when
 * the code raised, a string for a limit or a sandbox error. Numbers are written to read back
 * exactly. NULL when the result has none ("ok") or when out of memory. Caller frees with
 * free(). */
CODECELL_API char *codecell_result_error_json(const codecell_result *result);
/* A network cell's connections through its proxy (docs/network.md) as a JSON array, malloc'd:
 * [{"host", "port", "bytes_out", "bytes_in"}, with "refused": why when it was refused]. NULL
 * when the run made none (or out of memory). */
CODECELL_API char *codecell_result_network_json(const codecell_result *result);
CODECELL_API void codecell_result_free(codecell_result *result);

/* The pictures a run handed back, in the order they were made: figures a Python run drew with
 * matplotlib (shown, or still open at its end) and image files written to the cell's image
 * folder. At most CODECELL_LIMIT_IMAGES of at most CODECELL_LIMIT_IMAGE_BYTES each; the type
 * is found from the bytes ("image/png", "image/jpeg", "image/gif", "image/webp"). */
CODECELL_API size_t codecell_result_image_count(const codecell_result *result);
/* The i-th image's bytes (*ret_len of them) and, in *ret_mime_type, its static MIME type; NULL
 * past the last. Owned by the result. */
CODECELL_API const void *codecell_result_image(const codecell_result *result, size_t i,
                                               size_t *ret_len, const char **ret_mime_type);
/* The i-th image's file name in the output folder, or NULL for a figure the prelude drew (or
 * past the last). Owned by the result. */
CODECELL_API const char *codecell_result_image_name(const codecell_result *result, size_t i);

/* The other files the code wrote to the output folder during the run, in name order: at most
 * CODECELL_LIMIT_FILES_OUT of at most CODECELL_LIMIT_FILE_OUT_BYTES each. The MIME type is the
 * host's, never the guest's: PDF, ZIP or gzip by their first bytes; for valid UTF-8 text
 * (without NUL) "text/csv" or "application/json" by the name's suffix, else "text/plain";
 * anything else "application/octet-stream". What was left out is in the result's JSON
 * ("files_omitted"). */
CODECELL_API size_t codecell_result_file_count(const codecell_result *result);
/* The i-th file's bytes (*ret_len of them), its name (one path component, printable UTF-8) and
 * its static MIME type; NULL past the last. Owned by the result; any ret_ may be NULL. */
CODECELL_API const void *codecell_result_file(const codecell_result *result, size_t i,
                                              const char **ret_name, const char **ret_mime_type,
                                              size_t *ret_len);

/* The last value's rich forms (docs/results.md, "Rich values"): kind "markdown", "html" or
 * "svg" (UTF-8 text, not NUL-terminated, cut to CODECELL_LIMIT_MODEL_CHARS characters; an SVG
 * is whole and starts with <svg or <?xml) or "png" (bytes checked to be a PNG image, at most
 * CODECELL_LIMIT_IMAGE_BYTES). NULL when the value gave none of that kind; *ret_len is then 0.
 * The value's own JSON (_repr_json_) is in codecell_result_to_json's "display". Owned by the
 * result. */
CODECELL_API const void *codecell_result_display(const codecell_result *result, const char *kind,
                                                 size_t *ret_len);

/* ---- host check ------------------------------------------------------------------------ */

typedef struct codecell_layer_report {
        const char *name; /* static: "user_namespace", "landlock", "cgroup", … */
        bool available;
        bool required;    /* a required layer missing means nothing can run */
        char detail[256]; /* what was found, or why it is missing */
} codecell_layer_report;

/* Probes every layer for real on this host (a namespace is created, Landlock's ABI is asked,
 * a test cgroup is made and removed). Fills up to `max` reports and returns how many were
 * filled (< 0 on failure). */
CODECELL_API int codecell_host_check(codecell_layer_report *reports, size_t max);

/* ---- jail: a caller's own function in a forked child ----------------------------------- */

/* The seed agent_jail's run(), in C: the caller's function runs in a forked child of the
 * calling process (a snapshot of its memory: loaded libraries, open objects, closures) behind
 * codecell's walls, and the caller gets back the bytes the function handed over, or a typed
 * outcome. docs/jail.md has the walls and what the child shares with its parent.
 *
 * Walls, applied in the child before the function's first instruction: new user, pid, mount,
 * IPC, UTS and (unless network) network namespaces; the child runs as the caller's uid, or as
 * nobody (65534) when the caller is root (its fs_allow folders idmapped so that nobody writes
 * there as their owner), with no capability anywhere; no_new_privs; the
 * seccomp filter of a cell that allows subprocesses (no new namespaces, mounts, ptrace, bpf …;
 * without network, no socket but AF_UNIX); Landlock granting only fs_allow (read-write),
 * fs_read_allow and the seed's system paths (read-only), at their own host paths; a fresh
 * /proc; memory and process limits in a cgroup (v2, or v1 on hybrid hosts) or by rlimits; a
 * wall clock and a CPU budget enforced from the parent; every fd but the answer's and
 * keep_open's pointing at /dev/null. Made inside another jail, a jail has no namespaces of its
 * own and stands inside the outer's walls (docs/jail.md, "Nested jails"). Thread-safe; see
 * "Threads" in docs/jail.md for what only the calling thread existing in the child means for
 * the function. */

typedef enum codecell_jail_outcome {
        CODECELL_JAIL_VALUE = 0,   /* the function handed back its value (data) */
        CODECELL_JAIL_RAISED,      /* the function reported an error of its own (data) */
        CODECELL_JAIL_TIMEOUT,     /* killed at the wall clock, or (cpu) at the CPU budget */
        CODECELL_JAIL_MEMORY,      /* the memory limit: killed by it, or reported by the function */
        CODECELL_JAIL_FILESYSTEM,  /* the function reported a path its lists do not grant (data) */
        CODECELL_JAIL_CRASHED,     /* ended by a signal, or exited without handing anything back */
        CODECELL_JAIL_UNSUPPORTED, /* never returned by a run: a missing layer is an error */
} codecell_jail_outcome;

typedef struct codecell_jail_options {
        uint64_t timeout_ms;   /* wall clock from the fork; 0: 30000 */
        uint64_t cpu_ms;       /* CPU budget of every process of the jail; 0: timeout_ms */
        uint64_t memory_bytes; /* memory the child may add to what it shares; 0: 512 MiB */
        uint64_t pids;         /* processes and threads; 0: 64 */
        uint64_t answer_bytes; /* largest answer; 0: 64 MiB */
        /* NULL-terminated lists of host paths (relative ones against the current directory), or
         * NULL. A path that does not exist is left out, as the seed does. At most 64 in all. */
        const char *const *fs_allow;      /* read and write beneath each */
        const char *const *fs_read_allow; /* read beneath each */
        bool network; /* true: the host's network (and inet sockets); false: none */
        codecell_policy on_unsupported; /* a host without Landlock (or idmapped mounts) */
        /* The caller's descriptors the function may use as they are (the same open file: its
         * offset, its access mode, a socket's peer), terminated by -1; every other one points
         * at /dev/null in the child. Each must be open; at most 64. NULL: none. */
        const int *keep_open;
        void *reserved[3]; /* zero */
} codecell_jail_options;

typedef struct codecell_jail_result {
        codecell_jail_outcome outcome;
        bool cpu; /* TIMEOUT: the CPU budget (else the wall clock) */
        /* How the jailed process ended, when the outcome comes from the kernel's account
         * (TIMEOUT, MEMORY, CRASHED): the signal that ended it or 0, its exit code or -1. Once
         * an answer is complete the process is killed (docs/jail.md), and these say nothing. */
        int signal;
        int exit_code;
        char *data; /* what the function handed back (malloc'd; NULL when nothing) */
        size_t len;
        double duration_ms;
        double cpu_ms;
        int64_t memory_peak_bytes; /* -1 when unknown */
        uint64_t reserved[4];
} codecell_jail_result;

typedef struct codecell_jail codecell_jail;

/* The function run in the child. It hands back its answer with codecell_jail_answer() (at most
 * once) and returns; returning without an answer is VALUE with no data. */
typedef void (*codecell_jail_fn)(codecell_jail *jail, void *arg);

/* Runs fn(jail, arg) in a jailed child and waits for it: fork, codecell_jail_enter, fn,
 * _exit in the child; codecell_jail_wait in the caller. Returns 0 with *ret filled (release
 * it with codecell_jail_result_clear), or < 0: bad options (CODECELL_ERR_INVALID), a missing
 * layer under the "raise" policy or no user namespaces (CODECELL_ERR_UNSUPPORTED), an answer
 * over answer_bytes or a failed set-up (CODECELL_ERR_SYSTEM). */
CODECELL_API int codecell_jail_run(const codecell_jail_options *options, codecell_jail_fn fn,
                                   void *arg, codecell_jail_result *ret, codecell_error *err);

/* The same in three steps, for a language runtime that must fork with its own fork (Ruby's,
 * Python's os.fork) so that its after-fork handlers run:
 *   jail = codecell_jail_new(&options, &err);   in the parent: checks, cgroup, filters
 *   pid = fork();                                the runtime's
 *   child:  codecell_jail_enter(jail); … codecell_jail_answer(jail, …); _exit(0);
 *   parent: codecell_jail_wait(jail, pid, &result, &err); codecell_jail_free(jail);
 * A jail is used for one child. */
CODECELL_API codecell_jail *codecell_jail_new(const codecell_jail_options *options,
                                              codecell_error *err);
/* In the child, first thing after the fork; the child must be single-threaded. Builds the
 * walls and returns 0 in the jailed process. Never returns on failure, nor in the process
 * that was forked (it stays outside as the jailed process's reaper and reports to the
 * parent); the failure reaches the parent through codecell_jail_wait. The jailed process is
 * a fork(2) of the child: for a runtime whose own state must see every fork (Ruby's timer,
 * Python's at-fork handlers), the same in three steps, with the runtime's fork between:
 *   child:       codecell_jail_enter_namespaces(jail); pid = fork();
 *   its child:   codecell_jail_enter_walls(jail); … codecell_jail_answer(jail, …); _exit(0);
 *   the child:   codecell_jail_keep(jail, pid);      (pid <= 0: the fork failed)
 * None returns on failure; codecell_jail_keep never returns. */
CODECELL_API int codecell_jail_enter(codecell_jail *jail);
CODECELL_API int codecell_jail_enter_namespaces(codecell_jail *jail);
CODECELL_API int codecell_jail_enter_walls(codecell_jail *jail);
CODECELL_API void codecell_jail_keep(codecell_jail *jail, int pid);
/* In the jailed process: hands back len bytes with an outcome (VALUE, RAISED, FILESYSTEM or
 * MEMORY). Once; 0 or -errno (-EALREADY the second time, -EINVAL for another outcome, -EPERM
 * from a process the function forked). The outcome and the bytes are what the jailed side
 * claims: code inside the jail can answer anything; treat both as untrusted data. */
CODECELL_API int codecell_jail_answer(codecell_jail *jail, codecell_jail_outcome outcome,
                                      const void *data, size_t len);
/* In the parent: waits for the child forked after codecell_jail_new (pid) and everything it
 * started, killing it at its limits, and fills *ret. Returns like codecell_jail_run. Blocks
 * only the calling thread. */
CODECELL_API int codecell_jail_wait(codecell_jail *jail, int pid, codecell_jail_result *ret,
                                    codecell_error *err);
/* In the parent. Removes the jail's cgroup; the child must have been waited for. */
CODECELL_API void codecell_jail_free(codecell_jail *jail);
/* The i-th layer this host lacks, under the "warn" policy ("landlock: …"), or NULL past the
 * last. Owned by the jail. */
CODECELL_API const char *codecell_jail_warning(const codecell_jail *jail, size_t i);
/* The walls in force, comma-separated ("user_namespace,…,landlock_abi_6,cgroup_v1"). Owned by
 * the jail. */
CODECELL_API const char *codecell_jail_layers(const codecell_jail *jail);
/* "value", "raised", "timeout", "memory", "filesystem", "crashed", "unsupported". Static. */
CODECELL_API const char *codecell_jail_outcome_name(codecell_jail_outcome outcome);
/* Frees result->data and zeroes the result. */
CODECELL_API void codecell_jail_result_clear(codecell_jail_result *result);

#ifdef __cplusplus
}
#endif
#endif
