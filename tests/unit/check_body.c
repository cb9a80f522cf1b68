/*
 * tests/unit/check_body.c — server/net/upload.c and server/host/budget.c without a server: how a
 * request body is stored, refused and drained as libmicrohttpd hands it over in
 * pieces (its buffer, and its charge, following the bytes that arrived, never the
 * length declared), and how the memory budget charges, refuses and finds its default.
 */
#include <check.h>

#include "tests/unit/suite_run.h"
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "server/host/budget.h"
#include "server/net/upload.h"

#define MIB ((size_t)1 << 20)

/* A budget without a limit, for the tests about bodies alone; every test gives all back. */
static struct srv_budget roomy;

static void setup(void)
{
    srv_budget_init(&roomy, SIZE_MAX);
}

static void teardown(void)
{
    ck_assert_uint_eq(srv_budget_held(&roomy), 0);
}

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

START_TEST(a_declared_length_is_not_allocated_ahead)
{
    /* 3 MiB declared: the buffer follows what arrives, doubling, and stops at 3 MiB. */
    struct srv_body b;
    srv_body_init(&b, 16 * MIB, (long long)(3 * MIB), &roomy);
    ck_assert_ptr_null(b.data); /* a declaration alone allocates nothing */
    ck_assert_int_eq(srv_body_append(&b, "{", 1), SRV_BODY_OK);
    ck_assert_uint_eq(b.cap, SRV_BODY_FIRST_MIN);
    ck_assert_int_eq(feed(&b, MIB - 1, 16384), SRV_BODY_OK);
    ck_assert_uint_eq(b.cap, MIB); /* within twice what has arrived */
    ck_assert_int_eq(feed(&b, 2 * MIB, 16384), SRV_BODY_OK);
    ck_assert_uint_eq(b.len, 3 * MIB);
    ck_assert_uint_eq(b.cap, 3 * MIB); /* not 4 MiB: no more than declared will come */
    ck_assert_int_eq(b.data[0], '{');
    ck_assert_int_eq(b.data[1], 'a');
    ck_assert_int_eq(b.data[3 * MIB - 1], (char)('a' + 16383 % 26)); /* a piece's last */
    srv_body_free(&b);
}
END_TEST

START_TEST(small_declared_length_is_not_rounded_up)
{
    struct srv_body b;
    srv_body_init(&b, 16 * MIB, 73, &roomy);
    ck_assert_int_eq(feed(&b, 73, 73), SRV_BODY_OK);
    ck_assert_uint_eq(b.cap, 73);
    srv_body_free(&b);
}
END_TEST

START_TEST(declaration_over_the_limit_costs_at_most_the_limit)
{
    struct srv_body b;
    srv_body_init(&b, MIB, 9223372036854775807LL, &roomy);
    ck_assert_uint_eq(b.first, SRV_BODY_FIRST_MIN);
    ck_assert_uint_eq(b.ceiling, MIB);
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
    srv_body_init(&b, 5 * MIB, -1, &roomy);
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
    srv_body_init(&b, 1000, -1, &roomy);
    ck_assert_int_eq(feed(&b, 1001, 1001), SRV_BODY_TOO_LARGE);
    ck_assert_int_eq(feed(&b, SRV_BODY_DRAIN_MIN - 1001, 65536), SRV_BODY_TOO_LARGE);
    ck_assert_int_eq(srv_body_append(&b, "x", 1), SRV_BODY_ABORT);
    srv_body_free(&b);
    srv_body_free(&b); /* twice is safe */
}
END_TEST

START_TEST(the_buffer_is_charged_while_it_exists)
{
    struct srv_body b;
    srv_body_init(&b, 16 * MIB, (long long)(3 * MIB), &roomy);
    ck_assert_uint_eq(srv_budget_held(&roomy), 0); /* nothing allocated, nothing charged */
    ck_assert_int_eq(feed(&b, 1, 1), SRV_BODY_OK);
    ck_assert_uint_eq(srv_budget_held(&roomy), SRV_BODY_FIRST_MIN); /* what exists, not 3 MiB */
    ck_assert_int_eq(feed(&b, 3 * MIB - 1, 65536), SRV_BODY_OK);
    ck_assert_uint_eq(srv_budget_held(&roomy), 3 * MIB);
    srv_body_free(&b);
    ck_assert_uint_eq(srv_budget_held(&roomy), 0);
    srv_body_free(&b); /* twice: nothing given back twice */
}
END_TEST

