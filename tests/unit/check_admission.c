/*
 * tests/unit/check_admission.c — what a request asks the server's memory budget for
 * (api/http/admission.c and each endpoint's estimate), over api_handle with a probe in
 * place of the server: the working set asked once, 503 with Retry-After when refused,
 * deferred with no answer when sent elsewhere, and --max-request-bytes naming the
 * field that passes it.
 *
 * Suites: Admission.
 *
 * Not here: the server's budget itself (check_body.c).
 */
#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/endpoints/attention/attention.h"
#include "api/http/admission.h"
#include "api/http/server_problem.h"
#include "api/request/random.h"
#include "core/attention.h"
#include "core/multihead.h"
#include "tests/unit/api_fixture.h"

/* What api_context.admit saw, and what it answers. */
struct admit_probe {
    bool answer;
    unsigned calls;
    size_t bytes;
};

static enum api_admission admit_probe(void *cls, size_t bytes)
{
    struct admit_probe *p = cls;
    p->calls++;
    p->bytes = bytes;
    return p->answer ? API_ADMIT_YES : API_ADMIT_NO;
}

static struct api_response call_admitting(struct admit_probe *probe, const char *path,
                                          const char *body)
{
    struct api_context ctx = test_context();
    ctx.admit = admit_probe;
    ctx.admit_cls = probe;
    return call_full(&ctx, "POST", path, NULL, "application/json", body, NULL, 0);
}

static const char *header_value(const struct api_response *res, const char *name)
{
    for (size_t i = 0; i < res->n_headers; i++)
        if (strcmp(res->headers[i].name, name) == 0)
            return res->headers[i].value;
    return NULL;
}

/*
 * Seed 000 (2 queries, 2 keys, d_v 2, every part by default): asked once, for the body,
 * the trace's block, 24 bytes a number written (the ties' worst case included) and the
 * answer's fixed part.
 */
START_TEST(test_admission_asks_for_the_working_set)
{
    const char *body = "{" SEED000 "}";
    struct admit_probe probe = { true, 0, 0 };
    struct api_response res = call_admitting(&probe, "/v1/attention", body);
    ck_assert_int_eq(res.status, 200);
    ck_assert_uint_eq(probe.calls, 1);
    size_t numbers = 4 * 4 + 4 + 5 * 2; /* four 2x2 steps, the 2x2 output, 5 summary rows */
    /* At worst every key ties: each index ("0, ") twice, and 256 bytes a tied row. */
    size_t ties = (2 * 2 * 2 * (1 + 2) + 2 * 256) / 24 + 1;
    numbers += ties;
    size_t trace = attn_trace_bytes_keep(2, 2, 2, ATTN_KEEP_ALL);
    ck_assert_uint_ge(trace, sizeof(double) * (4 * 4 + 4 + 3 * 2));
    ck_assert_uint_eq(probe.bytes, strlen(body) + trace + 24 * numbers + API_ANSWER_FIXED_BYTES);
    api_response_deinit(&res);

    /* Weights alone: three 2x2 steps fewer in the trace, and 4 numbers (and the ties). */
    const char *weights = "{" SEED000 ",\"include\":[\"weights\"]}";
    probe = (struct admit_probe){ true, 0, 0 };
    res = call_admitting(&probe, "/v1/attention", weights);
    ck_assert_int_eq(res.status, 200);
    size_t shared = attn_trace_bytes_keep(2, 2, 2, ATTN_KEEP(ATTN_STEP_WEIGHTS) |
                                                       ATTN_KEEP(ATTN_STEP_OUTPUT));
    ck_assert_uint_eq(trace - shared, 3 * 4 * sizeof(double));
    ck_assert_uint_eq(probe.bytes, strlen(weights) + shared + 24 * (4 + ties) +
                                     API_ANSWER_FIXED_BYTES);
    api_response_deinit(&res);

    /* A batch asks once for its valid items together; the invalid one costs nothing. */
    const char *batch = "{\"items\":[{" SEED000 "},{\"q\":[[1]]},{" SEED000 "}]}";
    probe = (struct admit_probe){ true, 0, 0 };
    res = call_admitting(&probe, "/v1/attention/batch", batch);
    ck_assert_int_eq(res.status, 200);
    ck_assert_uint_eq(probe.calls, 1);
    ck_assert_uint_eq(probe.bytes,
                      strlen(batch) + 2 * (trace + 24 * numbers + API_ANSWER_FIXED_BYTES));
    api_response_deinit(&res);

    /* A request that fails validation never asks. */
    probe = (struct admit_probe){ true, 0, 0 };
    res = call_admitting(&probe, "/v1/attention", "{\"q\":[[1,2]],\"k\":[[1]],\"v\":[[1]]}");
    ck_assert_int_eq(res.status, 422);
    ck_assert_uint_eq(probe.calls, 0);
    api_response_deinit(&res);
}
END_TEST

