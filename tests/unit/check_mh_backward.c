/*
 * tests/unit/check_mh_backward.c — core/mh_backward.h against central finite differences
 * of the naive multi-head reference: self- and cross-attention, GQA and multi-query, both
 * weight layouts, biases, a causal mask and a bias on the scores, every input and weight.
 */
#include <check.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/mh_backward.h"
#include "core/multihead.h"
#include "tests/unit/suite_run.h"

static uint64_t rng_state = 0x3e4d5c6bull;

static double rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1.0p-53 * 2 - 1;
}

static double *randoms(size_t n)
{
    double *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = rnd();
    return x;
}

struct mh {
    size_t n_q, n_k, d, h, kv;
    bool cross, transposed;
    double *x_q, *x_kv, *w[4], *b[4], *bias, *d_out;
    struct attn_matrix xq, xkv, wm[4], bm;
    struct attn_mh_problem p;
};

static void mh_init(struct mh *m, int r)
{
    memset(m, 0, sizeof *m);
    m->h = r % 3 == 0 ? 4 : 2;
    m->kv = r % 2 == 0 ? 1 : m->h;
    m->d = 2 * m->h;
    m->n_q = 2 + (size_t)r % 3;
    m->cross = r % 4 >= 2;
    m->n_k = m->cross ? 1 + (size_t)(r * 5) % 4 : m->n_q;
    m->transposed = r % 5 >= 3;
    size_t kvd = m->kv * (m->d / m->h);
    m->x_q = randoms(m->n_q * m->d);
    m->x_kv = m->cross ? randoms(m->n_k * m->d) : m->x_q;
    size_t rows[4] = { m->d, m->transposed ? kvd : m->d, m->transposed ? kvd : m->d, m->d };
    size_t cols[4] = { m->d, m->transposed ? m->d : kvd, m->transposed ? m->d : kvd, m->d };
    for (int i = 0; i < 4; i++) {
        m->w[i] = randoms(rows[i] * cols[i]);
        m->wm[i] = attn_matrix_view(m->w[i], rows[i], cols[i]);
        m->b[i] = r % 2 == 1 ? randoms(i == 1 || i == 2 ? kvd : m->d) : NULL;
    }
    m->bias = randoms(m->n_q * m->n_k);
    m->d_out = randoms(m->n_q * m->d);
    m->xq = attn_matrix_view(m->x_q, m->n_q, m->d);
    m->xkv = m->cross ? attn_matrix_view(m->x_kv, m->n_k, m->d) : m->xq;
    m->bm = attn_matrix_view(m->bias, m->n_q, m->n_k);
    m->p = (struct attn_mh_problem){
        .x_q = &m->xq, .x_kv = m->cross ? &m->xkv : &m->xq, .w_q = &m->wm[0], .w_k = &m->wm[1],
        .w_v = &m->wm[2], .w_o = &m->wm[3], .b_q = m->b[0], .b_k = m->b[1], .b_v = m->b[2],
        .b_o = m->b[3], .transposed_weights = m->transposed, .heads = m->h,
        .kv_heads = m->kv, .bias = r % 3 == 1 ? &m->bm : NULL, .scale = 0.6,
    };
    if (r % 4 == 1 && !m->cross)
        m->p.mask.kind = ATTN_MASK_CAUSAL;
}

static void mh_free(struct mh *m)
{
    free(m->x_q);
    if (m->cross)
        free(m->x_kv);
    for (int i = 0; i < 4; i++)
        free(m->w[i]), free(m->b[i]);
    free(m->bias), free(m->d_out);
}

/* L = Σ dO ∘ output by the naive reference. */
static double loss(struct mh *m)
{
    struct attn_mh_trace t;
    ck_assert_int_eq(attn_mh_trace_alloc(&t, m->n_q, m->n_k, m->d, m->h, m->kv), ATTN_OK);
    ck_assert_int_eq(attn_mh_reference(&t, &m->p), ATTN_OK);
    long double l = 0;
    for (size_t c = 0; c < m->n_q * m->d; c++)
        l += (long double)m->d_out[c] * t.output.data[c];
    attn_mh_trace_free(&t);
    return (double)l;
}

static double central(struct mh *m, double *x)
{
    double keep = *x, step = 1e-6;
    *x = keep + step;
    double up = loss(m);
    *x = keep - step;
    double down = loss(m);
    *x = keep;
    return (up - down) / (2 * step);
}

