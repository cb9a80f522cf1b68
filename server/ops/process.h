/*
 * server/ops/process.h — the process_* series every Prometheus dashboard expects, named and
 * measured as the official client libraries' process collectors do:
 *
 *   process_cpu_seconds_total       counter  user + system CPU time (/proc/self/stat
 *                                            utime + stime, over the clock tick)
 *   process_resident_memory_bytes   gauge    rss pages × page size (/proc/self/stat)
 *   process_virtual_memory_bytes    gauge    vsize (/proc/self/stat)
 *   process_open_fds                gauge    entries of /proc/self/fd (the one
 *                                            reading it included, as in Go's)
 *   process_max_fds                 gauge    the soft RLIMIT_NOFILE
 *   process_start_time_seconds      gauge    Unix time the process started: the boot
 *                                            time (/proc/stat btime) + starttime ticks
 *
 * The /proc root is a parameter, so the reader is tested on a fake one; the HTTP test
 * compares the served values with /proc itself.
 *
 * Not here: the exposition format (metrics.c renders these numbers).
 */
#ifndef SRV_PROCESS_H
#define SRV_PROCESS_H

#include <stdbool.h>

struct srv_process_stats {
    double cpu_seconds;
    double resident_bytes;
    double virtual_bytes;
    double open_fds;
    double max_fds;
    double start_time_seconds;
};

/*
 * Reads proc (normally "/proc"): proc/self/stat, proc/self/fd and proc/stat, and the
 * process's own RLIMIT_NOFILE. False when /proc/self/stat cannot be read or parsed;
 * a missing btime or fd directory leaves that value 0.
 */
bool srv_process_read(const char *proc, struct srv_process_stats *out);

/*
 * Parses a /proc/<pid>/stat line: utime and stime (fields 14, 15) and starttime (22) in
 * clock ticks, vsize (23) in bytes and rss (24) in pages. The command (field 2) may
 * hold spaces and parentheses, so fields are counted from its last ')'.
 */
bool srv_process_parse_stat(const char *line, unsigned long long *utime,
                            unsigned long long *stime, unsigned long long *starttime,
                            unsigned long long *vsize, long long *rss);

#endif