static void assert_refused(struct api_response *res)
{
    ck_assert_int_eq(res->status, 503);
    ck_assert_str_eq(res->content_type, "application/problem+json");
    const char *retry = header_value(res, "Retry-After");
    ck_assert_ptr_nonnull(retry);
    ck_assert_str_eq(retry, "1");
    json_t *doc = parse(res);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "type")), "/problems/unavailable");
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "detail")),
                                 "memory budget"));
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "hint")),
                                 "--max-memory"));
    json_decref(doc);
}

START_TEST(test_admission_refused_is_503_with_retry_after)
{
    static const char *const cases[][2] = {
        { "/v1/attention", "{" SEED000 "}" },
        { "/v1/attention/batch", "{\"items\":[{" SEED000 "}]}" },
        { "/v1/multihead", "{\"heads\":2,\"random\":{\"seed\":1,\"n\":3,\"d_model\":4}}" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct admit_probe probe = { false, 0, 0 };
        struct api_response res = call_admitting(&probe, cases[i][0], cases[i][1]);
        ck_assert_uint_eq(probe.calls, 1);
        assert_refused(&res);
        api_response_deinit(&res);
    }
    /*
     * The multi-head estimate holds the inputs and every head's trace as doubles, and
     * writes 24 bytes for each number of the included parts: n = 3, d_model = 4,
     * h = 2 (d_k = 2): x (3, 4) and four (4, 4) weights are 76 cells; by default the
     * answer has q, k, v, head_outputs, concat, output (3 x 4 each: 72 numbers), four
     * per-head steps of (2, 3, 3) (72), weights_mean (3, 3) (9) and a summary of five
     * values per head and row (30): 183 numbers. The ties may add, at worst, every key of
     * every head's row (2 x 3 x 3 = 18 indices of one digit, each with ", " and written
     * twice: 108 bytes) and 256 bytes a row (1536): 1644 bytes, 69 numbers. 252 in all.
     */
    struct admit_probe probe = { true, 0, 0 };
    const char *mh = "{\"heads\":2,\"random\":{\"seed\":1,\"n\":3,\"d_model\":4}}";
    struct api_response res = call_admitting(&probe, "/v1/multihead", mh);
    ck_assert_int_eq(res.status, 200);
    ck_assert_uint_eq(probe.bytes,
                      strlen(mh) + 8 * (76 + attn_mh_trace_cells(3, 3, 4, 2, 2)) + 24 * 252 +
                          API_ANSWER_FIXED_BYTES);
    ck_assert_uint_ge(attn_mh_trace_cells(3, 3, 4, 2, 2), 2 * attn_trace_cells(3, 3, 2));
    api_response_deinit(&res);
    /* The server's own refusal of a body says the same. */
    api_respond_server_over_budget(&res, NULL, 5000000);
    assert_refused(&res);
    ck_assert_ptr_nonnull(strstr(res.body, "5.0 MB"));
    api_response_deinit(&res);
}
END_TEST

/* Admission that sends work elsewhere: the bytes it was asked for, and how often. */
static enum api_admission admit_elsewhere(void *cls, size_t bytes)
{
    struct admit_probe *p = cls;
    p->calls++;
    p->bytes = bytes;
    return API_ADMIT_ELSEWHERE;
}

START_TEST(test_admission_elsewhere_defers_with_no_answer)
{
    static const char *const cases[][3] = {
        { "/v1/attention", "{" SEED000 "}", NULL },
        { "/v1/attention", "{" SEED000 "}", "text/plain" },
        { "/v1/attention/batch", "{\"items\":[{" SEED000 "}]}", NULL },
        { "/v1/multihead", "{\"heads\":2,\"random\":{\"seed\":1,\"n\":3,\"d_model\":4}}",
          "image/svg+xml" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct admit_probe probe = { false, 0, 0 };
        struct api_context ctx = test_context();
        ctx.admit = admit_elsewhere;
        ctx.admit_cls = &probe;
        struct api_response res = call_full(&ctx, "POST", cases[i][0], cases[i][2],
                                            "application/json", cases[i][1], NULL, 0);
        ck_assert_msg(res.deferred, "%s: deferred", cases[i][0]);
        ck_assert_int_eq(res.status, 0);
        ck_assert_ptr_null(res.body);
        ck_assert_ptr_null(res.segments);
        ck_assert_uint_eq(res.n_headers, 0);
        ck_assert_uint_eq(probe.calls, 1);
        api_response_deinit(&res);
        /* The same request, admitted where it was sent, is answered in full. */
        struct admit_probe yes = { true, 0, 0 };
        ctx.admit = admit_probe;
        ctx.admit_cls = &yes;
        res = call_full(&ctx, "POST", cases[i][0], cases[i][2], "application/json", cases[i][1],
                        NULL, 0);
        ck_assert_int_eq(res.status, 200);
        ck_assert(!res.deferred);
        ck_assert_uint_eq(yes.bytes, probe.bytes); /* the same estimate both times */
        api_response_deinit(&res);
    }
    /* A request refused by its own limit is a 422 before the server is asked at all. */
    struct admit_probe probe = { false, 0, 0 };
    struct api_context ctx = test_context();
    ctx.limits.max_request_bytes = 1;
    ctx.admit = admit_elsewhere;
    ctx.admit_cls = &probe;
    struct api_response res = call_full(&ctx, "POST", "/v1/attention", NULL, "application/json",
                                        "{" SEED000 "}", NULL, 0);
    ck_assert_int_eq(res.status, 422);
    ck_assert(!res.deferred);
    ck_assert_uint_eq(probe.calls, 0);
    api_response_deinit(&res);
}
END_TEST

/* The request limit: status, type and errors[0].pointer of one call under max_request_bytes. */
static void assert_request_limit(size_t limit, const char *path, const char *body, int status,
                                 const char *pointer)
{
    struct admit_probe probe = { true, 0, 0 };
    struct api_context ctx = test_context();
    ctx.limits.max_request_bytes = limit;
    ctx.admit = admit_probe;
    ctx.admit_cls = &probe;
    struct api_response res = call_full(&ctx, "POST", path, NULL, "application/json", body,
                                        NULL, 0);
    ck_assert_msg(res.status == status, "%s %s: %d, not %d: %s", path, body, res.status, status,
                  res.body);
    if (status == 422) {
        json_t *doc = parse(&res);
        ck_assert_str_eq(json_string_value(json_object_get(doc, "type")),
                         "/problems/limit-exceeded");
        const json_t *e0 = json_array_get(json_object_get(doc, "errors"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(e0, "pointer")), pointer);
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(e0, "hint")),
                                     "--max-request-bytes"));
        json_decref(doc);
        ck_assert_uint_eq(probe.calls, 0); /* refused before the budget is even asked */
    }
    api_response_deinit(&res);
}

