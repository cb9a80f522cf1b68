/*
 * tests/unit/check_process.c — server/ops/process.c: /proc/<pid>/stat's fields as proc(5)
 * numbers them, a command with spaces and parentheses included, and a fake /proc tree.
 */
#include <check.h>

#include "tests/unit/suite_run.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/ops/process.h"

/* Fields 1..24 written out: utime 14 = 250, stime 15 = 50, starttime 22 = 12345,
 * vsize 23 = 370970624, rss 24 = 2066. */
#define STAT_TAIL " S 1 17079 6813 0 -1 4194304 137 0 0 0 250 50 0 0 20 0 9 0 12345 " \
                  "370970624 2066 18446744073709551615 1 2 3\n"

START_TEST(test_parse_stat)
{
    static const char *commands[] = {"(attnd)", "(a b) c)", "((x))", "()"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, "4242 %s%s", commands[i], STAT_TAIL);
        unsigned long long ut = 0, st = 0, start = 0, vsize = 0;
        long long rss = 0;
        ck_assert_msg(srv_process_parse_stat(line, &ut, &st, &start, &vsize, &rss), "%s", line);
        ck_assert_uint_eq(ut, 250);
        ck_assert_uint_eq(st, 50);
        ck_assert_uint_eq(start, 12345);
        ck_assert_uint_eq(vsize, 370970624ULL);
        ck_assert_int_eq(rss, 2066);
    }
    unsigned long long a, b, c, d;
    long long e;
    ck_assert(!srv_process_parse_stat("4242 attnd S 1 2 3", &a, &b, &c, &d, &e)); /* no ')' */
    ck_assert(!srv_process_parse_stat("4242 (attnd) S 1 2 3\n", &a, &b, &c, &d, &e)); /* short */
}
END_TEST

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(test_fake_proc)
{
    char root[] = "/tmp/attnd-proc-XXXXXX", path[256];
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(path, sizeof path, "mkdir -p '%s/self/fd'", root);
    ck_assert_int_eq(system(path), 0);
    snprintf(path, sizeof path, "%s/self/stat", root);
    put(path, "4242 (attnd)" STAT_TAIL);
    snprintf(path, sizeof path, "%s/stat", root);
    put(path, "cpu  1 2 3\nbtime 1700000000\nprocesses 9\n");
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/self/fd/%d", root, i);
        put(path, "");
    }
    struct srv_process_stats st;
    ck_assert(srv_process_read(root, &st));
    double tick = (double)sysconf(_SC_CLK_TCK), page = (double)sysconf(_SC_PAGESIZE);
    ck_assert_double_eq_tol(st.cpu_seconds, 300.0 / tick, 1e-12);
    ck_assert_double_eq_tol(st.start_time_seconds, 1700000000.0 + 12345.0 / tick, 1e-6);
    ck_assert_double_eq(st.virtual_bytes, 370970624.0);
    ck_assert_double_eq(st.resident_bytes, 2066.0 * page);
    ck_assert_double_eq(st.open_fds, 5.0);
    ck_assert(st.max_fds >= 1.0);

    /* No btime, no fd directory: those are 0; no stat: nothing. */
    snprintf(path, sizeof path, "%s/stat", root);
    put(path, "cpu 1 2 3\n");
    snprintf(path, sizeof path, "rm -rf '%s/self/fd'", root);
    ck_assert_int_eq(system(path), 0);
    ck_assert(srv_process_read(root, &st));
    ck_assert_double_eq(st.start_time_seconds, 0.0);
    ck_assert_double_eq(st.open_fds, 0.0);
    ck_assert(!srv_process_read("/nonexistent", &st));
    snprintf(path, sizeof path, "rm -rf '%s'", root);
    ck_assert_int_eq(system(path), 0);
}
END_TEST

static Suite *process_suite(void)
{
    Suite *s = suite_create("process");
    TCase *tc = tcase_create("Core");
    tcase_add_test(tc, test_parse_stat);
    tcase_add_test(tc, test_fake_proc);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(process_suite());
}
