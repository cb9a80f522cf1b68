/*
 * bench/bench_time.h — the clock and the sort order the bench programs take medians with.
 * Header-only (static inline): each bench program is one .c file and links nothing of
 * the others. Not here: anything attnd itself uses.
 */
#ifndef ATTND_BENCH_TIME_H
#define ATTND_BENCH_TIME_H

#include <time.h>

/* Seconds on the monotonic clock. */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* qsort's order for doubles, ascending. */
static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