/* The estimate the budget is asked for, which the limit compares with. */
static size_t working_set_of(const char *path, const char *body)
{
    struct admit_probe probe = { true, 0, 0 };
    struct api_response res = call_admitting(&probe, path, body);
    ck_assert_int_eq(res.status, 200);
    api_response_deinit(&res);
    return probe.bytes;
}

START_TEST(test_request_limit_is_the_working_set)
{
    const char *body = "{" SEED000 "}";
    size_t need = working_set_of("/v1/attention", body);
    assert_request_limit(need, "/v1/attention", body, 200, NULL); /* the limit itself is served */
    assert_request_limit(need - 1, "/v1/attention", body, 422, "/q"); /* n_q = n_k: q */
    /* More keys than queries: k drives the (n_q, n_k) steps. */
    const char *keys = "{\"q\":[[1]],\"k\":[[1],[2],[3]],\"v\":[[1],[2],[3]]}";
    assert_request_limit(working_set_of("/v1/attention", keys) - 1, "/v1/attention", keys, 422,
                         "/k");
    /* A wide v: the output (n_q, d_v) outweighs the (n_q, n_k) steps. */
    const char *wide = "{\"q\":[[1]],\"k\":[[1]],\"v\":[[1,2,3,4,5,6,7,8]]}";
    assert_request_limit(working_set_of("/v1/attention", wide) - 1, "/v1/attention", wide, 422,
                         "/v");
}
END_TEST

