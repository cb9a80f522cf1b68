/*
 * tests/unit/check_cpus.c — server/host/cpus.c on fake cgroup trees in a temporary directory
 * (v2 at root/, v1's cpu hierarchy at root/cpu, a /proc/self/cgroup of our choosing):
 * the quota is QUOTA/PERIOD as the kernel documents cpu.max and cpu.cfs_quota_us, the
 * tightest on the way up counts, and the usable count is that rounded up, within
 * [1, online].
 */
#include <check.h>

#include "tests/unit/suite_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/host/cpus.h"

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

static char root[] = "/tmp/attnd-cpus-XXXXXX";
static char self[300];

static void tree_make(void)
{
    memcpy(root + strlen(root) - 6, "XXXXXX", 6);
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(self, sizeof self, "%s/self", root);
}

static void tree_remove(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}

static void path_in(char *out, size_t len, const char *sub)
{
    snprintf(out, len, "%s%s", root, sub);
}

START_TEST(test_v2_cpu_max)
{
    tree_make();
    char dir[300];
    double q = 0;
    put_file(root, "cpu.max", "max 100000\n"); /* the root: no limit */
    path_in(dir, sizeof dir, "/kubepods/pod1/ctr");
    put_file(dir, "cpu.max", "200000 100000\n"); /* limits.cpu: 2 */
    put_file(root, "self", "0::/kubepods/pod1/ctr\n");
    ck_assert(srv_cpu_quota(root, self, &q));
    ck_assert(fabs(q - 2.0) < 1e-12);

    /* 1500m: 150000 of every 100000 us; the pod's parent tighter (1.25) wins. */
    put_file(dir, "cpu.max", "150000 100000\n");
    ck_assert(srv_cpu_quota(root, self, &q));
    ck_assert(fabs(q - 1.5) < 1e-12);
    path_in(dir, sizeof dir, "/kubepods/pod1");
    put_file(dir, "cpu.max", "62500 50000\n");
    ck_assert(srv_cpu_quota(root, self, &q));
    ck_assert(fabs(q - 1.25) < 1e-12);

    /* No limit anywhere: "max", junk, a period of 0. */
    put_file(dir, "cpu.max", "max 50000\n");
    path_in(dir, sizeof dir, "/kubepods/pod1/ctr");
    put_file(dir, "cpu.max", "12x 100000\n");
    ck_assert(!srv_cpu_quota(root, self, &q));
    put_file(dir, "cpu.max", "100000 0\n");
    ck_assert(!srv_cpu_quota(root, self, &q));
    tree_remove();
}
END_TEST

START_TEST(test_v1_cfs)
{
    tree_make();
    char dir[300];
    double q = 0;
    path_in(dir, sizeof dir, "/cpu");
    put_file(dir, "cpu.cfs_quota_us", "-1\n"); /* the root: none */
    put_file(dir, "cpu.cfs_period_us", "100000\n");
    path_in(dir, sizeof dir, "/cpu/kubepods/pod1");
    put_file(dir, "cpu.cfs_quota_us", "50000\n"); /* 500m on the pod */
    put_file(dir, "cpu.cfs_period_us", "100000\n");
    path_in(dir, sizeof dir, "/cpu/kubepods/pod1/ctr");
    put_file(dir, "cpu.cfs_quota_us", "-1\n");
    put_file(dir, "cpu.cfs_period_us", "100000\n");
    /* Other controllers' lines are not the cpu hierarchy's. */
    put_file(root, "self", "4:memory:/elsewhere\n3:cpu,cpuacct:/kubepods/pod1/ctr\n");
    ck_assert(srv_cpu_quota(root, self, &q));
    ck_assert(fabs(q - 0.5) < 1e-12);

    /* The quota without its period is no limit; "cpuacct" alone is not "cpu". */
    path_in(dir, sizeof dir, "/cpu/kubepods/pod1");
    put_file(dir, "cpu.cfs_period_us", "\n");
    ck_assert(!srv_cpu_quota(root, self, &q));
    put_file(dir, "cpu.cfs_period_us", "100000\n");
    put_file(root, "self", "3:cpuacct:/kubepods/pod1/ctr\n");
    ck_assert(!srv_cpu_quota(root, self, &q));

    /* A container's own view: its path is not in the tree, the root's limit counts. */
    path_in(dir, sizeof dir, "/cpu");
    put_file(dir, "cpu.cfs_quota_us", "300000\n");
    put_file(root, "self", "3:cpu,cpuacct:/docker/abc\n");
    ck_assert(srv_cpu_quota(root, self, &q));
    ck_assert(fabs(q - 3.0) < 1e-12);
    ck_assert(srv_cpu_quota(root, "/nonexistent/cgroup", &q));
    ck_assert(fabs(q - 3.0) < 1e-12);
    ck_assert(!srv_cpu_quota("/nonexistent", "/nonexistent", &q));
    tree_remove();
}
END_TEST

/* ceil(quota) within [1, online]. */
START_TEST(test_usable)
{
    static const struct {
        double quota;
        bool has;
        unsigned online, want;
    } cases[] = {
        {2.0, true, 64, 2},    /* the 64-core node, limit 2 */
        {1.5, true, 64, 2},    /* rounded up */
        {0.25, true, 64, 1},   /* at least one */
        {0.0, false, 64, 64},  /* no quota: the CPUs */
        {8.0, true, 4, 4},     /* a quota above the machine: the machine */
        {3.0000000001, true, 64, 3}, /* float noise is not a fourth CPU */
        {2.0, true, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_uint_eq(srv_cpus_usable(cases[i].quota, cases[i].has, cases[i].online),
                          cases[i].want);
}
END_TEST

static Suite *cpus_suite(void)
{
    Suite *s = suite_create("cpus");
    TCase *tc = tcase_create("Core");
    tcase_add_test(tc, test_v2_cpu_max);
    tcase_add_test(tc, test_v1_cfs);
    tcase_add_test(tc, test_usable);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(cpus_suite());
}
