/*
 * server/lane.c — the large requests' threads and their queue (see lane.h).
 */
#define _GNU_SOURCE /* gettid-by-syscall for the per-thread priority below */
#include "server/lane.h"

#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/* The next job, or NULL once stopping and the queue is empty. Called with the lock held. */
static struct srv_lane_job *srv_lane_pop(struct srv_lane *lane)
{
    while (lane->head == NULL && !lane->stopping)
        pthread_cond_wait(&lane->work, &lane->lock);
    struct srv_lane_job *job = lane->head;
    if (job != NULL) {
        lane->head = job->next;
        if (lane->head == NULL)
            lane->tail = NULL;
    }
    return job;
}

static void *srv_lane_thread(void *arg)
{
    struct srv_lane *lane = arg;
    srv_lane_lower_priority();
    pthread_mutex_lock(&lane->lock);
    for (;;) {
        struct srv_lane_job *job = srv_lane_pop(lane);
        if (job == NULL)
            break;
        bool stopping = lane->stopping;
        pthread_mutex_unlock(&lane->lock);
        job->run(job, stopping); /* may free job: not touched after */
        pthread_mutex_lock(&lane->lock);
    }
    pthread_mutex_unlock(&lane->lock);
    return NULL;
}

bool srv_lane_start(struct srv_lane *lane, size_t n)
{
    memset(lane, 0, sizeof *lane);
    if (n == 0 || n > SRV_LANE_MAX_THREADS)
        return false;
    if (pthread_mutex_init(&lane->lock, NULL) != 0)
        return false;
    if (pthread_cond_init(&lane->work, NULL) != 0) {
        pthread_mutex_destroy(&lane->lock);
        return false;
    }
    lane->started = true;
    for (size_t i = 0; i < n; i++) {
        if (pthread_create(&lane->threads[i], NULL, srv_lane_thread, lane) != 0) {
            srv_lane_stop(lane); /* the ones started so far */
            srv_lane_deinit(lane);
            return false;
        }
        lane->n_threads = i + 1;
    }
    return true;
}

bool srv_lane_push(struct srv_lane *lane, struct srv_lane_job *job)
{
    job->next = NULL;
    if (!lane->started)
        return false;
    pthread_mutex_lock(&lane->lock);
    if (lane->stopping) {
        pthread_mutex_unlock(&lane->lock);
        return false;
    }
    if (lane->tail != NULL)
        lane->tail->next = job;
    else
        lane->head = job;
    lane->tail = job;
    pthread_cond_signal(&lane->work);
    pthread_mutex_unlock(&lane->lock);
    return true;
}

void srv_lane_stop(struct srv_lane *lane)
{
    if (!lane->started)
        return;
    pthread_mutex_lock(&lane->lock);
    lane->stopping = true;
    pthread_cond_broadcast(&lane->work);
    pthread_mutex_unlock(&lane->lock);
    for (size_t i = 0; i < lane->n_threads; i++)
        pthread_join(lane->threads[i], NULL);
    lane->n_threads = 0;
}

void srv_lane_deinit(struct srv_lane *lane)
{
    if (!lane->started)
        return;
    pthread_cond_destroy(&lane->work);
    pthread_mutex_destroy(&lane->lock);
    lane->started = false;
}
