/*
 * tests/unit/check_lane.c — server/lane/queue.c and server/lane/lane.c without a server:
 * the round-robin order between clients, the bounds (in all, and half for one client),
 * the deadline of a waiting job, a job whose client closed its socket dropped before it
 * starts, and the drops counted for /metrics.
 *
 * Deterministic: the lane's one thread is held by a blocker job the test releases
 * (semaphores, no timing), sweeps are called with the clock value the test chooses,
 * and a gone client is one end of a socketpair closed by the test.
 */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server/host/clock.h"
#include "server/lane/lane.h"
#include "server/lane/queue.h"
#include "server/ops/metrics.h"
#include "server/ops/test_hooks.h"
#include "tests/unit/suite_run.h"

/* ---- jobs that record how they ran ---- */

#define MAX_RUNS 64

struct rec_job {
    struct srv_lane_job job; /* first: the lane hands this pointer back */
    int id;
};

static struct {
    int id[MAX_RUNS];
    enum srv_lane_how how[MAX_RUNS];
    int n;
} runs;

static sem_t ran; /* posted once per recorded run */

static void record(struct srv_lane_job *job, enum srv_lane_how how)
{
    struct rec_job *r = (struct rec_job *)job;
    runs.id[runs.n] = r->id;
    runs.how[runs.n] = how;
    runs.n++;
    sem_post(&ran);
}

static void job_init(struct rec_job *j, int id, char client)
{
    memset(j, 0, sizeof *j);
    j->job.run = record;
    j->job.fd = -1;
    j->job.client[0] = (unsigned char)client;
    j->id = id;
}

/* A job that holds the lane's thread until released. */
static sem_t blocker_started, blocker_release;

static void block(struct srv_lane_job *job, enum srv_lane_how how)
{
    (void)job;
    (void)how;
    sem_post(&blocker_started);
    sem_wait(&blocker_release);
}

static void setup(void)
{
    memset(&runs, 0, sizeof runs);
    sem_init(&ran, 0, 0);
    sem_init(&blocker_started, 0, 0);
    sem_init(&blocker_release, 0, 0);
    srv_metrics_reset();
}

static void teardown(void)
{
    sem_destroy(&ran);
    sem_destroy(&blocker_started);
    sem_destroy(&blocker_release);
}

/* A lane of one thread, no watcher, held by a blocker that is running when this returns. */
static void lane_held(struct srv_lane *lane, struct srv_lane_job *blocker, unsigned queue,
                      unsigned per_client, unsigned wait_ms)
{
    struct srv_lane_limits lim = {queue, per_client, wait_ms};
    ck_assert(srv_lane_start(lane, 1, &lim, false));
    memset(blocker, 0, sizeof *blocker);
    blocker->run = block;
    blocker->fd = -1;
    blocker->client[0] = 'Z';
    ck_assert_int_eq(srv_lane_push(lane, blocker), SRV_LANE_QUEUED);
    sem_wait(&blocker_started);
}

static unsigned long long dropped(const char *reason)
{
    struct srv_metrics_gauges g = {0};
    char *text = NULL;
    size_t len = 0;
    ck_assert(srv_metrics_render(&g, &text, &len));
    char key[96];
    snprintf(key, sizeof key, "attnd_lane_jobs_dropped_total{reason=\"%s\"} ", reason);
    const char *at = strstr(text, key);
    ck_assert_ptr_nonnull(at);
    unsigned long long n = strtoull(at + strlen(key), NULL, 10);
    free(text);
    return n;
}

/* ---- the queue alone ---- */

START_TEST(clients_are_served_round_robin)
{
    struct srv_lane_queue q;
    ck_assert(srv_lane_queue_init(&q, 16, 8));
    struct rec_job j[8];
    /* A queues four, B two, C one, all before anything is served. */
    const char clients[] = "AAAABBC";
    for (int i = 0; i < 7; i++) {
        job_init(&j[i], i, clients[i]);
        ck_assert_int_eq(srv_lane_queue_push(&q, &j[i].job), SRV_LANE_QUEUED);
    }
    ck_assert_uint_eq(q.n, 7);
    /* A1 is served; then D joins, at the end of the round (after A, served last). */
    ck_assert_int_eq(((struct rec_job *)srv_lane_queue_pop(&q))->id, 0);
    job_init(&j[7], 7, 'D');
    ck_assert_int_eq(srv_lane_queue_push(&q, &j[7].job), SRV_LANE_QUEUED);
    /* B1 C1 A2 D1 B2 A3 A4: a job of each client per round, each client's in order. */
    static const int want[] = {4, 6, 1, 7, 5, 2, 3};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        struct rec_job *r = (struct rec_job *)srv_lane_queue_pop(&q);
        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(r->id, want[i]);
    }
    ck_assert_ptr_null(srv_lane_queue_pop(&q));
    ck_assert_uint_eq(q.n, 0);
    srv_lane_queue_deinit(&q);
}
END_TEST

