/*
 * tests/unit/check_decode.c — unit tests of generation with a KV cache (core/decode.h).
 *
 * One Check suite, "decode", with the test cases
 *   Step     attn_decode_attend, one query against a cache (strided like a kv head's
 *            columns), against a naive loop written from the formulas: scores, scale,
 *            softcap (libm's tanh), bias, ALiBi −m·(t − j), the window with sink tokens,
 *            the sink logit in the softmax's sum, weightsᵀ·V; to 1e-12;
 *   Run      attn_decode_run on random problems (1..4 heads, every kv grouping, both
 *            weight layouts, biases, RoPE, ALiBi, softcap, windows, sinks): each token's
 *            q, weights and output, and the caches, against the rows of the full causal
 *            pass by the naive reference (attn_mh_reference_variants); weights past t
 *            are those the full pass hides;
 *   Refuse   what decode does not run (ATTN_EINVAL): cross-attention, a mask other than
 *            causal, dropout, documents, p outside (0, n); a fault at an input's +inf.
 */
#include <check.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/decode.h"
#include "tests/unit/rand_inputs.h"
#include "tests/unit/suite_run.h"

#define EXPECT(cond, ...)              \
    do {                               \
        if (!(cond))                   \
            ck_abort_msg(__VA_ARGS__); \
    } while (0)

static bool near(double got, double want)
{
    return got == want || fabs(got - want) <= 1e-12 * fabs(want) + 1e-14;
}

/* ---- Step: one query against a cache, by the formulas ---- */

static void naive_attend(double *w, double *out, const struct attn_decode_query *dq)
{
    const struct attn_variants *v = dq->variants;
    size_t len = dq->t + 1, d_k = dq->k.cols;
    double max = v->sink ? v->sink_logit : -INFINITY;
    for (size_t j = 0; j < len; j++) {
        double s = 0;
        for (size_t c = 0; c < d_k; c++)
            s += dq->q[c] * dq->k.data[j * dq->k.stride + c];
        s *= dq->scale;
        if (v->softcap > 0)
            s = v->softcap * tanh(s / v->softcap);
        s += dq->bias != NULL ? dq->bias[j] : 0.0;
        s -= v->alibi ? v->alibi_slope * (double)(dq->t - j) : 0.0;
        bool hidden = v->window && j >= v->sink_tokens && v->has_left && j + v->left < dq->t;
        w[j] = hidden ? -INFINITY : s;
        max = w[j] > max ? w[j] : max;
    }
    double sum = v->sink ? exp(v->sink_logit - max) : 0.0;
    for (size_t j = 0; j < len; j++)
        sum += exp(w[j] - max);
    for (size_t j = 0; j < len; j++)
        w[j] = exp(w[j] - max) / sum;
    for (size_t c = 0; c < d_k; c++) {
        out[c] = 0;
        for (size_t j = 0; j < len; j++)
            out[c] += w[j] * dq->v.data[j * dq->v.stride + c];
    }
}

