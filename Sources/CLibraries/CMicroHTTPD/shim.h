#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* MHD_start_daemon is variadic, which Swift cannot call: this fixed-argument form passes the options
 * `scangate preview` sets (a listening socket it bound itself, the bounds, the notifications). */
static inline struct MHD_Daemon *scangate_mhd_start(unsigned int flags, int listen_fd,
                                                    MHD_AccessHandlerCallback handler, void *cls,
                                                    MHD_NotifyConnectionCallback notify,
                                                    MHD_RequestCompletedCallback completed,
                                                    unsigned int connection_limit,
                                                    unsigned int timeout_seconds,
                                                    size_t memory_limit) {
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, cls,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket) listen_fd,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_NOTIFY_CONNECTION, notify, cls,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
                            MHD_OPTION_END);
}

/* MHD_SIZE_UNKNOWN and the content reader's returns are macros with casts, which Swift does not import. */
static inline uint64_t scangate_mhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }
static inline ssize_t scangate_mhd_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
static inline ssize_t scangate_mhd_end_with_error(void) { return MHD_CONTENT_READER_END_WITH_ERROR; }

/* The connection's socket (MHD_get_connection_info is variadic), or -1. */
static inline int scangate_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? (int) info->connect_fd : -1;
}
