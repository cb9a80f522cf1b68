/*
 * server/ops/metrics.c — request counters and their Prometheus text (see metrics.h).
 *
 * Storage is static and fixed: two counters per (route, status 100..599), a histogram
 * per route, two byte counters per route. About 8 KiB a route, zero at start, never allocated,
 * so counting cannot fail. Only the scrape allocates (its text).
 *
 * Not here: anything that knows HTTP beyond a status number and a path.
 */
#include "server/ops/metrics.h"
#include "server/ops/test_hooks.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

/*
 * The routes are api/'s (api_route_template): its table's and the playground's files,
 * each labelled by its OpenAPI template (tests/http/metrics.test.mjs checks that every
 * path of the spec has its own label). A path no route takes is "other", the last slot.
 */
#define SRV_ROUTE_OTHER API_ROUTES_MAX
#define SRV_ROUTE_SLOTS (API_ROUTES_MAX + 1)
#define SRV_STATUS_MIN 100
#define SRV_STATUS_SLOTS 500                  /* statuses 100..599 */

/* Upper bounds in seconds: 0.5 ms (a health check) to 10 s (a request at --max-cells). */
static const double srv_buckets[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                      0.1,    0.25,  0.5,    1,     2.5,  5,    10 };
#define SRV_N_BUCKETS (sizeof srv_buckets / sizeof srv_buckets[0])

struct srv_route_counters {
    atomic_ullong requests[SRV_STATUS_SLOTS];     /* by status - SRV_STATUS_MIN */
    atomic_ullong buckets[SRV_N_BUCKETS + 1];     /* not cumulative; the last is +Inf */
    atomic_ullong duration_ns;                    /* the histogram's sum, in nanoseconds */
    atomic_ullong request_bytes, response_bytes;
    atomic_ullong cut[SRV_STATUS_SLOTS];          /* answers not all sent, by status */
};

static struct srv_route_counters srv_counters[SRV_ROUTE_SLOTS];
static atomic_ullong srv_conn_events[SRV_METRICS_CONN_EVENTS];
static atomic_ullong srv_lane_drops[SRV_METRICS_LANE_REASONS];
static const char *srv_version = "unknown";
static const char *srv_build = "unknown";

void srv_metrics_init(const char *version, const char *build)
{
    srv_version = version;
    srv_build = build;
}

unsigned srv_metrics_route(const char *path)
{
    size_t r = api_route_of(path);
    return r < api_route_count() ? (unsigned)r : SRV_ROUTE_OTHER;
}

const char *srv_metrics_route_label(unsigned route)
{
    const char *t = route < SRV_ROUTE_OTHER ? api_route_template(route) : NULL;
    return t != NULL ? t : "other";
}

void srv_metrics_observe(unsigned route, int status, unsigned long long request_bytes,
                         unsigned long long response_bytes, double seconds)
{
    if (route >= SRV_ROUTE_SLOTS || status < SRV_STATUS_MIN ||
        status >= SRV_STATUS_MIN + SRV_STATUS_SLOTS)
        return;
    struct srv_route_counters *c = &srv_counters[route];
    if (!(seconds >= 0)) /* also NaN: a clock that went backwards counts as instant */
        seconds = 0;
    size_t b = 0;
    while (b < SRV_N_BUCKETS && seconds > srv_buckets[b])
        b++;
    atomic_fetch_add_explicit(&c->requests[status - SRV_STATUS_MIN], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->buckets[b], 1, memory_order_relaxed);
    /* 2^64 ns is 584 years of summed duration: no overflow check needed. */
    atomic_fetch_add_explicit(&c->duration_ns, (unsigned long long)(seconds * 1e9),
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&c->request_bytes, request_bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->response_bytes, response_bytes, memory_order_relaxed);
}

void srv_metrics_observe_cut(unsigned route, int status)
{
    if (route >= SRV_ROUTE_SLOTS || status < SRV_STATUS_MIN ||
        status >= SRV_STATUS_MIN + SRV_STATUS_SLOTS)
        return;
    atomic_fetch_add_explicit(&srv_counters[route].cut[status - SRV_STATUS_MIN], 1,
                              memory_order_relaxed);
}

