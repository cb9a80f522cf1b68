/*
 * tests/unit/check_backward.c — core/backward.h against finite differences: on random
 * problems with every variant (RoPE both layouts, softcap, ALiBi, a window with sink
 * tokens, the sink logit, dropout, a bias, masks, the training masks, fully masked rows),
 * each gradient of L = Σ dO ∘ output with respect to q, k, v, the bias and the sink logit
 * is held to (L(x + h) − L(x − h)) / 2h, the forward pass computed by the naive reference.
 * This guards the formulas without any outside tool; tests/data/backward_torch.json holds
 * them to torch.autograd over HTTP. Also: the steps' own identities (delta = Σ P·dP,
 * grad_v = Pᵀ·dO by a loop) and the bad calls.
 */
#include <check.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "core/backward.h"
#include "core/variants.h"
#include "tests/unit/suite_run.h"

static uint64_t rng_state = 0xbac4a4dull;

static double rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1.0p-53 * 2 - 1;
}

/* One problem with its own arrays, variants and dO. */
struct problem {
    size_t n_q, n_k, d_k, d_v;
    double *q, *k, *v, *bias, *d_out;
    unsigned char *allow;
    struct attn_matrix qm, km, vm, bm;
    struct attn_problem p;
    struct attn_rope rope;
    struct attn_variants var;
    size_t starts_q[3], starts_k[3];
};

static double *randoms(size_t n)
{
    double *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = rnd();
    return x;
}

/* Round r's problem: sizes, a mask kind and a mix of variants, each on in some rounds. */
static void problem_init(struct problem *pr, int r)
{
    memset(pr, 0, sizeof *pr);
    pr->n_q = 1 + (size_t)r % 5;
    pr->n_k = 2 + (size_t)(r * 7) % 5;
    pr->d_k = 2 * (1 + (size_t)r % 3);
    pr->d_v = 1 + (size_t)r % 3;
    pr->q = randoms(pr->n_q * pr->d_k);
    pr->k = randoms(pr->n_k * pr->d_k);
    pr->v = randoms(pr->n_k * pr->d_v);
    pr->bias = randoms(pr->n_q * pr->n_k);
    pr->d_out = randoms(pr->n_q * pr->d_v);
    pr->allow = malloc(pr->n_q * pr->n_k);
    for (size_t c = 0; c < pr->n_q * pr->n_k; c++)
        pr->allow[c] = c % 5 != 3 && (r % 7 != 2 || c >= pr->n_k); /* round 2: row 0 empty */
    pr->qm = attn_matrix_view(pr->q, pr->n_q, pr->d_k);
    pr->km = attn_matrix_view(pr->k, pr->n_k, pr->d_k);
    pr->vm = attn_matrix_view(pr->v, pr->n_k, pr->d_v);
    pr->bm = attn_matrix_view(pr->bias, pr->n_q, pr->n_k);
    pr->p = (struct attn_problem){ .q = &pr->qm, .k = &pr->km, .v = &pr->vm, .scale = 0.7 };
    pr->p.bias = r % 3 == 0 ? &pr->bm : NULL;
    if (r % 4 == 1)
        pr->p.mask.kind = ATTN_MASK_CAUSAL;
    if (r % 7 == 2)
        pr->p.mask = (struct attn_mask){ ATTN_MASK_CELLS, pr->allow, pr->n_q };
    struct attn_variants *v = &pr->var;
    if (r % 2 == 0) {
        pr->rope = (struct attn_rope){ .base = r % 4 == 0 ? 10000 : 7.5,
                                       .layout = (enum attn_rope_layout)((r / 2) % 2),
                                       .rotated = r % 3 == 0 ? 2 : pr->d_k };
        ck_assert_int_eq(attn_rope_prepare(&pr->rope, pr->n_q, pr->n_k), ATTN_OK);
        v->rope = &pr->rope;
    }
    v->softcap = r % 3 == 1 ? 0.9 : 0;
    v->alibi = r % 5 == 2;
    v->alibi_slope = 0.3;
    v->window = r % 6 == 3;
    v->has_left = true;
    v->left = 1;
    v->sink_tokens = 1;
    v->sink = r % 4 == 3;
    v->sink_logit = 0.4;
    v->dropout = r % 5 == 4;
    v->dropout_p = 0.3;
    v->dropout_seed = (uint64_t)r;
    v->top_left = r % 8 == 5;
    v->chunk = r % 9 == 6 ? 2 : 0;
    if (r % 10 == 7 && pr->n_q >= 2) { /* two documents: queries split 1 + rest, keys 1 + rest */
        pr->starts_q[1] = 1, pr->starts_q[2] = pr->n_q;
        pr->starts_k[1] = 1, pr->starts_k[2] = pr->n_k;
        v->doc_q = pr->starts_q, v->doc_k = pr->starts_k, v->n_docs = 2;
    }
}