START_TEST(a_body_past_the_budget_is_refused_and_drained)
{
    /* 3 MiB declared with 2 MiB held by others under 4 MiB: the first 2 MiB fit. */
    struct srv_budget budget;
    srv_budget_init(&budget, 4 * MIB);
    srv_budget_charge(&budget, 2 * MIB); /* other requests' answers, past the slack */
    struct srv_body b;
    srv_body_init(&b, 16 * MIB, (long long)(3 * MIB), &budget);
    ck_assert_int_eq(feed(&b, 2 * MIB, 65536), SRV_BODY_OK);
    ck_assert_uint_eq(srv_budget_held(&budget), 4 * MIB);
    ck_assert_int_eq(feed(&b, 1, 1), SRV_BODY_OVER_BUDGET); /* growing to 3 MiB would pass */
    ck_assert_uint_eq(b.wanted, 3 * MIB);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(srv_budget_held(&budget), 2 * MIB); /* its charge went back */
    ck_assert_int_eq(feed(&b, MIB - 1, 65536), SRV_BODY_OVER_BUDGET); /* drained */
    srv_body_free(&b);
    ck_assert_uint_eq(srv_budget_held(&budget), 2 * MIB);

    /* Alone, a body larger than the whole budget is taken: the budget bounds concurrency. */
    srv_budget_give(&budget, 2 * MIB);
    srv_body_init(&b, 16 * MIB, (long long)(5 * MIB), &budget);
    ck_assert_int_eq(feed(&b, 5 * MIB, 65536), SRV_BODY_OK);
    ck_assert_uint_eq(srv_budget_held(&budget), 5 * MIB);
    srv_body_free(&b);
    ck_assert_uint_eq(srv_budget_held(&budget), 0);
}
END_TEST

START_TEST(declared_lengths_that_never_arrive_leave_the_budget_free)
{
    /*
     * The slow-body attack: 45 bodies each declare a 45th of the budget and send one
     * byte. They hold 45 first buffers, not the budget, so a small body still fits.
     */
    enum { N = 45 };
    struct srv_budget budget;
    srv_budget_init(&budget, 45 * 16 * MIB);
    static struct srv_body slow[N];
    for (int i = 0; i < N; i++) {
        srv_body_init(&slow[i], 16 * MIB, (long long)(16 * MIB), &budget);
        ck_assert_int_eq(srv_body_append(&slow[i], "{", 1), SRV_BODY_OK);
    }
    ck_assert_uint_eq(srv_budget_held(&budget), N * SRV_BODY_FIRST_MIN);
    struct srv_body small;
    srv_body_init(&small, 16 * MIB, 36, &budget);
    ck_assert_int_eq(feed(&small, 36, 36), SRV_BODY_OK);
    ck_assert_uint_eq(small.cap, 36);
    srv_body_free(&small);
    for (int i = 0; i < N; i++)
        srv_body_free(&slow[i]);
    ck_assert_uint_eq(srv_budget_held(&budget), 0);
}
END_TEST

START_TEST(a_growing_body_is_refused_when_it_would_pass_the_budget)
{
    /* Chunked: 4 KiB doubling; with 2 MiB held by others, 1 MiB fits and 2 MiB does not. */
    struct srv_budget budget;
    srv_budget_init(&budget, 3 * MIB);
    srv_budget_charge(&budget, 2 * MIB);
    struct srv_body b;
    srv_body_init(&b, 16 * MIB, -1, &budget);
    ck_assert_int_eq(feed(&b, MIB, 1000), SRV_BODY_OK);
    ck_assert_uint_eq(srv_budget_held(&budget), 3 * MIB);
    ck_assert_int_eq(feed(&b, 1, 1), SRV_BODY_OVER_BUDGET);
    ck_assert_uint_eq(b.wanted, 2 * MIB);
    ck_assert_uint_eq(srv_budget_held(&budget), 2 * MIB); /* the refused body's charge went back */
    srv_body_free(&b);
    ck_assert_uint_eq(srv_budget_held(&budget), 2 * MIB);
}
END_TEST

START_TEST(budget_takes_until_the_limit_unless_alone)
{
    struct srv_budget budget;
    srv_budget_init(&budget, 100);
    ck_assert(srv_budget_take(&budget, 150, 0)); /* alone: over the limit, still taken */
    ck_assert(srv_budget_take(&budget, 1, 0));   /* others hold 150: under the slack, alone */
    ck_assert(srv_budget_take(&budget, 10, 150)); /* the holder itself: still alone */
    ck_assert_uint_eq(srv_budget_held(&budget), 161);
    srv_budget_give(&budget, 161);
    ck_assert(srv_budget_take(&budget, 60, 0));
    ck_assert(srv_budget_take(&budget, 40, 0));   /* exactly the limit */
    ck_assert(srv_budget_take(&budget, 1, 0));    /* past it, but others hold under the slack */
    srv_budget_give(&budget, 101);
    srv_budget_charge(&budget, 5);                /* what exists already is always charged */
    ck_assert_uint_eq(srv_budget_held(&budget), 5);
    srv_budget_give(&budget, 5);

    /* Others past the slack: a take that passes the limit is refused, one within it taken. */
    struct srv_budget big;
    srv_budget_init(&big, 4 * SRV_BUDGET_SLACK);
    srv_budget_charge(&big, 2 * SRV_BUDGET_SLACK);
    ck_assert(!srv_budget_take(&big, 3 * SRV_BUDGET_SLACK, 0));
    ck_assert(!srv_budget_take(&big, SIZE_MAX, 0)); /* no wrap-around */
    ck_assert(srv_budget_take(&big, 2 * SRV_BUDGET_SLACK, 0));  /* exactly the limit */
    ck_assert(!srv_budget_take(&big, 1, 0));
    ck_assert(srv_budget_take(&big, 1, 4 * SRV_BUDGET_SLACK - SRV_BUDGET_SLACK)); /* mine: others hold the slack */
    srv_budget_give(&big, 4 * SRV_BUDGET_SLACK + 1);
    ck_assert_uint_eq(srv_budget_held(&big), 0);
}
END_TEST

