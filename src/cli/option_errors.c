#include "option_errors.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

int option_refused(const char *who, int c, const char *arg)
{
        bool long_option = strncmp(arg, "--", 2) == 0;
        /* A long option's name, without the value it was given ("--json=1"). */
        int name_len = long_option ? (int)strcspn(arg, "=") : 2;
        char short_option[3] = {'-', (char)optopt, 0};
        /* getopt reads a cluster byte by byte: a letter outside ASCII is named by its whole
         * argument, never by one byte of it. */
        bool ascii = optopt > 0 && optopt < 128;
        if (!long_option && ascii)
                arg = short_option;
        if (!long_option && !ascii)
                name_len = (int)strlen(arg);
        if (c == ':')
                fprintf(stderr, "%s: option %.*s needs a value (see %s --help)\n", who, name_len,
                        arg, who);
        else if (long_option && optopt)
                /* A known long option: given a value it does not take. */
                fprintf(stderr, "%s: option %.*s takes no value (see %s --help)\n", who, name_len,
                        arg, who);
        else
                fprintf(stderr, "%s: unknown option %.*s (see %s --help)\n", who, name_len, arg,
                        who);
        return EXIT_USAGE;
}

int extra_argument(const char *who, const char *arg)
{
        fprintf(stderr, "%s: unexpected argument \"%s\" (see %s --help)\n", who, arg, who);
        return EXIT_USAGE;
}