static void problem_free(struct problem *pr)
{
    attn_rope_release(&pr->rope);
    free(pr->q), free(pr->k), free(pr->v), free(pr->bias), free(pr->d_out), free(pr->allow);
}

/* L = Σ dO ∘ output by the naive reference. */
static double loss(struct problem *pr)
{
    struct attn_vtrace t;
    ck_assert_int_eq(attn_vtrace_alloc(&t, pr->n_q, pr->n_k, pr->d_k, pr->d_v, &pr->var), ATTN_OK);
    ck_assert_int_eq(attn_reference_variants(&t, &pr->p, &pr->var), ATTN_OK);
    long double l = 0;
    for (size_t c = 0; c < pr->n_q * pr->d_v; c++)
        l += (long double)pr->d_out[c] * t.base.output.data[c];
    attn_vtrace_free(&t);
    return (double)l;
}

/* (L(x + h) − L(x − h)) / 2h for the number at x. */
static double central(struct problem *pr, double *x)
{
    double keep = *x, h = 1e-6 * (fabs(keep) > 1 ? fabs(keep) : 1);
    *x = keep + h;
    double up = loss(pr);
    *x = keep - h;
    double down = loss(pr);
    *x = keep;
    return (up - down) / (2 * h);
}

static void expect_near(double got, double want, double scale, const char *what, int r, size_t c)
{
    ck_assert_msg(fabs(got - want) <= 2e-7 * scale, "round %d %s[%zu]: %.12g, finite difference "
                  "%.12g", r, what, c, got, want);
}

/* Round r's problem, its forward pass (the fast one) and every gradient of it. */
static void forward_and_back(struct problem *pr, int r, struct attn_vtrace *fwd,
                             struct attn_grads *g)
{
    problem_init(pr, r);
    ck_assert_int_eq(attn_vtrace_alloc(fwd, pr->n_q, pr->n_k, pr->d_k, pr->d_v, &pr->var), ATTN_OK);
    ck_assert_int_eq(attn_forward_variants(fwd, &pr->p, &pr->var), ATTN_OK);
    ck_assert_int_eq(attn_grads_alloc(g, pr->n_q, pr->n_k, pr->d_k, pr->d_v), ATTN_OK);
    struct attn_matrix dm = attn_matrix_view(pr->d_out, pr->n_q, pr->d_v);
    ck_assert_int_eq(attn_backward(g, &pr->p, &pr->var, fwd, &dm), ATTN_OK);
}

/* Every gradient of round r against finite differences. */
START_TEST(test_finite_differences)
{
    for (int r = 0; r < 60; r++) {
        struct problem pr;
        struct attn_vtrace fwd;
        struct attn_grads g;
        forward_and_back(&pr, r, &fwd, &g);
        double scale = 1;
        for (size_t c = 0; c < pr.n_q * pr.d_v; c++)
            scale = fmax(scale, fabs(pr.d_out[c]));
        for (size_t c = 0; c < pr.n_q * pr.d_k; c++)
            expect_near(g.grad_q.data[c], central(&pr, &pr.q[c]), scale, "grad_q", r, c);
        for (size_t c = 0; c < pr.n_k * pr.d_k; c++)
            expect_near(g.grad_k.data[c], central(&pr, &pr.k[c]), scale, "grad_k", r, c);
        for (size_t c = 0; c < pr.n_k * pr.d_v; c++)
            expect_near(g.grad_v.data[c], central(&pr, &pr.v[c]), scale, "grad_v", r, c);
        for (size_t c = 0; pr.p.bias != NULL && c < pr.n_q * pr.n_k; c++) /* ∂L/∂bias = dS */
            expect_near(g.grad_masked.data[c], central(&pr, &pr.bias[c]), scale, "grad_bias", r, c);
        if (pr.var.sink)
            expect_near(g.grad_sink_logit, central(&pr, &pr.var.sink_logit), scale,
                        "grad_sink_logit", r, 0);
        attn_grads_free(&g);
        attn_vtrace_free(&fwd);
        problem_free(&pr);
    }
}
END_TEST

