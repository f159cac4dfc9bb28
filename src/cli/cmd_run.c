/* codecell run: one script in a fresh sandbox. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "util.h"
#include "codecell.h"
#include "commands.h"
#include "cell_flags.h"
#include "result_print.h"
#include "save_outputs.h"
#include "cli_input.h"
#include "config_cell.h"
#include "option_errors.h"

static const char usage[] =
        "Usage: codecell run [OPTIONS] FILE [--] [ARGS...]\n"
        "       codecell run [OPTIONS] -e CODE [-- ARGS...]\n"
        "       codecell run [OPTIONS] -          (code from stdin)\n"
        "\n"
        "Runs the code in a fresh sandbox and prints what it produced.\n"
        "\n"
        "Options:\n"
        "  -e, --eval CODE          run CODE instead of a file\n"
        "      --lang LANG          guest language: ruby or python (default: from the\n"
        "                           file's extension, .rb or .py, else ruby)\n"
        "      --mount SRC:DST[:ro|rw|exec]\n"
        "                           show host folder SRC at DST (read-only unless :rw;\n"
        "                           :exec, read-only with native libraries that may be\n"
        "                           loaded; never on a folder a guest can write);\n"
        "                           repeatable\n"
        "      --timeout DURATION   wall-clock limit, from the start of the code\n"
        "                           (default 30s; units ms, s, m, h; a bare number is\n"
        "                           seconds)\n"
        "      --cpu DURATION       CPU-time budget, from the start of the code\n"
        "                           (default 10s)\n"
        "      --memory SIZE        memory limit (default 256M; units K, M, G)\n"
        "      --max-output SIZE    stdout and stderr kept, each (default 1M)\n"
        "      --allow-subprocesses let the code run the system's programs (fork, exec\n"
        "                           of /usr); off by default\n" CELL_FLAGS_HELP_ALLOW_NET
                CELL_FLAGS_HELP_INTERPRETER CELL_FLAGS_HELP_START
        "      --tools FILE         host tools the code may call with SB.call\n"
        "                           (docs/tools.md)\n"
        "      --on-unsupported warn|raise|ignore\n"
        "                           when the host lacks Landlock or a cgroup\n"
        "                           (default warn)\n"
        "      --output-folder PATH files the code writes to PATH during the run (in the\n"
        "                           sandbox: under /work or /tmp, or in a read-write\n"
        "                           mount) come back with the result: images beside\n"
        "                           matplotlib's figures, other files as result files\n"
        "      --image-folder PATH  the same (its old name)\n"
        "      --save-outputs DIR   write the files of the output folder to DIR under\n"
        "                           their names, never over a file already there\n"
        "      --save-images DIR    write the images the run handed back to DIR\n"
        "                           (image-1.png, …) and list them on stderr\n"
        "      --env NAME=VALUE     set a variable in the code's environment; repeatable\n"
        "      --file [NAME=]PATH   copy host file PATH into /work/NAME (default: PATH's\n"
        "                           last part) before the code starts; repeatable\n"
        "      --config FILE        run in a cell of a configuration file: its mounts,\n"
        "                           tools, interpreter and limits; beside it --timeout,\n"
        "                           --cpu, --memory and --max-output only narrow the\n"
        "                           cell's limits, --on-unsupported only takes raise, and\n"
        "                           the flags that shape a cell are refused ...\n"
        "      --cell NAME          ... the cell named NAME (needless when FILE has one)\n"
        "      --json               print the result as one JSON object\n"
        "  -h, --help               show this help\n"
        "\n"
        "Without --json the guest's stdout and stderr are shown as the code writes them,\n"
        "then the value (\"=> …\") or the error is printed. ARGS are the code's ARGV\n"
        "(sys.argv[1:]). When stdin is not a terminal and not the code, the code reads\n"
        "it.\n"
        "\n"
        "Exit codes: 0 ok, 1 the code raised an error, 2 usage or configuration error,\n"
        "3 a limit was hit (timeout, fuel_exhausted, memory_limit), 4 sandbox error.\n";

enum {
        OPT_TIMEOUT = 256,
        OPT_CPU,
        OPT_MEMORY,
        OPT_MAX_OUTPUT,
        OPT_POLICY,
        OPT_JSON,
        OPT_IMAGE_FOLDER,
        OPT_OUTPUT_FOLDER,
        OPT_SAVE_IMAGES,
        OPT_SAVE_OUTPUTS,
        OPT_ENV,
        OPT_FILE,
        OPT_CONFIG,
        OPT_CELL
};
#define MAX_ENV 256

static const struct option options[] = {
        {"eval", required_argument, NULL, 'e'},
        CELL_FLAG_OPTIONS,
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"cpu", required_argument, NULL, OPT_CPU},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"max-output", required_argument, NULL, OPT_MAX_OUTPUT},
        {"on-unsupported", required_argument, NULL, OPT_POLICY},
        {"json", no_argument, NULL, OPT_JSON},
        {"image-folder", required_argument, NULL, OPT_IMAGE_FOLDER},
        {"output-folder", required_argument, NULL, OPT_OUTPUT_FOLDER},
        {"save-images", required_argument, NULL, OPT_SAVE_IMAGES},
        {"save-outputs", required_argument, NULL, OPT_SAVE_OUTPUTS},
        {"env", required_argument, NULL, OPT_ENV},
        {"file", required_argument, NULL, OPT_FILE},
        {"config", required_argument, NULL, OPT_CONFIG},
        {"cell", required_argument, NULL, OPT_CELL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

static int fail_usage(const char *fmt, const char *arg)
{
        fputs("codecell run: ", stderr);
        fprintf(stderr, fmt, arg);
        fputs(" (see codecell run --help)\n", stderr);
        return EXIT_USAGE;
}

/* Reads a whole file, or stdin for "-". NULL with errno set on failure. */
static char *read_code(const char *path, size_t *ret_len)
{
        FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rbe");
        if (!f)
                return NULL;
        char *buf = NULL;
        size_t len = 0, cap = 0;
        for (;;) {
                if (len == cap) {
                        cap = cap ? cap * 2 : 65536;
                        char *grown = realloc(buf, cap + 1);
                        if (!grown) {
                                free(buf);
                                buf = NULL;
                                errno = ENOMEM;
                                break;
                        }
                        buf = grown;
                }
                size_t n = fread(buf + len, 1, cap - len, f);
                len += n;
                if (n == 0) {
                        if (ferror(f)) {
                                free(buf);
                                buf = NULL;
                                errno = EIO;
                        }
                        break;
                }
        }
        if (f != stdin)
                fclose(f);
        if (buf) {
                buf[len] = '\0';
                *ret_len = len;
        }
        return buf;
}