START_TEST(test_request_limit_sums_a_batch)
{
    const char *one = "{\"items\":[{" SEED000 "}]}";
    const char *two = "{\"items\":[{" SEED000 "},{" SEED000 "}]}";
    size_t need_one = working_set_of("/v1/attention/batch", one);
    size_t need_two = working_set_of("/v1/attention/batch", two);
    ck_assert_uint_gt(need_two, need_one);
    /* Each item fits alone; together they pass the limit at the second. */
    assert_request_limit(need_two, "/v1/attention/batch", two, 200, NULL);
    assert_request_limit(need_two - 1, "/v1/attention/batch", two, 422, "/items/1");
    /* An item that is over the limit by itself is named down to its field. */
    assert_request_limit(need_one - strlen(one) - 1, "/v1/attention/batch", one, 422,
                         "/items/0/q");
}
END_TEST

START_TEST(test_request_limit_on_multihead_sizes)
{
    /* The 55-byte request whose answer alone is 700 MB: refused by its sizes, before
     * random fills any input, at the default limit. */
    const char *big = "{\"heads\":1,\"random\":{\"seed\":1,\"n\":2048,\"d_model\":1024}}";
    ck_assert_uint_eq(strlen(big), 55);
    assert_request_limit(api_default_limits().max_request_bytes, "/v1/multihead", big, 422,
                         "/random/n");
    const char *n1536 = "{\"heads\":1,\"random\":{\"seed\":1,\"n\":1536,\"d_model\":1536}}";
    assert_request_limit(api_default_limits().max_request_bytes, "/v1/multihead", n1536, 422,
                         "/random/n");
    /* Few rows, wide model: the weights (d_model, d_model) drive it. */
    const char *wide = "{\"heads\":2,\"random\":{\"seed\":1,\"n\":4,\"d_model\":1024}}";
    size_t need = working_set_of("/v1/multihead", wide);
    assert_request_limit(need, "/v1/multihead", wide, 200, NULL);
    assert_request_limit(need - 1, "/v1/multihead", wide, 422, "/random/d_model");
    /* The limit counts what include asks for: output alone needs less. */
    const char *out = "{\"heads\":2,\"random\":{\"seed\":1,\"n\":4,\"d_model\":1024},"
                      "\"include\":[\"output\"]}";
    ck_assert_uint_lt(working_set_of("/v1/multihead", out), need);
    /* Cross-attention with more keys than queries: x_kv's rows drive the maps. */
    const char *cross = "{\"heads\":1,\"x_q\":[[1,0]],\"x_kv\":[[1,0],[0,1],[1,1],[2,2],[3,3],"
                        "[4,4],[5,5],[6,6]],\"random\":{\"seed\":1}}";
    assert_request_limit(working_set_of("/v1/multihead", cross) - 1, "/v1/multihead", cross,
                         422, "/x_kv");
}
END_TEST

/* The numbers `random` made while path answered body, under ctx. */
static unsigned long long numbers_filled_at(const struct api_context *ctx, const char *path,
                                            const char *body, struct api_response *res)
{
    unsigned long long before = api_random_numbers_filled();
    *res = call_full(ctx, "POST", path, NULL, "application/json", body, NULL, 0);
    return api_random_numbers_filled() - before;
}

static unsigned long long numbers_filled_by(const struct api_context *ctx, const char *body,
                                            struct api_response *res)
{
    return numbers_filled_at(ctx, "/v1/multihead", body, res);
}

/*
 * Issue 32's request (62 bytes written without spaces): its b_o is one number where d_model = 2048 wants
 * 2048. It is a 422 at /b_o with nothing filled (it filled w_q, w_k, w_v and w_o,
 * 16.8 M numbers, on the server's worker before b_o was read), and the server is
 * never asked. A valid request sent elsewhere fills nothing either, and one admitted
 * fills each of its inputs once.
 */
