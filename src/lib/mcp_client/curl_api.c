#define CODECELL_CURL_API_IMPL
#include "curl_api.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#include "dynlib.h"

static struct curl_api api;
static const struct curl_api *loaded;
static const char *load_error = "libcurl was not loaded";
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
        static const struct dynlib_symbol symbols[] = {
#define SYMBOL(field, name) DYNLIB_SYMBOL(struct curl_api, field, name)
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
        const char *why = NULL;
        /* The soname of Debian's libcurl4 (OpenSSL) and of every libcurl since 7.16. */
        int r = dynlib_load("libcurl.so.4", symbols, sizeof(symbols) / sizeof(symbols[0]), &api,
                            &why);
        if (r == -ENOSYS)
                why = "libcurl.so.4 lacks a function codecell needs (libcurl 7.68 or later)";
        if (r < 0) {
                load_error = why;
                return;
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
