/*
 * tests/unit/check_router.c — api/api.c's routing and what it answers before any
 * endpoint runs, over api_handle and api_precheck: 404, 405 with Allow, 415, 406 and
 * ?format, 413, and the small GET endpoints (health, readiness, version, the spec,
 * problem pages).
 *
 * Suites: Routes.
 *
 * Not here: what the POST endpoints compute (check_attention.c and the others).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "tests/unit/api_fixture.h"

START_TEST(test_not_found_lists_endpoints)
{
    struct api_response res = call("GET", "/v1/nothing", NULL);
    ck_assert_int_eq(res.status, 404);
    ck_assert_str_eq(res.content_type, "application/problem+json");
    ck_assert_ptr_nonnull(strstr(res.body, "/v1/attention"));
    ck_assert_ptr_nonnull(strstr(res.body, "/problems/not-found"));
    ck_assert_ptr_null(strstr(res.body, "\"error\""));
    api_response_deinit(&res);
    /* Under /v2 the same 404 in the V2 form: "error" for the protocol's clients. */
    res = call("GET", "/v2/nothing", NULL);
    ck_assert_int_eq(res.status, 404);
    ck_assert_str_eq(res.content_type, "application/json");
    ck_assert_ptr_nonnull(strstr(res.body, "\"error\":\"nothing is served at /v2/nothing"));
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_method_not_allowed_sends_allow)
{
    struct api_response res = call("GET", "/v1/attention", NULL);
    ck_assert_int_eq(res.status, 405);
    ck_assert_uint_eq(res.n_headers, 3); /* Allow, then Content-Language and Vary */
    ck_assert_str_eq(res.headers[0].name, "Allow");
    ck_assert_str_eq(res.headers[0].value, "POST, OPTIONS");
    api_response_deinit(&res);
    res = call("DELETE", "/healthz", NULL);
    ck_assert_int_eq(res.status, 405);
    ck_assert_str_eq(res.headers[0].value, "GET, HEAD, OPTIONS");
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_content_types)
{
    static const struct { const char *ctype; int status; } cases[] = {
        { "application/json", 200 }, { "application/json; charset=utf-8", 200 },
        { "text/plain", 200 }, { "application/x-www-form-urlencoded", 200 }, { NULL, 200 },
        { "APPLICATION/JSON", 200 }, { "application/xml", 415 }, { "multipart/form-data", 415 },
    };
    struct api_context ctx = test_context();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct api_response res = call_full(&ctx, "POST", "/v1/attention", NULL, cases[i].ctype,
                                            "{" SEED000 "}", NULL, 0);
        ck_assert_msg(res.status == cases[i].status, "%s: %d", cases[i].ctype, res.status);
        if (res.status == 415)
            ck_assert_ptr_nonnull(strstr(res.body, "/problems/unsupported-media-type"));
        api_response_deinit(&res);
    }
}
END_TEST

