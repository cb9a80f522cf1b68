/*
 * server/compute.h — where a request's answer is computed once its body is in: on its
 * worker when the work is small, or on the lane's threads (server/lane/lane.h) with the
 * connection suspended, so that a large request never holds up the worker's other
 * connections. The working set api/ asks for is charged to the memory budget while
 * it is computed.
 *
 * Not here: what is computed (api/), sending it (reply.c).
 */
#ifndef SRV_COMPUTE_H
#define SRV_COMPUTE_H

#include <microhttpd.h>

#include "api/api.h"
#include "server/record.h"
#include "server/state.h"

/*
 * Answers q (its body complete in r): computed here and queued, or handed to the lane
 * (MHD_YES, the connection suspended until the answer is ready for the final call).
 */
enum MHD_Result srv_compute_answer(struct srv_server *s, struct MHD_Connection *conn,
                                   struct srv_request *r, const struct api_request *q,
                                   struct api_context *ctx);

#endif
