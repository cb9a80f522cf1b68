/*
 * server/cpus.c — the cgroup CPU quota (see cpus.h).
 *
 * Files are read as the memory budget's are (server/budget.c): a file missing,
 * unreadable or not in the kernel's format means "no limit here", never an error.
 */
#include "server/cpus.h"

#include <limits.h>
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

/* The tightest quota from mount + path up to mount itself, or a negative number. */
static double srv_chain_quota(const char *mount, const char *path, bool v2)
{
    char dir[PATH_MAX];
    size_t root = strlen(mount);
    if ((size_t)snprintf(dir, sizeof dir, "%s%s", mount, path) >= sizeof dir)
        snprintf(dir, sizeof dir, "%s", mount);
    double best = -1;
    for (;;) {
        double q = srv_dir_quota(dir, v2);
        if (q > 0 && (best < 0 || q < best))
            best = q;
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= root || slash == NULL || slash < dir + root)
            return best;
        *slash = '\0';
    }
}

/* Whether v1's comma-separated controller list names the cpu controller. */
static bool srv_has_cpu_controller(const char *list)
{
    for (const char *p = list; *p != '\0';) {
        size_t n = strcspn(p, ",");
        if (n == 3 && strncmp(p, "cpu", 3) == 0)
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}

static double srv_min_quota(double a, double b)
{
    return a <= 0 ? b : b <= 0 ? a : a < b ? a : b;
}

bool srv_cpu_quota(const char *mount, const char *self_cgroup, double *cpus)
{
    char v1_mount[PATH_MAX];
    snprintf(v1_mount, sizeof v1_mount, "%s/cpu", mount);
    /* The roots count even when self_cgroup cannot be read (a container's own view). */
    double best = srv_min_quota(srv_chain_quota(mount, "", true),
                                srv_chain_quota(v1_mount, "", false));
    FILE *f = fopen(self_cgroup, "r");
    char line[PATH_MAX + 128];
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':'); /* "id:controllers:path" */
        char *path = controllers != NULL ? strchr(controllers + 1, ':') : NULL;
        if (path == NULL || path[1] != '/')
            continue;
        *path++ = '\0';
        *controllers++ = '\0'; /* line is now the id alone */
        if (strcmp(line, "0") == 0 && controllers[0] == '\0')
            best = srv_min_quota(best, srv_chain_quota(mount, path, true));
        else if (srv_has_cpu_controller(controllers))
            best = srv_min_quota(best, srv_chain_quota(v1_mount, path, false));
    }
    if (f != NULL)
        fclose(f);
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

unsigned srv_cpus_here(double *quota_out, unsigned *online_out)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n_online = online > 0 ? (unsigned)online : 1;
    double quota = 0;
    bool has = srv_cpu_quota("/sys/fs/cgroup", "/proc/self/cgroup", &quota);
    if (quota_out != NULL)
        *quota_out = has ? quota : 0;
    if (online_out != NULL)
        *online_out = n_online;
    return srv_cpus_usable(quota, has, n_online);
}
