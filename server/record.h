/*
 * server/record.h — one request's record, from its first call to its completion, and
 * the api_request made from it: what the exchange (exchange.c), its replies (reply.c)
 * and its computing (compute.c) share.
 *
 * Ownership: the record (and its params, body and pending answer) is allocated by
 * srv_on_uri (or, failing that, on the first call), hangs off libmicrohttpd's
 * *req_cls, and is freed only in srv_on_completed (exchange.c).
 */
#ifndef SRV_RECORD_H
#define SRV_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <microhttpd.h>

#include "api/api.h"
#include "server/codec/inflate.h"
#include "server/host/budget.h"
#include "server/net/framing.h"
#include "server/net/reqid.h"
#include "server/net/sent.h"
#include "server/net/trace.h"
#include "server/net/upload.h"

#define SRV_LOG_METHOD 32  /* bytes of method kept for the log */
#define SRV_LOG_PATH 480   /* bytes of path kept for the log */

struct srv_request {
    bool started;                      /* the access handler has seen it (srv_first_call) */
    struct srv_target target;          /* the target as sent, read by srv_on_uri */
    struct srv_sent sent;              /* the answer's progress on the wire */
    char id[SRV_REQID_BUF];
    char trace[SRV_TRACEPARENT_BUF];   /* a valid traceparent, or "" (trace.h) */
    struct timespec started_real;      /* for the log's time */
    struct timespec started_mono;      /* for the duration */
    char method[SRV_LOG_METHOD + 1];   /* copies: MHD's strings are not promised to */
    char path[SRV_LOG_PATH + 1];       /*   outlive the request's last handler call */
    bool is_head;
    struct api_param *params;          /* (n_params) owned array; strings borrowed from MHD */
    size_t n_params;
    long long declared;                /* Content-Length, or -1 */
    struct srv_body body;
    struct srv_inflate *inflate;       /* owned; NULL unless the body is gzip or deflate */
    bool body_expected;                /* Content-Length > 0 or Transfer-Encoding */
    bool coded;                        /* the answer is compressed as it is sent (deflate.h) */
    struct api_response *pending;      /* decided on the first call, sent on the final; owned */
    bool pending_close, pending_preflight;
    bool lane_gone;                    /* its client left while it waited in the lane */
    int status;                        /* sent status, 0 until a response is queued */
    unsigned long long bytes;          /* body bytes of the answer queued */
    unsigned route;                    /* srv_metrics_route of the path */
    unsigned long long received;       /* body bytes received, stored or drained */
    struct srv_budget *budget;         /* the server's; borrowed */
    size_t charged_work;               /* admitted working set, while api/ computes */
    size_t charged_answer;             /* the queued answer's bytes, until completion */
};

/* Within glibc's per-thread cache (tcache, chunks up to 1032 bytes): no lock, no consolidation. */
_Static_assert(sizeof(struct srv_request) <= 1016, "struct srv_request outgrew malloc's tcache");

/* A zeroed record; NULL without memory. */
struct srv_request *srv_request_alloc(void);

/* A request header's value, or NULL. */
const char *srv_header(struct MHD_Connection *conn, const char *name);

/* The query's parameters into r->params, once: false without memory. */
bool srv_collect_params(struct MHD_Connection *conn, struct srv_request *r);

/* The request as api/ reads it (strings borrowed from MHD and r). */
struct api_request srv_api_request(struct MHD_Connection *conn, const struct srv_request *r,
                                   const char *url, const char *method);

/*
 * The request as api/ needs it for one of the server's own problems, which speak the
 * language it asks for (?lang or Accept-Language): the query is collected if it can be;
 * without memory for it, Accept-Language alone decides.
 */
struct api_request srv_problem_request(struct MHD_Connection *conn, struct srv_request *r);

/* Milliseconds since t0 (CLOCK_MONOTONIC). */
double srv_ms_since(const struct timespec *t0);

#endif
