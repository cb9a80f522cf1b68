/*
 * server/lane/lane.c — the large requests' threads, their queue and its watcher (see lane.h).
 *
 * Locking: one mutex over the queue, the running count and stopping. No job runs with
 * it held: a job resumes its connection, which takes libmicrohttpd's own locks.
 */
#define _GNU_SOURCE /* gettid-by-syscall for the per-thread priority; POLLRDHUP */
#include "server/lane/lane.h"

#include <poll.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "server/host/clock.h"
#include "server/ops/metrics.h"

/*
 * Linux gives each thread its own nice value (setpriority on a thread id), and
 * raising it needs no privilege. Failure leaves the thread at the normal priority:
 * slower small requests under load, nothing worse.
 */
static void srv_lane_lower_priority(void)
{
    pid_t tid = (pid_t)syscall(SYS_gettid);
    (void)setpriority(PRIO_PROCESS, (id_t)tid, SRV_LANE_NICE);
}

static bool srv_lane_is_late(const struct srv_lane_job *job, int64_t now_ms, int64_t wait_ms)
{
    return now_ms - job->queued_ms >= wait_ms;
}

struct srv_lane_clock {
    int64_t now_ms, wait_ms;
};

static bool srv_lane_late_job(const struct srv_lane_job *job, void *cls)
{
    const struct srv_lane_clock *c = cls;
    return srv_lane_is_late(job, c->now_ms, c->wait_ms);
}

/*
 * Whether the client closed its connection. The request's bytes were all read before
 * it was queued, so the socket is readable only for a hang-up, an error or a pipelined
 * request; POLLRDHUP tells the first from the last without reading anything.
 */
