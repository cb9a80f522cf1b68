/*
 * server/codec/inflate.c — a coded request body undone piece by piece (see inflate.h).
 *
 * Ownership: zlib's state lives in f->z, made on the first piece and freed by
 * srv_inflate_deinit; each of its allocations is charged to the budget first.
 */
#include "server/codec/inflate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * zlib's allocator: each block charged to the budget before it is taken (the window
 * and tables of one stream), so a thousand coded uploads at once meet the budget too.
 * A block carries its size in front so that the free can give the charge back.
 */
static voidpf srv_inflate_alloc(voidpf opaque, uInt items, uInt size)
{
    struct srv_inflate *f = opaque;
    size_t n = (size_t)items * size; /* uInt by uInt: no overflow in a 64-bit size_t */
    if (!srv_budget_take(f->budget, n + sizeof(size_t), f->charged)) {
        f->refused = n + sizeof(size_t);
        return Z_NULL;
    }
    size_t *block = malloc(n + sizeof(size_t));
    if (block == NULL) {
        srv_budget_give(f->budget, n + sizeof(size_t));
        return Z_NULL;
    }
    block[0] = n + sizeof(size_t);
    f->charged += block[0];
    return block + 1;
}

static void srv_inflate_free(voidpf opaque, voidpf address)
{
    struct srv_inflate *f = opaque;
    if (address == Z_NULL)
        return;
    size_t *block = (size_t *)address - 1;
    f->charged -= block[0];
    srv_budget_give(f->budget, block[0]);
    free(block);
}

void srv_inflate_init(struct srv_inflate *f, enum srv_coding coding, struct srv_budget *budget)
{
    memset(f, 0, sizeof *f);
    f->coding = coding;
    f->budget = budget;
}

/* zlib's window bits for the coding: 15 (32 KiB, the most), +16 for the gzip wrapper only. */
static int srv_inflate_window(enum srv_coding coding)
{
    return coding == SRV_CODING_GZIP ? 15 + 16 : 15;
}

static enum srv_body_state srv_inflate_corrupt(struct srv_inflate *f, struct srv_body *b,
                                               enum srv_inflate_fault fault, size_t left)
{
    f->fault = fault;
    f->zlib_said = fault == SRV_INFLATE_DAMAGED ? f->z.msg : NULL;
    return srv_body_refuse(b, SRV_BODY_CORRUPT, left);
}

/* zlib found no memory: the budget refused its block (a 503 saying so) or malloc did. */
static enum srv_body_state srv_inflate_no_memory(struct srv_inflate *f, struct srv_body *b,
                                                 size_t left)
{
    if (f->refused == 0)
        return srv_body_refuse(b, SRV_BODY_NO_MEMORY, left);
    b->wanted = b->cap + f->charged + f->refused; /* the 503's words: what it needed */
    return srv_body_refuse(b, SRV_BODY_OVER_BUDGET, left);
}

static bool srv_inflate_start(struct srv_inflate *f)
{
    f->z.zalloc = srv_inflate_alloc;
    f->z.zfree = srv_inflate_free;
    f->z.opaque = f;
    if (inflateInit2(&f->z, srv_inflate_window(f->coding)) != Z_OK)
        return false;
    f->started = true;
    return true;
}

/*
 * The stream ended with input left: the next gzip member (RFC 1952 allows several,
 * and gzip(1) concatenates them); for deflate, bytes after the end are corrupt.
 */
static bool srv_inflate_next_member(struct srv_inflate *f)
{
    if (f->coding != SRV_CODING_GZIP)
        return false;
    f->ended = false;
    return inflateReset(&f->z) == Z_OK;
}

enum srv_body_state srv_inflate_feed(struct srv_inflate *f, struct srv_body *b,
                                     const char *data, size_t n)
{
    if (b->state != SRV_BODY_OK || n == 0)
        return srv_body_append(b, NULL, n); /* refused already: drain */
    if (!f->started && !srv_inflate_start(f))
        return srv_inflate_no_memory(f, b, n);
    char out[SRV_INFLATE_CHUNK];
    f->z.next_in = (Bytef *)(uintptr_t)data; /* zlib reads it only; its type lacks const */
    f->z.avail_in = (uInt)n; /* one upload piece: libmicrohttpd's buffer, far under 4 GiB */
    for (;;) {
        if (f->ended && f->z.avail_in == 0)
            break;
        if (f->ended && !srv_inflate_next_member(f))
            return srv_inflate_corrupt(f, b, SRV_INFLATE_TRAILING, f->z.avail_in);
        uInt before = f->z.avail_in;
        f->z.next_out = (Bytef *)out;
        f->z.avail_out = (uInt)sizeof out;
        int rc = inflate(&f->z, Z_NO_FLUSH);
        f->in += before - f->z.avail_in;
        if (rc == Z_MEM_ERROR)
            return srv_inflate_no_memory(f, b, f->z.avail_in);
        if (rc == Z_NEED_DICT) /* a zlib stream may name a preset dictionary; HTTP has none */
            return srv_inflate_corrupt(f, b, SRV_INFLATE_DICTIONARY, f->z.avail_in);
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
            return srv_inflate_corrupt(f, b, SRV_INFLATE_DAMAGED, f->z.avail_in);
        f->ended = rc == Z_STREAM_END;
        size_t made = sizeof out - f->z.avail_out;
        /* Past --max-body, the body refuses itself: not one more byte is inflated. */
        if (made > 0 && srv_body_append(b, out, made) != SRV_BODY_OK)
            return srv_body_append(b, NULL, f->z.avail_in);
        /* Done with this piece once zlib wants input and has no output held back. */
        if (rc == Z_BUF_ERROR || (f->z.avail_in == 0 && f->z.avail_out > 0 && !f->ended))
            break;
    }
    return b->state;
}

bool srv_inflate_finish(struct srv_inflate *f)
{
    if (f->ended)
        return true;
    f->fault = SRV_INFLATE_CUT_SHORT;
    return false;
}

void srv_inflate_deinit(struct srv_inflate *f)
{
    if (f->started)
        inflateEnd(&f->z);
    f->started = false;
}
