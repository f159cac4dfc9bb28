#define CODECELL_CURL_API_IMPL
#include "curl_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

static struct curl_api api;
static const struct curl_api *loaded;
static const char *load_error = "libcurl was not loaded";
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
        /* The soname of Debian's libcurl4 (OpenSSL) and of every libcurl since 7.16. */
        void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
                load_error = dlerror();
                return;
        }
        static const struct {
                const char *name;
                size_t offset;
        } symbols[] = {
#define SYMBOL(field, name) {name, offsetof(struct curl_api, field)}
                SYMBOL(global_init, "curl_global_init"),
                SYMBOL(easy_init, "curl_easy_init"),
                SYMBOL(easy_setopt, "curl_easy_setopt"),
                SYMBOL(easy_getinfo, "curl_easy_getinfo"),
                SYMBOL(easy_perform, "curl_easy_perform"),
                SYMBOL(easy_cleanup, "curl_easy_cleanup"),
                SYMBOL(easy_strerror, "curl_easy_strerror"),
                SYMBOL(multi_init, "curl_multi_init"),
                SYMBOL(multi_add_handle, "curl_multi_add_handle"),
                SYMBOL(multi_remove_handle, "curl_multi_remove_handle"),
                SYMBOL(multi_perform, "curl_multi_perform"),
                SYMBOL(multi_poll, "curl_multi_poll"),
                SYMBOL(multi_wakeup, "curl_multi_wakeup"),
                SYMBOL(multi_info_read, "curl_multi_info_read"),
                SYMBOL(multi_cleanup, "curl_multi_cleanup"),
                SYMBOL(slist_append, "curl_slist_append"),
                SYMBOL(slist_free_all, "curl_slist_free_all"),
#undef SYMBOL
        };
        for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
                void *fn = dlsym(lib, symbols[i].name);
                if (!fn) {
                        load_error = "libcurl.so.4 lacks a function codecell needs (libcurl "
                                     "7.68 or later)";
                        dlclose(lib);
                        return;
                }
                /* POSIX guarantees a function pointer survives a void * round trip. */
                *(void **)((char *)&api + symbols[i].offset) = fn;
        }
        if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                load_error = "libcurl could not be initialized";
                return;
        }
        loaded = &api;
}

const struct curl_api *curl_api_load(const char **ret_why)
{
        pthread_once(&once, load);
        if (!loaded && ret_why)
                *ret_why = load_error;
        return loaded;
}

const struct curl_api *curl_api(void)
{
        return loaded;
}
