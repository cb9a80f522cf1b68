/*
 * tests/unit/check_inflate.c — server/codec/coding.c and server/codec/inflate.c without a server:
 * Content-Encoding and Accept-Encoding read into codings (tables from RFC 9110's
 * rules), and coded bodies undone piece by piece into server/net/upload.c, a bomb stopped
 * at the limit, damaged and cut streams refused with words that name the coding.
 */
#include <check.h>

#include "tests/unit/suite_run.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "server/codec/coding.h"
#include "server/codec/inflate.h"
#include "server/host/budget.h"
#include "server/net/upload.h"

#define MIB ((size_t)1 << 20)

static struct srv_budget roomy;

static void setup(void)
{
    srv_budget_init(&roomy, SIZE_MAX);
}

static void teardown(void)
{
    ck_assert_uint_eq(srv_budget_held(&roomy), 0);
}

/* ---- Content-Encoding ---- */

static const struct {
    const char *fields[2]; /* one or two Content-Encoding fields */
    bool ok;
    enum srv_coding coding;
    const char *refused;   /* the name a 415 gives */
} content_cases[] = {
    {{"gzip", NULL}, true, SRV_CODING_GZIP, ""},
    {{"GZip", NULL}, true, SRV_CODING_GZIP, ""},
    {{"x-gzip", NULL}, true, SRV_CODING_GZIP, ""},
    {{"deflate", NULL}, true, SRV_CODING_DEFLATE, ""},
    {{"identity", NULL}, true, SRV_CODING_IDENTITY, ""},
    {{"", NULL}, true, SRV_CODING_IDENTITY, ""},
    {{" gzip , identity ", NULL}, true, SRV_CODING_GZIP, ""},
    {{"identity", "deflate"}, true, SRV_CODING_DEFLATE, ""},
    {{"br", NULL}, false, SRV_CODING_IDENTITY, "br"},
    {{"zstd", NULL}, false, SRV_CODING_IDENTITY, "zstd"},
    {{"compress", NULL}, false, SRV_CODING_IDENTITY, "compress"},
    {{"gzip, br", NULL}, false, SRV_CODING_GZIP, "br"},
    {{"gzip, gzip", NULL}, false, SRV_CODING_GZIP, "gzip"},
    {{"gzip", "deflate"}, false, SRV_CODING_GZIP, "deflate"},
    {{"gzip;q=1", NULL}, false, SRV_CODING_IDENTITY, "gzip;q=1"},
};

START_TEST(content_encoding_table)
{
    for (size_t i = 0; i < sizeof content_cases / sizeof content_cases[0]; i++) {
        struct srv_content_coding c;
        srv_content_coding_init(&c);
        for (size_t f = 0; f < 2 && content_cases[i].fields[f] != NULL; f++)
            srv_content_coding_feed(&c, content_cases[i].fields[f]);
        ck_assert_msg(srv_content_coding_ok(&c) == content_cases[i].ok, "case %zu", i);
        if (content_cases[i].ok)
            ck_assert_msg(c.coding == content_cases[i].coding, "case %zu", i);
        ck_assert_str_eq(c.name, content_cases[i].refused);
    }
}
END_TEST

/* ---- Accept-Encoding ---- */

