/*
 * server/budget.c — the memory budget's counter and its default (see budget.h).
 */
#include "server/budget.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
        bool alone = held <= mine; /* nobody else holds anything */
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
    if (path == NULL)
        return SIZE_MAX;
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

size_t srv_budget_default(const char *cgroup2_max, const char *cgroup1_limit, size_t physical)
{
    size_t limit = physical;
    size_t v2 = srv_cgroup_limit(cgroup2_max), v1 = srv_cgroup_limit(cgroup1_limit);
    if (v2 < limit)
        limit = v2;
    if (v1 < limit)
        limit = v1;
    return limit == SIZE_MAX ? SIZE_MAX : limit / 3 * 2;
}

size_t srv_budget_default_here(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t physical = SIZE_MAX;
    if (pages > 0 && page > 0 && (unsigned long)pages <= SIZE_MAX / (unsigned long)page)
        physical = (size_t)pages * (size_t)page;
    return srv_budget_default("/sys/fs/cgroup/memory.max",
                              "/sys/fs/cgroup/memory/memory.limit_in_bytes", physical);
}