void srv_metrics_connection(enum srv_metrics_conn what)
{
    if ((unsigned)what < SRV_METRICS_CONN_EVENTS)
        atomic_fetch_add_explicit(&srv_conn_events[what], 1, memory_order_relaxed);
}

void srv_metrics_lane_dropped(enum srv_metrics_lane why)
{
    if ((unsigned)why < SRV_METRICS_LANE_REASONS)
        atomic_fetch_add_explicit(&srv_lane_drops[why], 1, memory_order_relaxed);
}

void srv_metrics_reset(void)
{
    memset(srv_counters, 0, sizeof srv_counters);
    memset(srv_conn_events, 0, sizeof srv_conn_events);
    memset(srv_lane_drops, 0, sizeof srv_lane_drops);
}

/* ---- the text ---- */

struct srv_text {
    char *data;
    size_t len, cap;
    bool failed;
};

static void srv_text_printf(struct srv_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends, growing the buffer geometrically; after a failure every call is a no-op. */
static void srv_text_printf(struct srv_text *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->data + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap * 2 + (size_t)n + 1;
        char *p = realloc(t->data, cap); /* into a temporary: t->data stays owned on failure */
        if (p == NULL) {
            t->failed = true;
            return;
        }
        t->data = p;
        t->cap = cap;
    }
}

static void srv_render_requests(struct srv_text *t)
{
    srv_text_printf(t, "# HELP attnd_requests_total Requests answered, by route template and "
                       "HTTP status.\n# TYPE attnd_requests_total counter\n");
    for (unsigned r = 0; r < SRV_ROUTE_SLOTS; r++)
        for (unsigned s = 0; s < SRV_STATUS_SLOTS; s++) {
            unsigned long long n =
                atomic_load_explicit(&srv_counters[r].requests[s], memory_order_relaxed);
            if (n > 0)
                srv_text_printf(t, "attnd_requests_total{route=\"%s\",status=\"%u\"} %llu\n",
                                srv_metrics_route_label(r), s + SRV_STATUS_MIN, n);
        }
}

static void srv_render_cut(struct srv_text *t)
{
    srv_text_printf(t, "# HELP attnd_responses_cut_total Answers counted in "
                       "attnd_requests_total that were not all sent (the client stopped "
                       "reading or left), by route template and HTTP status.\n"
                       "# TYPE attnd_responses_cut_total counter\n");
    for (unsigned r = 0; r < SRV_ROUTE_SLOTS; r++)
        for (unsigned s = 0; s < SRV_STATUS_SLOTS; s++) {
            unsigned long long n =
                atomic_load_explicit(&srv_counters[r].cut[s], memory_order_relaxed);
            if (n > 0)
                srv_text_printf(t, "attnd_responses_cut_total{route=\"%s\",status=\"%u\"} "
                                   "%llu\n", srv_metrics_route_label(r), s + SRV_STATUS_MIN, n);
        }
}

/* Has the route answered anything? Routes that have not are left out, to keep scrapes short. */
static bool srv_route_seen(unsigned r)
{
    for (size_t b = 0; b <= SRV_N_BUCKETS; b++)
        if (atomic_load_explicit(&srv_counters[r].buckets[b], memory_order_relaxed) > 0)
            return true;
    return false;
}

static void srv_render_durations(struct srv_text *t)
{
    srv_text_printf(t, "# HELP attnd_request_duration_seconds Time from a request's headers "
                       "to its answer, by route template.\n"
                       "# TYPE attnd_request_duration_seconds histogram\n");
    for (unsigned r = 0; r < SRV_ROUTE_SLOTS; r++) {
        if (!srv_route_seen(r))
            continue;
        const char *label = srv_metrics_route_label(r);
        const struct srv_route_counters *c = &srv_counters[r];
        unsigned long long cumulative = 0;
        for (size_t b = 0; b <= SRV_N_BUCKETS; b++) {
            cumulative += atomic_load_explicit(&c->buckets[b], memory_order_relaxed);
            if (b < SRV_N_BUCKETS)
                srv_text_printf(t, "attnd_request_duration_seconds_bucket{route=\"%s\","
                                   "le=\"%g\"} %llu\n", label, srv_buckets[b], cumulative);
            else
                srv_text_printf(t, "attnd_request_duration_seconds_bucket{route=\"%s\","
                                   "le=\"+Inf\"} %llu\n", label, cumulative);
        }
        unsigned long long ns = atomic_load_explicit(&c->duration_ns, memory_order_relaxed);
        srv_text_printf(t, "attnd_request_duration_seconds_sum{route=\"%s\"} %.9f\n", label,
                        (double)ns / 1e9);
        /* The count is the +Inf bucket, so the two always agree within one scrape. */
        srv_text_printf(t, "attnd_request_duration_seconds_count{route=\"%s\"} %llu\n", label,
                        cumulative);
    }
}