/* delta = Σ_j P_ij·dP_ij, grad_v = mixᵀ·dO and dS = P(dP − D) by loops; blocked cells 0. */
START_TEST(test_step_identities)
{
    for (int r = 0; r < 40; r++) {
        struct problem pr;
        struct attn_vtrace fwd;
        struct attn_grads g;
        forward_and_back(&pr, r, &fwd, &g);
        const double *mix = pr.var.dropout ? fwd.dropped.data : fwd.base.weights.data;
        for (size_t i = 0; i < pr.n_q; i++) {
            long double d = 0;
            for (size_t j = 0; j < pr.n_k; j++)
                d += (long double)fwd.base.weights.data[i * pr.n_k + j] *
                     g.grad_weights.data[i * pr.n_k + j];
            ck_assert_msg(fabs(g.delta[i] - (double)d) <= 1e-12 * (1 + fabs((double)d)),
                          "round %d delta[%zu]", r, i);
            for (size_t j = 0; j < pr.n_k; j++) {
                size_t c = i * pr.n_k + j;
                if (fwd.base.masked.data[c] == -INFINITY)
                    ck_assert_msg(g.grad_masked.data[c] == 0 && !signbit(g.grad_masked.data[c]),
                                  "round %d: a blocked cell's dS is %g", r, g.grad_masked.data[c]);
                else
                    ck_assert(fabs(g.grad_masked.data[c] - fwd.base.weights.data[c] *
                                   (g.grad_weights.data[c] - g.delta[i])) <= 1e-15);
            }
        }
        for (size_t j = 0; j < pr.n_k; j++)
            for (size_t c = 0; c < pr.d_v; c++) {
                long double s = 0;
                for (size_t i = 0; i < pr.n_q; i++)
                    s += (long double)mix[i * pr.n_k + j] * pr.d_out[i * pr.d_v + c];
                ck_assert(fabs(g.grad_v.data[j * pr.d_v + c] - (double)s) <= 1e-13);
            }
        attn_grads_free(&g);
        attn_vtrace_free(&fwd);
        problem_free(&pr);
    }
}
END_TEST

/* The streamed backward's grad_q, grad_k, grad_v, delta and sink gradient against the full
 * one's, at 1e-12 relative to each gradient's largest value: the small rounds (dropout
 * aside, which it refuses) and problems of several row and key blocks. */
static void expect_close(const double *got, const double *want, size_t n, const char *what, int r)
{
    double scale = 1e-300;
    for (size_t c = 0; c < n; c++)
        scale = fmax(scale, fabs(want[c]));
    for (size_t c = 0; c < n; c++)
        ck_assert_msg(fabs(got[c] - want[c]) <= 1e-12 * scale, "round %d %s[%zu]: %.17g, full "
                      "%.17g", r, what, c, got[c], want[c]);
}

static void stream_against_full(struct problem *pr, int r)
{
    struct attn_vtrace fwd;
    struct attn_grads g;
    struct attn_stream_grads sg;
    ck_assert_int_eq(attn_vtrace_alloc(&fwd, pr->n_q, pr->n_k, pr->d_k, pr->d_v, &pr->var), ATTN_OK);
    ck_assert_int_eq(attn_forward_variants(&fwd, &pr->p, &pr->var), ATTN_OK);
    ck_assert_int_eq(attn_grads_alloc(&g, pr->n_q, pr->n_k, pr->d_k, pr->d_v), ATTN_OK);
    ck_assert_int_eq(attn_stream_grads_alloc(&sg, pr->n_q, pr->n_k, pr->d_k, pr->d_v), ATTN_OK);
    struct attn_matrix dm = attn_matrix_view(pr->d_out, pr->n_q, pr->d_v);
    ck_assert_int_eq(attn_backward(&g, &pr->p, &pr->var, &fwd, &dm), ATTN_OK);
    ck_assert_int_eq(attn_backward_stream(&sg, &pr->p, &pr->var, &fwd.base.output,
                                          fwd.base.summary.lse, &dm), ATTN_OK);
    expect_close(sg.grad_q.data, g.grad_q.data, pr->n_q * pr->d_k, "grad_q", r);
    expect_close(sg.grad_k.data, g.grad_k.data, pr->n_k * pr->d_k, "grad_k", r);
    expect_close(sg.grad_v.data, g.grad_v.data, pr->n_k * pr->d_v, "grad_v", r);
    expect_close(sg.delta, g.delta, pr->n_q, "delta", r);
    expect_close(&sg.grad_sink_logit, &g.grad_sink_logit, 1, "grad_sink_logit", r);
    attn_stream_grads_free(&sg);
    attn_grads_free(&g);
    attn_vtrace_free(&fwd);
}

