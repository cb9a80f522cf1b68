/*
 * server/host/cpus.h — how many CPUs attnd may use: the cgroup's CPU quota when there is one,
 * else the CPUs it may run on. The default of --threads.
 *
 * In a container with a CPU limit the kernel still reports every core of the node, so a
 * pod limited to 2 CPUs on a 64-core node would start 64 workers (and as many lane
 * threads) that the quota then throttles in turns: more memory, more contention, slower
 * answers. The quota is what the container may use, so it is what counts:
 *
 *   cgroup v2   cpu.max            "QUOTA PERIOD" (microseconds), or "max PERIOD"
 *   cgroup v1   cpu.cfs_quota_us   QUOTA, or -1 for none; cpu.cfs_period_us PERIOD
 *
 * The tightest QUOTA/PERIOD from the process's own cgroup up to the root counts
 * (Kubernetes puts the pod's limit on a parent of the container's cgroup under v1 and
 * on the container's under v2; either is found), rounded up: 1.5 CPUs is 2 workers,
 * each of which the quota then runs at three quarters. Never more than the CPUs the
 * process may run on (those online, or its CPU affinity's when fewer: a cpuset, docker
 * --cpuset-cpus, taskset), never fewer than 1.
 *
 * The root of the cgroup tree and the file naming the process's cgroups are
 * parameters, so the reader is tested on fake trees (tests/unit/check_cpus.c).
 *
 * Not here: --threads itself (config.c), what the threads do (daemon.c).
 */
#ifndef SRV_CPUS_H
#define SRV_CPUS_H

#include <stdbool.h>

/*
 * The tightest CPU quota, in CPUs, over mount (the cgroup tree's root: v2 there, v1's
 * cpu hierarchy at mount/cpu) and self_cgroup (a /proc/self/cgroup); false when there
 * is none (no limit, or nothing readable).
 */
bool srv_cpu_quota(const char *mount, const char *self_cgroup, double *cpus);

/* The CPUs to use: the quota rounded up, at most online, at least 1 (see above). */
unsigned srv_cpus_usable(double quota, bool has_quota, unsigned online);

/*
 * srv_cpus_usable for this process; *quota_out (may be NULL) gets the quota or 0, and
 * *online_out the CPUs it may run on.
 */
unsigned srv_cpus_here(double *quota_out, unsigned *online_out);

#endif
