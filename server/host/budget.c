/*
 * server/host/budget.c — the memory budget's counter and its default (see budget.h).
 */
#include "server/host/budget.h"

#include "server/host/cgroup.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void srv_budget_init(struct srv_budget *b, size_t limit)
{
    b->limit = limit;
    atomic_init(&b->held, 0);
}

bool srv_budget_take(struct srv_budget *b, size_t n, size_t mine)
{
    size_t held = atomic_load(&b->held);
    for (;;) {
        bool alone = held - mine <= SRV_BUDGET_SLACK; /* nobody else holds much */
        if (!alone && (n > b->limit || held > b->limit - n))
            return false;
        size_t next = n > SIZE_MAX - held ? SIZE_MAX : held + n;
        if (atomic_compare_exchange_weak(&b->held, &held, next))
            return true;
    }
}

void srv_budget_charge(struct srv_budget *b, size_t n)
{
    atomic_fetch_add(&b->held, n);
}

void srv_budget_give(struct srv_budget *b, size_t n)
{
    atomic_fetch_sub(&b->held, n);
}

size_t srv_budget_held(struct srv_budget *b)
{
    return atomic_load(&b->held);
}

/*
 * A cgroup limit file's value in bytes, or SIZE_MAX for none: "max" (v2), a missing
 * or unreadable file, anything that is not a plain number, and v1's "unlimited",
 * which is its page counter's maximum rounded down to a page (about 2^63).
 */
static size_t srv_cgroup_limit(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return SIZE_MAX;
    char line[64] = "";
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!got || line[0] < '0' || line[0] > '9')
        return SIZE_MAX;
    char *end = NULL;
    unsigned long long v = strtoull(line, &end, 10);
    if ((*end != '\n' && *end != '\0') || v == 0 || v >= (1ULL << 62) || v > SIZE_MAX)
        return SIZE_MAX;
    return (size_t)v;
}

/* One directory's memory limit in bytes, or -1 for none (cgroup.h's reader). */
static double srv_dir_memory_limit(const char *dir, bool v2)
{
    char name[PATH_MAX + 32];
    snprintf(name, sizeof name, "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
    size_t v = srv_cgroup_limit(name);
    return v == SIZE_MAX ? -1 : (double)v; /* below 2^62 (srv_cgroup_limit), so exact enough */
}

size_t srv_budget_default(const char *mount, const char *self_cgroup, size_t physical)
{
    double tightest = srv_cgroup_tightest(mount, self_cgroup, "memory", srv_dir_memory_limit);
    size_t limit = physical;
    if (tightest > 0 && tightest < (double)limit)
        limit = (size_t)tightest;
    return limit == SIZE_MAX ? SIZE_MAX : limit / 3 * 2;
}

size_t srv_budget_default_here(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t physical = SIZE_MAX;
    if (pages > 0 && page > 0 && (unsigned long)pages <= SIZE_MAX / (unsigned long)page)
        physical = (size_t)pages * (size_t)page;
    return srv_budget_default("/sys/fs/cgroup", "/proc/self/cgroup", physical);
}
