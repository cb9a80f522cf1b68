/*
 * server/host/budget.h — how much memory the server's requests may hold at once.
 *
 * What grows with load is held per request, not per thread: a body while it arrives,
 * a request's trace and answer while it is computed, and the answer until its client
 * has read it (a slow client holds a 96 MB answer as long as it likes). Every such
 * holding is charged here before it is allocated and given back when freed; a charge
 * that would pass the limit is refused and the request answered 503 with Retry-After,
 * instead of the process growing until the kernel (or a container's limit) kills it.
 *
 * A request that would hold the only charge is always admitted: the limit bounds
 * concurrency, and --max-cells (not this) bounds one request. So a budget smaller
 * than one large answer serves such requests one at a time rather than never. Others
 * holding at most SRV_BUDGET_SLACK count as nobody: health checks, scrapes and small
 * answers come and go all the time, and a request larger than the budget must not
 * depend on an instant when none of them is in flight.
 *
 * The limit defaults to two thirds of the memory the process may use: the cgroup's
 * limit when it has one (a container's), else the machine's. The third left over is
 * for what is not charged: the process itself, OpenBLAS's buffers, and above all the
 * free memory malloc keeps per arena (up to 64 MiB each, server/main.c). Measured with
 * 64 clients asking for xl answers (96 MB each) under a budget of 2/3 GiB: peak RSS
 * 775 MiB; with 3/4 GiB, 975 MiB, too close to a 1 GiB container limit.
 *
 * Not here: what a request costs (api/ estimates its working set), HTTP.
 */
#ifndef SRV_BUDGET_H
#define SRV_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define SRV_BUDGET_SLACK ((size_t)1 << 20)

struct srv_budget {
    size_t limit;        /* bytes; SIZE_MAX = no limit */
    atomic_size_t held;  /* bytes charged and not yet given back */
};

void srv_budget_init(struct srv_budget *b, size_t limit);

/*
 * Charges n more bytes to a holder that already has `mine` charged, unless others
 * hold more than SRV_BUDGET_SLACK and the total would pass the limit. False charges
 * nothing.
 */
bool srv_budget_take(struct srv_budget *b, size_t n, size_t mine);

/* Charges n bytes whatever the total: for memory that exists already (a finished answer). */
void srv_budget_charge(struct srv_budget *b, size_t n);

/* Gives back n bytes charged earlier. */
void srv_budget_give(struct srv_budget *b, size_t n);

size_t srv_budget_held(struct srv_budget *b);

/*
 * The default limit: two thirds of the smallest of `physical` and every cgroup memory
 * limit on the way from the process's cgroup up to its hierarchy's root: a pod's limit
 * may sit on a parent of the container's cgroup. self_cgroup is /proc/self/cgroup's
 * text source ("0::/path" for v2, "N:memory:/path" for v1); the hierarchies are
 * mounted at `mount` (v2) and mount/memory (v1), whose files are memory.max and
 * memory.limit_in_bytes. "max", v1's page-counter maximum, and missing or unreadable
 * files mean no limit; a path that does not exist in this mount namespace (a
 * container sees its own cgroup as the root) is searched from where it does.
 */
size_t srv_budget_default(const char *mount, const char *self_cgroup, size_t physical);

/* srv_budget_default for this process: /sys/fs/cgroup, /proc/self/cgroup, physical pages. */
size_t srv_budget_default_here(void);

#endif
