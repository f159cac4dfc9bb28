#include "runtime.h"

#include <string.h>

extern const char codecell_prelude_ruby[];

/* --disable-gems: RubyGems costs ~50 ms of start-up; the standard library and Debian's
 * vendor_ruby packages stay requirable without it. */
static const char *const ruby_argv[] = {
        "ruby",
        "--disable-gems",
        "/codecell/prelude.rb",
        NULL,
};

static const struct runtime runtimes[] = {
        {
                .name = "ruby",
                .interpreter = "/usr/bin/ruby",
                .argv = ruby_argv,
                .prelude_path = "/codecell/prelude.rb",
                .prelude = codecell_prelude_ruby,
                .package_hint = "the Debian package \"ruby\"",
                .out_of_memory_class = "NoMemoryError",
        },
};

const struct runtime *runtime_find(const char *name)
{
        if (!name)
                return NULL;
        for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++)
                if (strcmp(runtimes[i].name, name) == 0)
                        return &runtimes[i];
        return NULL;
}