START_TEST(one_client_alone_is_first_in_first_out)
{
    struct srv_lane_queue q;
    ck_assert(srv_lane_queue_init(&q, 4, 4));
    struct rec_job j[4];
    for (int i = 0; i < 4; i++) {
        job_init(&j[i], i, 'A');
        ck_assert_int_eq(srv_lane_queue_push(&q, &j[i].job), SRV_LANE_QUEUED);
    }
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(((struct rec_job *)srv_lane_queue_pop(&q))->id, i);
    ck_assert_ptr_null(srv_lane_queue_pop(&q));
    srv_lane_queue_deinit(&q);
}
END_TEST

START_TEST(the_queue_and_each_clients_half_are_bounded)
{
    struct srv_lane_queue q;
    ck_assert(srv_lane_queue_init(&q, 4, 2));
    struct rec_job j[8];
    for (int i = 0; i < 8; i++)
        job_init(&j[i], i, i < 3 ? 'A' : i < 6 ? 'B' : 'C');
    ck_assert_int_eq(srv_lane_queue_push(&q, &j[0].job), SRV_LANE_QUEUED);
    ck_assert_int_eq(srv_lane_queue_push(&q, &j[1].job), SRV_LANE_QUEUED);
    ck_assert_int_eq(srv_lane_queue_push(&q, &j[2].job), SRV_LANE_CLIENT_FULL);
    ck_assert_int_eq(srv_lane_queue_push(&q, &j[3].job), SRV_LANE_QUEUED);
    ck_assert_int_eq(srv_lane_queue_push(&q, &j[4].job), SRV_LANE_QUEUED);
    ck_assert_int_eq(srv_lane_queue_push(&q, &j[5].job), SRV_LANE_FULL); /* B's half too */
    ck_assert_int_eq(srv_lane_queue_push(&q, &j[6].job), SRV_LANE_FULL);
    ck_assert_uint_eq(q.n, 4);
    /* A job served makes room, for C as for anyone. */
    ck_assert_int_eq(((struct rec_job *)srv_lane_queue_pop(&q))->id, 0);
    ck_assert_int_eq(srv_lane_queue_push(&q, &j[6].job), SRV_LANE_QUEUED);
    ck_assert_int_eq(srv_lane_queue_push(&q, &j[7].job), SRV_LANE_FULL);
    srv_lane_queue_deinit(&q);
}
END_TEST

/* Drops the jobs whose id is listed in cls (ids ending with -1). */
static bool listed(const struct srv_lane_job *job, void *cls)
{
    for (const int *id = cls; *id >= 0; id++)
        if (((const struct rec_job *)job)->id == *id)
            return true;
    return false;
}

START_TEST(taking_jobs_out_keeps_the_order_of_the_rest)
{
    struct srv_lane_queue q;
    ck_assert(srv_lane_queue_init(&q, 16, 16));
    struct rec_job j[9];
    const char clients[] = "ABCABCABB"; /* A: 0 3 6, B: 1 4 7 8, C: 2 5 */
    for (int i = 0; i < 9; i++) {
        job_init(&j[i], i, clients[i]);
        ck_assert_int_eq(srv_lane_queue_push(&q, &j[i].job), SRV_LANE_QUEUED);
    }
    static const int drop[] = {1, 2, 5, 7, -1}; /* C loses both: it leaves the round */
    int taken = 0;
    for (struct srv_lane_job *t = srv_lane_queue_take_if(&q, listed, (void *)drop); t != NULL;
         t = t->next) {
        ck_assert(listed(t, (void *)drop));
        taken++;
    }
    ck_assert_int_eq(taken, 4);
    ck_assert_uint_eq(q.n, 5);
    static const int order[] = {0, 4, 3, 8, 6};
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(((struct rec_job *)srv_lane_queue_pop(&q))->id, order[i]);
    ck_assert_ptr_null(srv_lane_queue_pop(&q));
    srv_lane_queue_deinit(&q);
}
END_TEST

/* ---- the lane: threads, sweeps, stop ---- */