START_TEST(test_random_fills_nothing_before_admission)
{
    const char *bad = "{\"heads\":1,\"random\":{\"seed\":1,\"n\":1,\"d_model\":2048},"
                      "\"b_o\":[1]}";
    struct admit_probe probe = { true, 0, 0 };
    struct api_context ctx = test_context();
    ctx.admit = admit_probe;
    ctx.admit_cls = &probe;
    struct api_response res;
    ck_assert_uint_eq(numbers_filled_by(&ctx, bad, &res), 0);
    ck_assert_int_eq(res.status, 422);
    json_t *doc = parse(&res);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
                         json_object_get(doc, "errors"), 0), "pointer")), "/b_o");
    json_decref(doc);
    api_response_deinit(&res);
    ck_assert_uint_eq(probe.calls, 0);

    /* Valid, wide (d_model 512, so four 512 x 512 weights): the worker's first pass. */
    const char *wide = "{\"heads\":2,\"random\":{\"seed\":1,\"n\":3,\"d_model\":512},"
                       "\"include\":[\"output\"]}";
    const unsigned long long inputs = 3 * 512 + 4 * 512 * 512;
    probe = (struct admit_probe){ false, 0, 0 };
    ctx.admit = admit_elsewhere;
    ck_assert_uint_eq(numbers_filled_by(&ctx, wide, &res), 0);
    ck_assert(res.deferred);
    ck_assert_uint_eq(probe.calls, 1);
    api_response_deinit(&res);
    /* Refused by the budget: nothing filled. */
    ctx.admit = admit_probe;
    ck_assert_uint_eq(numbers_filled_by(&ctx, wide, &res), 0);
    ck_assert_int_eq(res.status, 503);
    api_response_deinit(&res);
    /* Where it runs: every input once. */
    probe.answer = true;
    ck_assert_uint_eq(numbers_filled_by(&ctx, wide, &res), inputs);
    ck_assert_int_eq(res.status, 200);
    api_response_deinit(&res);
}
END_TEST

/*
 * /v1/attention's `random` in the same way: refused by a later field, nothing filled and
 * the server never asked; sent elsewhere or refused by the budget, nothing filled; the
 * bytes admission asks for count q, k and v, which are filled once, where it runs.
 */
START_TEST(test_attention_random_fills_nothing_before_admission)
{
    const char *bad = "{\"random\":{\"seed\":1,\"n_q\":1000,\"n_k\":1000,\"d_k\":64,"
                      "\"d_v\":32},\"scale\":-1}";
    struct admit_probe probe = { true, 0, 0 };
    struct api_context ctx = test_context();
    ctx.admit = admit_probe;
    ctx.admit_cls = &probe;
    struct api_response res;
    ck_assert_uint_eq(numbers_filled_at(&ctx, "/v1/attention", bad, &res), 0);
    ck_assert_int_eq(res.status, 422);
    json_t *doc = parse(&res);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
                         json_object_get(doc, "errors"), 0), "pointer")), "/scale");
    json_decref(doc);
    api_response_deinit(&res);
    ck_assert_uint_eq(probe.calls, 0);

    const char *sizes = "{\"random\":{\"seed\":1,\"n_q\":300,\"n_k\":200,\"d_k\":64,"
                        "\"d_v\":32},\"include\":[\"output\"]}";
    const char *given = "{\"q\":[[1]],\"k\":[[1]],\"v\":[[1]],\"include\":[\"output\"]}";
    const unsigned long long inputs = 300 * 64 + 200 * 64 + 200 * 32;
    probe = (struct admit_probe){ false, 0, 0 };
    ctx.admit = admit_elsewhere;
    ck_assert_uint_eq(numbers_filled_at(&ctx, "/v1/attention", sizes, &res), 0);
    ck_assert(res.deferred);
    ck_assert_uint_eq(probe.calls, 1);
    api_response_deinit(&res);
    /* Refused by the budget: nothing filled; the bytes asked hold q, k and v. */
    ctx.admit = admit_probe;
    ck_assert_uint_eq(numbers_filled_at(&ctx, "/v1/attention", sizes, &res), 0);
    ck_assert_int_eq(res.status, 503);
    api_response_deinit(&res);
    struct api_attention_req req;
    struct api_error err;
    json_t *d = json_loads(given, 0, NULL);
    ck_assert(api_attention_parse(d, "", &ctx.limits, &req, &err));
    struct attn_matrix q = req.q, k = req.k, v = req.v;
    req.q = attn_matrix_view(NULL, 300, 64); /* the same sizes, sent: no q, k, v to count */
    req.k = attn_matrix_view(NULL, 200, 64);
    req.v = attn_matrix_view(NULL, 200, 32);
    size_t sent = api_attention_working_set(&req, API_FORMAT_JSON, strlen(sizes));
    req.q = q, req.k = k, req.v = v;
    api_attention_req_deinit(&req);
    json_decref(d);
    ck_assert_uint_eq(probe.bytes, sent + inputs * sizeof(double));
    /* Where it runs: q, k and v once each. */
    probe.answer = true;
    ck_assert_uint_eq(numbers_filled_at(&ctx, "/v1/attention", sizes, &res), inputs);
    ck_assert_int_eq(res.status, 200);
    api_response_deinit(&res);
}
END_TEST