static void expect_all(struct mh *m, const double *got, double *x, size_t n, const char *what,
                       int r)
{
    for (size_t c = 0; c < n; c++) {
        double want = central(m, &x[c]);
        ck_assert_msg(fabs(got[c] - want) <= 2e-7 * (1 + fabs(want)), "round %d %s[%zu]: %.12g, "
                      "finite difference %.12g", r, what, c, got[c], want);
    }
}

START_TEST(test_finite_differences)
{
    for (int r = 0; r < 24; r++) {
        struct mh m;
        mh_init(&m, r);
        struct attn_mh_trace fwd;
        struct attn_mh_grads g;
        ck_assert_int_eq(attn_mh_trace_alloc(&fwd, m.n_q, m.n_k, m.d, m.h, m.kv), ATTN_OK);
        ck_assert_int_eq(attn_mh_forward(&fwd, &m.p), ATTN_OK);
        ck_assert_int_eq(attn_mh_grads_alloc(&g, m.n_q, m.n_k, m.d, m.h, m.kv), ATTN_OK);
        struct attn_matrix dm = attn_matrix_view(m.d_out, m.n_q, m.d);
        ck_assert_int_eq(attn_mh_backward(&g, &m.p, NULL, NULL, &fwd, &dm), ATTN_OK);
        ck_assert(g.self == !m.cross);
        expect_all(&m, g.grad_x_q.data, m.x_q, m.n_q * m.d, m.cross ? "grad_x_q" : "grad_x", r);
        if (m.cross)
            expect_all(&m, g.grad_x_kv.data, m.x_kv, m.n_k * m.d, "grad_x_kv", r);
        const struct attn_matrix *gw[4] = { &g.grad_w_q, &g.grad_w_k, &g.grad_w_v, &g.grad_w_o };
        static const char *const wn[4] = { "grad_w_q", "grad_w_k", "grad_w_v", "grad_w_o" };
        const double *gb[4] = { g.grad_b_q, g.grad_b_k, g.grad_b_v, g.grad_b_o };
        for (int i = 0; i < 4; i++) {
            ck_assert_uint_eq(gw[i]->rows, m.wm[i].rows); /* in the layout sent */
            expect_all(&m, gw[i]->data, m.w[i], m.wm[i].rows * m.wm[i].cols, wn[i], r);
            if (m.b[i] != NULL) /* b_k and b_v are kv·d_k wide, b_q and b_o d_model */
                expect_all(&m, gb[i], m.b[i], i == 1 || i == 2 ? m.kv * (m.d / m.h) : m.d,
                           "grad_b", r);
        }
        if (m.p.bias != NULL)
            expect_all(&m, g.grad_bias.data, m.bias, m.n_q * m.n_k, "grad_bias", r);
        attn_mh_grads_free(&g);
        attn_mh_trace_free(&fwd);
        mh_free(&m);
    }
}
END_TEST

START_TEST(test_bad_calls)
{
    struct attn_mh_grads g;
    ck_assert_int_eq(attn_mh_grads_alloc(&g, 2, 2, 6, 4, 1), ATTN_EINVAL); /* 4 ∤ 6 */
    ck_assert_ptr_null(g.block);
    ck_assert_uint_eq(attn_mh_grads_bytes(2, 2, 6, 4, 1), 0);
    struct mh m;
    mh_init(&m, 0);
    struct attn_mh_trace fwd;
    ck_assert_int_eq(attn_mh_trace_alloc(&fwd, m.n_q, m.n_k, m.d, m.h, m.kv), ATTN_OK);
    ck_assert_int_eq(attn_mh_forward(&fwd, &m.p), ATTN_OK);
    ck_assert_int_eq(attn_mh_grads_alloc(&g, m.n_q, m.n_k, m.d, m.h, m.kv), ATTN_OK);
    struct attn_matrix narrow = attn_matrix_view(m.d_out, m.n_q, m.d - 1);
    ck_assert_int_eq(attn_mh_backward(&g, &m.p, NULL, NULL, &fwd, &narrow), ATTN_EINVAL);
    attn_mh_grads_free(&g);
    attn_mh_grads_free(&g); /* twice: a no-op */
    attn_mh_trace_free(&fwd);
    mh_free(&m);
}
END_TEST

static Suite *mh_backward_suite(void)
{
    Suite *s = suite_create("mh_backward");
    TCase *tc = tcase_create("Gradients");
    tcase_add_test(tc, test_finite_differences);
    tcase_add_test(tc, test_bad_calls);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(mh_backward_suite());
}
