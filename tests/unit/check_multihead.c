/*
 * tests/unit/check_multihead.c — multi-head attention (core and /v1/multihead), the shape
 * table (/v1/shapes) and batches (/v1/attention/batch).
 *
 * Suites: Core (attn_mh_forward against the naive attn_mh_reference over random
 * sizes, layouts, GQA groupings, masks and biases; faults), Torch (responses against
 * torch.nn.MultiheadAttention's numbers, committed in tests/data by
 * tests/gen_torch_fixtures.py), Api (random inputs, include, errors with pointers),
 * Shapes, Batch.
 */
#include <check.h>

#include "tests/unit/suite_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/api.h"
#include "api/request/random.h"
#include "core/multihead.h"

#ifndef TEST_DATA_DIR
#define TEST_DATA_DIR "tests/data"
#endif

/* ------------------------------------------------------------------ helpers */

static unsigned long long rng_state = 0x2545f4914f6cdd1dull;

static double uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

static size_t pick(size_t lo, size_t hi)
{
    return lo + (size_t)((uniform() + 1.0) / 2.0 * (double)(hi - lo + 1)) % (hi - lo + 1);
}

static struct attn_matrix random_matrix(size_t rows, size_t cols)
{
    struct attn_matrix m = attn_matrix_view(malloc(rows * cols * sizeof(double)), rows, cols);
    for (size_t i = 0; i < rows * cols; i++)
        m.data[i] = uniform();
    return m;
}

static double *random_vector(size_t n)
{
    double *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = uniform() * 0.5;
    return v;
}

static void assert_matrix_close(const struct attn_matrix *got, const struct attn_matrix *want,
                                const char *what)
{
    ck_assert_uint_eq(got->rows, want->rows);
    ck_assert_uint_eq(got->cols, want->cols);
    for (size_t i = 0; i < got->rows; i++) {
        for (size_t j = 0; j < got->cols; j++) {
            double a = attn_at(got, i, j), b = attn_at(want, i, j);
            if (isinf(a) && isinf(b) && a == b)
                continue;
            if (!(fabs(a - b) <= 1e-12 + 1e-12 * fabs(b)))
                ck_abort_msg("%s[%zu][%zu]: %.17g vs %.17g", what, i, j, a, b);
        }
    }
}

static struct api_response call(const char *method, const char *path, const char *body,
                                const struct api_param *params, size_t n_params)
{
    struct api_context ctx = {
        .limits = api_default_limits(), .ready = true, .http_library = "0.9.75"};
    struct api_request req = { method, path, params, n_params, NULL, "application/json",
                               body, body ? strlen(body) : 0, NULL, NULL };
    struct api_response res = { 0 };
    api_handle(&ctx, &req, &res);
    return res;
}

static json_t *parse_body(const struct api_response *res)
{
    json_error_t e;
    json_t *doc = json_loadb(res->body, res->body_len, 0, &e);
    ck_assert_msg(doc != NULL, "not JSON: %s", e.text);
    return doc;
}

/* --------------------------------------------------------------------- Core */

/* Random problems: every size 1..12, both layouts, every GQA grouping, masks, biases. */
/* A random multi-head problem: every input owned here, p pointing at them. */
struct mh_case {
    size_t n_q, n_k, d, heads, kv;
    bool cross;
    struct attn_matrix x_q, x_kv, w_q, w_k, w_v, w_o, bias;
    double *b_q, *b_k, *b_v, *b_o;
    unsigned char *allow;
    struct attn_mh_problem p;
};

/*
 * Round `round` of the random cases: self or cross, weights (in, out) or transposed,
 * grouped kv heads, biases or not, and each mask kind in turn; n_q and n_k from lo to hi.
 */
