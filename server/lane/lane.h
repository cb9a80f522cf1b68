/*
 * server/lane/lane.h — the lane where large requests run, off libmicrohttpd's workers.
 *
 * Each libmicrohttpd worker serves its connections one request at a time: while it
 * computes a request that takes a second, every other connection it holds waits,
 * /healthz included. So a request whose working set is large (server/compute.c decides,
 * from api/'s estimate) leaves its worker: its connection is suspended, the request
 * becomes a job here, and one of the lane's threads computes it and resumes the
 * connection with the answer. The workers stay free for small requests, and the
 * lane's threads run at a lower priority (nice SRV_LANE_NICE), so that when the cores
 * are busy with large work a small request still gets one at once.
 *
 * Fair and bounded (server/lane/queue.h): waiting jobs are queued per client and served
 * round robin, at most --lane-queue of them wait, at most half of those from one
 * client, and a push past either bound is refused at once (the caller answers 503).
 * A job that has waited --lane-wait is not computed: it runs with SRV_LANE_WAITED (a
 * 503). A watcher thread looks at the waiting jobs every SRV_LANE_WATCH_MS: those
 * whose connection the client closed (poll(2) on its socket: POLLRDHUP, POLLHUP or
 * POLLERR) run with SRV_LANE_GONE, and those past the deadline with SRV_LANE_WAITED;
 * a thread taking a job checks the deadline too. A client that shuts down only its
 * sending half counts as gone, as nginx takes it: HTTP/1.1 clients do not half-close
 * a connection on which they wait for an answer.
 *
 * A job running is not cut when its client goes: the computation (api_handle, and in
 * it one BLAS call may be the whole request) has no point where it could stop, and
 * giving it one would reach into api/ and core/. Its answer then meets a closed
 * socket, and its log line says outcome=cut, as any answer not delivered does.
 *
 * Every drop is counted (srv_metrics_lane_dropped: gone, full, wait). A job is the
 * caller's: the lane only queues it, runs it once, and never frees it.
 *
 * Not here: what a job does (server/compute.c), HTTP.
 */
#ifndef SRV_LANE_H
#define SRV_LANE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/lane/queue.h"
#include "server/net/clients.h"

#define SRV_LANE_MAX_THREADS 64
#define SRV_LANE_NICE 5
#define SRV_LANE_WATCH_MS 100 /* how often waiting jobs' sockets and ages are looked at */

struct srv_lane_limits {
    unsigned queue;      /* --lane-queue: jobs waiting at most, >= 1 */
    unsigned per_client; /* of them, from one client: 1..queue */
    unsigned wait_ms;    /* --lane-wait, in ms */
};

struct srv_lane {
    pthread_mutex_t lock;
    pthread_cond_t work;      /* a job was queued, or stopping */
    pthread_cond_t tick;      /* on CLOCK_MONOTONIC: wakes the watcher to stop */
    struct srv_lane_queue queue;
    unsigned running;         /* jobs being computed */
    int64_t wait_ms;
    bool stopping;
    bool started;             /* set once by srv_lane_start, read-only after */
    bool watching;            /* the watcher thread runs */
    size_t n_threads;
    pthread_t threads[SRV_LANE_MAX_THREADS];
    pthread_t watcher;
};

/*
 * Starts n threads (1..SRV_LANE_MAX_THREADS) and, with watch, the watcher (a test
 * drives srv_lane_sweep itself instead). False (nothing started) on failure.
 */
bool srv_lane_start(struct srv_lane *lane, size_t n, const struct srv_lane_limits *lim,
                    bool watch);

/* Queues job (client and fd set) for its turn, or says why not (nothing queued). */
enum srv_lane_push srv_lane_push(struct srv_lane *lane, struct srv_lane_job *job);

/*
 * The watcher's one look, at time now_ms: runs every waiting job whose client is gone
 * (SRV_LANE_GONE) or that has waited wait_ms (SRV_LANE_WAITED), on the calling thread.
 */
void srv_lane_sweep(struct srv_lane *lane, int64_t now_ms);

/* Jobs waiting and running now, for /metrics. Zeros for a lane never started. */
void srv_lane_counts(struct srv_lane *lane, unsigned *queued, unsigned *running);

/*
 * Runs every job still queued with SRV_LANE_STOPPING, waits for those running, and
 * joins the threads; later pushes are refused. A lane never started (zeroed) is fine.
 */
void srv_lane_stop(struct srv_lane *lane);

/* Frees the lock, condition and queue once nobody can push any more. */
void srv_lane_deinit(struct srv_lane *lane);

#endif