/* A request body of n_q queries and n_k keys of width d: every score 0 (every key tied,
 * the warnings' worst case) when ties, with the longest labels a page cuts to, when
 * labels. Returned malloc'd. */
static char *attention_body(size_t n_q, size_t n_k, size_t d, bool ties, bool labels)
{
    size_t cap = 256 + (n_q + 2 * n_k) * (d * 24 + 4) + (n_q + n_k) * 160;
    char *b = malloc(cap);
    ck_assert_ptr_nonnull(b);
    size_t u = (size_t)snprintf(b, cap, "{\"round\":15");
    const char *names[3] = { "q", "k", "v" };
    size_t rows[3] = { n_q, n_k, n_k };
    uint64_t state = 7;
    for (int m = 0; m < 3; m++) {
        u += (size_t)snprintf(b + u, cap - u, ",\"%s\":[", names[m]);
        for (size_t i = 0; i < rows[m]; i++) {
            u += (size_t)snprintf(b + u, cap - u, "%s[", i ? "," : "");
            for (size_t j = 0; j < d; j++) {
                double x = ties && m < 2 ? 0.0
                         : (double)(next_random(&state) >> 11) * 0x1p-53 * 2e6 - 1e6;
                u += (size_t)snprintf(b + u, cap - u, "%s%.17g", j ? "," : "", x);
            }
            u += (size_t)snprintf(b + u, cap - u, "]");
        }
        u += (size_t)snprintf(b + u, cap - u, "]");
    }
    if (labels) {
        /* 40 wide characters: each label is cut to 16 columns, its most bytes. */
        const char *wide = "\xEC\x82\xAC";
        for (int axis = 0; axis < 2; axis++) {
            u += (size_t)snprintf(b + u, cap - u, "%s\"%s\":[", axis ? "," : ",\"labels\":{",
                                  axis ? "keys" : "queries");
            for (size_t i = 0; i < (axis ? n_k : n_q); i++) {
                u += (size_t)snprintf(b + u, cap - u, "%s\"", i ? "," : "");
                for (int c = 0; c < 40; c++)
                    u += (size_t)snprintf(b + u, cap - u, "%s", wide);
                u += (size_t)snprintf(b + u, cap - u, "%zu\"", i);
            }
            u += (size_t)snprintf(b + u, cap - u, "]");
        }
        u += (size_t)snprintf(b + u, cap - u, "}");
    }
    snprintf(b + u, cap - u, "}");
    return b;
}

/* The bytes admission asked for besides the body and the trace, and the answer's bytes. */
struct answer_sizes {
    size_t estimated, actual;
};

static struct answer_sizes answer_sizes_of(const char *path, const char *body,
                                           const char *format, size_t trace_bytes)
{
    struct admit_probe probe = { true, 0, 0 };
    struct api_context ctx = test_context();
    ctx.admit = admit_probe;
    ctx.admit_cls = &probe;
    struct api_param param = { "format", format };
    struct api_response res = call_full(&ctx, "POST", path, NULL, "application/json", body,
                                        &param, 1);
    ck_assert_msg(res.status == 200, "%s ?format=%s: %d", path, format, res.status);
    ck_assert_uint_eq(probe.calls, 1);
    ck_assert_uint_ge(probe.bytes, strlen(body) + trace_bytes);
    struct answer_sizes a = { probe.bytes - strlen(body) - trace_bytes, res.body_len };
    api_response_deinit(&res);
    return a;
}