static const struct {
    const char *header;
    enum srv_coding big;   /* for an answer of 4 KiB */
    enum srv_coding small; /* for one of 100 bytes */
} accept_cases[] = {
    {NULL, SRV_CODING_IDENTITY, SRV_CODING_IDENTITY},
    {"", SRV_CODING_IDENTITY, SRV_CODING_IDENTITY},
    {"gzip", SRV_CODING_GZIP, SRV_CODING_IDENTITY},
    {"GZIP", SRV_CODING_GZIP, SRV_CODING_IDENTITY},
    {"x-gzip", SRV_CODING_GZIP, SRV_CODING_IDENTITY},
    {"deflate", SRV_CODING_DEFLATE, SRV_CODING_IDENTITY},
    {"gzip, deflate, br", SRV_CODING_GZIP, SRV_CODING_IDENTITY},
    {"deflate, gzip", SRV_CODING_GZIP, SRV_CODING_IDENTITY},         /* a tie: gzip */
    {"gzip;q=0.5, deflate;q=0.8", SRV_CODING_DEFLATE, SRV_CODING_IDENTITY},
    {"gzip;q=0.8, deflate;q=0.5", SRV_CODING_GZIP, SRV_CODING_IDENTITY},
    {"gzip;q=0", SRV_CODING_IDENTITY, SRV_CODING_IDENTITY},
    {"gzip;q=0.000", SRV_CODING_IDENTITY, SRV_CODING_IDENTITY},
    {"gzip; q=0.001", SRV_CODING_GZIP, SRV_CODING_IDENTITY},
    {"gzip ;Q=1.0", SRV_CODING_GZIP, SRV_CODING_IDENTITY},
    {"gzip;q=0, deflate", SRV_CODING_DEFLATE, SRV_CODING_IDENTITY},
    {"br, zstd", SRV_CODING_IDENTITY, SRV_CODING_IDENTITY},
    {"*", SRV_CODING_GZIP, SRV_CODING_IDENTITY},
    {"*;q=0", SRV_CODING_IDENTITY, SRV_CODING_IDENTITY},
    {"*, gzip;q=0", SRV_CODING_DEFLATE, SRV_CODING_IDENTITY},
    {"*;q=0.3, deflate", SRV_CODING_DEFLATE, SRV_CODING_IDENTITY},
    {"identity", SRV_CODING_IDENTITY, SRV_CODING_IDENTITY},
    {"identity;q=0", SRV_CODING_IDENTITY, SRV_CODING_IDENTITY},     /* nothing else: as is */
    {"gzip, identity;q=0", SRV_CODING_GZIP, SRV_CODING_GZIP},       /* refused: even small */
    {"*;q=0, deflate", SRV_CODING_DEFLATE, SRV_CODING_DEFLATE},     /* identity under * */
    {"gzip;q=2", SRV_CODING_IDENTITY, SRV_CODING_IDENTITY},         /* not a qvalue */
    {"gzip;q=0.5.1", SRV_CODING_IDENTITY, SRV_CODING_IDENTITY},
    {"gzip;q=", SRV_CODING_IDENTITY, SRV_CODING_IDENTITY},
    {"gzip;level=9", SRV_CODING_IDENTITY, SRV_CODING_IDENTITY},
    {"gzip;q=abc, deflate", SRV_CODING_DEFLATE, SRV_CODING_IDENTITY},
    {" , ,gzip,,", SRV_CODING_GZIP, SRV_CODING_IDENTITY},
    {"gzipx, xdeflate", SRV_CODING_IDENTITY, SRV_CODING_IDENTITY},
};

START_TEST(accept_encoding_table)
{
    for (size_t i = 0; i < sizeof accept_cases / sizeof accept_cases[0]; i++) {
        struct srv_accept_coding a = srv_accept_coding_parse(accept_cases[i].header);
        ck_assert_msg(srv_accept_coding_for(&a, 4096) == accept_cases[i].big, "case %zu (%s)", i,
                      accept_cases[i].header ? accept_cases[i].header : "absent");
        ck_assert_msg(srv_accept_coding_for(&a, 100) == accept_cases[i].small, "case %zu", i);
    }
}
END_TEST

START_TEST(the_threshold_is_one_kib)
{
    struct srv_accept_coding a = srv_accept_coding_parse("gzip");
    ck_assert_int_eq(srv_accept_coding_for(&a, 1023), SRV_CODING_IDENTITY);
    ck_assert_int_eq(srv_accept_coding_for(&a, 1024), SRV_CODING_GZIP);
}
END_TEST

/* ---- inflating ---- */

/* len bytes of text that compresses (JSON-like digits), deterministic. */
static char *sample(size_t len)
{
    char *s = malloc(len);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        s[i] = i % 20 == 19 ? ',' : (char)('0' + x % 10);
    }
    return s;
}