static int exit_code_for(codecell_status status)
{
        switch (status) {
        case CODECELL_STATUS_OK:
                return EXIT_OK;
        case CODECELL_STATUS_ERROR:
                return EXIT_GUEST_ERROR;
        case CODECELL_STATUS_TIMEOUT:
        case CODECELL_STATUS_FUEL_EXHAUSTED:
        case CODECELL_STATUS_MEMORY_LIMIT:
                return EXIT_LIMIT;
        default:
                return EXIT_SANDBOX;
        }
}

/* The run's images into dir as image-1.png, image-2.jpeg, …, listed on stderr. dir_fd: dir as
 * it was before the run, or -1 when it did not exist. A guest may write there (a read-write
 * mount of the same folder): nothing it planted during the run is followed — a symbolic link
 * for dir or an image's name, a FIFO that would block the write forever. */
static int write_images(const codecell_result *res, const char *dir, int dir_fd)
{
        size_t n = codecell_result_image_count(res);
        if (n == 0) {
                fprintf(stderr, "codecell run: no images to save in %s\n", dir);
                return 0;
        }
        if (dir_fd < 0 && mkdir(dir, 0755) < 0 && errno != EEXIST) {
                fprintf(stderr, "codecell run: --save-images %s: %s\n", dir, strerror(errno));
                return -1;
        }
        _cleanup_close_ int made =
                dir_fd < 0 ? open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (dir_fd < 0 && made < 0) {
                fprintf(stderr, "codecell run: --save-images %s: %s\n", dir, strerror(errno));
                return -1;
        }
        for (size_t i = 0; i < n; i++) {
                size_t len = 0;
                const char *mime = NULL;
                const void *data = codecell_result_image(res, i, &len, &mime);
                char name[64], path[4096];
                snprintf(name, sizeof(name), "image-%zu.%s", i + 1, mime + strlen("image/"));
                snprintf(path, sizeof(path), "%s/%s", dir, name);
                int fd = openat(dir_fd >= 0 ? dir_fd : made, name,
                                O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                                0644);
                struct stat st;
                if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
                        close(fd);
                        fd = -1;
                        errno = EINVAL;
                }
                bool ok = fd >= 0 && write_all(fd, data, len) == 0;
                if (fd >= 0 && close(fd) < 0)
                        ok = false;
                if (!ok) {
                        fprintf(stderr, "codecell run: cannot write %s: %s\n", path,
                                errno == EINVAL ? "not a regular file" : strerror(errno));
                        return -1;
                }
                fprintf(stderr, "codecell run: saved %s (%s, %zu bytes)\n", path, mime, len);
        }
        return 0;
}

