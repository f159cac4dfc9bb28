/* libcurl, loaded when the first Streamable HTTP MCP server is opened rather than linked:
 * libcodecell stays linkable statically (Debian ships no static GSSAPI or LDAP, which a static
 * libcurl needs), and a host without libcurl runs everything but HTTP upstream servers.
 * upstream_http.c calls curl_* as usual; the names below go through the loaded table. */
#ifndef CODECELL_CURL_API_H
#define CODECELL_CURL_API_H

/* The type checks are macros named like the functions, which the table's names replace. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

struct curl_api {
        CURLcode (*global_init)(long flags);
        CURL *(*easy_init)(void);
        CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
        CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
        CURLcode (*easy_perform)(CURL *curl);
        void (*easy_cleanup)(CURL *curl);
        const char *(*easy_strerror)(CURLcode code);
        CURLM *(*multi_init)(void);
        CURLMcode (*multi_add_handle)(CURLM *multi, CURL *easy);
        CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *easy);
        CURLMcode (*multi_perform)(CURLM *multi, int *running);
        CURLMcode (*multi_poll)(CURLM *multi, struct curl_waitfd *extra, unsigned n, int timeout_ms,
                                int *numfds);
        CURLMcode (*multi_wakeup)(CURLM *multi);
        CURLMsg *(*multi_info_read)(CURLM *multi, int *msgs_in_queue);
        CURLMcode (*multi_cleanup)(CURLM *multi);
        struct curl_slist *(*slist_append)(struct curl_slist *list, const char *string);
        void (*slist_free_all)(struct curl_slist *list);
};

/* The table, loaded once (libcurl.so.4) and curl_global_init'ed; NULL when libcurl cannot be
 * loaded, with why (static text, or dlerror's) in *ret_why. Thread-safe. */
const struct curl_api *curl_api_load(const char **ret_why);
/* The table once curl_api_load has succeeded. */
const struct curl_api *curl_api(void);

#ifndef CODECELL_CURL_API_IMPL
/* curl.h's own macros of these two only check the count of arguments. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_easy_init curl_api()->easy_init
#define curl_easy_setopt curl_api()->easy_setopt
#define curl_easy_getinfo curl_api()->easy_getinfo
#define curl_easy_perform curl_api()->easy_perform
#define curl_easy_cleanup curl_api()->easy_cleanup
#define curl_easy_strerror curl_api()->easy_strerror
#define curl_multi_init curl_api()->multi_init
#define curl_multi_add_handle curl_api()->multi_add_handle
#define curl_multi_remove_handle curl_api()->multi_remove_handle
#define curl_multi_perform curl_api()->multi_perform
#define curl_multi_poll curl_api()->multi_poll
#define curl_multi_wakeup curl_api()->multi_wakeup
#define curl_multi_info_read curl_api()->multi_info_read
#define curl_multi_cleanup curl_api()->multi_cleanup
#define curl_slist_append curl_api()->slist_append
#define curl_slist_free_all curl_api()->slist_free_all
#endif

#endif
