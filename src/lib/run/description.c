/* The tool description the model reads (seed 000's fixed text, adapted to codecell): how to
 * use the cell, with every promise checked against what the sandbox really allows, the
 * libraries the interpreter offers, then the folders and host tools it can see. */
#include "description.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "egress_policy.h"
#include "images.h"

/* The libraries named at most; the rest are counted. */
#define LIBRARIES_LISTED 60
#define WRAP_COLUMNS 80

static void folder_section(FILE *f, const codecell_config *c, bool rw, const char *header)
{
        bool any = false;
        for (size_t i = 0; i < c->n_mounts; i++) {
                const struct cc_mount *m = &c->mounts[i];
                if (m->read_write != rw)
                        continue;
                if (!any)
                        fprintf(f, "\n\n%s", header);
                any = true;
                fprintf(f, "\n- `%s`", m->dest);
                if (*m->description)
                        fprintf(f, " — %s", m->description);
        }
}

/* "64 MiB", "1.5 GiB", "300 KiB", "4096 bytes". */
static void print_size(FILE *f, unsigned long long bytes)
{
        static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
        double value = (double)bytes;
        size_t u = 0;
        while (value >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
                value /= 1024;
                u++;
        }
        fprintf(f, value == (double)(unsigned long long)value ? "%.0f %s" : "%.1f %s", value,
                units[u]);
}

/* "30 s", "1.5 s", "250 ms". */
static void print_duration(FILE *f, unsigned long long ms)
{
        if (ms % 1000 == 0)
                fprintf(f, "%llu s", ms / 1000);
        else if (ms >= 1000)
                fprintf(f, "%.1f s", (double)ms / 1000);
        else
                fprintf(f, "%llu ms", ms);
}

/* The rules of one execution, each as the sandbox enforces it (docs/security.md). */
static void how_to_use(FILE *f, const codecell_config *c, const struct interpreter_info *probe)
{
        const uint64_t *lim = c->limits;
        char version[48] = "";
        if (probe->version)
                snprintf(version, sizeof(version), " %s", probe->version);
        fprintf(f, c->runtime->how_to_use, version);
        const char *network =
                c->network_policy ? "- HTTP and HTTPS only to the hosts listed under Network below"
                                  : "- no network";
        fputs(network, f);
        fputs(c->subprocesses
                      ? (c->network_policy ? ";\n  threads work, and the system's programs "
                                             "(under `/usr`) may be run as\n  subprocesses;\n"
                                           : "; threads work, and the system's programs "
                                             "(under `/usr`)\n  may be run as subprocesses;\n")
                      : (c->network_policy ? ";\n  no subprocesses; threads work;\n"
                                           : " and no subprocesses; threads work;\n"),
              f);
        fputs(c->n_libraries ? "- the system's files under `/usr` and the libraries under "
                               "`/codecell/lib`\n"
                               "  readable, and nothing else of the host's file system but the\n"
                               "  folders listed below;\n"
                             : "- the system's files under `/usr` readable, and nothing else of "
                               "the host's\n"
                               "  file system but the folders listed below;\n",
              f);
        fputs("- private writable scratch directories, `/work` (the working directory,\n  up to ",
              f);
        print_size(f, lim[CODECELL_LIMIT_WORK_BYTES]);
        fputs(") and `/tmp` (up to ", f);
        print_size(f, lim[CODECELL_LIMIT_TMP_BYTES]);
        fputs("), both empty at the start of every\n  execution;\n- at most ", f);
        print_duration(f, lim[CODECELL_LIMIT_TIMEOUT_MS]);
        fputs(" of wall-clock time, ", f);
        print_duration(f, lim[CODECELL_LIMIT_CPU_MS]);
        fputs(" of CPU time, ", f);
        print_size(f, lim[CODECELL_LIMIT_MEMORY_BYTES]);
        fprintf(f, " of memory\n  and %llu processes and threads;\n",
                (unsigned long long)lim[CODECELL_LIMIT_PIDS]);
        fputs("- no state carried over between executions, except the contents of\n"
              "  read-write folders.\n"
              "\n",
              f);
        fputs(c->runtime->how_results, f);
}

