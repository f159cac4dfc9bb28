/* libmicrohttpd, loaded when `codecell serve --http` starts rather than linked: it brings
 * GnuTLS and nine other libraries that every `codecell run` would otherwise load for nothing
 * (~1.1 ms of each process start here, docs/performance.md). http.c calls MHD_* as usual; the
 * names below go through the loaded table. */
#ifndef CODECELL_MHD_API_H
#define CODECELL_MHD_API_H

#include <microhttpd.h>

struct mhd_api {
        struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port,
                                           MHD_AcceptPolicyCallback apc, void *apc_cls,
                                           MHD_AccessHandlerCallback dh, void *dh_cls, ...);
        void (*stop_daemon)(struct MHD_Daemon *daemon);
        MHD_socket (*quiesce_daemon)(struct MHD_Daemon *daemon);
        enum MHD_Result (*add_response_header)(struct MHD_Response *response, const char *header,
                                               const char *content);
        struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer,
                                                            enum MHD_ResponseMemoryMode mode);
        struct MHD_Response *(*create_response_from_callback)(uint64_t size, size_t block_size,
                                                              MHD_ContentReaderCallback crc,
                                                              void *crc_cls,
                                                              MHD_ContentReaderFreeCallback crfc);
        void (*destroy_response)(struct MHD_Response *response);
        const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *connection,
                                                               enum MHD_ConnectionInfoType type,
                                                               ...);
        const char *(*lookup_connection_value)(struct MHD_Connection *connection,
                                               enum MHD_ValueKind kind, const char *key);
        enum MHD_Result (*queue_response)(struct MHD_Connection *connection,
                                          unsigned int status_code, struct MHD_Response *response);
        int (*get_connection_values_n)(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                       MHD_KeyValueIteratorN iterator, void *iterator_cls);
        enum MHD_Result (*set_connection_option)(struct MHD_Connection *connection,
                                                 enum MHD_CONNECTION_OPTION option, ...);
};

/* The table, loaded once (libmicrohttpd.so.12); NULL when the library cannot be loaded, with
 * why in *ret_why. Thread-safe. */
const struct mhd_api *mhd_api_load(const char **ret_why);
/* The table once mhd_api_load has succeeded. */
const struct mhd_api *mhd_api(void);

#ifndef CODECELL_MHD_API_IMPL
#define MHD_start_daemon mhd_api()->start_daemon
#define MHD_stop_daemon mhd_api()->stop_daemon
#define MHD_quiesce_daemon mhd_api()->quiesce_daemon
#define MHD_add_response_header mhd_api()->add_response_header
#define MHD_create_response_from_buffer mhd_api()->create_response_from_buffer
#define MHD_create_response_from_callback mhd_api()->create_response_from_callback
#define MHD_destroy_response mhd_api()->destroy_response
#define MHD_get_connection_info mhd_api()->get_connection_info
#define MHD_lookup_connection_value mhd_api()->lookup_connection_value
#define MHD_queue_response mhd_api()->queue_response
#define MHD_get_connection_values_n mhd_api()->get_connection_values_n
#define MHD_set_connection_option mhd_api()->set_connection_option
#endif

#endif
