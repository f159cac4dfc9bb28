/* codecell check: the isolation layers this host gives, tried for real. */
#include <stdio.h>
#include <string.h>

#include "codecell.h"
#include "commands.h"

static const char usage[] =
        "Usage: codecell check [--json]\n"
        "\n"
        "Tries every isolation layer on this host (namespaces, Landlock, seccomp, the\n"
        "cgroup, idmapped mounts) and runs each language's interpreter, and prints what\n"
        "it found: for an interpreter, its path and version; for a layer that is missing,\n"
        "its cause on this host and the fix (a sysctl, a systemd setting, a container\n"
        "flag, a kernel version), as \"<cause>. Fix: <fix>\".\n"
        "Exit code: 0 when every required layer is available, 4 when one is missing.\n"
        "Optional layers that are missing follow the cell's on_unsupported policy.\n";

int cmd_check(int argc, char **argv)
{
        bool json = false;
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--json") == 0) {
                        json = true;
                } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
                        fputs(usage, stdout);
                        return EXIT_OK;
                } else {
                        fprintf(stderr, "codecell check: unknown option \"%s\"\n%s", argv[i],
                                usage);
                        return EXIT_USAGE;
                }
        }
        codecell_layer_report reports[32];
        int n = codecell_host_check(reports, 32);
        bool required_missing = false;
        if (json)
                fputs("{\"layers\":[", stdout);
        for (int i = 0; i < n; i++) {
                const codecell_layer_report *r = &reports[i];
                if (r->required && !r->available)
                        required_missing = true;
                if (json) {
                        printf("%s{\"name\":\"%s\",\"available\":%s,\"required\":%s,\"detail\":\"",
                               i ? "," : "", r->name, r->available ? "true" : "false",
                               r->required ? "true" : "false");
                        for (const char *p = r->detail; *p; p++)
                                if (*p == '"' || *p == '\\')
                                        printf("\\%c", *p);
                                else if ((unsigned char)*p >= 0x20)
                                        putchar(*p);
                        fputs("\"}", stdout);
                } else {
                        printf("%-18s %-9s %s%s\n", r->name, r->available ? "yes" : "MISSING",
                               r->detail, !r->available && !r->required ? " (optional)" : "");
                }
        }
        if (json)
                puts("]}");
        return required_missing ? EXIT_SANDBOX : EXIT_OK;
}
