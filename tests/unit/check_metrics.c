/*
 * tests/unit/check_metrics.c — server/ops/metrics.c without a server: route labels (api/'s routes), counting,
 * histogram buckets and the Prometheus text.
 *
 * The counters are process-wide, so each test starts from srv_metrics_reset().
 */
#include <check.h>

#include "tests/unit/suite_run.h"
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "server/ops/metrics.h"
#include "server/ops/test_hooks.h"

static char *render(void)
{
    char *text = NULL;
    size_t len = 0;
    struct srv_metrics_gauges g = { .in_flight = 1, .memory_held = 1234, .memory_budget = 5678,
                                    .connections_open = 42 };
    ck_assert(srv_metrics_render(&g, &text, &len));
    ck_assert_uint_eq(strlen(text), len);
    return text;
}

static void setup(void)
{
    srv_metrics_reset();
    srv_metrics_init("9.9.9", "abc123");
}

START_TEST(routes_are_templates)
{
    static const struct { const char *path, *label; } cases[] = {
        { "/v1/attention", "/v1/attention" },
        { "/v1/attention/batch", "/v1/attention/batch" },
        { "/v1/multihead", "/v1/multihead" },
        { "/v1/shapes", "/v1/shapes" },
        { "/", "/" },
        { "/playground.js", "/playground.js" },
        { "/playground.css", "/playground.css" },
        { "/playground.html", "other" },
        { "/healthz", "/healthz" },
        { "/readyz", "/readyz" },
        { "/version", "/version" },
        { "/metrics", "/metrics" },
        { "/openapi.yaml", "/openapi.yaml" },
        { "/openapi.json", "/openapi.json" },
        { "/problems/shape-mismatch", "/problems/{type}" },
        { "/problems/", "/problems/{type}" },
        { "/v2/models/attention/infer", "/v2/models/{model}/infer" },
        { "/v2/models/attention/versions/1/ready", "/v2/models/{model}/versions/{version}/ready" },
        { "/v2/models//infer", "other" },
        { "/problems", "other" },
        { "/v1/attention/", "other" },
        { "/V1/attention", "other" },
        { "/healthz/x", "other" },
        { "", "other" },
        { "/a\"b", "other" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_str_eq(srv_metrics_route_label(srv_metrics_route(cases[i].path)),
                         cases[i].label);
}
END_TEST

START_TEST(counts_by_route_and_status)
{
    unsigned a = srv_metrics_route("/v1/attention");
    srv_metrics_observe(a, 200, 100, 900, 0.002);
    srv_metrics_observe(a, 200, 50, 800, 0.004);
    srv_metrics_observe(a, 422, 10, 300, 0.0001);
    srv_metrics_observe(srv_metrics_route("/nope"), 404, 0, 150, 0.0001);
    srv_metrics_observe(a, 0, 1, 1, 1);   /* no status: not counted */
    srv_metrics_observe(a, 600, 1, 1, 1); /* out of range: not counted */
    srv_metrics_connection(SRV_METRICS_CONN_REFUSED_SLOTS);
    srv_metrics_connection(SRV_METRICS_CONN_REFUSED_SLOTS);
    srv_metrics_connection(SRV_METRICS_CONN_LATE_BODY);
    srv_metrics_connection(SRV_METRICS_CONN_EVENTS); /* not an event: not counted */
    char *t = render();
    ck_assert_ptr_nonnull(strstr(t, "attnd_requests_total{route=\"/v1/attention\",status=\"200\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_requests_total{route=\"/v1/attention\",status=\"422\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_requests_total{route=\"other\",status=\"404\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_request_bytes_total{route=\"/v1/attention\"} 160\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_response_bytes_total{route=\"/v1/attention\"} 2000\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_requests_in_flight 1\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_memory_held_bytes 1234\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_memory_budget_bytes 5678\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_connections_open 42\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_connections_refused_total{reason=\"slots\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_connections_refused_total{reason=\"client\"} 0\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_connections_timed_out_total{phase=\"headers\"} 0\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_connections_timed_out_total{phase=\"body\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_build_info{version=\"9.9.9\",build=\"abc123\"} 1\n"));
    /* A route that answered nothing has no series. */
    ck_assert_ptr_null(strstr(t, "route=\"/healthz\""));
    free(t);
}
END_TEST

START_TEST(histogram_is_cumulative_with_inclusive_bounds)
{
    unsigned h = srv_metrics_route("/healthz");
    srv_metrics_observe(h, 200, 0, 0, 0.0005); /* on a bound: counted in le="0.0005" */
    srv_metrics_observe(h, 200, 0, 0, 0.003);
    srv_metrics_observe(h, 200, 0, 0, 60);     /* past every bound: +Inf only */
    srv_metrics_observe(h, 200, 0, 0, -1);     /* a clock that went back: instant */
    char *t = render();
    ck_assert_ptr_nonnull(strstr(t, "attnd_request_duration_seconds_bucket{route=\"/healthz\",le=\"0.0005\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_request_duration_seconds_bucket{route=\"/healthz\",le=\"0.0025\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_request_duration_seconds_bucket{route=\"/healthz\",le=\"0.005\"} 3\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_request_duration_seconds_bucket{route=\"/healthz\",le=\"10\"} 3\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_request_duration_seconds_bucket{route=\"/healthz\",le=\"+Inf\"} 4\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_request_duration_seconds_count{route=\"/healthz\"} 4\n"));
    ck_assert_ptr_nonnull(strstr(t, "attnd_request_duration_seconds_sum{route=\"/healthz\"} 60.003500000\n"));
    free(t);
}
END_TEST

START_TEST(every_metric_is_declared_once)
{
    srv_metrics_observe(srv_metrics_route("/"), 200, 0, 10, 0.001);
    char *t = render();
    static const char *const types[] = {
        "# TYPE attnd_requests_total counter\n",
        "# TYPE attnd_request_duration_seconds histogram\n",
        "# TYPE attnd_requests_in_flight gauge\n",
        "# TYPE attnd_memory_held_bytes gauge\n",
        "# TYPE attnd_memory_budget_bytes gauge\n",
        "# TYPE attnd_request_bytes_total counter\n",
        "# TYPE attnd_response_bytes_total counter\n",
        "# TYPE attnd_build_info gauge\n",
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const char *at = strstr(t, types[i]);
        ck_assert_msg(at != NULL, "%s", types[i]);
        ck_assert_ptr_null(strstr(at + 1, types[i]));
    }
    ck_assert(t[strlen(t) - 1] == '\n');
    free(t);
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *core = tcase_create("Core");
    tcase_add_checked_fixture(core, setup, NULL);
    tcase_add_test(core, routes_are_templates);
    tcase_add_test(core, counts_by_route_and_status);
    tcase_add_test(core, histogram_is_cumulative_with_inclusive_bounds);
    tcase_add_test(core, every_metric_is_declared_once);
    suite_add_tcase(s, core);
    return s;
}

int main(void)
{
    /* The playground's files, as the server routes them (server/www.c), before any fork. */
    if (!api_route_add_file("/", NULL) || !api_route_add_file("/playground.js", NULL) ||
        !api_route_add_file("/playground.css", NULL))
        return 1;
    return suite_run(metrics_suite());
}
