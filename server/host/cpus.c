/*
 * server/host/cpus.c — the cgroup CPU quota (see cpus.h).
 *
 * The walk up the tree is the memory budget's too (server/host/cgroup.c); this file reads one
 * directory's quota.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "server/host/cpus.h"

#include "server/host/cgroup.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Two numbers from a file: "Q P" (v2 cpu.max) or, with second NULL, "Q" (v1). */
static bool srv_read_longs(const char *path, long long *first, long long *second)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    char line[128] = "";
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!got)
        return false;
    char *end = NULL;
    *first = strtoll(line, &end, 10);
    if (end == line)
        return false;
    if (second == NULL)
        return *end == '\n' || *end == '\0';
    char *p = end;
    *second = strtoll(p, &end, 10);
    return end != p && (*end == '\n' || *end == '\0');
}

/* The quota of one cgroup directory, in CPUs, or a negative number for none. */
static double srv_dir_quota(const char *dir, bool v2)
{
    char name[PATH_MAX + 32];
    long long quota = -1, period = 0;
    if (v2) {
        /* "max 100000" fails the first number: no limit, as wanted. */
        snprintf(name, sizeof name, "%s/cpu.max", dir);
        if (!srv_read_longs(name, &quota, &period))
            return -1;
    } else {
        snprintf(name, sizeof name, "%s/cpu.cfs_quota_us", dir);
        if (!srv_read_longs(name, &quota, NULL))
            return -1;
        snprintf(name, sizeof name, "%s/cpu.cfs_period_us", dir);
        if (!srv_read_longs(name, &period, NULL))
            return -1;
    }
    if (quota <= 0 || period <= 0)
        return -1; /* v1's -1 is "no limit" */
    return (double)quota / (double)period;
}

bool srv_cpu_quota(const char *mount, const char *self_cgroup, double *cpus)
{
    double best = srv_cgroup_tightest(mount, self_cgroup, "cpu", srv_dir_quota);
    if (best <= 0)
        return false;
    *cpus = best;
    return true;
}

unsigned srv_cpus_usable(double quota, bool has_quota, unsigned online)
{
    unsigned n = online < 1 ? 1 : online;
    if (has_quota && quota > 0 && quota < (double)n) {
        /* Rounded up; a hair over a whole number is float noise, not another CPU. */
        unsigned whole = (unsigned)quota;
        n = (double)whole < quota - 1e-9 ? whole + 1 : whole;
        n = n < 1 ? 1 : n;
    }
    return n;
}

/*
 * The CPUs this process may run on: those online, or fewer when its affinity says so
 * (docker --cpuset-cpus, taskset, a cpuset cgroup), which the online count ignores.
 */
static unsigned srv_cpus_runnable(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = online > 0 ? (unsigned)online : 1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int allowed = CPU_COUNT(&set);
        if (allowed > 0 && (unsigned)allowed < n)
            n = (unsigned)allowed;
    }
    return n;
}

unsigned srv_cpus_here(double *quota_out, unsigned *online_out)
{
    unsigned n_online = srv_cpus_runnable();
    double quota = 0;
    bool has = srv_cpu_quota("/sys/fs/cgroup", "/proc/self/cgroup", &quota);
    if (quota_out != NULL)
        *quota_out = has ? quota : 0;
    if (online_out != NULL)
        *online_out = n_online;
    return srv_cpus_usable(quota, has, n_online);
}
