/*
 * server/ops/metrics.h — what GET /metrics reports, in Prometheus' text format 0.0.4.
 *
 *   attnd_requests_total{route,status}          counter: requests answered (queued)
 *   attnd_responses_cut_total{route,status}     counter: of those, not all sent (the
 *                                               client stopped reading or left)
 *   attnd_request_duration_seconds{route}       histogram: headers read → answer queued
 *   attnd_requests_in_flight                    gauge: requests between first call and completion
 *   attnd_memory_held_bytes                     gauge: charged to the memory budget (budget.h)
 *   attnd_memory_budget_bytes                   gauge: the budget's limit (--max-memory)
 *   attnd_request_bytes_total{route}            counter: request body bytes received
 *   attnd_response_bytes_total{route}           counter: response body bytes queued (0 for HEAD)
 *   attnd_connections_open                      gauge: data-port connections holding a slot
 *   attnd_connections_refused_total{reason}     counter: connections marked for a 503 (conns.h)
 *   attnd_connections_timed_out_total{phase}    counter: connections shut down past a deadline
 *   attnd_lane_queued, attnd_lane_running       gauges: large requests waiting, computing (lane.h)
 *   attnd_lane_jobs_dropped_total{reason}       counter: large requests not computed: the
 *                                               client gone, the lane full, waited too long
 *   attnd_build_info{version,build}             gauge, always 1
 *   process_*                                   the process collector's six series,
 *                                               when the caller read them (process.h)
 *
 * `route` is a template of api/'s routes (srv_metrics_route), never the raw path,
 * so a client cannot grow the label set: "/problems/{type}" for every problem page,
 * "other" for every path attnd does not serve. `status` is the HTTP status sent.
 *
 * The counters are process-wide (one server per process) and are C11 atomics with
 * relaxed ordering: counting takes no lock, and a scrape may see one request's
 * counters half-updated, which Prometheus tolerates. A request is counted when its
 * answer is queued, so a client that has its response can already see it counted.
 *
 * Not here: the HTTP side (exchange.c answers GET/HEAD /metrics), the gauges themselves
 * (daemon.c, budget.c and conns.c keep them; the caller passes their values to
 * srv_metrics_render). The connection counters are counted here, by conns.c.
 */
#ifndef SRV_METRICS_H
#define SRV_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "server/ops/process.h"

#define SRV_METRICS_PATH "/metrics"
#define SRV_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Sets the attnd_build_info labels (borrowed: static strings). Once, before serving. */
void srv_metrics_init(const char *version, const char *build);

/* The route index of a path (without its query string); the "other" route when unknown. */
unsigned srv_metrics_route(const char *path);

/* The label of a route index from srv_metrics_route. */
const char *srv_metrics_route_label(unsigned route);

/*
 * One answered request. status outside 100..599 is not counted; seconds is the time
 * from its headers to its answer.
 */
void srv_metrics_observe(unsigned route, int status, unsigned long long request_bytes,
                         unsigned long long response_bytes, double seconds);

/*
 * One answer counted by srv_metrics_observe that was not all sent (the connection
 * ended first): delivered answers are requests_total minus responses_cut_total.
 */
void srv_metrics_observe_cut(unsigned route, int status);

/* What became of a data-port connection (server/net/conns.c), for its counters. */
enum srv_metrics_conn {
    SRV_METRICS_CONN_REFUSED_SLOTS,  /* opened past --max-connections */
    SRV_METRICS_CONN_REFUSED_CLIENT, /* opened past --max-client-connections */
    SRV_METRICS_CONN_LATE_HEADERS,   /* shut down still sending a request's headers */
    SRV_METRICS_CONN_LATE_BODY,      /* shut down still sending a body (--request-timeout) */
    SRV_METRICS_CONN_LATE_REFUSED,   /* a refused one that sent no request in its grace */
    SRV_METRICS_CONN_EVENTS
};

void srv_metrics_connection(enum srv_metrics_conn what);

/* Why a large request was not computed (server/lane/lane.c), for its counter. */
enum srv_metrics_lane {
    SRV_METRICS_LANE_GONE, /* its client closed the connection while it waited */
    SRV_METRICS_LANE_FULL, /* refused: --lane-queue, or its client's half of it, waiting */
    SRV_METRICS_LANE_WAIT, /* it waited --lane-wait */
    SRV_METRICS_LANE_REASONS
};

void srv_metrics_lane_dropped(enum srv_metrics_lane why);

/* The server's gauges, read by the caller at the scrape. */
struct srv_metrics_gauges {
    long in_flight;
    size_t memory_held, memory_budget;
    unsigned connections_open; /* the data port's, holding a slot */
    unsigned lane_queued, lane_running; /* server/lane/lane.h's srv_lane_counts */
    const struct srv_process_stats *process; /* NULL: no process_* series */
};

/*
 * The exposition text, every counter read once. *out is malloc'd (the caller frees
 * it) and NUL-terminated, *out_len excludes the NUL. False when memory ran out.
 */
bool srv_metrics_render(const struct srv_metrics_gauges *g, char **out, size_t *out_len);

#endif