static void mh_case_init(struct mh_case *c, int round, size_t lo, size_t hi)
{
    size_t heads = pick(1, 6), d_k = pick(1, 5), d = heads * d_k;
    size_t divs[6], n_div = 0;
    for (size_t g = 1; g <= heads; g++)
        if (heads % g == 0)
            divs[n_div++] = g;
    size_t kv = divs[pick(0, n_div - 1)], kv_cols = kv * d_k;
    bool cross = round % 2, tr = (round / 2) % 2;
    size_t n_q = pick(lo, hi), n_k = cross ? pick(lo, hi) : n_q;
    *c = (struct mh_case){ .n_q = n_q, .n_k = n_k, .d = d, .heads = heads, .kv = kv,
                           .cross = cross };
    c->x_q = random_matrix(n_q, d);
    c->x_kv = cross ? random_matrix(n_k, d) : c->x_q;
    c->w_q = random_matrix(d, d);
    c->w_o = random_matrix(d, d);
    c->w_k = tr ? random_matrix(kv_cols, d) : random_matrix(d, kv_cols);
    c->w_v = tr ? random_matrix(kv_cols, d) : random_matrix(d, kv_cols);
    c->b_q = random_vector(d), c->b_k = random_vector(kv_cols);
    c->b_v = random_vector(kv_cols), c->b_o = random_vector(d);
    c->bias = random_matrix(n_q, n_k);
    c->allow = malloc(n_q * n_k);
    for (size_t i = 0; i < n_q * n_k; i++)
        c->allow[i] = uniform() > -0.6;
    struct attn_mask masks[] = { { ATTN_MASK_NONE, NULL, 0 }, { ATTN_MASK_CAUSAL, NULL, 0 },
                                 { ATTN_MASK_CELLS, c->allow, n_q },
                                 { ATTN_MASK_CELLS, c->allow, 1 } };
    c->p = (struct attn_mh_problem){
        &c->x_q, &c->x_kv, &c->w_q, &c->w_k, &c->w_v, &c->w_o,
        round % 3 ? c->b_q : NULL, round % 3 ? c->b_k : NULL, c->b_v, round % 5 ? c->b_o : NULL,
        tr, heads, kv, round % 4 == 1 ? &c->bias : NULL, masks[round % 4],
        1.0 / sqrt((double)d_k),
    };
}

static void mh_case_free(struct mh_case *c)
{
    free(c->x_q.data);
    if (c->cross)
        free(c->x_kv.data);
    free(c->w_q.data), free(c->w_k.data), free(c->w_v.data), free(c->w_o.data);
    free(c->b_q), free(c->b_k), free(c->b_v), free(c->b_o), free(c->bias.data), free(c->allow);
}