START_TEST(a_job_that_waited_too_long_is_answered_not_computed)
{
    struct srv_lane lane;
    struct srv_lane_job blocker;
    lane_held(&lane, &blocker, 8, 4, 1000);
    struct rec_job a, b;
    job_init(&a, 1, 'A');
    job_init(&b, 2, 'B');
    ck_assert_int_eq(srv_lane_push(&lane, &a.job), SRV_LANE_QUEUED);
    ck_assert_int_eq(srv_lane_push(&lane, &b.job), SRV_LANE_QUEUED);
    unsigned queued, running;
    srv_lane_counts(&lane, &queued, &running);
    ck_assert_uint_eq(queued, 2);
    ck_assert_uint_eq(running, 1); /* the blocker */
    /* A millisecond short of the first deadline: nothing happens. */
    srv_lane_sweep(&lane, a.job.queued_ms + 999);
    ck_assert_int_eq(runs.n, 0);
    /* Both past theirs: answered late, in the round's order, never computed. */
    srv_lane_sweep(&lane, b.job.queued_ms + 1000);
    ck_assert_int_eq(runs.n, 2);
    ck_assert_int_eq(runs.id[0], 1);
    ck_assert_int_eq(runs.id[1], 2);
    ck_assert_int_eq(runs.how[0], SRV_LANE_WAITED);
    ck_assert_int_eq(runs.how[1], SRV_LANE_WAITED);
    ck_assert_uint_eq(dropped("wait"), 2);
    srv_lane_counts(&lane, &queued, &running);
    ck_assert_uint_eq(queued, 0);
    sem_post(&blocker_release);
    srv_lane_stop(&lane);
    ck_assert_int_eq(runs.n, 2);
    srv_lane_deinit(&lane);
}
END_TEST

START_TEST(a_job_taken_after_its_deadline_is_not_computed)
{
    struct srv_lane lane;
    struct srv_lane_job blocker;
    lane_held(&lane, &blocker, 8, 4, 1); /* one millisecond */
    unsigned long long before = dropped("wait"); /* the blocker itself may have been late */
    struct rec_job a;
    job_init(&a, 1, 'A');
    ck_assert_int_eq(srv_lane_push(&lane, &a.job), SRV_LANE_QUEUED);
    struct timespec ten_ms = {0, 10 * 1000000L}; /* ten times the deadline: late for sure */
    nanosleep(&ten_ms, NULL);
    sem_post(&blocker_release); /* the thread takes a next */
    sem_wait(&ran);
    ck_assert_int_eq(runs.id[0], 1);
    ck_assert_int_eq(runs.how[0], SRV_LANE_WAITED);
    ck_assert_uint_eq(dropped("wait"), before + 1);
    srv_lane_stop(&lane);
    srv_lane_deinit(&lane);
}
END_TEST

START_TEST(a_job_whose_client_left_is_dropped_before_it_starts)
{
    struct srv_lane lane;
    struct srv_lane_job blocker;
    lane_held(&lane, &blocker, 8, 4, 60000);
    int gone[2], pipelined[2], waiting[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, gone), 0);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pipelined), 0);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, waiting), 0);
    struct rec_job a, b, c;
    job_init(&a, 1, 'A');
    job_init(&b, 2, 'B');
    job_init(&c, 3, 'C');
    a.job.fd = gone[0];
    b.job.fd = pipelined[0];
    c.job.fd = waiting[0];
    ck_assert_int_eq(srv_lane_push(&lane, &a.job), SRV_LANE_QUEUED);
    ck_assert_int_eq(srv_lane_push(&lane, &b.job), SRV_LANE_QUEUED);
    ck_assert_int_eq(srv_lane_push(&lane, &c.job), SRV_LANE_QUEUED);
    int64_t now = srv_clock_ms();
    srv_lane_sweep(&lane, now);
    ck_assert_int_eq(runs.n, 0); /* every client still there */
    close(gone[1]);                                     /* a's client leaves */
    ck_assert_int_eq(write(pipelined[1], "GET / HTTP/1.1\r\n", 16), 16); /* b's sends more */
    srv_lane_sweep(&lane, now);
    sem_wait(&ran); /* the sweep recorded a's drop on this thread: take its post */
    ck_assert_int_eq(runs.n, 1);
    ck_assert_int_eq(runs.id[0], 1);
    ck_assert_int_eq(runs.how[0], SRV_LANE_GONE);
    ck_assert_uint_eq(dropped("gone"), 1);
    unsigned queued, running;
    srv_lane_counts(&lane, &queued, &running);
    ck_assert_uint_eq(queued, 2);
    /* The others run in their turn, computed. */
    sem_post(&blocker_release);
    sem_wait(&ran);
    sem_wait(&ran);
    ck_assert_int_eq(runs.id[1], 2);
    ck_assert_int_eq(runs.how[1], SRV_LANE_RUN);
    ck_assert_int_eq(runs.id[2], 3);
    ck_assert_int_eq(runs.how[2], SRV_LANE_RUN);
    srv_lane_stop(&lane);
    srv_lane_deinit(&lane);
    close(gone[0]);
    close(pipelined[0]);
    close(pipelined[1]);
    close(waiting[0]);
    close(waiting[1]);
}
END_TEST