/* Writes `text` into dir/name, making dir (and its parents under /tmp) first. */
static void put_file(const char *dir, const char *name, const char *text)
{
    char cmd[512], path[512];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/*
 * A cgroup tree in a temporary directory: v2 at root/, v1's memory hierarchy at
 * root/memory, and a /proc/self/cgroup of our choosing.
 */
START_TEST(default_is_two_thirds_of_the_tightest_limit)
{
    char root[] = "/tmp/attnd-cgroup-XXXXXX", dir[256], self[300];
    ck_assert_ptr_nonnull(mkdtemp(root));
    size_t gib = (size_t)1 << 30;
    snprintf(self, sizeof self, "%s/self", root);

    /* v2: the pod's 1 GiB on the parent of the container's cgroup, which says "max". */
    put_file(root, "memory.max", "max\n");
    snprintf(dir, sizeof dir, "%s/kubepods/pod1", root);
    put_file(dir, "memory.max", "1073741824\n");
    snprintf(dir, sizeof dir, "%s/kubepods/pod1/ctr", root);
    put_file(dir, "memory.max", "max\n");
    put_file(root, "self", "0::/kubepods/pod1/ctr\n");
    ck_assert_uint_eq(srv_budget_default(root, self, 24 * gib), gib / 3 * 2);
    ck_assert_uint_eq(srv_budget_default(root, self, gib / 2), gib / 2 / 3 * 2); /* machine smaller */

    /* v1: 512 MiB on the process's memory cgroup; other controllers' lines ignored. */
    snprintf(dir, sizeof dir, "%s/memory", root);
    put_file(dir, "memory.limit_in_bytes", "9223372036854771712\n"); /* v1's "unlimited" */
    snprintf(dir, sizeof dir, "%s/memory/job", root);
    put_file(dir, "memory.limit_in_bytes", "536870912\n");
    put_file(root, "self", "5:cpu,cpuacct:/kubepods/pod1\n4:memory:/job\n");
    ck_assert_uint_eq(srv_budget_default(root, self, 24 * gib), 512 * MIB / 3 * 2);

    /* A path this namespace does not have (a container's own view): its root counts. */
    put_file(dir, "memory.limit_in_bytes", "9223372036854771712\n");
    snprintf(dir, sizeof dir, "%s/memory", root);
    put_file(dir, "memory.limit_in_bytes", "268435456\n");
    put_file(root, "self", "4:memory:/docker/abc\n0::/docker/abc\n");
    ck_assert_uint_eq(srv_budget_default(root, self, 24 * gib), 256 * MIB / 3 * 2);

    /* Nothing readable, or junk: the machine's memory. */
    put_file(dir, "memory.limit_in_bytes", "12abc\n");
    put_file(root, "memory.max", "max\n");
    ck_assert_uint_eq(srv_budget_default(root, "/nonexistent/cgroup", 8 * gib),
                      8 * gib / 3 * 2);
    ck_assert_uint_eq(srv_budget_default("/nonexistent", "/nonexistent", SIZE_MAX), SIZE_MAX);

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *body_suite(void)
{
    Suite *s = suite_create("body");
    TCase *core = tcase_create("Core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, a_declared_length_is_not_allocated_ahead);
    tcase_add_test(core, small_declared_length_is_not_rounded_up);
    tcase_add_test(core, declaration_over_the_limit_costs_at_most_the_limit);
    tcase_add_test(core, without_a_length_it_grows_to_the_limit);
    tcase_add_test(core, a_body_that_keeps_coming_is_cut_off);
    tcase_add_test(core, the_buffer_is_charged_while_it_exists);
    tcase_add_test(core, a_body_past_the_budget_is_refused_and_drained);
    tcase_add_test(core, declared_lengths_that_never_arrive_leave_the_budget_free);
    tcase_add_test(core, a_growing_body_is_refused_when_it_would_pass_the_budget);
    tcase_add_test(core, budget_takes_until_the_limit_unless_alone);
    tcase_add_test(core, default_is_two_thirds_of_the_tightest_limit);
    suite_add_tcase(s, core);
    return s;
}

int main(void)
{
    return suite_run(body_suite());
}