struct limit_flag {
        int opt;
        codecell_limit limit;
        bool duration;
};

static const struct limit_flag limit_flags[] = {
        {OPT_TIMEOUT, CODECELL_LIMIT_TIMEOUT_MS, true},
        {OPT_CPU, CODECELL_LIMIT_CPU_MS, true},
        {OPT_MEMORY, CODECELL_LIMIT_MEMORY_BYTES, false},
        {OPT_MAX_OUTPUT, CODECELL_LIMIT_OUTPUT_BYTES, false},
};

int cmd_run(int argc, char **argv)
{
        const char *eval = NULL, *config = NULL, *cell_name = NULL, *save_images = NULL;
        const char *save_dir = NULL;
        const char *env[MAX_ENV + 1] = {0};
        size_t n_env = 0;
        __attribute__((cleanup(cli_files_free))) struct cli_files files = {0};
        bool json = false;
        struct cell_flags f = {.who = "codecell run", .policy = CODECELL_POLICY_WARN};
        int c;
        optind = 1;
        opterr = 0;
        bool policy_given = false;
        for (int at = optind; (c = getopt_long(argc, argv, "+:e:h", options, NULL)) != -1;
             at = optind) {
                if (cell_flags_take(&f, c, optarg))
                        continue;
                switch (c) {
                case 'e':
                        eval = optarg;
                        break;
                case OPT_POLICY:
                        policy_given = true;
                        if (strcmp(optarg, "warn") == 0)
                                f.policy = CODECELL_POLICY_WARN;
                        else if (strcmp(optarg, "raise") == 0)
                                f.policy = CODECELL_POLICY_RAISE;
                        else if (strcmp(optarg, "ignore") == 0)
                                f.policy = CODECELL_POLICY_IGNORE;
                        else
                                return fail_usage("--on-unsupported must be warn, raise or ignore, "
                                                  "not \"%s\"",
                                                  optarg);
                        break;
                case OPT_JSON:
                        json = true;
                        break;
                case OPT_IMAGE_FOLDER:
                case OPT_OUTPUT_FOLDER:
                        if (f.output_folder)
                                return fail_usage("%s: --output-folder and --image-folder are "
                                                  "one flag (--image-folder is its old name); "
                                                  "give it once",
                                                  optarg);
                        f.output_folder = optarg;
                        f.output_flag =
                                c == OPT_IMAGE_FOLDER ? "--image-folder" : "--output-folder";
                        break;
                case OPT_SAVE_IMAGES:
                        save_images = optarg;
                        break;
                case OPT_SAVE_OUTPUTS:
                        save_dir = optarg;
                        break;
                case OPT_ENV:
                        if (!strchr(optarg, '='))
                                return fail_usage("--env %s: expected NAME=VALUE", optarg);
                        if (n_env == MAX_ENV)
                                return fail_usage("at most 256 --env%s", "");
                        env[n_env++] = optarg;
                        break;
                case OPT_FILE: {
                        int r = cli_files_take(&files, optarg);
                        if (r)
                                return r;
                        break;
                }
                case OPT_CONFIG:
                        config = optarg;
                        break;
                case OPT_CELL:
                        cell_name = optarg;
                        break;
                case 'h':
                        fputs(usage, stdout);
                        return EXIT_OK;
                case '?':
                case ':':
                        return option_refused("codecell run", c, argv[at]);
                default: {
                        const struct limit_flag *lf = NULL;
                        for (size_t i = 0; i < sizeof(limit_flags) / sizeof(limit_flags[0]); i++)
                                if (limit_flags[i].opt == c)
                                        lf = &limit_flags[i];
                        if (!lf)
                                return fail_usage("unexpected option%s", "");
                        if (cell_flags_limit(&f, lf->limit, lf->duration, optarg) < 0)
                                return fail_usage(
                                        lf->duration ? "bad duration \"%s\" (e.g. 500ms, 5s, 1m)"
                                                     : "bad size \"%s\" (e.g. 512K, 256M, 1G)",
                                        optarg);
                }
                }
        }
        /* -e CODE -- ARGS: getopt took the "--"; FILE [--] ARGS: the arguments follow FILE. */
        bool dashes = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
        const char *file = optind < argc && !(eval && dashes) ? argv[optind++] : NULL;
        if (file && optind < argc && strcmp(argv[optind], "--") == 0)
                optind++;
        const char *const *args = (const char *const *)argv + optind;
        if (cell_name && !config)
                return fail_usage("--cell NAME needs --config FILE%s", "");
        const char *shaping = config ? cell_shaping_flag(&f) : NULL;
        if (shaping)
                return fail_usage("%s: --config runs the cell as the file shapes it; beside it "
                                  "only --timeout, --cpu, --memory and --max-output apply, and "
                                  "only narrow",
                                  shaping);
        if (config && policy_given && f.policy != CODECELL_POLICY_RAISE)
                return fail_usage("--on-unsupported %s: beside --config the cell's on_unsupported "
                                  "applies; only raise (stricter) may be given",
                                  f.policy == CODECELL_POLICY_WARN ? "warn" : "ignore");
        if (eval && file)
                return fail_usage("give either -e CODE or a FILE, not both (got \"%s\")", file);
        if (!eval && !file)
                return fail_usage("nothing to run: give a FILE, -e CODE or - for stdin%s", "");

        char *code = NULL;
        size_t len = 0;
        if (eval) {
                code = strdup(eval);
                len = strlen(eval);
        } else {
                code = read_code(file, &len);
                if (!code) {
                        fprintf(stderr, "codecell run: cannot read %s: %s\n", file,
                                strerror(errno));
                        return EXIT_USAGE;
                }
        }
        codecell_error err = {0};
        codecell_cell *cell = NULL;
        codecell_cellset *set = NULL;
        size_t index = 0;
        codecell_result *res = NULL;
        char *input = NULL;
        int images_dir = -1, outputs_dir = -1;
        size_t input_len = 0;
        if (!f.lang)
                f.lang = language_of(file);
        /* Code from stdin leaves none for the code to read. */
        int exit_code = file && strcmp(file, "-") == 0 ? 0 : stdin_for_guest(&input, &input_len);
        if (exit_code == EXIT_OK)
                exit_code = config ? cell_from_config_narrowed(&f, config, cell_name, &set, &index)
                                   : cell_from_flags(&f, &cell);
        if (exit_code != EXIT_OK)
                goto out;
        if (set)
                cell = codecell_cellset_cell(set, index);
        /* A person sees the output as the code writes it; --json waits for the result. */
        codecell_run_options live = {.output = json ? NULL : print_live_output,
                                     .argv = args,
                                     .env = n_env ? env : NULL,
                                     .stdin_data = input,
                                     .stdin_len = input_len,
                                     .files = files.list};
        /* Where the images go, as the user named it now, before the guest could change it. */
        images_dir = save_images ? open(save_images, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        outputs_dir = save_dir ? open(save_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (codecell_cell_run_with(cell, code, len, &live, &res, &err) < 0) {
                fprintf(stderr, "codecell run: %s\n", err.message);
                exit_code = err.kind == CODECELL_ERR_INVALID ? EXIT_USAGE : EXIT_SANDBOX;
                goto out;
        }
        if (json) {
                char *text = codecell_result_to_json(res, false);
                if (text)
                        puts(text);
                free(text);
        } else {
                print_outcome(res);
        }
        exit_code = exit_code_for(codecell_result_status(res));
        if (save_images && write_images(res, save_images, images_dir) < 0 && exit_code == EXIT_OK)
                exit_code = EXIT_USAGE;
        if (save_dir && save_outputs(res, save_dir, outputs_dir) < 0 && exit_code == EXIT_OK)
                exit_code = EXIT_USAGE;
out:
        if (images_dir >= 0)
                close(images_dir);
        if (outputs_dir >= 0)
                close(outputs_dir);
        codecell_result_free(res);
        if (set)
                codecell_cellset_free(set); /* and its cells */
        else
                codecell_cell_free(cell);
        free(code);
        free(input);
        return exit_code;
}
