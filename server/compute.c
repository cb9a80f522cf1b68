/*
 * server/compute.c — a request's answer computed on its worker or in the lane (see
 * compute.h).
 */
#include "server/compute.h"

#include <stdlib.h>

#include "server/host/clock.h"
#include "server/lane/lane.h"
#include "server/net/clients.h"
#include "server/ops/words.h"
#include "server/reply.h"

/* api_context.admit for one request: its working set, on top of the body it holds. */
static enum api_admission srv_admit(void *cls, size_t bytes)
{
    struct srv_request *r = cls;
    if (!srv_budget_take(r->budget, bytes, r->body.cap + r->charged_work))
        return API_ADMIT_NO;
    r->charged_work += bytes;
    return API_ADMIT_YES;
}

/*
 * Which requests leave the worker for the lane (server/lane/lane.h): a working set past
 * SRV_LANE_WORK_MIN (api/'s estimate, known once the request is parsed), or a body
 * past SRV_LANE_BODY_MIN, which goes without trying here, so that its parse does not
 * hold the worker either (a small body is parsed twice when it asks for large work).
 * Below both, a request costs about as much as handing it over would.
 */
#define SRV_LANE_WORK_MIN ((size_t)8 << 20)
#define SRV_LANE_BODY_MIN ((size_t)256 << 10)

/* api_context.admit on a worker: large work goes to the lane. */
static enum api_admission srv_admit_on_worker(void *cls, size_t bytes)
{
    return bytes > SRV_LANE_WORK_MIN ? API_ADMIT_ELSEWHERE : srv_admit(cls, bytes);
}

/* api_handle's answer, and the request's working set and body given back. */
static void srv_compute(struct srv_request *r, struct api_context *ctx,
                        const struct api_request *q, struct api_response *res)
{
    ctx->admit_cls = r;
    ctx->segments_ok = true; /* sent as they are: srv_response_of_segments */
    api_handle(ctx, q, res);
    srv_budget_give(r->budget, r->charged_work); /* the answer is charged as queued */
    r->charged_work = 0;
    if (!res->deferred)
        srv_body_free(&r->body); /* api is done with it; do not hold it while sending */
}

/*
 * A request on its way through the lane. The request (and its connection, suspended)
 * wait for it; the answer goes to r->pending, allocated beforehand so that the job
 * cannot fail, and is sent by the final call that resuming brings.
 */
struct srv_deferred {
    struct srv_lane_job job; /* first: the lane hands this pointer back */
    struct MHD_Connection *conn;
    struct srv_request *r;
    struct api_request q;    /* its strings are MHD's, kept while the connection lives */
    struct api_context ctx;
    int64_t deferred_ns;     /* srv_clock_ns() when it left the worker: its wait, for api/ */
};

/* A deferred request answered 503 without being computed: reason says why. */
static void srv_refuse_deferred(struct srv_deferred *d, const char *reason, bool close)
{
    struct srv_request *r = d->r;
    api_respond_server_reason(r->pending, &d->q, API_UNAVAILABLE, reason);
    r->pending_close = close;
    srv_body_free(&r->body);
}

static void srv_run_deferred(struct srv_lane_job *job, enum srv_lane_how how)
{
    struct srv_deferred *d = (struct srv_deferred *)job;
    struct MHD_Connection *conn = d->conn;
    struct srv_request *r = d->r;
    switch (how) {
    case SRV_LANE_RUN:
        d->ctx.admit = srv_admit;
        d->ctx.queued_ns = (unsigned long long)(srv_clock_ns() - d->deferred_ns);
        srv_compute(r, &d->ctx, &d->q, r->pending);
        break;
    case SRV_LANE_STOPPING:
        srv_refuse_deferred(d, SRV_N("the server is shutting down"), true);
        break;
    case SRV_LANE_WAITED:
        srv_refuse_deferred(d, SRV_N("the request waited longer than --lane-wait for a thread "
                                     "to compute it, behind other large requests: retry after "
                                     "the Retry-After seconds, or on another replica"), false);
        break;
    case SRV_LANE_GONE: /* nobody to answer: the final call closes the connection */
        r->lane_gone = true;
        srv_body_free(&r->body);
        break;
    }
    free(d);
    MHD_resume_connection(conn); /* r is the worker's again from here */
}

/* The 503's detail for a push the lane refused. */
static const char *srv_lane_refusal(enum srv_lane_push why)
{
    switch (why) {
    case SRV_LANE_FULL:
        return SRV_N("as many large requests wait for a thread as the server queues "
                     "(--lane-queue): retry after the Retry-After seconds, or on another replica");
    case SRV_LANE_CLIENT_FULL:
        return SRV_N("this client has half of the queue for large requests waiting already "
                     "(--lane-queue): send the next one when one of them is answered");
    default:
        return SRV_N("the server is shutting down");
    }
}

/* What the lane watches of a connection: its client (whose turn) and its socket. */
static void srv_deferred_identify(struct srv_deferred *d, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *addr =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const union MHD_ConnectionInfo *fd =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    srv_clients_key(addr != NULL ? addr->client_addr : NULL, d->job.client);
    d->job.fd = fd != NULL ? fd->connect_fd : -1;
}

/*
 * Suspends conn and queues its request on the lane; a push the lane refuses (full, or
 * stopping) is answered 503 at once instead. False, with nothing changed, when there
 * was no memory for it.
 */
static bool srv_defer(struct srv_server *s, struct MHD_Connection *conn, struct srv_request *r,
                      const struct api_request *q, const struct api_context *ctx)
{
    struct srv_deferred *d = malloc(sizeof *d);
    struct api_response *answer = calloc(1, sizeof *answer);
    if (d == NULL || answer == NULL) {
        free(d);
        free(answer);
        return false;
    }
    *d = (struct srv_deferred){.job.run = srv_run_deferred, .conn = conn, .r = r, .q = *q,
                               .ctx = *ctx, .deferred_ns = srv_clock_ns()};
    srv_deferred_identify(d, conn);
    r->pending = answer;
    r->pending_close = r->pending_preflight = false;
    /* Suspended first: a lane thread may resume it the moment it is queued. */
    MHD_suspend_connection(conn);
    enum srv_lane_push pushed = srv_lane_push(&s->lane, &d->job);
    if (pushed != SRV_LANE_QUEUED) {
        srv_refuse_deferred(d, srv_lane_refusal(pushed), pushed == SRV_LANE_STOPPED);
        free(d);
        MHD_resume_connection(conn); /* the final call sends the 503 */
    }
    return true;
}

enum MHD_Result srv_compute_answer(struct srv_server *s, struct MHD_Connection *conn,
                                   struct srv_request *r, const struct api_request *q,
                                   struct api_context *ctx)
{
    struct api_response res = {0};
    if (r->body.len <= SRV_LANE_BODY_MIN) {
        ctx->admit = srv_admit_on_worker;
        srv_compute(r, ctx, q, &res);
        if (!res.deferred)
            return srv_reply_send(s, conn, r, &res, false, false);
    }
    if (srv_defer(s, conn, r, q, ctx))
        return MHD_YES;
    ctx->admit = srv_admit; /* no memory to hand it over: here, then */
    srv_compute(r, ctx, q, &res);
    return srv_reply_send(s, conn, r, &res, false, false);
}
