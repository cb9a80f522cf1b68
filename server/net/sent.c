/*
 * server/net/sent.c — a body libmicrohttpd pulls through a reader that notes its
 * progress (see sent.h).
 *
 * Ownership: struct srv_sent_body owns the buffer or the pieces; libmicrohttpd
 * frees it through srv_sent_free when it destroys the response.
 */
#include "server/net/sent.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

struct srv_sent_body {
    char *body;                /* owned; or NULL when segs */
    struct api_segments *segs; /* owned; or NULL when body */
    size_t len;
    size_t seg, seg_off, pos;  /* where the pieces' next read starts */
    struct srv_sent *sent;     /* borrowed: the request's */
};

static void srv_sent_free(void *cls)
{
    struct srv_sent_body *b = cls;
    free(b->body);
    api_segments_free(b->segs);
    free(b);
}

/* Pieces are read in order; a read from elsewhere starts over from the first piece. */
static void srv_sent_seek(struct srv_sent_body *b, size_t pos)
{
    if (pos < b->pos) {
        b->seg = b->seg_off = b->pos = 0;
    }
    while (b->pos < pos && b->seg < b->segs->n) {
        size_t left = b->segs->seg[b->seg].len - b->seg_off, step = pos - b->pos;
        if (step < left) {
            b->seg_off += step;
            b->pos += step;
        } else {
            b->pos += left;
            b->seg++;
            b->seg_off = 0;
        }
    }
}

static size_t srv_sent_copy_segments(struct srv_sent_body *b, size_t pos, char *buf, size_t n)
{
    srv_sent_seek(b, pos);
    size_t done = 0;
    while (done < n && b->seg < b->segs->n) {
        const struct api_segment *s = &b->segs->seg[b->seg];
        size_t take = s->len - b->seg_off;
        if (take > n - done)
            take = n - done;
        memcpy(buf + done, s->data + b->seg_off, take);
        done += take;
        b->seg_off += take;
        if (b->seg_off == s->len) {
            b->seg++;
            b->seg_off = 0;
        }
    }
    b->pos += done;
    return done;
}

static ssize_t srv_sent_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct srv_sent_body *b = cls;
    /* Asked for pos: every byte before it is on the socket already (sent.h). */
    b->sent->at_least = pos;
    if (pos >= b->len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = b->len - (size_t)pos < max ? b->len - (size_t)pos : max;
    if (b->body != NULL) {
        memcpy(buf, b->body + pos, n);
        return (ssize_t)n;
    }
    n = srv_sent_copy_segments(b, (size_t)pos, buf, n);
    return n > 0 ? (ssize_t)n : MHD_CONTENT_READER_END_WITH_ERROR;
}

struct MHD_Response *srv_sent_response(char *body, struct api_segments *segs, size_t len,
                                       struct srv_sent *sent)
{
    struct srv_sent_body *b = calloc(1, sizeof *b);
    if (b == NULL) {
        free(body);
        api_segments_free(segs);
        return NULL;
    }
    b->body = body;
    b->segs = segs;
    b->len = len;
    b->sent = sent;
    struct MHD_Response *resp =
        MHD_create_response_from_callback(len, srv_sent_block(len), srv_sent_read, b,
                                          srv_sent_free);
    if (resp == NULL) {
        srv_sent_free(b);
        return NULL;
    }
    sent->tracked = true;
    sent->at_least = 0;
    return resp;
}