START_TEST(test_step_naive)
{
    uint64_t s = 0xdec0de00u + (uint64_t)_i;
    size_t d_k = rng_size(&s, 1, 6), stride = d_k + rng_size(&s, 0, 5);
    size_t n = rng_size(&s, 2, 40), t = rng_size(&s, 0, n - 1), len = t + 1;
    double *q = rand_fill(&s, d_k, -2, 2), *k = rand_fill(&s, len * stride, -2, 2);
    double *v = rand_fill(&s, len * stride, -3, 3), *bias = rand_fill(&s, len, -1, 1);
    struct attn_variants var = { 0 };
    var.softcap = _i % 3 == 0 ? rng_real(&s, 0.5, 3) : 0;
    var.alibi = _i % 4 == 1, var.alibi_slope = rng_real(&s, 0.01, 0.5);
    var.window = _i % 2 == 1, var.has_left = true, var.left = rng_size(&s, 0, 5);
    var.sink_tokens = _i % 5 == 0 ? rng_size(&s, 0, 3) : 0;
    var.sink = _i % 3 == 2, var.sink_logit = rng_real(&s, -1, 2);
    const struct attn_decode_query dq = {
        .q = q, .k = { k, len, d_k, stride }, .v = { v, len, d_k, stride },
        .bias = _i % 2 == 0 ? bias : NULL, .scale = rng_real(&s, 0.2, 1.5), .variants = &var,
        .t = t, .n = n,
    };
    double w[40], out[6], w_ref[40], out_ref[6];
    size_t bad = 0;
    ck_assert_int_eq(attn_decode_attend(w, out, &dq, &bad), ATTN_OK);
    naive_attend(w_ref, out_ref, &dq);
    for (size_t j = 0; j < len; j++)
        EXPECT(near(w[j], w_ref[j]), "case %d: weight %zu %.17g, naive %.17g", _i, j, w[j],
               w_ref[j]);
    for (size_t c = 0; c < d_k; c++)
        EXPECT(near(out[c], out_ref[c]), "case %d: out %zu %.17g, naive %.17g", _i, c, out[c],
               out_ref[c]);
    free(q), free(k), free(v), free(bias);
}
END_TEST

/* ---- Run: every token against the full causal pass's rows ---- */

struct problem {
    size_t n, d, heads, kv, d_k;
    double *x, *w[4], *b[4], *bias;
    struct attn_matrix mx, mw[4], mbias;
    struct attn_rope rope;
    struct attn_variants var[4];
    struct attn_mh_problem p;
};

static void problem_init(struct problem *pr, uint64_t *s, int i)
{
    static const size_t shapes[][3] = { { 4, 1, 1 }, { 8, 2, 1 }, { 8, 2, 2 }, { 12, 4, 2 },
                                        { 12, 4, 1 }, { 6, 3, 3 } };
    memset(pr, 0, sizeof *pr);
    const size_t *sh = shapes[i % 6];
    pr->n = rng_size(s, 2, 14), pr->d = sh[0], pr->heads = sh[1], pr->kv = sh[2];
    pr->d_k = pr->d / pr->heads;
    size_t kvc = pr->kv * pr->d_k, outs[4] = { pr->d, kvc, kvc, pr->d };
    bool tr = i % 2 == 1;
    pr->x = rand_fill(s, pr->n * pr->d, -1.5, 1.5);
    pr->mx = attn_matrix_view(pr->x, pr->n, pr->d);
    for (int w = 0; w < 4; w++) {
        pr->w[w] = rand_fill(s, pr->d * outs[w], -0.8, 0.8);
        pr->mw[w] = tr ? attn_matrix_view(pr->w[w], outs[w], pr->d)
                       : attn_matrix_view(pr->w[w], pr->d, outs[w]);
        pr->b[w] = i % 3 == 0 ? rand_fill(s, outs[w], -0.5, 0.5) : NULL;
    }
    pr->bias = i % 4 == 2 ? rand_fill(s, pr->n * pr->n, -1, 1) : NULL;
    pr->mbias = attn_matrix_view(pr->bias, pr->n, pr->n);
    pr->p = (struct attn_mh_problem){
        .x_q = &pr->mx, .x_kv = &pr->mx, .w_q = &pr->mw[0], .w_k = &pr->mw[1],
        .w_v = &pr->mw[2], .w_o = &pr->mw[3], .b_q = pr->b[0], .b_k = pr->b[1],
        .b_v = pr->b[2], .b_o = pr->b[3], .transposed_weights = tr, .heads = pr->heads,
        .kv_heads = pr->kv, .bias = pr->bias != NULL ? &pr->mbias : NULL,
        .mask = { .kind = ATTN_MASK_CAUSAL }, .scale = 1.0 / sqrt((double)pr->d_k),
    };
    size_t r = pr->d_k >= 2 ? pr->d_k / 2 * 2 : 0;
    if (i % 5 != 4 && r >= 2) {
        pr->rope = (struct attn_rope){ .base = 10000, .rotated = r,
                                       .layout = i % 2 ? ATTN_ROPE_INTERLEAVED : ATTN_ROPE_HALF };
        ck_assert_int_eq(attn_rope_prepare(&pr->rope, pr->n, pr->n), ATTN_OK);
    }
    double slopes[4];
    attn_alibi_slopes(pr->heads, slopes);
    for (size_t h = 0; h < pr->heads; h++) {
        struct attn_variants *v = &pr->var[h];
        v->rope = pr->rope.cos_q != NULL ? &pr->rope : NULL;
        v->softcap = i % 3 == 1 ? 2.5 : 0;
        v->alibi = i % 4 == 0, v->alibi_slope = slopes[h];
        v->window = i % 3 == 2, v->has_left = true, v->left = (size_t)(i % 4);
        v->sink_tokens = i % 6 == 2 ? 1 : 0;
        v->sink = i % 4 == 3, v->sink_logit = 0.25 * (double)h;
    }
}

