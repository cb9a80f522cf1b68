/*
 * server/codec/deflate.c — an answer compressed as libmicrohttpd pulls it (see deflate.h).
 *
 * Ownership: struct srv_deflate_body owns the body or its pieces and zlib's state;
 * libmicrohttpd frees it through srv_deflate_free when it destroys the response.
 * zlib's state is made on the first read (a HEAD answer has none) and freed as soon
 * as the stream ends.
 */
#include "server/codec/deflate.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <zlib.h>

struct srv_deflate_body {
    z_stream z;
    bool started, finished;    /* deflateInit2 done (deflateEnd owed); stream ended */
    enum srv_coding coding;
    char *body;                /* owned; or NULL when segs */
    struct api_segments *segs; /* owned; or NULL when body */
    size_t len;
    size_t next;               /* the next piece to hand zlib (the body is piece 0) */
    unsigned long long out;    /* coded bytes handed to libmicrohttpd so far */
    struct srv_sent *sent;     /* borrowed: the request's */
};

static void srv_deflate_end(struct srv_deflate_body *b)
{
    if (b->started)
        deflateEnd(&b->z);
    b->started = false;
}

static void srv_deflate_free(void *cls)
{
    struct srv_deflate_body *b = cls;
    srv_deflate_end(b);
    free(b->body);
    api_segments_free(b->segs);
    free(b);
}

static bool srv_deflate_start(struct srv_deflate_body *b)
{
    /* windowBits 15 (+16: gzip's wrapper instead of zlib's), memLevel 8: zlib's defaults. */
    int window = b->coding == SRV_CODING_GZIP ? 15 + 16 : 15;
    if (deflateInit2(&b->z, SRV_DEFLATE_LEVEL, Z_DEFLATED, window, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK)
        return false;
    b->started = true;
    return true;
}

/* Points zlib at the next piece of the body, in place; false when all were handed over. */
static bool srv_deflate_feed(struct srv_deflate_body *b)
{
    size_t pieces = b->segs != NULL ? b->segs->n : 1;
    while (b->next < pieces) {
        const char *data = b->segs != NULL ? b->segs->seg[b->next].data : b->body;
        size_t n = b->segs != NULL ? b->segs->seg[b->next].len : b->len;
        b->next++;
        if (n == 0)
            continue;
        /* A piece is never 4 GiB (api/ writes them far smaller); refuse rather than wrap. */
        if (n > UINT_MAX)
            return false;
        b->z.next_in = (Bytef *)(uintptr_t)data; /* read only; zlib's type lacks const */
        b->z.avail_in = (uInt)n;
        return true;
    }
    return false;
}

/* Fills buf[0, max) with coded bytes; how many, or -1 on a zlib error. */
static ssize_t srv_deflate_fill(struct srv_deflate_body *b, char *buf, size_t max)
{
    b->z.next_out = (Bytef *)buf;
    b->z.avail_out = max < UINT_MAX ? (uInt)max : UINT_MAX;
    uInt room = b->z.avail_out;
    while (b->z.avail_out > 0) {
        bool more = b->z.avail_in > 0 || srv_deflate_feed(b);
        int rc = deflate(&b->z, more ? Z_NO_FLUSH : Z_FINISH);
        if (rc == Z_STREAM_END) {
            b->finished = true;
            break;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return -1;
    }
    return (ssize_t)(room - b->z.avail_out);
}

static ssize_t srv_deflate_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct srv_deflate_body *b = cls;
    /* Asked for pos: every coded byte before it is on the socket already (sent.h). */
    b->sent->at_least = pos;
    if (pos != b->out) /* a chunked body is read once, in order */
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (b->finished) {
        srv_deflate_end(b); /* give zlib's memory back before the response goes */
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (!b->started && !srv_deflate_start(b))
        return MHD_CONTENT_READER_END_WITH_ERROR;
    ssize_t n = srv_deflate_fill(b, buf, max);
    if (n <= 0) /* an error, or nothing made: which a stream not yet ended cannot be */
        return MHD_CONTENT_READER_END_WITH_ERROR;
    b->out += (unsigned long long)n;
    return n;
}

bool srv_deflate_whole(const char *body, const struct api_segments *segs, size_t len,
                       enum srv_coding coding, char **out, size_t *out_len)
{
    struct srv_deflate_body b = {.coding = coding, .body = (char *)(uintptr_t)body,
                                 .segs = (struct api_segments *)(uintptr_t)segs, .len = len};
    if (!srv_deflate_start(&b))
        return false;
    /* deflateBound: the most any input of len bytes codes to, so one call finishes. */
    size_t cap = deflateBound(&b.z, len > ULONG_MAX ? ULONG_MAX : (uLong)len);
    char *buf = cap < len + len / 2 + 1024 ? malloc(cap) : NULL; /* absurd bound: refuse */
    ssize_t n = buf != NULL ? srv_deflate_fill(&b, buf, cap) : -1;
    srv_deflate_end(&b); /* b borrows body and segs: nothing else of it to free */
    if (n < 0 || !b.finished) {
        free(buf);
        return false;
    }
    *out = buf;
    *out_len = (size_t)n;
    return true;
}

struct MHD_Response *srv_deflate_response(char *body, struct api_segments *segs, size_t len,
                                          enum srv_coding coding, struct srv_sent *sent)
{
    struct srv_deflate_body *b = calloc(1, sizeof *b);
    if (b == NULL) {
        free(body);
        api_segments_free(segs);
        return NULL;
    }
    b->coding = coding;
    b->body = body;
    b->segs = segs;
    b->len = len;
    b->sent = sent;
    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, SRV_DEFLATE_BLOCK, srv_deflate_read, b, srv_deflate_free);
    if (resp == NULL) {
        srv_deflate_free(b);
        return NULL;
    }
    sent->tracked = true;
    sent->at_least = 0;
    return resp;
}
