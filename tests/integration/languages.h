/* The C end-to-end tests run once per guest language (CTest passes it as argv[1]): L() picks
 * the snippet of the language under test, so one table of cases serves both. */
#ifndef CODECELL_TEST_LANGUAGES_H
#define CODECELL_TEST_LANGUAGES_H

#include <string.h>

static const char *language = "ruby";
static int is_python;

#define L(ruby, python) (is_python ? (python) : (ruby))

static void pick_language(int argc, char **argv)
{
        if (argc > 1)
                language = argv[1];
        is_python = strcmp(language, "python") == 0;
}

#endif