/*
 * Each format's estimate of its answer is not below the answer it writes, at a few
 * shapes, with the longest labels, 15 decimals and every key tied (a warning a row):
 * the part of the working set that is neither the body nor the trace.
 */
START_TEST(test_format_estimates_bound_their_answers)
{
    static const struct { size_t n_q, n_k, d; bool ties, labels; } shapes[] = {
        { 1, 1, 1, false, false }, { 2, 3, 2, true, true }, { 30, 25, 3, false, true },
        { 64, 300, 8, true, true }, { 300, 40, 70, false, true },
    };
    static const char *const formats[] = { "json", "text", "svg", "bertviz" };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        char *body = attention_body(shapes[i].n_q, shapes[i].n_k, shapes[i].d, shapes[i].ties,
                                    shapes[i].labels);
        for (size_t f = 0; f < 4; f++) {
            /* Pages keep every step; bertviz the weights (and the output they make). */
            unsigned keep = f == 3 ? ATTN_KEEP(ATTN_STEP_WEIGHTS) | ATTN_KEEP(ATTN_STEP_OUTPUT)
                                   : ATTN_KEEP_ALL;
            struct answer_sizes a = answer_sizes_of(
                "/v1/attention", body, formats[f],
                attn_trace_bytes_keep(shapes[i].n_q, shapes[i].n_k, shapes[i].d, keep));
            ck_assert_msg(a.estimated >= a.actual, "%zu x %zu, %s: %zu estimated, %zu written",
                          shapes[i].n_q, shapes[i].n_k, formats[f], a.estimated, a.actual);
        }
        free(body);
    }
    static const struct { size_t heads, n, d_model; } mh[] = {
        { 1, 1, 2 }, { 2, 30, 8 }, { 4, 3, 16 }, { 8, 200, 64 },
    };
    for (size_t i = 0; i < sizeof mh / sizeof mh[0]; i++) {
        char body[160];
        snprintf(body, sizeof body, "{\"heads\":%zu,\"round\":15,\"random\":{\"seed\":3,\"n\":%zu,"
                 "\"d_model\":%zu}}", mh[i].heads, mh[i].n, mh[i].d_model);
        size_t d = mh[i].d_model, n = mh[i].n;
        size_t inputs = n * d + 4 * d * d;
        size_t trace = attn_mh_trace_cells(n, n, d, mh[i].heads, mh[i].heads);
        for (size_t f = 0; f < 4; f++) {
            struct answer_sizes a = answer_sizes_of("/v1/multihead", body, formats[f],
                                                    (inputs + trace) * sizeof(double));
            ck_assert_msg(a.estimated >= a.actual, "multihead %zu heads n %zu, %s: %zu "
                          "estimated, %zu written", mh[i].heads, n, formats[f], a.estimated,
                          a.actual);
        }
    }
}
END_TEST

/*
 * The text page at n = 2048 (every step, d = 64): about 80 kB of text, refused
 * as 588 MB when text was counted as every step's numbers in JSON, while the same
 * problem's JSON with include ["weights", "output"] was served. Text is now within
 * the default limit, and its estimate is a few megabytes, not hundreds.
 */
START_TEST(test_text_at_2048_is_admitted)
{
    char *body = attention_body(2048, 2048, 64, false, false);
    struct admit_probe probe = { true, 0, 0 };
    struct api_context ctx = test_context();
    ctx.admit = admit_probe;
    ctx.admit_cls = &probe;
    struct api_param text = { "format", "text" };
    struct api_response res = call_full(&ctx, "POST", "/v1/attention", NULL, "application/json",
                                        body, &text, 1);
    ck_assert_int_eq(res.status, 200);
    size_t trace = attn_trace_bytes_keep(2048, 2048, 64, ATTN_KEEP_ALL);
    ck_assert_uint_le(probe.bytes, strlen(body) + trace + (size_t)16e6);
    ck_assert_uint_le(probe.bytes, api_default_limits().max_request_bytes);
    api_response_deinit(&res);
    /* The multi-head page and bertviz's weights likewise (one head, d_model 64). */
    const char *mh = "{\"heads\":1,\"random\":{\"seed\":1,\"n\":2048,\"d_model\":64}}";
    static const char *const formats[] = { "text", "bertviz" };
    for (int f = 0; f < 2; f++) {
        struct api_param p = { "format", formats[f] };
        res = call_full(&ctx, "POST", "/v1/multihead", NULL, "application/json", mh, &p, 1);
        ck_assert_msg(res.status == 200, "%s: %d", formats[f], res.status);
        api_response_deinit(&res);
    }
    free(body);
}
END_TEST

