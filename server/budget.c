/*
 * server/budget.c — the memory budget's counter and its default (see budget.h).
 */
#include "server/budget.h"

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

/*
 * The tightest `file` limit from mount + path up to mount itself. Components are cut
 * from the end, so a path this namespace does not have still reaches the root.
 */
static size_t srv_cgroup_chain_limit(const char *mount, const char *path, const char *file)
{
    char dir[PATH_MAX], name[PATH_MAX + 64];
    size_t root = strlen(mount);
    if ((size_t)snprintf(dir, sizeof dir, "%s%s", mount, path) >= sizeof dir)
        snprintf(dir, sizeof dir, "%s", mount); /* absurdly long: the root alone */
    size_t best = SIZE_MAX;
    for (;;) {
        snprintf(name, sizeof name, "%s/%s", dir, file);
        size_t v = srv_cgroup_limit(name);
        best = v < best ? v : best;
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= root || slash == NULL || slash < dir + root)
            return best;
        *slash = '\0';
    }
}

/* Whether v1's comma-separated controller list names the memory controller. */
static bool srv_has_memory_controller(const char *list)
{
    for (const char *p = list; *p != '\0';) {
        size_t n = strcspn(p, ",");
        if (n == 6 && strncmp(p, "memory", 6) == 0)
            return true;
        p += n + (p[n] == ',');
    }
    return false;
}

size_t srv_budget_default(const char *mount, const char *self_cgroup, size_t physical)
{
    char v1_mount[PATH_MAX];
    snprintf(v1_mount, sizeof v1_mount, "%s/memory", mount);
    /* The roots themselves count even when self_cgroup cannot be read. */
    size_t limit = physical;
    size_t v2 = srv_cgroup_chain_limit(mount, "", "memory.max");
    size_t v1 = srv_cgroup_chain_limit(v1_mount, "", "memory.limit_in_bytes");
    limit = v2 < limit ? v2 : limit;
    limit = v1 < limit ? v1 : limit;
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
        size_t v = SIZE_MAX;
        if (strcmp(line, "0") == 0 && controllers[0] == '\0')
            v = srv_cgroup_chain_limit(mount, path, "memory.max");
        else if (srv_has_memory_controller(controllers))
            v = srv_cgroup_chain_limit(v1_mount, path, "memory.limit_in_bytes");
        limit = v < limit ? v : limit;
    }
    if (f != NULL)
        fclose(f);
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