START_TEST(pushes_past_the_bounds_are_refused_and_counted)
{
    struct srv_lane lane;
    struct srv_lane_job blocker;
    lane_held(&lane, &blocker, 2, 1, 60000);
    struct rec_job a1, a2, b, c;
    job_init(&a1, 1, 'A');
    job_init(&a2, 2, 'A');
    job_init(&b, 3, 'B');
    job_init(&c, 4, 'C');
    ck_assert_int_eq(srv_lane_push(&lane, &a1.job), SRV_LANE_QUEUED);
    ck_assert_int_eq(srv_lane_push(&lane, &a2.job), SRV_LANE_CLIENT_FULL);
    ck_assert_int_eq(srv_lane_push(&lane, &b.job), SRV_LANE_QUEUED);
    ck_assert_int_eq(srv_lane_push(&lane, &c.job), SRV_LANE_FULL);
    ck_assert_uint_eq(dropped("full"), 2);
    ck_assert_int_eq(runs.n, 0); /* a refused job is the caller's to answer: never run */
    sem_post(&blocker_release);
    sem_wait(&ran);
    sem_wait(&ran);
    ck_assert_int_eq(runs.id[0], 1);
    ck_assert_int_eq(runs.id[1], 3);
    srv_lane_stop(&lane);
    srv_lane_deinit(&lane);
}
END_TEST

static void *stopper(void *lane)
{
    srv_lane_stop(lane);
    return NULL;
}

START_TEST(stopping_answers_the_waiting_jobs_and_refuses_new_ones)
{
    struct srv_lane lane;
    struct srv_lane_job blocker;
    lane_held(&lane, &blocker, 8, 8, 60000);
    struct rec_job a, b, late;
    job_init(&a, 1, 'A');
    job_init(&b, 2, 'B');
    job_init(&late, 3, 'C');
    ck_assert_int_eq(srv_lane_push(&lane, &a.job), SRV_LANE_QUEUED);
    ck_assert_int_eq(srv_lane_push(&lane, &b.job), SRV_LANE_QUEUED);
    /* Stop on another thread (it waits for the blocker); release the blocker once
       stopping is set, so that a and b are taken only after it. */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, stopper, &lane), 0);
    for (bool stopping = false; !stopping; sched_yield()) {
        pthread_mutex_lock(&lane.lock);
        stopping = lane.stopping;
        pthread_mutex_unlock(&lane.lock);
    }
    ck_assert_int_eq(srv_lane_push(&lane, &late.job), SRV_LANE_STOPPED);
    sem_post(&blocker_release);
    pthread_join(t, NULL);
    ck_assert_int_eq(runs.n, 2);
    ck_assert_int_eq(runs.how[0], SRV_LANE_STOPPING);
    ck_assert_int_eq(runs.how[1], SRV_LANE_STOPPING);
    srv_lane_deinit(&lane);
}
END_TEST

static Suite *lane_suite(void)
{
    Suite *s = suite_create("lane");
    TCase *queue = tcase_create("Queue");
    tcase_add_test(queue, clients_are_served_round_robin);
    tcase_add_test(queue, one_client_alone_is_first_in_first_out);
    tcase_add_test(queue, the_queue_and_each_clients_half_are_bounded);
    tcase_add_test(queue, taking_jobs_out_keeps_the_order_of_the_rest);
    suite_add_tcase(s, queue);
    TCase *lane = tcase_create("Lane");
    tcase_add_checked_fixture(lane, setup, teardown);
    tcase_add_test(lane, a_job_that_waited_too_long_is_answered_not_computed);
    tcase_add_test(lane, a_job_taken_after_its_deadline_is_not_computed);
    tcase_add_test(lane, a_job_whose_client_left_is_dropped_before_it_starts);
    tcase_add_test(lane, pushes_past_the_bounds_are_refused_and_counted);
    tcase_add_test(lane, stopping_answers_the_waiting_jobs_and_refuses_new_ones);
    suite_add_tcase(s, lane);
    return s;
}

int main(void)
{
    return suite_run(lane_suite());
}
