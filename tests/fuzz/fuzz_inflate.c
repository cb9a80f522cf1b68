/*
 * tests/fuzz/fuzz_inflate.c — libFuzzer harness for server/codec/inflate.c (a coded request
 * body undone as its pieces arrive) and server/codec/coding.c (Content-Encoding and
 * Accept-Encoding).
 *
 * The input: byte 0 chooses the coding (bit 0: gzip or deflate) and how the rest is cut
 * into pieces (the other bits seed the piece sizes, 1 to 512 bytes, as libmicrohttpd
 * hands an upload over); the rest is the body, fed to srv_inflate_feed into a body
 * limited to FUZZ_LIMIT bytes. What must hold, beyond "no crash, leak or undefined
 * behaviour": the body never holds or allocates more than the limit, a refused body
 * holds nothing, a body that ends OK has a stream that ended or a fault saying why
 * not, and every charge to the budget is given back. The same bytes, up to a NUL, are
 * read as Content-Encoding and Accept-Encoding values, whose results must be codings
 * attnd knows.
 *
 * Not here: the HTTP side (tests/http/compression.test.mjs).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/codec/coding.h"
#include "server/codec/inflate.h"
#include "server/host/budget.h"
#include "server/net/upload.h"

#define FUZZ_LIMIT ((size_t)4096)

static void check_headers(const uint8_t *data, size_t size)
{
    char text[512];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = '\0';
    struct srv_content_coding c;
    srv_content_coding_init(&c);
    srv_content_coding_feed(&c, text);
    if (c.coding > SRV_CODING_DEFLATE || (srv_content_coding_ok(&c) && c.name[0] != '\0'))
        abort();
    struct srv_accept_coding a = srv_accept_coding_parse(text);
    if (a.coding > SRV_CODING_DEFLATE || srv_accept_coding_for(&a, 0) > SRV_CODING_DEFLATE)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    check_headers(data + 1, size - 1);
    enum srv_coding coding = (data[0] & 1) ? SRV_CODING_DEFLATE : SRV_CODING_GZIP;
    uint32_t cut = data[0] * 2654435761u;
    struct srv_budget budget;
    srv_budget_init(&budget, SIZE_MAX);
    struct srv_inflate f;
    struct srv_body b;
    srv_inflate_init(&f, coding, &budget);
    srv_body_init(&b, FUZZ_LIMIT, (long long)(size - 1), &budget);
    enum srv_body_state st = SRV_BODY_OK;
    for (size_t at = 1; at < size;) {
        cut = cut * 1664525u + 1013904223u;
        size_t take = 1 + (cut >> 23) % 512;
        take = take < size - at ? take : size - at;
        /* A piece of its own, so that reading past it is caught. */
        char *piece = malloc(take);
        memcpy(piece, data + at, take);
        st = srv_inflate_feed(&f, &b, piece, take);
        free(piece);
        at += take;
        if (b.len > FUZZ_LIMIT || b.cap > FUZZ_LIMIT)
            abort(); /* past the limit: the one thing a bomb must never do */
        if (st != SRV_BODY_OK && (b.data != NULL || b.cap != 0))
            abort(); /* refused: the stored bytes are given back at once */
    }
    if (st == SRV_BODY_OK && !srv_inflate_finish(&f) && f.fault != SRV_INFLATE_CUT_SHORT)
        abort();
    if (st == SRV_BODY_CORRUPT && f.fault == SRV_INFLATE_FINE)
        abort(); /* the 400 says why */
    srv_inflate_deinit(&f);
    srv_body_free(&b);
    if (srv_budget_held(&budget) != 0)
        abort();
    return 0;
}