START_TEST(test_accept_negotiation)
{
    static const struct { const char *accept; int status; } cases[] = {
        { NULL, 200 }, { "*/*", 200 }, { "application/json", 200 },
        { "text/html, application/json;q=0.9", 200 }, { "application/*", 200 },
        { "image/png", 406 }, { "application/json;q=0", 406 }, { "text/csv", 406 },
    };
    struct api_context ctx = test_context();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct api_response res = call_full(&ctx, "POST", "/v1/attention", cases[i].accept,
                                            NULL, "{" SEED000 "}", NULL, 0);
        ck_assert_msg(res.status == cases[i].status, "%s: %d", cases[i].accept, res.status);
        api_response_deinit(&res);
    }
    /* ?format wins over Accept */
    struct api_param json = { "format", "json" }, bogus = { "format", "xml" };
    struct api_response res = call_full(&ctx, "POST", "/v1/attention", "image/png", NULL,
                                        "{" SEED000 "}", &json, 1);
    ck_assert_int_eq(res.status, 200);
    api_response_deinit(&res);
    res = call_full(&ctx, "POST", "/v1/attention", NULL, NULL, "{" SEED000 "}", &bogus, 1);
    ck_assert_int_eq(res.status, 422);
    ck_assert_ptr_nonnull(strstr(res.body, "\"parameter\":\"format\""));
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_precheck_refuses_early)
{
    struct api_context ctx = test_context();
    ctx.limits.max_body = 100;
    struct api_request req = { "POST", "/v1/attention", NULL, 0, NULL, "application/json",
                               NULL, 0, NULL, NULL };
    struct api_response res = { 0 };
    ck_assert(api_precheck(&ctx, &req, 101, &res));
    ck_assert_int_eq(res.status, 413);
    ck_assert_ptr_nonnull(strstr(res.body, "/problems/too-large"));
    api_response_deinit(&res);
    ck_assert(!api_precheck(&ctx, &req, 100, &res));
    ck_assert(!api_precheck(&ctx, &req, -1, &res));
    req.content_type = "application/xml";
    ck_assert(api_precheck(&ctx, &req, 10, &res));
    ck_assert_int_eq(res.status, 415);
    api_response_deinit(&res);
    /* A GET is answered in full by the precheck: there is no body to wait for. */
    struct api_request get = { "GET", "/healthz", NULL, 0, NULL, NULL, NULL, 0, NULL, NULL };
    ck_assert(api_precheck(&ctx, &get, -1, &res));
    ck_assert_int_eq(res.status, 200);
    ck_assert_str_eq(res.body, "{\"status\":\"ok\"}\n");
    api_response_deinit(&res);
    /* A body over the limit that arrived without a declared length */
    struct api_request big = { "POST", "/v1/attention", NULL, 0, NULL, NULL,
                               "{" SEED000 "}                                              ",
                               200, NULL, NULL };
    api_handle(&ctx, &big, &res);
    ck_assert_int_eq(res.status, 413);
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_health_readiness_version)
{
    struct api_context ctx = test_context();
    struct api_response res = call_full(&ctx, "GET", "/readyz", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(res.status, 200);
    api_response_deinit(&res);
    ctx.ready = false;
    res = call_full(&ctx, "GET", "/readyz", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(res.status, 503);
    ck_assert_ptr_nonnull(strstr(res.body, "/problems/unavailable"));
    api_response_deinit(&res);
    res = call_full(&ctx, "HEAD", "/version", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "name")), "attnd");
    ck_assert_ptr_nonnull(json_string_value(json_object_get(doc, "version")));
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "blas")), "OpenBLAS"));
    json_t *libs = json_object_get(doc, "libraries");
    ck_assert_str_eq(json_string_value(json_object_get(libs, "microhttpd")), "0.9.75");
    ck_assert_str_eq(json_string_value(json_object_get(libs, "jansson")), jansson_version_str());
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_spec_is_served)
{
    struct api_response res = call("GET", "/openapi.yaml", NULL);
    ck_assert_int_eq(res.status, 200);
    ck_assert_str_eq(res.content_type, "application/yaml");
    ck_assert_ptr_nonnull(strstr(res.body, "openapi: 3.1"));
    ck_assert_ptr_nonnull(strstr(res.body, "/v1/attention"));
    api_response_deinit(&res);
    res = call("GET", "/openapi.json", NULL);
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    ck_assert_ptr_nonnull(json_object_get(json_object_get(doc, "paths"), "/v1/attention"));
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

static const char *const problem_slugs[] = {
    "invalid-json", "not-found", "method-not-allowed", "too-large", "not-acceptable",
    "unsupported-media-type", "missing-field", "not-a-matrix", "not-a-number", "shape-mismatch",
    "unknown-field", "invalid-value", "numeric-overflow", "limit-exceeded", "unavailable",
};

START_TEST(test_problem_pages)
{
    char path[96];
    snprintf(path, sizeof path, "/problems/%s", problem_slugs[_i]);
    struct api_response res = call("GET", path, NULL);
    ck_assert_int_eq(res.status, 200);
    ck_assert_str_eq(res.content_type, "text/html; charset=utf-8");
    ck_assert_ptr_nonnull(strstr(res.body, "<!doctype html>"));
    ck_assert_ptr_nonnull(strstr(res.body, problem_slugs[_i]));
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_unknown_problem_page)
{
    struct api_response res = call("GET", "/problems/no-such-thing", NULL);
    ck_assert_int_eq(res.status, 404);
    ck_assert_str_eq(res.content_type, "application/problem+json");
    api_response_deinit(&res);
}
END_TEST

static Suite *router_suite(void)
{
    Suite *s = suite_create("router");

    TCase *routes = tcase_create("Routes");
    tcase_add_test(routes, test_not_found_lists_endpoints);
    tcase_add_test(routes, test_method_not_allowed_sends_allow);
    tcase_add_test(routes, test_content_types);
    tcase_add_test(routes, test_accept_negotiation);
    tcase_add_test(routes, test_precheck_refuses_early);
    tcase_add_test(routes, test_health_readiness_version);
    tcase_add_test(routes, test_spec_is_served);
    tcase_add_loop_test(routes, test_problem_pages, 0,
                        sizeof problem_slugs / sizeof problem_slugs[0]);
    tcase_add_test(routes, test_unknown_problem_page);
    suite_add_tcase(s, routes);
    return s;
}

int main(void)
{
    return run_api_suite(router_suite());
}