/*
 * Zero queries score 0 against every key: every row ties all its keys, the ties' worst
 * case. The answer still fits what was asked for it, and the ties are counted by their
 * index digits, not as whole numbers (24 bytes each), which asked over twice as much.
 */
START_TEST(test_every_key_tied_fits_its_estimate)
{
    enum { N_Q = 64, N_K = 500 };
    size_t cap = 64 + N_Q * 8 + N_K * 16;
    char *body = malloc(cap);
    ck_assert_ptr_nonnull(body);
    size_t used = (size_t)snprintf(body, cap, "{\"include\":[\"summary\"],\"q\":[");
    for (int i = 0; i < N_Q; i++)
        used += (size_t)snprintf(body + used, cap - used, "%s[0]", i ? "," : "");
    used += (size_t)snprintf(body + used, cap - used, "],\"k\":[");
    for (int j = 0; j < N_K; j++)
        used += (size_t)snprintf(body + used, cap - used, "%s[%d]", j ? "," : "", j % 7);
    used += (size_t)snprintf(body + used, cap - used, "],\"v\":[");
    for (int j = 0; j < N_K; j++)
        used += (size_t)snprintf(body + used, cap - used, "%s[1]", j ? "," : "");
    snprintf(body + used, cap - used, "]}");

    struct admit_probe probe = { true, 0, 0 };
    struct api_response res = call_admitting(&probe, "/v1/attention", body);
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    const json_t *tied = json_object_get(json_object_get(doc, "summary"), "tied_keys");
    ck_assert_uint_eq(json_array_size(tied), N_Q);
    ck_assert_uint_eq(json_array_size(json_array_get(tied, N_Q - 1)), N_K);
    ck_assert_uint_eq(json_array_size(json_object_get(doc, "warnings")), N_Q);
    json_decref(doc);
    size_t trace = attn_trace_bytes_keep(N_Q, N_K, 1, ATTN_KEEP(ATTN_STEP_WEIGHTS) |
                                                          ATTN_KEEP(ATTN_STEP_OUTPUT));
    size_t asked = probe.bytes - strlen(body) - trace; /* for the answer */
    ck_assert_uint_ge(asked, res.body_len);
    size_t as_numbers = 24 * (N_Q * 1 + 5 * N_Q + N_Q * N_K + 8 * N_Q);
    ck_assert_uint_gt(as_numbers, 2 * asked);
    api_response_deinit(&res);
    free(body);
}
END_TEST

static Suite *admission_suite(void)
{
    Suite *s = suite_create("admission");

    TCase *admission = tcase_create("Admission");
    tcase_add_test(admission, test_admission_asks_for_the_working_set);
    tcase_add_test(admission, test_every_key_tied_fits_its_estimate);
    tcase_add_test(admission, test_admission_refused_is_503_with_retry_after);
    tcase_add_test(admission, test_admission_elsewhere_defers_with_no_answer);
    tcase_add_test(admission, test_random_fills_nothing_before_admission);
    tcase_add_test(admission, test_attention_random_fills_nothing_before_admission);
    tcase_add_test(admission, test_format_estimates_bound_their_answers);
    tcase_add_test(admission, test_text_at_2048_is_admitted);
    tcase_add_test(admission, test_request_limit_is_the_working_set);
    tcase_add_test(admission, test_request_limit_sums_a_batch);
    tcase_add_test(admission, test_request_limit_on_multihead_sizes);
    suite_add_tcase(s, admission);
    return s;
}

int main(void)
{
    return run_api_suite(admission_suite());
}