/* What the code can import or require besides the standard library, as the interpreter's
 * probe found it (the library folders' first), wrapped and capped. */
static void libraries_section(FILE *f, const codecell_config *c,
                              const struct interpreter_info *probe)
{
        size_t n = probe->libraries ? json_array_size(probe->libraries) : 0;
        if (n == 0)
                return;
        fprintf(f, "\n\n## Libraries\n\nBesides the standard library, the code can %s:",
                c->runtime->libraries_verb);
        size_t column = WRAP_COLUMNS; /* start each list on a line of its own */
        for (size_t i = 0; i < n && i < LIBRARIES_LISTED; i++) {
                const char *name = json_string_value(
                        json_object_get(json_array_get(probe->libraries, i), "text"));
                size_t len = strlen(name) + (i + 1 < n ? 1 : 0);
                if (column + 1 + len > WRAP_COLUMNS) {
                        fputc('\n', f);
                        column = 0;
                } else {
                        fputc(' ', f);
                        column++;
                }
                fprintf(f, "%s%s", name, i + 1 < n ? "," : ".");
                column += len;
        }
        if (n > LIBRARIES_LISTED)
                fprintf(f, "\nand %zu more (%s).", n - LIBRARIES_LISTED,
                        c->runtime->more_libraries);
}

/* A network cell's allowlist, and how the code reaches it (docs/network.md). */
static void network_section(FILE *f, const codecell_config *c)
{
        if (!c->network_policy)
                return;
        const char *allowed = egress_policy_allowed_text(c->network_policy);
        fprintf(f,
                "\n\n## Network\n\n"
                "HTTP and HTTPS reach these hosts only (a host without a port: 80 and 443):\n"
                "%s.\n"
                "They go through the proxy the environment names (`HTTPS_PROXY`, `HTTP_PROXY`),\n"
                "which the usual HTTP libraries use by themselves; names are resolved by the\n"
                "proxy. Anything else is refused: the proxy answers 403 with the reason, and\n"
                "a socket to any other address, UDP and DNS fail.",
                allowed ? allowed : "(out of memory)");
        const struct egress_policy *p = c->network_policy;
        if (p->n_headers == 0)
                return;
        fputs("\nThe proxy adds the credentials these hosts need (never visible to the code):\n",
              f);
        for (size_t i = 0; i < p->n_headers; i++)
                fprintf(f, "%s%s", i ? ", " : "", p->headers[i].host);
        fputs(p->terminate_tls
                      ? ", over HTTP and HTTPS. Send no credentials of your own, and leave the\n"
                        "HTTPS client's certificate checks as they are: it already trusts the\n"
                        "proxy's certificates for these hosts (`SSL_CERT_FILE`)."
                      : ", over plain HTTP only (http://).",
              f);
}

char *description_build(const codecell_config *c, const struct interpreter_info *probe,
                        struct tool_table *tools)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return NULL;
        /* The seed's sections in its order, each ending without a newline; what the code
         * returns belongs at the end of how_to_use. */
        how_to_use(f, c, probe);
        libraries_section(f, c, probe);
        folder_section(f, c, false, "## Read-only folders (readable, never writable)");
        folder_section(f, c, true, "## Read-write folders (readable and writable)");
        images_describe(f, c->runtime->own_images, c->output_folder,
                        c->limits[CODECELL_LIMIT_IMAGES], c->limits[CODECELL_LIMIT_IMAGE_BYTES]);
        files_describe(f, c->output_folder, c->limits[CODECELL_LIMIT_FILES_OUT],
                       c->limits[CODECELL_LIMIT_FILE_OUT_BYTES]);
        network_section(f, c);
        tools_describe(tools, &c->runtime->tools, c->limits[CODECELL_LIMIT_TOOL_CONCURRENCY], f);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}