static void problem_free(struct problem *pr)
{
    free(pr->x), free(pr->bias);
    for (int w = 0; w < 4; w++)
        free(pr->w[w]), free(pr->b[w]);
    attn_rope_release(&pr->rope);
}

START_TEST(test_run_matches_full_pass)
{
    uint64_t s = 0x6e6e0000u + (uint64_t)_i;
    struct problem pr;
    problem_init(&pr, &s, _i);
    size_t n = pr.n, h = pr.heads, p = rng_size(&s, 1, n - 1), d_k = pr.d_k;
    struct attn_mh_trace full;
    struct attn_vtrace vt[4];
    ck_assert_int_eq(attn_mh_trace_alloc(&full, n, n, pr.d, h, pr.kv), ATTN_OK);
    for (size_t i = 0; i < h; i++)
        ck_assert_int_eq(attn_vtrace_alloc_steps(&vt[i], n, n, d_k, &pr.var[i]), ATTN_OK);
    ck_assert_int_eq(attn_mh_reference_variants(&full, &pr.p, pr.var, vt), ATTN_OK);
    struct attn_decode dec;
    ck_assert_int_eq(attn_decode_alloc(&dec, n, p, pr.d, h, pr.kv), ATTN_OK);
    ck_assert_int_eq(attn_decode_run(&dec, &pr.p, pr.var), ATTN_OK);
    for (size_t t = p; t < n; t++) {
        const double *w = attn_decode_weights(&dec, t);
        for (size_t i = 0; i < h; i++)
            for (size_t j = 0; j < n; j++) { /* past t: the cells causal hides, 0 */
                double got = j <= t ? w[i * (t + 1) + j] : 0.0;
                double want = attn_at(&full.head[i].weights, t, j);
                EXPECT(near(got, want), "case %d t %zu head %zu key %zu: %.17g, full %.17g",
                       _i, t, i, j, got, want);
            }
        for (size_t c = 0; c < pr.d; c++) {
            EXPECT(near(attn_at(&dec.output, t - p, c), attn_at(&full.output, t, c)),
                   "case %d t %zu output %zu", _i, t, c);
            EXPECT(near(attn_at(&dec.q, t - p, c), attn_at(&full.q, t, c)), "case %d q", _i);
        }
    }
    /* the caches: V as projected, K as the heads' scores read it (rotated with RoPE) */
    for (size_t j = 0; j < n; j++)
        for (size_t c = 0; c < pr.kv * d_k; c++) {
            size_t g = c / d_k, head = g * h / pr.kv; /* the first query head of kv head g */
            double k = pr.var[0].rope != NULL ? attn_at(&vt[head].k_rope, j, c % d_k)
                                              : attn_at(&full.k, j, c);
            EXPECT(near(attn_at(&dec.cache_k, j, c), k), "case %d cache_k %zu %zu", _i, j, c);
            EXPECT(near(attn_at(&dec.cache_v, j, c), attn_at(&full.v, j, c)), "case %d cache_v",
                   _i);
        }
    attn_decode_free(&dec);
    attn_decode_free(&dec); /* twice: a no-op */
    for (size_t i = 0; i < h; i++)
        attn_vtrace_free(&vt[i]);
    attn_mh_trace_free(&full);
    problem_free(&pr);
}
END_TEST