/* in compressed as `coding` (zlib's own streams, as gzip(1) and zlib.compress write). */
static unsigned char *compress_as(enum srv_coding coding, const void *in, size_t n, size_t *out_n)
{
    z_stream z = {0};
    ck_assert_int_eq(deflateInit2(&z, 9, Z_DEFLATED, coding == SRV_CODING_GZIP ? 31 : 15, 9,
                                  Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, n);
    unsigned char *out = malloc(cap);
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    *out_n = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

/* Feeds data to f and b in pieces of 1 to `piece` bytes (varying), as MHD would. */
static enum srv_body_state feed(struct srv_inflate *f, struct srv_body *b, const void *data,
                                size_t n, size_t piece)
{
    enum srv_body_state st = b->state;
    for (size_t done = 0, k = 0; done < n; k++) {
        size_t take = 1 + (k * 7919) % piece;
        take = take < n - done ? take : n - done;
        st = srv_inflate_feed(f, b, (const char *)data + done, take);
        done += take;
    }
    return st;
}

START_TEST(gzip_and_deflate_in_pieces_give_the_bytes_back)
{
    size_t n = 300000;
    char *plain = sample(n);
    for (int c = SRV_CODING_GZIP; c <= SRV_CODING_DEFLATE; c++) {
        for (size_t piece = 1; piece <= 70000; piece *= 37) {
            size_t zn;
            unsigned char *z = compress_as((enum srv_coding)c, plain, n, &zn);
            struct srv_inflate f;
            struct srv_body b;
            srv_inflate_init(&f, (enum srv_coding)c, &roomy);
            srv_body_init(&b, MIB, -1, &roomy);
            ck_assert_int_eq(feed(&f, &b, z, zn, piece), SRV_BODY_OK);
            ck_assert(srv_inflate_finish(&f));
            ck_assert_uint_eq(b.len, n);
            ck_assert_int_eq(memcmp(b.data, plain, n), 0);
            ck_assert_uint_gt(srv_budget_held(&roomy), b.cap); /* zlib's state is charged */
            srv_inflate_deinit(&f);
            ck_assert_uint_eq(srv_budget_held(&roomy), b.cap);
            srv_body_free(&b);
            free(z);
        }
    }
    free(plain);
}
END_TEST

START_TEST(gzip_members_are_read_in_turn)
{
    size_t an, bn;
    unsigned char *a = compress_as(SRV_CODING_GZIP, "{\"q\":", 5, &an);
    unsigned char *z = compress_as(SRV_CODING_GZIP, "[1]}", 4, &bn);
    unsigned char both[256];
    memcpy(both, a, an);
    memcpy(both + an, z, bn);
    struct srv_inflate f;
    struct srv_body b;
    srv_inflate_init(&f, SRV_CODING_GZIP, &roomy);
    srv_body_init(&b, MIB, -1, &roomy);
    ck_assert_int_eq(srv_inflate_feed(&f, &b, (const char *)both, an + bn), SRV_BODY_OK);
    ck_assert(srv_inflate_finish(&f));
    ck_assert_uint_eq(b.len, 9);
    ck_assert_int_eq(memcmp(b.data, "{\"q\":[1]}", 9), 0);
    srv_inflate_deinit(&f);
    srv_body_free(&b);
    free(a);
    free(z);
}
END_TEST

START_TEST(a_bomb_stops_at_the_limit)
{
    /* 64 MiB of zeros in about 64 KiB: refused once 1 MiB is inflated, never held past it. */
    size_t n = 64 * MIB, zn;
    char *zeros = calloc(1, n);
    unsigned char *z = compress_as(SRV_CODING_GZIP, zeros, n, &zn);
    free(zeros);
    ck_assert_uint_lt(zn, MIB / 2);
    struct srv_inflate f;
    struct srv_body b;
    srv_inflate_init(&f, SRV_CODING_GZIP, &roomy);
    srv_body_init(&b, MIB, (long long)zn, &roomy);
    size_t at = 0, most = 0;
    enum srv_body_state st = SRV_BODY_OK;
    while (at < zn && st == SRV_BODY_OK) {
        size_t take = zn - at < 4096 ? zn - at : 4096;
        st = srv_inflate_feed(&f, &b, (const char *)z + at, take);
        at += take;
        most = b.cap > most ? b.cap : most;
        ck_assert_uint_le(b.len, MIB);
    }
    ck_assert_int_eq(st, SRV_BODY_TOO_LARGE);
    ck_assert_uint_le(most, MIB);
    ck_assert_uint_lt(f.in, zn / 16); /* stopped near the start, not at the end */
    ck_assert_ptr_null(b.data);       /* given back at once */
    /* The rest is drained in compressed bytes: far within the drain bound. */
    ck_assert_int_eq(srv_inflate_feed(&f, &b, (const char *)z + at, zn - at), SRV_BODY_TOO_LARGE);
    srv_inflate_deinit(&f);
    srv_body_free(&b);
    free(z);
}
END_TEST

START_TEST(a_damaged_stream_names_its_coding)
{
    size_t n = 5000, zn;
    char *plain = sample(n);
    for (int c = SRV_CODING_GZIP; c <= SRV_CODING_DEFLATE; c++) {
        unsigned char *z = compress_as((enum srv_coding)c, plain, n, &zn);
        z[zn / 2] ^= 0x55;
        z[zn / 2 + 1] ^= 0xaa;
        struct srv_inflate f;
        struct srv_body b;
        srv_inflate_init(&f, (enum srv_coding)c, &roomy);
        srv_body_init(&b, MIB, -1, &roomy);
        enum srv_body_state st = feed(&f, &b, z, zn, 512);
        bool whole = st == SRV_BODY_OK && srv_inflate_finish(&f);
        ck_assert(!whole); /* a flipped byte breaks the data or the checksum */
        /* zlib finds the flipped bytes, or the body ends without the stream's end */
        ck_assert(f.fault == SRV_INFLATE_DAMAGED || f.fault == SRV_INFLATE_CUT_SHORT);
        ck_assert(f.fault != SRV_INFLATE_DAMAGED || f.zlib_said != NULL);
        srv_inflate_deinit(&f);
        srv_body_free(&b);
        free(z);
    }
    free(plain);
}
END_TEST

START_TEST(not_compressed_at_all_is_corrupt)
{
    struct srv_inflate f;
    struct srv_body b;
    srv_inflate_init(&f, SRV_CODING_GZIP, &roomy);
    srv_body_init(&b, MIB, -1, &roomy);
    ck_assert_int_eq(srv_inflate_feed(&f, &b, "{\"q\": 1}", 8), SRV_BODY_CORRUPT);
    ck_assert_int_eq(f.fault, SRV_INFLATE_DAMAGED);
    ck_assert_str_eq(f.zlib_said, "incorrect header check"); /* '{' is no gzip magic */
    ck_assert_int_eq(srv_inflate_feed(&f, &b, "more", 4), SRV_BODY_CORRUPT); /* drained */
    ck_assert_uint_eq(b.drained, 8 - f.in + 4); /* what zlib had not read, and the rest */
    srv_inflate_deinit(&f);
    srv_body_free(&b);
}
END_TEST

START_TEST(a_cut_stream_is_refused_at_the_end)
{
    size_t n = 5000, zn;
    char *plain = sample(n);
    unsigned char *z = compress_as(SRV_CODING_DEFLATE, plain, n, &zn);
    struct srv_inflate f;
    struct srv_body b;
    srv_inflate_init(&f, SRV_CODING_DEFLATE, &roomy);
    srv_body_init(&b, MIB, -1, &roomy);
    ck_assert_int_eq(feed(&f, &b, z, zn - 3, 100), SRV_BODY_OK); /* the checksum is missing */
    ck_assert(!srv_inflate_finish(&f));
    ck_assert_int_eq(f.fault, SRV_INFLATE_CUT_SHORT);
    srv_inflate_deinit(&f);
    srv_body_free(&b);
    free(z);
    free(plain);
}
END_TEST

START_TEST(bytes_after_a_deflate_stream_are_corrupt)
{
    size_t zn;
    unsigned char *z = compress_as(SRV_CODING_DEFLATE, "{}", 2, &zn);
    unsigned char *more = realloc(z, zn + 1);
    more[zn] = 'x';
    struct srv_inflate f;
    struct srv_body b;
    srv_inflate_init(&f, SRV_CODING_DEFLATE, &roomy);
    srv_body_init(&b, MIB, -1, &roomy);
    ck_assert_int_eq(srv_inflate_feed(&f, &b, (const char *)more, zn + 1), SRV_BODY_CORRUPT);
    ck_assert_int_eq(f.fault, SRV_INFLATE_TRAILING);
    ck_assert_ptr_null(f.zlib_said);
    srv_inflate_deinit(&f);
    srv_body_free(&b);
    free(more);
}
END_TEST

START_TEST(the_decoder_meets_the_budget)
{
    /* Others hold the whole budget: zlib's window cannot be had, a 503 with Retry-After. */
    struct srv_budget tight;
    srv_budget_init(&tight, 4 * MIB);
    srv_budget_charge(&tight, 4 * MIB);
    size_t zn;
    unsigned char *z = compress_as(SRV_CODING_GZIP, "{}", 2, &zn);
    struct srv_inflate f;
    struct srv_body b;
    srv_inflate_init(&f, SRV_CODING_GZIP, &tight);
    srv_body_init(&b, MIB, -1, &tight);
    ck_assert_int_eq(srv_inflate_feed(&f, &b, (const char *)z, zn), SRV_BODY_OVER_BUDGET);
    ck_assert_uint_gt(b.wanted, 1000); /* the 503 says what zlib asked for: its state */
    srv_inflate_deinit(&f);
    srv_body_free(&b);
    srv_budget_give(&tight, 4 * MIB);
    ck_assert_uint_eq(srv_budget_held(&tight), 0);
    free(z);
}
END_TEST

static Suite *inflate_suite(void)
{
    Suite *s = suite_create("inflate");
    TCase *codings = tcase_create("Codings");
    tcase_add_test(codings, content_encoding_table);
    tcase_add_test(codings, accept_encoding_table);
    tcase_add_test(codings, the_threshold_is_one_kib);
    suite_add_tcase(s, codings);
    TCase *core = tcase_create("Core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, gzip_and_deflate_in_pieces_give_the_bytes_back);
    tcase_add_test(core, gzip_members_are_read_in_turn);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("Limits");
    tcase_add_checked_fixture(limits, setup, teardown);
    tcase_set_timeout(limits, 30);
    tcase_add_test(limits, a_bomb_stops_at_the_limit);
    tcase_add_test(limits, the_decoder_meets_the_budget);
    suite_add_tcase(s, limits);
    TCase *errors = tcase_create("Errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(errors, a_damaged_stream_names_its_coding);
    tcase_add_test(errors, not_compressed_at_all_is_corrupt);
    tcase_add_test(errors, a_cut_stream_is_refused_at_the_end);
    tcase_add_test(errors, bytes_after_a_deflate_stream_are_corrupt);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return suite_run(inflate_suite());
}
