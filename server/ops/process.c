/*
 * server/ops/process.c — reading /proc for the process_* series (see process.h).
 */
#include "server/ops/process.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

bool srv_process_parse_stat(const char *line, unsigned long long *utime,
                            unsigned long long *stime, unsigned long long *starttime,
                            unsigned long long *vsize, long long *rss)
{
    const char *p = strrchr(line, ')');
    if (p == NULL)
        return false;
    p++;
    /* Field 3 (state) comes next; count to field 24. */
    unsigned long long v[22];
    long long rss_v = 0;
    char state;
    int n = sscanf(p, " %c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
                      "%llu %llu %llu %llu %llu %llu %llu %llu %lld",
                   &state, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8],
                   &v[9], &v[10], &v[11], &v[12], &v[13], &v[14], &v[15], &v[16], &v[17],
                   &v[18], &v[19], &rss_v);
    if (n != 22)
        return false;
    /* v[0] is field 4 (ppid): field k is v[k - 4]. */
    *utime = v[10];
    *stime = v[11];
    *starttime = v[18];
    *vsize = v[19];
    *rss = rss_v;
    return true;
}

/* The boot time, Unix seconds, from the btime line of proc/stat; 0 when absent. */
static unsigned long long srv_boot_time(const char *proc)
{
    char path[512];
    snprintf(path, sizeof path, "%s/stat", proc);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    char line[256];
    unsigned long long btime = 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "btime ", 6) == 0) {
            btime = strtoull(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return btime;
}

/*
 * Entries of proc/self/fd, without "." and "..". The descriptor reading the directory is
 * one of them, as it is for the Go client's collector: an instant's extra file.
 */
static double srv_open_fds(const char *proc)
{
    char path[512];
    snprintf(path, sizeof path, "%s/self/fd", proc);
    DIR *d = opendir(path);
    if (d == NULL)
        return 0;
    double n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

bool srv_process_read(const char *proc, struct srv_process_stats *out)
{
    memset(out, 0, sizeof *out);
    char path[512], line[1024];
    snprintf(path, sizeof path, "%s/self/stat", proc);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    unsigned long long utime, stime, starttime, vsize;
    long long rss;
    if (!got || !srv_process_parse_stat(line, &utime, &stime, &starttime, &vsize, &rss))
        return false;
    long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    if (tick <= 0 || page <= 0)
        return false;
    out->cpu_seconds = (double)(utime + stime) / (double)tick;
    out->resident_bytes = rss > 0 ? (double)rss * (double)page : 0;
    out->virtual_bytes = (double)vsize;
    unsigned long long boot = srv_boot_time(proc);
    out->start_time_seconds = boot > 0 ? (double)boot + (double)starttime / (double)tick : 0;
    out->open_fds = srv_open_fds(proc);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        out->max_fds = rl.rlim_cur == RLIM_INFINITY ? 0 : (double)rl.rlim_cur;
    return true;
}