static void srv_render_bytes(struct srv_text *t, const char *name, const char *help,
                             bool request)
{
    srv_text_printf(t, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    for (unsigned r = 0; r < SRV_ROUTE_SLOTS; r++) {
        if (!srv_route_seen(r))
            continue;
        const struct srv_route_counters *c = &srv_counters[r];
        unsigned long long n = atomic_load_explicit(request ? &c->request_bytes
                                                            : &c->response_bytes,
                                                    memory_order_relaxed);
        srv_text_printf(t, "%s{route=\"%s\"} %llu\n", name, srv_metrics_route_label(r), n);
    }
}

static unsigned long long srv_conn_count(enum srv_metrics_conn what)
{
    return atomic_load_explicit(&srv_conn_events[what], memory_order_relaxed);
}

static void srv_render_connections(struct srv_text *t, const struct srv_metrics_gauges *g)
{
    srv_text_printf(t, "# HELP attnd_connections_open Connections of the data port holding "
                       "a slot (--max-connections).\n# TYPE attnd_connections_open gauge\n"
                       "attnd_connections_open %u\n", g->connections_open);
    srv_text_printf(t, "# HELP attnd_connections_refused_total Connections answered 503 "
                       "for being one too many: past --max-connections (slots) or past "
                       "--max-client-connections (client).\n"
                       "# TYPE attnd_connections_refused_total counter\n"
                       "attnd_connections_refused_total{reason=\"slots\"} %llu\n"
                       "attnd_connections_refused_total{reason=\"client\"} %llu\n",
                    srv_conn_count(SRV_METRICS_CONN_REFUSED_SLOTS),
                    srv_conn_count(SRV_METRICS_CONN_REFUSED_CLIENT));
    srv_text_printf(t, "# HELP attnd_connections_timed_out_total Connections shut down past "
                       "a deadline: still sending headers, still sending a body "
                       "(--request-timeout), or refused and sending nothing.\n"
                       "# TYPE attnd_connections_timed_out_total counter\n"
                       "attnd_connections_timed_out_total{phase=\"headers\"} %llu\n"
                       "attnd_connections_timed_out_total{phase=\"body\"} %llu\n"
                       "attnd_connections_timed_out_total{phase=\"refused\"} %llu\n",
                    srv_conn_count(SRV_METRICS_CONN_LATE_HEADERS),
                    srv_conn_count(SRV_METRICS_CONN_LATE_BODY),
                    srv_conn_count(SRV_METRICS_CONN_LATE_REFUSED));
}

static void srv_render_lane(struct srv_text *t, const struct srv_metrics_gauges *g)
{
    srv_text_printf(t, "# HELP attnd_lane_queued Large requests waiting for a lane thread "
                       "(at most --lane-queue).\n# TYPE attnd_lane_queued gauge\n"
                       "attnd_lane_queued %u\n", g->lane_queued);
    srv_text_printf(t, "# HELP attnd_lane_running Large requests being computed by the lane's "
                       "threads.\n# TYPE attnd_lane_running gauge\n"
                       "attnd_lane_running %u\n", g->lane_running);
    unsigned long long n[SRV_METRICS_LANE_REASONS];
    for (unsigned i = 0; i < SRV_METRICS_LANE_REASONS; i++)
        n[i] = atomic_load_explicit(&srv_lane_drops[i], memory_order_relaxed);
    srv_text_printf(t, "# HELP attnd_lane_jobs_dropped_total Large requests not computed: "
                       "their client closed the connection while they waited (gone), the "
                       "lane or the client's half of it was full (full, answered 503), or "
                       "they waited --lane-wait (wait, answered 503).\n"
                       "# TYPE attnd_lane_jobs_dropped_total counter\n"
                       "attnd_lane_jobs_dropped_total{reason=\"gone\"} %llu\n"
                       "attnd_lane_jobs_dropped_total{reason=\"full\"} %llu\n"
                       "attnd_lane_jobs_dropped_total{reason=\"wait\"} %llu\n",
                    n[SRV_METRICS_LANE_GONE], n[SRV_METRICS_LANE_FULL], n[SRV_METRICS_LANE_WAIT]);
}

/* The process collector's series, with the help texts the client libraries give them. */
static void srv_render_process(struct srv_text *t, const struct srv_process_stats *p)
{
    static const struct {
        const char *name, *type, *help;
        size_t offset;
    } series[] = {
        {"process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
         offsetof(struct srv_process_stats, cpu_seconds)},
        {"process_open_fds", "gauge", "Number of open file descriptors.",
         offsetof(struct srv_process_stats, open_fds)},
        {"process_max_fds", "gauge", "Maximum number of open file descriptors.",
         offsetof(struct srv_process_stats, max_fds)},
        {"process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
         offsetof(struct srv_process_stats, virtual_bytes)},
        {"process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
         offsetof(struct srv_process_stats, resident_bytes)},
        {"process_start_time_seconds", "gauge",
         "Start time of the process since unix epoch in seconds.",
         offsetof(struct srv_process_stats, start_time_seconds)},
    };
    for (size_t i = 0; i < sizeof series / sizeof series[0]; i++) {
        double v;
        memcpy(&v, (const char *)p + series[i].offset, sizeof v);
        srv_text_printf(t, "# HELP %s %s\n# TYPE %s %s\n%s %.15g\n", series[i].name,
                        series[i].help, series[i].name, series[i].type, series[i].name, v);
    }
}

bool srv_metrics_render(const struct srv_metrics_gauges *g, char **out, size_t *out_len)
{
    struct srv_text t = { malloc(16384), 0, 16384, false };
    if (t.data == NULL)
        return false;
    srv_render_requests(&t);
    srv_render_cut(&t);
    srv_render_durations(&t);
    srv_text_printf(&t, "# HELP attnd_requests_in_flight Requests being read, computed or "
                        "sent, this scrape included.\n# TYPE attnd_requests_in_flight gauge\n"
                        "attnd_requests_in_flight %ld\n", g->in_flight);
    srv_text_printf(&t, "# HELP attnd_memory_held_bytes Memory charged to the budget: bodies, "
                        "working sets being computed, answers not yet sent.\n"
                        "# TYPE attnd_memory_held_bytes gauge\n"
                        "attnd_memory_held_bytes %zu\n", g->memory_held);
    srv_text_printf(&t, "# HELP attnd_memory_budget_bytes The budget (--max-memory): past it, "
                        "new work is answered 503.\n# TYPE attnd_memory_budget_bytes gauge\n"
                        "attnd_memory_budget_bytes %zu\n", g->memory_budget);
    srv_render_connections(&t, g);
    srv_render_lane(&t, g);
    srv_render_bytes(&t, "attnd_request_bytes_total",
                     "Request body bytes received, by route template.", true);
    srv_render_bytes(&t, "attnd_response_bytes_total",
                     "Response body bytes sent (none for HEAD), by route template.", false);
    /* version and build are ours (Makefile), never a client's: no label escaping needed. */
    srv_text_printf(&t, "# HELP attnd_build_info The running build; always 1.\n"
                        "# TYPE attnd_build_info gauge\n"
                        "attnd_build_info{version=\"%s\",build=\"%s\"} 1\n",
                    srv_version, srv_build);
    if (g->process != NULL)
        srv_render_process(&t, g->process);
    if (t.failed) {
        free(t.data);
        return false;
    }
    *out = t.data;
    *out_len = t.len;
    return true;
}