START_TEST(test_streamed_backward)
{
    for (int r = 0; r < 60; r++) {
        struct problem pr;
        problem_init(&pr, r);
        if (!pr.var.dropout)
            stream_against_full(&pr, r);
        problem_free(&pr);
    }
    /* Several row and key blocks: 300 queries over 1,100 keys, with documents and a window,
     * then causal with RoPE and softcap. */
    for (int r = 0; r < 2; r++) {
        struct problem pr;
        memset(&pr, 0, sizeof pr);
        pr.n_q = 300, pr.n_k = 1100, pr.d_k = 8, pr.d_v = 3;
        pr.q = randoms(pr.n_q * pr.d_k), pr.k = randoms(pr.n_k * pr.d_k);
        pr.v = randoms(pr.n_k * pr.d_v), pr.d_out = randoms(pr.n_q * pr.d_v);
        pr.bias = NULL, pr.allow = NULL;
        pr.qm = attn_matrix_view(pr.q, pr.n_q, pr.d_k);
        pr.km = attn_matrix_view(pr.k, pr.n_k, pr.d_k);
        pr.vm = attn_matrix_view(pr.v, pr.n_k, pr.d_v);
        pr.p = (struct attn_problem){ .q = &pr.qm, .k = &pr.km, .v = &pr.vm, .scale = 0.4 };
        if (r == 0) {
            pr.starts_q[1] = 100, pr.starts_q[2] = 300;
            pr.starts_k[1] = 600, pr.starts_k[2] = 1100;
            pr.var = (struct attn_variants){ .doc_q = pr.starts_q, .doc_k = pr.starts_k,
                                             .n_docs = 2, .window = true, .has_left = true,
                                             .left = 90, .sink_tokens = 3, .sink = true,
                                             .sink_logit = 0.2 };
            pr.p.mask.kind = ATTN_MASK_CAUSAL;
        } else {
            pr.rope = (struct attn_rope){ .base = 500, .rotated = 8 };
            ck_assert_int_eq(attn_rope_prepare(&pr.rope, pr.n_q, pr.n_k), ATTN_OK);
            pr.var = (struct attn_variants){ .rope = &pr.rope, .softcap = 2, .alibi = true,
                                             .alibi_slope = 0.01 };
            pr.p.mask.kind = ATTN_MASK_CAUSAL;
        }
        stream_against_full(&pr, 100 + r);
        problem_free(&pr);
    }
}
END_TEST

START_TEST(test_bad_calls)
{
    struct problem pr;
    problem_init(&pr, 1);
    struct attn_vtrace fwd;
    struct attn_grads g, wrong;
    ck_assert_int_eq(attn_vtrace_alloc(&fwd, pr.n_q, pr.n_k, pr.d_k, pr.d_v, &pr.var), ATTN_OK);
    ck_assert_int_eq(attn_forward_variants(&fwd, &pr.p, &pr.var), ATTN_OK);
    ck_assert_int_eq(attn_grads_alloc(&g, pr.n_q, pr.n_k, pr.d_k, pr.d_v), ATTN_OK);
    ck_assert_int_eq(attn_grads_alloc(&wrong, pr.n_q + 1, pr.n_k, pr.d_k, pr.d_v), ATTN_OK);
    struct attn_matrix dm = attn_matrix_view(pr.d_out, pr.n_q, pr.d_v);
    struct attn_matrix short_dm = attn_matrix_view(pr.d_out, pr.n_q, pr.d_v + 1);
    ck_assert_int_eq(attn_backward(&wrong, &pr.p, &pr.var, &fwd, &dm), ATTN_EINVAL);
    ck_assert_int_eq(attn_backward(&g, &pr.p, &pr.var, &fwd, &short_dm), ATTN_EINVAL);
    ck_assert_int_eq(attn_backward(&g, &pr.p, &pr.var, &fwd, NULL), ATTN_EINVAL);
    fwd.base.fault.step = ATTN_STEP_WEIGHTS; /* a forward pass that faulted has no gradient */
    ck_assert_int_eq(attn_backward(&g, &pr.p, &pr.var, &fwd, &dm), ATTN_EINVAL);
    attn_grads_free(&wrong);
    ck_assert_int_eq(attn_grads_alloc(&wrong, 0, 1, 1, 1), ATTN_EINVAL);
    ck_assert_ptr_null(wrong.block);
    attn_grads_free(&g);
    attn_grads_free(&wrong); /* zeroed by the refused alloc: a no-op */
    attn_vtrace_free(&fwd);
    problem_free(&pr);
    ck_assert_uint_eq(attn_grads_bytes(SIZE_MAX, 2, 1, 1), 0);
}
END_TEST

static Suite *backward_suite(void)
{
    Suite *s = suite_create("backward");
    TCase *tc = tcase_create("Gradients");
    tcase_add_test(tc, test_finite_differences);
    tcase_add_test(tc, test_step_identities);
    tcase_add_test(tc, test_streamed_backward);
    tcase_add_test(tc, test_bad_calls);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(backward_suite());
}
