/*
 * server/state.c — the running server's counters and gauges, read by the probes and
 * /metrics (see state.h).
 */
#include "server/state.h"

#include "server/net/conns.h"
#include "server/ops/metrics.h"
#include "server/ops/process.h"

long srv_state_in_flight(struct srv_server *s)
{
    return atomic_load(&s->in_flight);
}

unsigned long srv_state_completed(struct srv_server *s)
{
    return atomic_load(&s->completed);
}

bool srv_state_metrics(struct srv_server *s, char **text, size_t *len)
{
    struct srv_process_stats proc;
    struct srv_metrics_gauges g = {
        .in_flight = srv_state_in_flight(s),
        .memory_held = srv_budget_held(&s->budget),
        .memory_budget = s->budget.limit,
        .connections_open = srv_conns_open(s->conns),
        .process = srv_process_read("/proc", &proc) ? &proc : NULL,
    };
    srv_lane_counts(&s->lane, &g.lane_queued, &g.lane_running);
    return srv_metrics_render(&g, text, len);
}
