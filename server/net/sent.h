/*
 * server/net/sent.h — an answer whose progress on the wire is known, for a truthful
 * access log when it is cut off.
 *
 * A body handed to libmicrohttpd as one buffer (or a vector) is written without a
 * word back: when the client stops reading and --timeout closes the connection, the
 * server cannot tell how much arrived. A large body is therefore handed over as a
 * content reader instead. libmicrohttpd 0.9.75 asks it for the bytes from position
 * `pos` only once everything before `pos` has been written to the socket, so the last
 * position asked for is a lower bound of the bytes sent (the whole body once the
 * request completes normally).
 *
 * Small bodies (under SRV_SENT_TRACK_MIN) stay one buffer: they go out with their
 * headers in one write, so a cut one is logged with 0 bytes known to be sent.
 *
 * Not here: the log line (log.c), counting (metrics.c).
 */
#ifndef SRV_SENT_H
#define SRV_SENT_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "api/api.h"

#define SRV_SENT_TRACK_MIN ((size_t)64 * 1024)
/*
 * Bytes libmicrohttpd copies from the body per write (at most the body's size): large
 * enough that the copy and the extra writes cost little next to writing the answer.
 */
#define SRV_SENT_BLOCK ((size_t)1024 * 1024)

/* The copy buffer libmicrohttpd allocates for a tracked body of len bytes (to charge it). */
static inline size_t srv_sent_block(size_t len)
{
    return len < SRV_SENT_BLOCK ? len : SRV_SENT_BLOCK;
}

/* What is known of one answer's body on the wire. Zeroed: nothing known. */
struct srv_sent {
    bool tracked;                 /* sent through srv_sent_response */
    unsigned long long at_least;  /* body bytes written to the socket, at least */
};

/*
 * A response for a body of len bytes, as one buffer (body) or in pieces (segs):
 * exactly one of them is non-NULL, and it is taken over (freed with the response, or
 * at once when NULL is returned). libmicrohttpd updates *sent as it writes; *sent
 * must outlive the request (it lives in the request's state, freed after completion,
 * after which libmicrohttpd reads no more of the body).
 */
struct MHD_Response *srv_sent_response(char *body, struct api_segments *segs, size_t len,
                                       struct srv_sent *sent);

#endif