/* ---- Refuse ---- */

START_TEST(test_refusals)
{
    uint64_t s = 0x5e5e;
    struct problem pr;
    problem_init(&pr, &s, 3);
    struct attn_decode dec;
    ck_assert_int_eq(attn_decode_alloc(&dec, pr.n, 0, pr.d, pr.heads, pr.kv), ATTN_EINVAL);
    ck_assert_ptr_null(dec.block);
    ck_assert_int_eq(attn_decode_alloc(&dec, pr.n, pr.n, pr.d, pr.heads, pr.kv), ATTN_EINVAL);
    ck_assert_uint_eq(attn_decode_cells(pr.n, pr.n, pr.d, pr.heads, pr.kv), 0);
    ck_assert_int_eq(attn_decode_alloc(&dec, pr.n, 1, pr.d, pr.heads, pr.kv), ATTN_OK);
    pr.p.mask.kind = ATTN_MASK_NONE;
    ck_assert_int_eq(attn_decode_run(&dec, &pr.p, pr.var), ATTN_EINVAL);
    pr.p.mask.kind = ATTN_MASK_CAUSAL;
    struct attn_matrix shorter = { pr.x, pr.n - 1, pr.d, pr.d }; /* cross-attention */
    pr.p.x_kv = &shorter;
    ck_assert_int_eq(attn_decode_run(&dec, &pr.p, pr.var), ATTN_EINVAL);
    pr.p.x_kv = &pr.mx;
    pr.var[1].dropout = true, pr.var[1].dropout_p = 0.1;
    ck_assert_int_eq(attn_decode_run(&dec, &pr.p, pr.var), ATTN_EINVAL);
    pr.var[1].dropout = false;
    pr.var[0].chunk = 2;
    ck_assert_int_eq(attn_decode_run(&dec, &pr.p, pr.var), ATTN_EINVAL);
    pr.var[0].chunk = 0;
    ck_assert_int_eq(attn_decode_run(&dec, &pr.p, pr.var), ATTN_OK);
    /* a token's input at +inf: its query is the first thing not finite */
    pr.x[(pr.n - 1) * pr.d] = INFINITY;
    ck_assert_int_eq(attn_decode_run(&dec, &pr.p, pr.var), ATTN_EOVERFLOW);
    ck_assert_int_eq(dec.fault.step, ATTN_MH_Q);
    ck_assert_uint_eq(dec.fault.row, pr.n - 1);
    /* in the prefill: its keys */
    pr.x[0] = INFINITY;
    ck_assert_int_eq(attn_decode_run(&dec, &pr.p, pr.var), ATTN_EOVERFLOW);
    ck_assert_int_eq(dec.fault.step, ATTN_MH_K);
    ck_assert_uint_eq(dec.fault.row, 0);
    attn_decode_free(&dec);
    problem_free(&pr);
}
END_TEST

static Suite *decode_suite(void)
{
    Suite *s = suite_create("decode");
    TCase *step = tcase_create("Step"), *run = tcase_create("Run"), *refuse = tcase_create("Refuse");
    tcase_add_loop_test(step, test_step_naive, 0, 60);
    suite_add_tcase(s, step);
    tcase_add_loop_test(run, test_run_matches_full_pass, 0, 60);
    suite_add_tcase(s, run);
    tcase_add_test(refuse, test_refusals);
    suite_add_tcase(s, refuse);
    return s;
}

int main(void)
{
    attn_blas_set_threads(1);
    return suite_run(decode_suite());
}
