/*
 * server/codec/deflate.h — an answer sent gzip- or deflate-coded, compressed as libmicrohttpd
 * pulls it: the body (one buffer, or the pieces api/ wrote on several threads) is
 * read in place and deflated straight into the block libmicrohttpd asks to fill, so a
 * 700 MB answer is never joined, copied or held compressed in full.
 *
 * The coded length is known only at the end, so the answer goes out chunked (HTTP/1.1;
 * an HTTP/1.0 client gets it ended by the close). Like server/net/sent.h's reader, this one
 * notes the position it is asked for in *sent: the coded bytes known to be written,
 * which the access log reports, cut or whole (the last position asked is the total).
 *
 * zlib, not libdeflate: libdeflate compresses whole buffers into whole buffers, and
 * an answer in pieces would have to be joined (or its coded copy held) to use it.
 *
 * Not here: whether to compress (coding.h), the headers (server/reply.c).
 */
#ifndef SRV_DEFLATE_H
#define SRV_DEFLATE_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "api/api.h"
#include "server/codec/coding.h"
#include "server/net/sent.h"

/*
 * zlib's level: 1, its fastest. Answers are mostly decimal digits, which every level
 * codes to about the same size, while the higher levels cost several times the CPU of
 * writing the JSON itself (docs/performance.md has the measurement).
 */
#define SRV_DEFLATE_LEVEL 1

/* The block libmicrohttpd allocates for the coded bytes, per answer. */
#define SRV_DEFLATE_BLOCK ((size_t)64 * 1024)

/*
 * What zlib holds while it compresses one answer (zconf.h: 2^(windowBits+2) +
 * 2^(memLevel+9) bytes, windowBits 15 and memLevel 8, and its stream state): charged
 * to the budget with the answer.
 */
#define SRV_DEFLATE_STATE ((size_t)(1 << 17) + (1 << 17) + 8192)

/*
 * Codes a whole answer (body, or the pieces segs, len bytes; borrowed) into a new
 * buffer *out (malloc'd, the caller's) of *out_len bytes. For answers small enough
 * that their coded copy costs little, sent with a Content-Length like any other, and
 * for HEAD: libmicrohttpd 0.9.75 ends a chunked answer to HEAD with the last chunk's
 * bytes, which the client reads as the start of the next response. False when zlib
 * found no memory.
 */
bool srv_deflate_whole(const char *body, const struct api_segments *segs, size_t len,
                       enum srv_coding coding, char **out, size_t *out_len);

/*
 * A chunked response whose body is `body` or `segs` (exactly one non-NULL, len bytes in
 * all, taken over as in srv_sent_response), sent in `coding` (gzip or deflate).
 * *sent is updated as srv_sent_response does, in coded bytes. NULL (the body freed)
 * when the response could not be made.
 */
struct MHD_Response *srv_deflate_response(char *body, struct api_segments *segs, size_t len,
                                          enum srv_coding coding, struct srv_sent *sent);

#endif
