/*
 * server/host/cgroup.h — the tightest limit a cgroup tree puts on this process, whatever the
 * limit is: the walk that the memory budget (budget.c) and the CPU quota (cpus.c) share.
 *
 * A limit counts from the process's own cgroup up to the root of its hierarchy, cgroup
 * v2 (the unified tree at `mount`) or v1 (the controller's own tree at mount/NAME), and
 * the tightest one wins: Kubernetes puts a pod's limit on a parent of the container's
 * cgroup under v1 and on the container's own under v2. The roots count even when the
 * process's cgroup file cannot be read (a container's own view of the tree).
 *
 * The caller reads one directory's limit; files missing, unreadable or not in the
 * kernel's format mean "no limit there", never an error. Paths are parameters, so
 * both readers are tested on fake trees (tests/unit/check_cpus.c, check_body.c).
 */
#ifndef SRV_CGROUP_H
#define SRV_CGROUP_H

#include <stdbool.h>

/*
 * One directory's limit, in the caller's unit, or a negative number for none. v2 says
 * which tree the directory is in (the file names differ).
 */
typedef double (*srv_cgroup_read_fn)(const char *dir, bool v2);

/*
 * The smallest positive limit read from mount (v2) and mount/controller (v1) over
 * self_cgroup's lines ("id:controllers:path", as /proc/self/cgroup), each path walked
 * up to its root; a negative number when none was found.
 */
double srv_cgroup_tightest(const char *mount, const char *self_cgroup, const char *controller,
                           srv_cgroup_read_fn read);

#endif