START_TEST(test_forward_matches_reference)
{
    for (int round = 0; round < 120; round++) {
        struct mh_case c;
        mh_case_init(&c, round, 1, 12);
        struct attn_mh_trace fast, ref;
        ck_assert_int_eq(attn_mh_trace_alloc(&fast, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
        ck_assert_int_eq(attn_mh_trace_alloc(&ref, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
        ck_assert_int_eq(attn_mh_forward(&fast, &c.p), ATTN_OK);
        ck_assert_int_eq(attn_mh_reference(&ref, &c.p), ATTN_OK);
        assert_matrix_close(&fast.q, &ref.q, "q");
        assert_matrix_close(&fast.k, &ref.k, "k");
        assert_matrix_close(&fast.v, &ref.v, "v");
        for (size_t h = 0; h < c.heads; h++) {
            assert_matrix_close(&fast.head[h].masked, &ref.head[h].masked, "masked");
            assert_matrix_close(&fast.head[h].weights, &ref.head[h].weights, "weights");
            assert_matrix_close(&fast.head[h].output, &ref.head[h].output, "head output");
        }
        assert_matrix_close(&fast.concat, &ref.concat, "concat");
        assert_matrix_close(&fast.output, &ref.output, "output");
        assert_matrix_close(&fast.weights_mean, &ref.weights_mean, "weights_mean");
        attn_mh_trace_free(&fast);
        attn_mh_trace_free(&ref);
        mh_case_free(&c);
    }
}
END_TEST

/* Whether two matrices of one shape hold the same bytes. */
static bool same_bits(const struct attn_matrix *a, const struct attn_matrix *b)
{
    for (size_t i = 0; i < a->rows; i++)
        if (memcmp(a->data + i * a->stride, b->data + i * b->stride, a->cols * sizeof(double)))
            return false;
    return true;
}

/*
 * Each head on 2 or 3 threads (what an idle server lends a large multi-head request):
 * every head's steps, the concat, the output and the mean are the one-thread bits.
 * 129 to 400 queries: two to four blocks of 128 rows, the last one partial.
 */
START_TEST(test_forward_threads_same_bits)
{
    for (int round = 0; round < 16; round++) {
        struct mh_case c;
        mh_case_init(&c, round, 129, 400);
        struct attn_mh_trace one, many;
        ck_assert_int_eq(attn_mh_trace_alloc(&one, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
        ck_assert_int_eq(attn_mh_trace_alloc(&many, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
        ck_assert_int_eq(attn_mh_forward(&one, &c.p), ATTN_OK);
        ck_assert_int_eq(attn_mh_forward_threads(&many, &c.p, 2 + (unsigned)(round % 2)), ATTN_OK);
        for (size_t h = 0; h < c.heads; h++) {
            const struct attn_trace *a = &one.head[h], *b = &many.head[h];
            ck_assert_msg(same_bits(&a->scores, &b->scores) && same_bits(&a->masked, &b->masked) &&
                              same_bits(&a->weights, &b->weights) &&
                              same_bits(&a->output, &b->output),
                          "round %d head %zu differs", round, h);
        }
        ck_assert(same_bits(&one.concat, &many.concat));
        ck_assert(same_bits(&one.output, &many.output));
        ck_assert(same_bits(&one.weights_mean, &many.weights_mean));
        attn_mh_trace_free(&one);
        attn_mh_trace_free(&many);
        mh_case_free(&c);
    }
}
END_TEST

/* GQA: query head i reads kv head ⌊i·kv/h⌋; with kv = 1 every head sees the same K and V. */
START_TEST(test_kv_head_grouping)
{
    const size_t want[8] = { 0, 0, 0, 0, 1, 1, 1, 1 };
    for (size_t i = 0; i < 8; i++)
        ck_assert_uint_eq(attn_mh_kv_head(i, 8, 2), want[i]);
    for (size_t i = 0; i < 8; i++)
        ck_assert_uint_eq(attn_mh_kv_head(i, 8, 8), i);
    for (size_t i = 0; i < 8; i++)
        ck_assert_uint_eq(attn_mh_kv_head(i, 8, 1), 0);

    /* Multi-query attention by hand: 2 heads of width 1, one kv head. */
    double xd[] = { 1, 2, 3, 4 };                  /* (2, 2) */
    double eye[] = { 1, 0, 0, 1 };                 /* w_q, w_o: identity */
    double wk[] = { 1, 1 }, wv[] = { 2, 0 };       /* (2, 1): k = x0 + x1, v = 2·x0 */
    struct attn_matrix x = attn_matrix_view(xd, 2, 2), w_q = attn_matrix_view(eye, 2, 2);
    struct attn_matrix w_k = attn_matrix_view(wk, 2, 1), w_v = attn_matrix_view(wv, 2, 1);
    struct attn_mh_problem p = { &x, &x, &w_q, &w_k, &w_v, &w_q, NULL, NULL, NULL, NULL, false,
                                 2, 1, NULL, { ATTN_MASK_NONE, NULL, 0 }, 1.0 };
    struct attn_mh_trace t;
    ck_assert_int_eq(attn_mh_trace_alloc(&t, 2, 2, 2, 2, 1), ATTN_OK);
    ck_assert_int_eq(attn_mh_forward(&t, &p), ATTN_OK);
    /* keys are 3 and 7; head 0's queries are x[:,0] = 1, 3; head 1's are x[:,1] = 2, 4 */
    ck_assert(t.head[0].scores.data[0] == 3 && t.head[0].scores.data[1] == 7);
    ck_assert(t.head[1].scores.data[2] == 12 && t.head[1].scores.data[3] == 28);
    double w1 = 1.0 / (1.0 + exp(-4.0)); /* head 0, query 0: softmax([3, 7]) */
    ck_assert(fabs(t.head[0].weights.data[1] - w1) < 1e-15);
    ck_assert(fabs(t.head[0].output.data[0] - ((1 - w1) * 2 + w1 * 6)) < 1e-12);
    attn_mh_trace_free(&t);
}
END_TEST

START_TEST(test_trace_sizes)
{
    struct attn_mh_trace t;
    ck_assert_int_eq(attn_mh_trace_alloc(&t, 2, 2, 6, 4, 4), ATTN_EINVAL); /* 4 ∤ 6 */
    ck_assert_int_eq(attn_mh_trace_alloc(&t, 2, 2, 8, 4, 3), ATTN_EINVAL); /* 3 ∤ 4 */
    ck_assert_uint_eq(attn_mh_trace_cells(2, 3, 4, 2, 1),
                      3 * 2 * 4 + 2 * 3 * 2 + 2 * 3 + 2 * attn_trace_cells(2, 3, 2));
    ck_assert_uint_eq(attn_mh_trace_cells((size_t)1 << 40, (size_t)1 << 40, 8, 2, 2), 0);
    attn_mh_trace_free(&t); /* zeroed: a no-op */
    attn_mh_trace_free(&t);
}
END_TEST

START_TEST(test_projection_overflow_fault)
{
    double xd[] = { 1e200, 1 }, wd[] = { 1e200, 0, 0, 1 };
    struct attn_matrix x = attn_matrix_view(xd, 1, 2), w = attn_matrix_view(wd, 2, 2);
    struct attn_mh_problem p = { &x, &x, &w, &w, &w, &w, NULL, NULL, NULL, NULL, false, 1, 1,
                                 NULL, { ATTN_MASK_NONE, NULL, 0 }, 1.0 };
    struct attn_mh_trace t;
    ck_assert_int_eq(attn_mh_trace_alloc(&t, 1, 1, 2, 1, 1), ATTN_OK);
    ck_assert_int_eq(attn_mh_forward(&t, &p), ATTN_EOVERFLOW);
    ck_assert_int_eq(t.fault.step, ATTN_MH_Q);
    ck_assert_uint_eq(t.fault.row, 0);
    ck_assert_uint_eq(t.fault.col, 0);
    attn_mh_trace_free(&t);
}
END_TEST

/* -------------------------------------------------------------------- Torch */

static json_t *torch_cases(void)
{
    json_error_t e;
    json_t *doc = json_load_file(TEST_DATA_DIR "/multihead_torch.json", 0, &e);
    ck_assert_msg(doc != NULL, "cannot read the fixtures: %s", e.text);
    return doc;
}

static void assert_close_tree(json_t *got, json_t *want, const char *what, const char *name)
{
    if (json_is_array(want)) {
        ck_assert_msg(json_is_array(got) && json_array_size(got) == json_array_size(want),
                      "%s: %s has another shape", name, what);
        for (size_t i = 0; i < json_array_size(want); i++)
            assert_close_tree(json_array_get(got, i), json_array_get(want, i), what, name);
        return;
    }
    double a = json_number_value(got), b = json_number_value(want);
    ck_assert_msg(fabs(a - b) <= 1e-9 * fabs(b) + 1e-15, "%s: %s %.17g vs torch %.17g", name,
                  what, a, b);
}

START_TEST(test_matches_torch)
{
    json_t *doc = torch_cases();
    json_t *c = json_array_get(json_object_get(doc, "cases"), (size_t)_i);
    ck_assert_ptr_nonnull(c);
    const char *name = json_string_value(json_object_get(c, "name"));
    json_t *request = json_deep_copy(json_object_get(c, "request"));
    json_object_set_new(request, "include", json_pack("[ss]", "weights", "output"));
    char *body = json_dumps(request, JSON_COMPACT);
    struct api_response res = call("POST", "/v1/multihead", body, NULL, 0);
    ck_assert_msg(res.status == 200, "%s: %d %s", name, res.status, res.body);
    json_t *got = parse_body(&res);
    json_t *want = json_object_get(c, "expected");
    assert_close_tree(json_object_get(got, "output"), json_object_get(want, "output"), "output",
                      name);
    assert_close_tree(json_object_get(got, "weights"), json_object_get(want, "weights"),
                      "weights", name);
    json_decref(got);
    api_response_deinit(&res);
    free(body);
    json_decref(request);
    json_decref(doc);
}
END_TEST

/* ---------------------------------------------------------------------- Api */

/* The generator as documented: value k of stream s from splitmix64 by index. */
START_TEST(test_random_generator_documented)
{
    double v[3];
    api_random_fill(v, 3, 0, API_STREAM_X, 1.0);
    /* splitmix64 from state 0: the first outputs are the published test vector */
    const unsigned long long first[3] = { 0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull,
                                          0x06c45d188009454full };
    for (int k = 0; k < 3; k++)
        ck_assert(v[k] == (double)(first[k] >> 11) * 0x1.0p-53 * 2.0 - 1.0);
    double w[2];
    api_random_fill(w, 2, 7, API_STREAM_W_K, 0.5);
    for (int k = 0; k < 2; k++)
        ck_assert(w[k] >= -0.5 && w[k] < 0.5);
}
END_TEST

START_TEST(test_random_self_attention_seed000_sizes)
{
    struct api_response res = call("POST", "/v1/multihead",
        "{\"heads\":8,\"random\":{\"seed\":1,\"n\":10,\"d_model\":512},"
        "\"include\":[\"summary\",\"output\"],\"round\":3}", NULL, 0);
    ck_assert_msg(res.status == 200, "%d %s", res.status, res.body);
    json_t *doc = parse_body(&res);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "d_k")), 64);
    json_t *shapes = json_object_get(doc, "shapes");
    char *s = json_dumps(shapes, JSON_COMPACT);
    ck_assert_ptr_nonnull(strstr(s, "\"x\":[10,512]"));
    ck_assert_ptr_nonnull(strstr(s, "\"w_q\":[512,512]"));
    ck_assert_ptr_nonnull(strstr(s, "\"weights\":[8,10,10]"));
    ck_assert_ptr_nonnull(strstr(s, "\"head_outputs\":[8,10,64]"));
    ck_assert_ptr_nonnull(strstr(s, "\"concat\":[10,512]"));
    free(s);
    ck_assert_ptr_nonnull(strstr(res.body, "\"filled\":[\"x\",\"w_q\",\"w_k\",\"w_v\",\"w_o\"]"));
    json_t *sums = json_object_get(json_object_get(doc, "summary"), "row_sums");
    ck_assert_uint_eq(json_array_size(sums), 8);
    ck_assert(json_number_value(json_array_get(json_array_get(sums, 7), 9)) == 1.0);
    ck_assert_uint_eq(json_array_size(json_object_get(doc, "output")), 10);
    ck_assert_ptr_null(json_object_get(doc, "x")); /* inputs only when included */
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* The same seed gives the same numbers; an input given is used, the rest filled. */
START_TEST(test_random_fills_only_missing)
{
    struct api_response a = call("POST", "/v1/multihead",
        "{\"heads\":2,\"random\":{\"seed\":5,\"n\":3,\"d_model\":4},\"include\":[\"x\",\"w_q\"]}",
        NULL, 0);
    struct api_response b = call("POST", "/v1/multihead",
        "{\"heads\":2,\"random\":{\"seed\":5,\"n\":3,\"d_model\":4},\"include\":[\"x\",\"w_q\"]}",
        NULL, 0);
    ck_assert_int_eq(a.status, 200);
    ck_assert_str_eq(a.body, b.body);
    json_t *doc = parse_body(&a);
    double x00 = json_number_value(json_array_get(json_array_get(json_object_get(doc, "x"), 0), 0));
    double want[1];
    api_random_fill(want, 1, 5, API_STREAM_X, 1.0);
    ck_assert(x00 == want[0]);
    double w01 = json_number_value(json_array_get(json_array_get(json_object_get(doc, "w_q"), 0), 1));
    double wq[2];
    api_random_fill(wq, 2, 5, API_STREAM_W_Q, 0.5); /* 1/sqrt(4) */
    ck_assert(w01 == wq[1]);
    json_decref(doc);
    api_response_deinit(&a);
    api_response_deinit(&b);

    struct api_response c = call("POST", "/v1/multihead",
        "{\"heads\":1,\"x\":[[1,2]],\"random\":{\"seed\":5},\"include\":[\"x\"]}", NULL, 0);
    ck_assert_int_eq(c.status, 200);
    ck_assert_ptr_nonnull(strstr(c.body, "\"x\":[[1,2]]"));
    ck_assert_ptr_nonnull(strstr(c.body, "\"filled\":[\"w_q\",\"w_k\",\"w_v\",\"w_o\"]"));
    api_response_deinit(&c);
}
END_TEST

/* Cross-attention with GQA: shapes, and the steps' operands. */
START_TEST(test_cross_gqa_steps)
{
    struct api_response res = call("POST", "/v1/multihead",
        "{\"heads\":4,\"kv_heads\":2,\"random\":{\"seed\":3,\"n\":2,\"n_kv\":5,\"d_model\":8},"
        "\"include\":[\"x\",\"k\",\"weights_mean\"]}", NULL, 0);
    ck_assert_msg(res.status == 200, "%s", res.body);
    ck_assert_ptr_nonnull(strstr(res.body, "\"x_q\":[2,8],\"x_kv\":[5,8]"));
    ck_assert_ptr_nonnull(strstr(res.body, "\"w_k\":[8,4]"));
    ck_assert_ptr_nonnull(strstr(res.body, "\"k\":[5,4]"));
    ck_assert_ptr_nonnull(strstr(res.body, "{\"step\":5,\"name\":\"scores\",\"op\":\"Q_i @ K_i^T\","
                                           "\"operands\":[[2,2],[2,5]],\"shape\":[4,2,5]}"));
    json_t *doc = parse_body(&res);
    ck_assert_uint_eq(json_array_size(json_object_get(doc, "steps")), 11);
    ck_assert_uint_eq(json_array_size(json_object_get(doc, "x_kv")), 5);
    json_t *mean = json_object_get(doc, "weights_mean");
    double sum = 0;
    for (size_t j = 0; j < 5; j++)
        sum += json_number_value(json_array_get(json_array_get(mean, 1), j));
    ck_assert(fabs(sum - 1.0) < 1e-12);
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

static const struct mh_bad {
    const char *body;
    const char *type;
    const char *pointer;
    const char *hint;
} mh_bad[] = {
    { "{\"x\":[[1,2]]}", "missing-field", "/heads", NULL },
    { "{\"heads\":2}", "missing-field", "/x", "random" },
    { "{\"heads\":1,\"x_q\":[[1,2]]}", "missing-field", "/x_kv", NULL },
    { "{\"heads\":1,\"x\":[[1,2]],\"x_q\":[[1,2]]}", "invalid-value", "/x_q", NULL },
    { "{\"heads\":3,\"random\":{\"seed\":0,\"n\":2,\"d_model\":8}}", "shape-mismatch", "/heads",
      "1, 2, 4 or 8" },
    { "{\"heads\":4,\"kv_heads\":3,\"random\":{\"seed\":0,\"n\":2,\"d_model\":8}}",
      "invalid-value", "/kv_heads", NULL },
    { "{\"heads\":0,\"random\":{\"seed\":0,\"n\":2,\"d_model\":8}}", "invalid-value", "/heads",
      NULL },
    { "{\"heads\":1,\"random\":{\"seed\":0,\"n\":2}}", "missing-field", "/random/d_model", NULL },
    { "{\"heads\":1,\"random\":{\"n\":2,\"d_model\":2}}", "missing-field", "/random/seed", NULL },
    { "{\"heads\":1,\"random\":{\"seed\":-1,\"n\":2,\"d_model\":2}}", "invalid-value",
      "/random/seed", NULL },
    { "{\"heads\":1,\"random\":{\"seed\":1,\"n\":2,\"d_modle\":2}}", "unknown-field",
      "/random/d_modle", "\"d_model\"" },
    { "{\"heads\":1,\"x\":[[1,2]],\"random\":{\"seed\":1,\"n_kv\":3}}", "invalid-value",
      "/random/n_kv", NULL },
    { "{\"heads\":1,\"x\":[[1,2]],\"random\":{\"seed\":1,\"d_model\":3}}", "shape-mismatch",
      "/random/d_model", NULL },
    { "{\"heads\":1,\"x_q\":[[1,2]],\"x_kv\":[[1,2,3]],\"random\":{\"seed\":1}}",
      "shape-mismatch", "/x_kv", NULL },
    { "{\"num_heads\":2,\"x\":[[1,2]]}", "unknown-field", "/num_heads", "\"heads\"" },
    { "{\"heads\":2,\"kv_heads\":1,\"x\":[[1,2,3,4]],\"random\":{\"seed\":1},"
      "\"w_k\":[[1,0,0,0],[0,1,0,0]]}", "shape-mismatch", "/w_k", "out_in" },
    { "{\"heads\":2,\"kv_heads\":1,\"x\":[[1,2,3,4]],\"random\":{\"seed\":1},"
      "\"weight_layout\":\"out_in\",\"w_k\":[[1,0],[0,1],[0,0],[0,0]]}", "shape-mismatch",
      "/w_k", "in_out" },
    { "{\"heads\":1,\"x\":[[1,2]],\"random\":{\"seed\":1},\"b_q\":[1,2,3]}", "shape-mismatch",
      "/b_q", NULL },
    { "{\"heads\":1,\"x\":[[1,2]],\"random\":{\"seed\":1},\"weight_layout\":\"torch\"}",
      "invalid-value", "/weight_layout", NULL },
    { "{\"heads\":1,\"x\":[[1,2]],\"random\":{\"seed\":1},\"include\":[\"weight\"]}",
      "invalid-value", "/include/0", "\"weights\"" },
    { "{\"heads\":1,\"x\":[[1,2],[3,4]],\"random\":{\"seed\":1},\"mask\":[[1,1,1],[1,1,1]]}",
      "shape-mismatch", "/mask", NULL },
    { "{\"heads\":1,\"x\":[[1,\"2\"]],\"random\":{\"seed\":1}}", "not-a-number", "/x/0/1", NULL },
    { "{\"heads\":64,\"random\":{\"seed\":1,\"n\":2048,\"d_model\":64}}", "limit-exceeded",
      "/heads", NULL },
    { "{\"heads\":1,\"random\":{\"seed\":1,\"n\":2,\"d_model\":65536}}", "limit-exceeded",
      "/random/d_model", NULL },
    { "{\"heads\":1,\"random\":{\"seed\":1,\"n\":2147483648,\"d_model\":2}}", "limit-exceeded",
      "/random/n", NULL },
    { "{\"heads\":1,\"x\":[[1e200]],\"w_q\":[[1e200]],\"w_k\":[[1]],\"w_v\":[[1]],\"w_o\":[[1]]}",
      "numeric-overflow", "/w_q", NULL },
};

START_TEST(test_multihead_bad_requests)
{
    const struct mh_bad *c = &mh_bad[_i];
    struct api_response res = call("POST", "/v1/multihead", c->body, NULL, 0);
    ck_assert_msg(res.status == 422, "case %d: %d %s", _i, res.status, res.body);
    json_t *doc = parse_body(&res);
    char type[96];
    snprintf(type, sizeof type, "/problems/%s", c->type);
    ck_assert_msg(strcmp(json_string_value(json_object_get(doc, "type")), type) == 0,
                  "case %d: %s", _i, res.body);
    json_t *err = json_array_get(json_object_get(doc, "errors"), 0);
    ck_assert_msg(strcmp(json_string_value(json_object_get(err, "pointer")), c->pointer) == 0,
                  "case %d: %s", _i, res.body);
    if (c->hint != NULL) {
        const char *hint = json_string_value(json_object_get(err, "hint"));
        ck_assert_msg(hint && strstr(hint, c->hint), "case %d: hint %s", _i, hint);
    }
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* ------------------------------------------------------------------- Shapes */

/* The first lecture note's table: d_model 512, 8 heads, d_k 64, 10 tokens. */
START_TEST(test_shapes_seed000)
{
    struct api_param params[] = { { "n", "10" }, { "d_model", "512" }, { "heads", "8" } };
    struct api_response res = call("GET", "/v1/shapes", NULL, params, 3);
    ck_assert_int_eq(res.status, 200);
    ck_assert_ptr_nonnull(strstr(res.body, "\"d_k\":64"));
    ck_assert_ptr_nonnull(strstr(res.body, "{\"op\":\"X_q @ W_Q\",\"left\":[10,512],"
                                           "\"right\":[512,64],\"result\":[10,64]"));
    ck_assert_ptr_nonnull(strstr(res.body, "{\"op\":\"Q @ K^T\",\"left\":[10,64],"
                                           "\"right\":[64,10],\"result\":[10,10]"));
    ck_assert_ptr_nonnull(strstr(res.body, "{\"op\":\"softmax(axis=-1)\",\"left\":[10,10],"
                                           "\"right\":null,\"result\":[10,10]"));
    ck_assert_ptr_nonnull(strstr(res.body, "{\"op\":\"logsumexp(axis=-1)\",\"left\":[10,10],"
                                           "\"right\":null,\"result\":[10]"));
    ck_assert_ptr_nonnull(strstr(res.body, "{\"op\":\"weights @ V\",\"left\":[10,10],"
                                           "\"right\":[10,64],\"result\":[10,64]"));
    ck_assert_ptr_nonnull(strstr(res.body, "{\"op\":\"concat(heads)\",\"left\":[8,10,64],"
                                           "\"right\":null,\"result\":[10,512]"));
    ck_assert_ptr_nonnull(strstr(res.body, "{\"op\":\"concat @ W_O\",\"left\":[10,512],"
                                           "\"right\":[512,512],\"result\":[10,512]"));
    /* visible and its block map in tiles of 128: one tile for 10 tokens */
    ck_assert_ptr_nonnull(strstr(res.body, "{\"op\":\"rules(i, j)\",\"left\":[10,10],"
                                           "\"right\":null,\"result\":[10,10]"));
    ck_assert_ptr_nonnull(strstr(res.body, "{\"op\":\"tiles(visible, B_q, B_k)\",\"left\":[10,10],"
                                           "\"right\":null,\"result\":[1,1]"));
    json_t *doc = parse_body(&res);
    /* the lecture's nine rows, visible and its block map, and the row statistics */
    ck_assert_uint_eq(json_array_size(json_object_get(doc, "rows")), 13);
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_shapes_cross_gqa)
{
    struct api_param params[] = { { "n", "4" }, { "d_model", "16" }, { "heads", "4" },
                                  { "n_kv", "6" }, { "kv_heads", "2" } };
    struct api_response res = call("GET", "/v1/shapes", NULL, params, 5);
    ck_assert_int_eq(res.status, 200);
    ck_assert_ptr_nonnull(strstr(res.body, "\"left\":[4,4],\"right\":[4,6],\"result\":[4,6]"));
    ck_assert_ptr_nonnull(strstr(res.body, "2 key/value heads in all, each shared by 2 query "
                                           "heads"));
    api_response_deinit(&res);
}
END_TEST

static const struct {
    struct api_param params[3];
    int status;
    const char *type, *parameter;
} shape_bad[] = {
    { { { "d_model", "512" }, { "heads", "8" }, { "format", "json" } }, 422, "missing-field", "n" },
    { { { "n", "abc" }, { "d_model", "512" }, { "heads", "8" } }, 422, "invalid-value", "n" },
    { { { "n", "0" }, { "d_model", "512" }, { "heads", "8" } }, 422, "invalid-value", "n" },
    { { { "n", "10" }, { "d_model", "512" }, { "heads", "3" } }, 422, "invalid-value", "heads" },
    { { { "n", "10" }, { "d_model", "512" }, { "head", "8" } }, 422, "unknown-field", "head" },
    { { { "n", "-5" }, { "d_model", "512" }, { "heads", "8" } }, 422, "invalid-value", "n" },
};

START_TEST(test_shapes_bad_parameters)
{
    struct api_response res = call("GET", "/v1/shapes", NULL, shape_bad[_i].params, 3);
    ck_assert_int_eq(res.status, shape_bad[_i].status);
    json_t *doc = parse_body(&res);
    char type[64];
    snprintf(type, sizeof type, "/problems/%s", shape_bad[_i].type);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "type")), type);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "parameter")),
                     shape_bad[_i].parameter);
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* -------------------------------------------------------------------- Batch */

/* Seed 002's three experiments in one batch; the second item is broken on purpose. */
START_TEST(test_batch_independent_items)
{
    static const char body[] =
        "{\"items\":["
        "{\"q\":[[2,0]],\"k\":[[1,0],[0,1],[0.8,0.2]],\"v\":[[10,0],[0,20],[8,4]],\"scale\":1,"
        "\"include\":[\"summary\"]},"
        "{\"q\":[[0.9,0.1]],\"k\":[[1,0],[0,1],[0.8]],\"v\":[[10,0],[0,20],[8,4]],\"scale\":1},"
        "{\"q\":[[1,0]],\"k\":[[-1,0],[0,1],[0.8,0.2]],\"v\":[[10,0],[0,20],[8,4]],\"scale\":1,"
        "\"include\":[\"summary\"],\"round\":2}]}";
    struct api_response res = call("POST", "/v1/attention/batch", body, NULL, 0);
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse_body(&res);
    json_t *results = json_object_get(doc, "results");
    ck_assert_uint_eq(json_array_size(results), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(results, 0), "status")), 200);
    json_t *bad = json_array_get(results, 1);
    ck_assert_int_eq(json_integer_value(json_object_get(bad, "status")), 422);
    json_t *err = json_array_get(json_object_get(json_object_get(bad, "body"), "errors"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(err, "pointer")), "/items/1/k/2");
    /* Experiment 1: [1,0] → [2,0] sharpens toward key 0: e^2 / (e^2 + 1 + e^1.6) */
    json_t *s0 = json_object_get(json_object_get(json_array_get(results, 0), "body"), "summary");
    double want = exp(2) / (exp(2) + 1 + exp(1.6));
    ck_assert(fabs(json_number_value(json_array_get(json_object_get(s0, "max_weight"), 0)) - want)
              < 1e-15);
    /* Experiment 3: the opposite first key loses; key 2 (과일) wins, rounded to 2 decimals */
    ck_assert_ptr_nonnull(strstr(res.body, "\"argmax\":[2],\"max_weight\":[0.62]"));
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_batch_limits_and_shape)
{
    struct api_context ctx = {
        .limits = api_default_limits(), .ready = true, .http_library = "0.9.75"};
    ctx.limits.max_batch = 2;
    ctx.limits.max_cells = 6;
    const struct { const char *body; const char *type; const char *pointer; } cases[] = {
        { "{\"items\":[]}", "invalid-value", "/items" },
        { "{\"items\":{}}", "invalid-value", "/items" },
        { "{}", "missing-field", "/items" },
        { "[1]", "invalid-value", "" },
        { "{\"itmes\":[]}", "unknown-field", "/itmes" },
        { "{\"items\":[{},{},{}]}", "limit-exceeded", "/items" },
        { "{\"items\":[{\"q\":[[1],[1]],\"k\":[[1],[1]],\"v\":[[1],[1]]},"
          "{\"q\":[[1],[1]],\"k\":[[1],[1]],\"v\":[[1],[1]]}]}", "limit-exceeded", "/items/1" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct api_request req = { "POST", "/v1/attention/batch", NULL, 0, NULL, NULL,
                                   cases[i].body, strlen(cases[i].body), NULL, NULL };
        struct api_response res = { 0 };
        api_handle(&ctx, &req, &res);
        ck_assert_msg(res.status == 422, "case %zu: %d", i, res.status);
        json_t *doc = parse_body(&res);
        char type[64];
        snprintf(type, sizeof type, "/problems/%s", cases[i].type);
        ck_assert_msg(strcmp(json_string_value(json_object_get(doc, "type")), type) == 0,
                      "case %zu: %s", i, res.body);
        json_t *err = json_array_get(json_object_get(doc, "errors"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(err, "pointer")), cases[i].pointer);
        json_decref(doc);
        api_response_deinit(&res);
    }
}
END_TEST

static Suite *multihead_suite(void)
{
    Suite *s = suite_create("multihead");
    TCase *core = tcase_create("Core");
    tcase_set_timeout(core, 60);
    tcase_add_test(core, test_forward_matches_reference);
    tcase_add_test(core, test_forward_threads_same_bits);
    tcase_add_test(core, test_kv_head_grouping);
    tcase_add_test(core, test_trace_sizes);
    tcase_add_test(core, test_projection_overflow_fault);
    suite_add_tcase(s, core);

    TCase *torch = tcase_create("Torch");
    tcase_add_loop_test(torch, test_matches_torch, 0, 8);
    suite_add_tcase(s, torch);

    TCase *api = tcase_create("Api");
    tcase_add_test(api, test_random_generator_documented);
    tcase_add_test(api, test_random_self_attention_seed000_sizes);
    tcase_add_test(api, test_random_fills_only_missing);
    tcase_add_test(api, test_cross_gqa_steps);
    tcase_add_loop_test(api, test_multihead_bad_requests, 0, sizeof mh_bad / sizeof mh_bad[0]);
    suite_add_tcase(s, api);

    TCase *shapes = tcase_create("Shapes");
    tcase_add_test(shapes, test_shapes_seed000);
    tcase_add_test(shapes, test_shapes_cross_gqa);
    tcase_add_loop_test(shapes, test_shapes_bad_parameters, 0,
                        sizeof shape_bad / sizeof shape_bad[0]);
    suite_add_tcase(s, shapes);

    TCase *batch = tcase_create("Batch");
    tcase_add_test(batch, test_batch_independent_items);
    tcase_add_test(batch, test_batch_limits_and_shape);
    suite_add_tcase(s, batch);
    return s;
}

int main(void)
{
    return suite_run(multihead_suite());
}
