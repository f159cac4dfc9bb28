#include "dynlib.h"

#include <dlfcn.h>
#include <errno.h>

int dynlib_load(const char *soname, const struct dynlib_symbol *symbols, size_t n, void *table,
                const char **ret_why)
{
        void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
                *ret_why = dlerror();
                return -ENOENT;
        }
        for (size_t i = 0; i < n; i++) {
                void *fn = dlsym(lib, symbols[i].name);
                if (!fn) {
                        *ret_why = symbols[i].name;
                        dlclose(lib);
                        return -ENOSYS;
                }
                /* POSIX guarantees a function pointer survives a void * round trip. */
                *(void **)((char *)table + symbols[i].offset) = fn;
        }
        return 0;
}
