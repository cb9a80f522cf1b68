/*
 * server/host/clock.h — the monotonic clock as the server's threads count it: milliseconds
 * (or nanoseconds) now, and the time some milliseconds ahead for a timed wait on a condition variable
 * that waits on CLOCK_MONOTONIC (pthread_condattr_setclock).
 *
 * Not here: wall-clock time (the log's), sleeping.
 */
#ifndef SRV_CLOCK_H
#define SRV_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in milliseconds. */
int64_t srv_clock_ms(void);

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t srv_clock_ns(void);

/* CLOCK_MONOTONIC ms milliseconds from now, for pthread_cond_timedwait. */
struct timespec srv_clock_after_ms(long ms);

#endif
