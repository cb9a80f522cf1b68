/*
 * server/lane/queue.c — per-client queues served round robin, within a bound (see
 * queue.h).
 *
 * The round is a circular list of the clients with jobs waiting: `turn` is served next,
 * `last` is the one before it, so a client joining goes in after `last` (the end of
 * the round) and a client served moves `last` to itself. Clients are found by walking
 * the round: at most `bound` of them, and only large requests are queued.
 */
#include "server/lane/queue.h"

#include <stdlib.h>
#include <string.h>


bool srv_lane_queue_init(struct srv_lane_queue *q, unsigned bound, unsigned per_client)
{
    memset(q, 0, sizeof *q);
    q->bound = bound;
    q->per_client = per_client;
    q->clients = calloc(bound, sizeof *q->clients);
    if (q->clients == NULL)
        return false;
    for (unsigned i = 0; i + 1 < bound; i++)
        q->clients[i].next = &q->clients[i + 1];
    q->free = &q->clients[0];
    return true;
}

void srv_lane_queue_deinit(struct srv_lane_queue *q)
{
    free(q->clients);
    q->clients = NULL;
}

/* The client with key in the round, or NULL. */
static struct srv_lane_client *srv_lane_client_find(const struct srv_lane_queue *q,
                                                    const unsigned char *key)
{
    struct srv_lane_client *c = q->turn;
    if (c == NULL)
        return NULL;
    do {
        if (memcmp(c->key, key, SRV_CLIENT_KEY) == 0)
            return c;
        c = c->next;
    } while (c != q->turn);
    return NULL;
}

/* A free record for key, put at the end of the round. There is one: see queue.h. */
static struct srv_lane_client *srv_lane_client_join(struct srv_lane_queue *q,
                                                    const unsigned char *key)
{
    struct srv_lane_client *c = q->free;
    q->free = c->next;
    memcpy(c->key, key, SRV_CLIENT_KEY);
    c->head = c->tail = NULL;
    c->n = 0;
    if (q->turn == NULL) {
        c->next = c;
        q->turn = q->last = c;
    } else {
        c->next = q->turn;
        q->last->next = c;
        q->last = c;
    }
    return c;
}

/* Takes c, whose queue is empty, out of the round; prev is the client before it. */
static void srv_lane_client_leave(struct srv_lane_queue *q, struct srv_lane_client *prev,
                                  struct srv_lane_client *c)
{
    if (c->next == c) {
        q->turn = q->last = NULL;
    } else {
        prev->next = c->next;
        if (q->turn == c)
            q->turn = c->next;
        if (q->last == c)
            q->last = prev;
    }
    c->next = q->free;
    q->free = c;
}

enum srv_lane_push srv_lane_queue_push(struct srv_lane_queue *q, struct srv_lane_job *job)
{
    if (q->n >= q->bound)
        return SRV_LANE_FULL;
    struct srv_lane_client *c = srv_lane_client_find(q, job->client);
    if (c != NULL && c->n >= q->per_client)
        return SRV_LANE_CLIENT_FULL;
    if (c == NULL)
        c = srv_lane_client_join(q, job->client);
    job->next = NULL;
    if (c->tail != NULL)
        c->tail->next = job;
    else
        c->head = job;
    c->tail = job;
    c->n++;
    q->n++;
    return SRV_LANE_QUEUED;
}

struct srv_lane_job *srv_lane_queue_pop(struct srv_lane_queue *q)
{
    struct srv_lane_client *c = q->turn;
    if (c == NULL)
        return NULL;
    struct srv_lane_job *job = c->head;
    c->head = job->next;
    if (c->head == NULL)
        c->tail = NULL;
    c->n--;
    q->n--;
    job->next = NULL;
    if (c->n == 0) {
        srv_lane_client_leave(q, q->last, c); /* turn moves to the next client */
    } else {
        q->last = c; /* served: the round goes on from the next client */
        q->turn = c->next;
    }
    return job;
}

/* Takes c's jobs for which drop holds into *out (appended at *out_end). */
static void srv_lane_client_take_if(struct srv_lane_queue *q, struct srv_lane_client *c,
                                    bool (*drop)(const struct srv_lane_job *, void *), void *cls,
                                    struct srv_lane_job ***out_end)
{
    struct srv_lane_job **at = &c->head, *prev = NULL;
    while (*at != NULL) {
        struct srv_lane_job *job = *at;
        if (!drop(job, cls)) {
            prev = job;
            at = &job->next;
            continue;
        }
        *at = job->next;
        job->next = NULL;
        **out_end = job;
        *out_end = &job->next;
        c->n--;
        q->n--;
    }
    c->tail = prev;
}

struct srv_lane_job *srv_lane_queue_take_if(struct srv_lane_queue *q,
                                            bool (*drop)(const struct srv_lane_job *job,
                                                         void *cls),
                                            void *cls)
{
    struct srv_lane_job *out = NULL, **out_end = &out;
    unsigned n_clients = 0; /* counted first: clients leave the round as it is walked */
    struct srv_lane_client *c = q->turn;
    if (c != NULL)
        do {
            n_clients++;
            c = c->next;
        } while (c != q->turn);
    struct srv_lane_client *prev = q->last;
    for (unsigned i = 0; i < n_clients; i++) {
        struct srv_lane_client *next = c->next;
        srv_lane_client_take_if(q, c, drop, cls, &out_end);
        if (c->n == 0)
            srv_lane_client_leave(q, prev, c); /* prev stays the one before next */
        else
            prev = c;
        c = next;
    }
    return out;
}
