/*
 * server/reply.h — sending a request's answer: api/'s response as libmicrohttpd's, with
 * the headers every answer carries (request id, trace, CORS, Vary), coded when the
 * client accepts it, charged to the memory budget while it is sent, and counted for
 * /metrics when it is queued.
 *
 * Not here: what the answer says (api/), when it is computed (compute.c, exchange.c).
 */
#ifndef SRV_REPLY_H
#define SRV_REPLY_H

#include <stdbool.h>

#include <microhttpd.h>

#include "api/api.h"
#include "server/record.h"
#include "server/state.h"

/*
 * Sends res (its body or pieces taken over) with the common headers. Always deinits
 * res. Returns MHD_NO only when not even a response could be made: MHD then drops the
 * connection, the one answer left when memory is gone.
 */
enum MHD_Result srv_reply_send(struct srv_server *s, struct MHD_Connection *conn,
                               struct srv_request *r, struct api_response *res, bool close,
                               bool preflight);

/*
 * An answer decided on the first call. With a body on its way it goes out now:
 * MHD then discards the body and closes the connection, which is what a refused
 * upload deserves. Without one it waits for the final call (an instant later),
 * because libmicrohttpd 0.9.75 treats any answer given on the first call as early
 * and closes the connection after it, and keep-alive would be lost for every GET.
 */
enum MHD_Result srv_reply(struct srv_server *s, struct MHD_Connection *conn,
                          struct srv_request *r, struct api_response *res, bool close,
                          bool preflight);

/* A 503 whose detail is reason (a catalogued sentence: SRV_N). */
enum MHD_Result srv_reply_unavailable(struct srv_server *s, struct MHD_Connection *conn,
                                      struct srv_request *r, const char *reason);

#endif