static bool srv_lane_gone_job(const struct srv_lane_job *job, void *cls)
{
    (void)cls;
    if (job->fd < 0)
        return false;
    struct pollfd p = {.fd = job->fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* Runs each job of the list (linked through next) with how. */
static void srv_lane_run_all(struct srv_lane_job *list, enum srv_lane_how how)
{
    while (list != NULL) {
        struct srv_lane_job *job = list;
        list = job->next;
        srv_metrics_lane_dropped(how == SRV_LANE_GONE ? SRV_METRICS_LANE_GONE
                                                      : SRV_METRICS_LANE_WAIT);
        job->run(job, how); /* may free job: not touched after */
    }
}

void srv_lane_sweep(struct srv_lane *lane, int64_t now_ms)
{
    struct srv_lane_clock clock = {now_ms, lane->wait_ms};
    pthread_mutex_lock(&lane->lock);
    /* Gone first: a job both gone and late has nobody to answer. */
    struct srv_lane_job *gone = srv_lane_queue_take_if(&lane->queue, srv_lane_gone_job, NULL);
    struct srv_lane_job *late = srv_lane_queue_take_if(&lane->queue, srv_lane_late_job, &clock);
    pthread_mutex_unlock(&lane->lock);
    srv_lane_run_all(gone, SRV_LANE_GONE);
    srv_lane_run_all(late, SRV_LANE_WAITED);
}

/* The next job and why it runs, or NULL once stopping and nothing waits. Lock held. */
static struct srv_lane_job *srv_lane_next(struct srv_lane *lane, enum srv_lane_how *how)
{
    while (lane->queue.n == 0 && !lane->stopping)
        pthread_cond_wait(&lane->work, &lane->lock);
    struct srv_lane_job *job = srv_lane_queue_pop(&lane->queue);
    if (job == NULL)
        return NULL;
    *how = lane->stopping                                                  ? SRV_LANE_STOPPING
           : srv_lane_is_late(job, srv_clock_ms(), lane->wait_ms) ? SRV_LANE_WAITED
                                                                         : SRV_LANE_RUN;
    return job;
}

static void *srv_lane_thread(void *arg)
{
    struct srv_lane *lane = arg;
    srv_lane_lower_priority();
    pthread_mutex_lock(&lane->lock);
    for (;;) {
        enum srv_lane_how how = SRV_LANE_RUN;
        struct srv_lane_job *job = srv_lane_next(lane, &how);
        if (job == NULL)
            break;
        if (how == SRV_LANE_RUN)
            lane->running++;
        pthread_mutex_unlock(&lane->lock);
        if (how == SRV_LANE_WAITED) {
            job->next = NULL;
            srv_lane_run_all(job, how);
        } else {
            job->run(job, how); /* may free job: not touched after */
        }
        pthread_mutex_lock(&lane->lock);
        if (how == SRV_LANE_RUN)
            lane->running--;
    }
    pthread_mutex_unlock(&lane->lock);
    return NULL;
}

/* Every SRV_LANE_WATCH_MS, a sweep, until the lane stops. */
static void *srv_lane_watch(void *arg)
{
    struct srv_lane *lane = arg;
    pthread_mutex_lock(&lane->lock);
    while (!lane->stopping) {
        struct timespec until = srv_clock_after_ms(SRV_LANE_WATCH_MS);
        pthread_cond_timedwait(&lane->tick, &lane->lock, &until);
        if (lane->stopping)
            break;
        pthread_mutex_unlock(&lane->lock);
        srv_lane_sweep(lane, srv_clock_ms());
        pthread_mutex_lock(&lane->lock);
    }
    pthread_mutex_unlock(&lane->lock);
    return NULL;
}

/* The lock, the conditions and the queue; false (none left) on failure. */
static bool srv_lane_init(struct srv_lane *lane, const struct srv_lane_limits *lim)
{
    if (!srv_lane_queue_init(&lane->queue, lim->queue, lim->per_client))
        return false;
    pthread_condattr_t ca;
    bool ok = pthread_condattr_init(&ca) == 0;
    if (ok) {
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        ok = pthread_cond_init(&lane->tick, &ca) == 0;
        pthread_condattr_destroy(&ca);
    }
    if (ok && pthread_cond_init(&lane->work, NULL) != 0) {
        pthread_cond_destroy(&lane->tick);
        ok = false;
    }
    if (ok && pthread_mutex_init(&lane->lock, NULL) != 0) {
        pthread_cond_destroy(&lane->tick);
        pthread_cond_destroy(&lane->work);
        ok = false;
    }
    if (!ok)
        srv_lane_queue_deinit(&lane->queue);
    return ok;
}

bool srv_lane_start(struct srv_lane *lane, size_t n, const struct srv_lane_limits *lim,
                    bool watch)
{
    memset(lane, 0, sizeof *lane);
    if (n == 0 || n > SRV_LANE_MAX_THREADS || lim->queue == 0 || lim->per_client == 0)
        return false;
    if (!srv_lane_init(lane, lim))
        return false;
    lane->wait_ms = lim->wait_ms;
    lane->started = true;
    for (size_t i = 0; i < n; i++) {
        if (pthread_create(&lane->threads[i], NULL, srv_lane_thread, lane) != 0)
            goto failed;
        lane->n_threads = i + 1;
    }
    if (watch) {
        if (pthread_create(&lane->watcher, NULL, srv_lane_watch, lane) != 0)
            goto failed;
        lane->watching = true;
    }
    return true;
failed:
    srv_lane_stop(lane); /* the threads started so far */
    srv_lane_deinit(lane);
    return false;
}

enum srv_lane_push srv_lane_push(struct srv_lane *lane, struct srv_lane_job *job)
{
    job->next = NULL;
    if (!lane->started)
        return SRV_LANE_STOPPED;
    pthread_mutex_lock(&lane->lock);
    enum srv_lane_push r = SRV_LANE_STOPPED;
    if (!lane->stopping) {
        job->queued_ms = srv_clock_ms();
        r = srv_lane_queue_push(&lane->queue, job);
        if (r == SRV_LANE_QUEUED)
            pthread_cond_signal(&lane->work);
    }
    pthread_mutex_unlock(&lane->lock);
    if (r == SRV_LANE_FULL || r == SRV_LANE_CLIENT_FULL)
        srv_metrics_lane_dropped(SRV_METRICS_LANE_FULL);
    return r;
}

void srv_lane_counts(struct srv_lane *lane, unsigned *queued, unsigned *running)
{
    *queued = *running = 0;
    if (!lane->started)
        return;
    pthread_mutex_lock(&lane->lock);
    *queued = lane->queue.n;
    *running = lane->running;
    pthread_mutex_unlock(&lane->lock);
}

void srv_lane_stop(struct srv_lane *lane)
{
    if (!lane->started)
        return;
    pthread_mutex_lock(&lane->lock);
    lane->stopping = true;
    pthread_cond_broadcast(&lane->work);
    pthread_cond_signal(&lane->tick);
    pthread_mutex_unlock(&lane->lock);
    if (lane->watching)
        pthread_join(lane->watcher, NULL);
    lane->watching = false;
    for (size_t i = 0; i < lane->n_threads; i++)
        pthread_join(lane->threads[i], NULL);
    lane->n_threads = 0;
}

void srv_lane_deinit(struct srv_lane *lane)
{
    if (!lane->started)
        return;
    pthread_cond_destroy(&lane->tick);
    pthread_cond_destroy(&lane->work);
    pthread_mutex_destroy(&lane->lock);
    srv_lane_queue_deinit(&lane->queue);
    lane->started = false;
}
