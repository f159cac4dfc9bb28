#define CODECELL_MHD_API_IMPL
#include "mhd_api.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#include "dynlib.h"

static struct mhd_api api;
static const struct mhd_api *loaded;
static const char *load_error = "libmicrohttpd was not loaded";
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
        static const struct dynlib_symbol symbols[] = {
#define SYMBOL(field, name) DYNLIB_SYMBOL(struct mhd_api, field, name)
                SYMBOL(start_daemon, "MHD_start_daemon"),
                SYMBOL(stop_daemon, "MHD_stop_daemon"),
                SYMBOL(quiesce_daemon, "MHD_quiesce_daemon"),
                SYMBOL(add_response_header, "MHD_add_response_header"),
                SYMBOL(create_response_from_buffer, "MHD_create_response_from_buffer"),
                SYMBOL(create_response_from_callback, "MHD_create_response_from_callback"),
                SYMBOL(destroy_response, "MHD_destroy_response"),
                SYMBOL(get_connection_info, "MHD_get_connection_info"),
                SYMBOL(lookup_connection_value, "MHD_lookup_connection_value"),
                SYMBOL(queue_response, "MHD_queue_response"),
                SYMBOL(get_connection_values_n, "MHD_get_connection_values_n"),
                SYMBOL(set_connection_option, "MHD_set_connection_option"),
#undef SYMBOL
        };
        const char *why = NULL;
        /* The soname of Debian's libmicrohttpd12 (0.9.x, the API this file is written for). */
        int r = dynlib_load("libmicrohttpd.so.12", symbols, sizeof(symbols) / sizeof(symbols[0]),
                            &api, &why);
        if (r == -ENOSYS)
                why = "libmicrohttpd.so.12 lacks a function codecell needs (0.9.71 or later)";
        if (r < 0) {
                load_error = why;
                return;
        }
        loaded = &api;
}

const struct mhd_api *mhd_api_load(const char **ret_why)
{
        pthread_once(&once, load);
        if (!loaded && ret_why)
                *ret_why = load_error;
        return loaded;
}

const struct mhd_api *mhd_api(void)
{
        return loaded;
}
