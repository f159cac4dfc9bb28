#include "option_errors.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

int option_refused(const char *who, int c, char *const *argv)
{
        /* getopt_long has moved optind past the option it refused. */
        const char *arg = argv[optind - 1];
        char short_option[3] = {'-', (char)optopt, 0};
        if (optopt && optopt < 128 && strncmp(arg, "--", 2) != 0)
                arg = short_option;
        if (c == ':')
                fprintf(stderr, "%s: option %s needs a value (see %s --help)\n", who, arg, who);
        else if (optopt && strncmp(arg, "--", 2) == 0)
                /* A known long option: given a value it does not take ("--json=1"). */
                fprintf(stderr, "%s: option %s takes no value (see %s --help)\n", who, arg, who);
        else
                fprintf(stderr, "%s: unknown option %s (see %s --help)\n", who, arg, who);
        return EXIT_USAGE;
}

int extra_argument(const char *who, const char *arg)
{
        fprintf(stderr, "%s: unexpected argument \"%s\" (see %s --help)\n", who, arg, who);
        return EXIT_USAGE;
}
