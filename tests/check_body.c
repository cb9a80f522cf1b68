/*
 * tests/check_body.c — server/body.c without a server: how a request body is stored,
 * refused and drained as libmicrohttpd hands it over in pieces.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "server/body.h"

#define MIB ((size_t)1 << 20)

/* Appends len bytes of a repeating pattern in pieces of at most piece bytes. */
static enum srv_body_state feed(struct srv_body *b, size_t len, size_t piece)
{
    static char chunk[65536];
    for (size_t i = 0; i < sizeof chunk; i++)
        chunk[i] = (char)('a' + i % 26);
    enum srv_body_state st = b->state;
    for (size_t done = 0; done < len;) {
        size_t n = len - done < piece ? len - done : piece;
        n = n < sizeof chunk ? n : sizeof chunk;
        st = srv_body_append(b, chunk, n);
        done += n;
    }
    return st;
}

START_TEST(declared_length_is_allocated_once)
{
    /* 3 MiB in MHD-sized pieces: one buffer of exactly the declared size, never moved. */
    struct srv_body b;
    srv_body_init(&b, 16 * MIB, (long long)(3 * MIB));
    ck_assert_ptr_null(b.data); /* a declaration alone allocates nothing */
    ck_assert_int_eq(srv_body_append(&b, "{", 1), SRV_BODY_OK);
    ck_assert_uint_eq(b.cap, 3 * MIB);
    const char *first = b.data;
    ck_assert_int_eq(feed(&b, 3 * MIB - 1, 16384), SRV_BODY_OK);
    ck_assert_ptr_eq(b.data, first);
    ck_assert_uint_eq(b.len, 3 * MIB);
    ck_assert_uint_eq(b.cap, 3 * MIB);
    ck_assert_int_eq(b.data[0], '{');
    srv_body_free(&b);
}
END_TEST

START_TEST(small_declared_length_is_not_rounded_up)
{
    struct srv_body b;
    srv_body_init(&b, 16 * MIB, 73);
    ck_assert_int_eq(feed(&b, 73, 73), SRV_BODY_OK);
    ck_assert_uint_eq(b.cap, 73);
    srv_body_free(&b);
}
END_TEST

START_TEST(declaration_over_the_limit_costs_at_most_the_limit)
{
    struct srv_body b;
    srv_body_init(&b, MIB, 9223372036854775807LL);
    ck_assert_uint_eq(b.first, MIB);
    ck_assert_int_eq(feed(&b, MIB, 65536), SRV_BODY_OK);
    ck_assert_uint_eq(b.cap, MIB);
    ck_assert_int_eq(srv_body_append(&b, "x", 1), SRV_BODY_TOO_LARGE);
    ck_assert_ptr_null(b.data); /* given back at once */
    srv_body_free(&b);
}
END_TEST

START_TEST(without_a_length_it_grows_to_the_limit)
{
    struct srv_body b;
    srv_body_init(&b, 5 * MIB, -1);
    ck_assert_int_eq(feed(&b, 100, 100), SRV_BODY_OK);
    ck_assert_uint_eq(b.cap, SRV_BODY_FIRST_MIN);
    ck_assert_int_eq(feed(&b, 5 * MIB - 100, 30000), SRV_BODY_OK);
    ck_assert_uint_eq(b.len, 5 * MIB);
    ck_assert_uint_eq(b.cap, 5 * MIB); /* doubling stops at the limit, not past it */
    ck_assert_int_eq(srv_body_append(&b, "x", 1), SRV_BODY_TOO_LARGE);
    srv_body_free(&b);
}
END_TEST

START_TEST(a_body_that_keeps_coming_is_cut_off)
{
    /* Past the limit the rest is drained, up to max(limit, SRV_BODY_DRAIN_MIN). */
    struct srv_body b;
    srv_body_init(&b, 1000, -1);
    ck_assert_int_eq(feed(&b, 1001, 1001), SRV_BODY_TOO_LARGE);
    ck_assert_int_eq(feed(&b, SRV_BODY_DRAIN_MIN - 1001, 65536), SRV_BODY_TOO_LARGE);
    ck_assert_int_eq(srv_body_append(&b, "x", 1), SRV_BODY_ABORT);
    srv_body_free(&b);
    srv_body_free(&b); /* twice is safe */
}
END_TEST

static Suite *body_suite(void)
{
    Suite *s = suite_create("body");
    TCase *core = tcase_create("Core");
    tcase_add_test(core, declared_length_is_allocated_once);
    tcase_add_test(core, small_declared_length_is_not_rounded_up);
    tcase_add_test(core, declaration_over_the_limit_costs_at_most_the_limit);
    tcase_add_test(core, without_a_length_it_grows_to_the_limit);
    tcase_add_test(core, a_body_that_keeps_coming_is_cut_off);
    suite_add_tcase(s, core);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(body_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
