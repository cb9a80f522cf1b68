/*
 * server/lane/queue.h — the lane's waiting jobs: a queue per client, served round robin,
 * within a bound.
 *
 * A client (server/net/clients.h: an IPv4 address, an IPv6 /64) that sends many large
 * requests gets one turn in each round, as every other client with a job waiting does:
 * a job waits behind at most one job of each other client per job of its own client
 * ahead of it, however many the others queued. A client whose queue empties leaves the
 * round, and joins at its end when it queues again.
 *
 * Bounds: at most `bound` jobs wait in all, and at most `per_client` of them are one
 * client's; srv_lane_queue_push refuses the rest (the caller answers them 503 at once).
 * Jobs running are not here: they no longer wait.
 *
 * Time is the caller's (milliseconds on any clock that does not go back), so that the
 * deadline is tested without a clock. Not thread-safe: the lane (lane.c) holds its lock.
 * Allocates once, at init (a client record per job the bound allows): a push cannot fail
 * for memory.
 */
#ifndef SRV_LANE_QUEUE_H
#define SRV_LANE_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "server/net/clients.h"

/* Why a job runs (struct srv_lane_job.run). */
enum srv_lane_how {
    SRV_LANE_RUN,      /* its turn: compute it */
    SRV_LANE_STOPPING, /* the lane is being stopped: answer now, without computing */
    SRV_LANE_WAITED,   /* it waited --lane-wait: answer 503, without computing */
    SRV_LANE_GONE      /* its client closed the connection: answer nothing */
};

struct srv_lane_job {
    /* Called once, on a lane thread (or the watcher); may free the job. */
    void (*run)(struct srv_lane_job *job, enum srv_lane_how how);
    unsigned char client[SRV_CLIENT_KEY]; /* the caller's: whose turn it is (clients.h) */
    int fd;                               /* the caller's: the socket watched, or -1 */
    int64_t queued_ms;                    /* the lane's: srv_clock_ms() when queued */
    struct srv_lane_job *next;            /* the lane's */
};

/* What srv_lane_queue_push did with a job. */
enum srv_lane_push {
    SRV_LANE_QUEUED,      /* it waits for its turn */
    SRV_LANE_FULL,        /* `bound` jobs wait already */
    SRV_LANE_CLIENT_FULL, /* its client has `per_client` jobs waiting already */
    SRV_LANE_STOPPED      /* the lane is stopping (lane.c's answer; the queue never says it) */
};

/* One client's waiting jobs, oldest first; a member of the round while it has any. */
struct srv_lane_client {
    unsigned char key[SRV_CLIENT_KEY];
    struct srv_lane_job *head, *tail;
    unsigned n;
    struct srv_lane_client *next; /* in the round (circular), or the free list */
};

struct srv_lane_queue {
    unsigned bound, per_client;
    unsigned n;                      /* jobs waiting */
    struct srv_lane_client *clients; /* (bound) records, owned */
    struct srv_lane_client *free;    /* records not in the round */
    struct srv_lane_client *turn;    /* the client served next; NULL when nothing waits */
    struct srv_lane_client *last;    /* the one before it in the round: the round's end */
};

/* bound >= 1, 1 <= per_client <= bound. False when out of memory. */
bool srv_lane_queue_init(struct srv_lane_queue *q, unsigned bound, unsigned per_client);

void srv_lane_queue_deinit(struct srv_lane_queue *q);

/* Queues job (its client and queued_ms set by the caller), or says why not. */
enum srv_lane_push srv_lane_queue_push(struct srv_lane_queue *q, struct srv_lane_job *job);

/* The next job in round-robin order, taken out of the queue; NULL when none waits. */
struct srv_lane_job *srv_lane_queue_pop(struct srv_lane_queue *q);

/*
 * Takes out every waiting job for which drop(job, cls) is true, and returns them
 * linked through job->next, oldest first within a client. Jobs left keep their order.
 */
struct srv_lane_job *srv_lane_queue_take_if(struct srv_lane_queue *q,
                                            bool (*drop)(const struct srv_lane_job *job,
                                                         void *cls),
                                            void *cls);

#endif
