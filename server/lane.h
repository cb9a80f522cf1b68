/*
 * server/lane.h — the lane where large requests run, off libmicrohttpd's workers.
 *
 * Each libmicrohttpd worker serves its connections one request at a time: while it
 * computes a request that takes a second, every other connection it holds waits,
 * /healthz included. So a request whose working set is large (request.c decides,
 * from api/'s estimate) leaves its worker: its connection is suspended, the request
 * becomes a job here, and one of the lane's threads computes it and resumes the
 * connection with the answer. The workers stay free for small requests, and the
 * lane's threads run at a lower priority (nice SRV_LANE_NICE), so that when the cores
 * are busy with large work a small request still gets one at once.
 *
 * A job is the caller's: the lane only queues it, runs it once, and never frees it.
 * The queue is first in, first out, and unbounded: each job is a connection that
 * holds a slot and a body already charged to the memory budget.
 *
 * Not here: what a job does (request.c), HTTP.
 */
#ifndef SRV_LANE_H
#define SRV_LANE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define SRV_LANE_MAX_THREADS 64
#define SRV_LANE_NICE 5

struct srv_lane_job {
    /* Called once on a lane thread; stopping: the lane is being stopped, answer now. */
    void (*run)(struct srv_lane_job *job, bool stopping);
    struct srv_lane_job *next; /* the lane's */
};

struct srv_lane {
    pthread_mutex_t lock;
    pthread_cond_t work;      /* a job was queued, or stopping */
    struct srv_lane_job *head, *tail;
    bool stopping;
    bool started;             /* set once by srv_lane_start, read-only after */
    size_t n_threads;
    pthread_t threads[SRV_LANE_MAX_THREADS];
};

/* Starts n threads (1..SRV_LANE_MAX_THREADS). False (nothing started) on failure. */
bool srv_lane_start(struct srv_lane *lane, size_t n);

/* Queues job to run on the next free lane thread; false (not queued) once stopping. */
bool srv_lane_push(struct srv_lane *lane, struct srv_lane_job *job);

/*
 * Runs every job still queued with stopping set, waits for those running, and joins
 * the threads; later pushes are refused. A lane never started (zeroed) is fine.
 */
void srv_lane_stop(struct srv_lane *lane);

/* Frees the lock and condition once nobody can push any more (after the daemon stops). */
void srv_lane_deinit(struct srv_lane *lane);

#endif
