/*
 * server/exchange.h — libmicrohttpd's two per-request callbacks (internal to server/).
 *
 * srv_on_uri (MHD_OPTION_URI_LOG_CALLBACK) comes first, with the target as sent: it
 * allocates the request state, which MHD then passes as *req_cls to both callbacks
 * below; the state of a request MHD refuses itself (a malformed Content-Length) is
 * freed by srv_on_completed without a log line, as the handler never saw it.
 *
 * srv_on_request is MHD's access handler, called several times per request:
 *   1. headers read (the state not started yet): refuse malformed framing (400/414/
 *      501 and close, server/net/framing.h), answer OPTIONS, ask api_precheck; when it has the final word, answer at once if a body is
 *      on its way (MHD discards it and closes), else on the final call;
 *   2. each piece of body (*upload_data_size > 0): store it (server/net/upload.c), inflated
 *      first when its Content-Encoding is gzip or deflate (server/codec/inflate.c);
 *   3. body complete (*upload_data_size == 0): api_handle (or 413/503), answer.
 * srv_on_completed (MHD_OPTION_NOTIFY_COMPLETED) writes the access-log line and frees
 * the state: the one place it is freed, whatever way the request ended.
 *
 * Not here: the daemon's options and lifecycle (daemon.c).
 */
#ifndef SRV_REQUEST_H
#define SRV_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

void *srv_on_uri(void *cls, const char *uri, struct MHD_Connection *conn);

enum MHD_Result srv_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version,
                               const char *upload_data, size_t *upload_data_size,
                               void **req_cls);

/*
 * Whether a call with this *req_cls is a request's first (its headers just in):
 * srv_on_uri has made the state already, but the handler has not seen it.
 */
bool srv_request_first_call(const void *req_cls);

void srv_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                      enum MHD_RequestTerminationCode toe);

#endif
