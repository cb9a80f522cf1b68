/*
 * tests/unit/check_stream.c — unit tests of core/stream.h: the streamed pass against
 * attn_forward (and attn_forward_variants) on the same problem.
 *
 * One Check suite, "stream", with the test cases
 *   Agree     random problems of many shapes (n across the row and key blocks), every
 *             mask kind, bias, tied keys, rows lists with repeats, skip_summary:
 *             row_max, fully_masked and argmax exactly, the rest to 1e-12 relative;
 *             1, 2 and 3 threads bit for bit;
 *   Variants  RoPE, softcap, ALiBi, window and sink tokens, the sink logit, and
 *             combinations, against attn_forward_variants;
 *   Faults    +inf and 1e308 inputs: the fault attn_forward names (step, row, col);
 *   Sizes     attn_stream_bytes does not grow with n_k; bad arguments are ATTN_EINVAL.
 *
 * The full path is itself held to the naive reference by check_core and
 * check_variants; agreeing with it is the streamed pass's contract.
 */
#include <check.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "core/stream.h"
#include "core/variants.h"
#include "tests/unit/rand_inputs.h"
#include "tests/unit/suite_run.h"

/* |got − want| <= 1e-12·|want| + 1e-300; equal values (infinities too) match. */
static bool near(double got, double want)
{
    return got == want || fabs(got - want) <= 1e-12 * fabs(want) + 1e-300;
}

/* Checks inside loops over cells cost a branch until they fail (see check_core.c). */
#define EXPECT(cond, ...)              \
    do {                               \
        if (!(cond))                   \
            ck_abort_msg(__VA_ARGS__); \
    } while (0)

/*
 * An output cell: a weighted mean of a value column, summed in another order (blocks of
 * keys, the sum divided as it grows) than weights · V; where the mean nearly cancels, the
 * difference is relative to the values, not to the mean: 1e-13 of max |V| beside near().
 */
static double v_scale = 0;

static bool near_output(double got, double want)
{
    return near(got, want) || fabs(got - want) <= 1e-13 * v_scale;
}

/* A random problem in heap arrays; `kind` picks the mask (and bias). */
enum kind { K_NONE, K_CELLS, K_PADDING, K_CAUSAL, K_CAUSAL_TALL, K_CAUSAL_WIDE, K_BIAS, K_COUNT };

struct problem {
    size_t n_q, n_k, d_k, d_v;
    double *q, *k, *v, *bias;
    unsigned char *allow;
    struct attn_matrix mq, mk, mv, mb;
    struct attn_problem p;
};

/* Sizes up to `big` keys, so that some problems span several key blocks; a few keys
 * repeated, so that rows have tied maxima. */
static void problem_init(struct problem *pr, uint64_t seed, enum kind kind, size_t big)
{
    uint64_t s = seed;
    memset(pr, 0, sizeof *pr);
    pr->n_q = rng_size(&s, 1, 200);
    pr->n_k = rng_size(&s, 1, big);
    pr->d_k = rng_size(&s, 1, 40);
    pr->d_v = rng_size(&s, 1, 12);
    if (kind == K_CAUSAL)
        pr->n_k = pr->n_q;
    if (kind == K_CAUSAL_TALL && pr->n_q <= pr->n_k)
        pr->n_q = pr->n_k + rng_size(&s, 1, 70);
    if (kind == K_CAUSAL_WIDE && pr->n_k <= pr->n_q)
        pr->n_k = pr->n_q + rng_size(&s, 1, 700);
    pr->q = rand_fill(&s, pr->n_q * pr->d_k, -2, 2);
    pr->k = rand_fill(&s, pr->n_k * pr->d_k, -2, 2);
    pr->v = rand_fill(&s, pr->n_k * pr->d_v, -10, 10);
    v_scale = 10;
    for (size_t j = 1; j < pr->n_k; j++) /* one key in eight a copy of an earlier one */
        if (rng_next(&s) % 8 == 0)
            memcpy(pr->k + j * pr->d_k, pr->k + rng_size(&s, 0, j - 1) * pr->d_k,
                   pr->d_k * sizeof(double));
    pr->mq = attn_matrix_view(pr->q, pr->n_q, pr->d_k);
    pr->mk = attn_matrix_view(pr->k, pr->n_k, pr->d_k);
    pr->mv = attn_matrix_view(pr->v, pr->n_k, pr->d_v);
    pr->p = (struct attn_problem){ .q = &pr->mq, .k = &pr->mk, .v = &pr->mv,
                                   .scale = 1 / sqrt((double)pr->d_k) };
    if (kind == K_BIAS || kind == K_CELLS) {
        pr->bias = rand_fill(&s, pr->n_q * pr->n_k, -3, 3);
        pr->mb = attn_matrix_view(pr->bias, pr->n_q, pr->n_k);
        pr->p.bias = &pr->mb;
    }
    if (kind == K_CELLS || kind == K_PADDING) {
        size_t rows = kind == K_CELLS ? pr->n_q : 1;
        pr->allow = rand_allow(&s, rows, pr->n_k);
        pr->p.mask = (struct attn_mask){ ATTN_MASK_CELLS, pr->allow, rows };
    }
    if (kind == K_CAUSAL || kind == K_CAUSAL_TALL || kind == K_CAUSAL_WIDE)
        pr->p.mask.kind = ATTN_MASK_CAUSAL;
}

static void problem_free(struct problem *pr)
{
    free(pr->q);
    free(pr->k);
    free(pr->v);
    free(pr->bias);
    free(pr->allow);
}

/*
 * Rows get attn_forward's kernel, hence its bits, where OpenBLAS's row unroll is four
 * (core/stream.c, stream_kernel_of): its Haswell and Zen kernels. Elsewhere (SkylakeX's
 * kernels, which a machine without OPENBLAS_CORETYPE may get, and whose small-matrix
 * path goes by the call's size) a key block's scores may differ in the last bit from the
 * whole row's, listed rows or not: row_max is then held to near(), the 1e-12.
 */
static bool listed_loose = false;

static void set_listed_loose(const size_t *rows)
{
    const char *blas = attn_blas_info();
    (void)rows;
    listed_loose = strstr(blas, "Haswell") == NULL && strstr(blas, "Zen") == NULL;
}

/* Answer row r of s against row i of the full path's trace t (sink weights aside). */
static void expect_row_agrees(const struct attn_stream *s, size_t r, const struct attn_trace *t,
                              size_t i, const char *what)
{
    const struct attn_summary *a = &s->summary, *b = &t->summary;
    for (size_t c = 0; c < s->d_v; c++)
        EXPECT(near_output(attn_at(&s->output, r, c), attn_at(&t->output, i, c)),
               "%s: output[%zu][%zu] = %.17g, full %.17g", what, r, c, attn_at(&s->output, r, c),
               attn_at(&t->output, i, c));
    bool same_max = a->row_max[r] == b->row_max[i] ||
                    (listed_loose && near(a->row_max[r], b->row_max[i]));
    EXPECT(a->fully_masked[r] == b->fully_masked[i] && a->argmax[r] == b->argmax[i] && same_max,
           "%s: row %zu (query %zu): fully %d/%d argmax %zu/%zu row_max %.17g/%.17g", what, r, i,
           a->fully_masked[r], b->fully_masked[i], a->argmax[r], b->argmax[i], a->row_max[r],
           b->row_max[i]);
    EXPECT(near(a->lse[r], b->lse[i]) && near(a->row_sum[r], b->row_sum[i]) &&
               near(a->max_weight[r], b->max_weight[i]) && near(a->entropy[r], b->entropy[i]) &&
               near(a->row_sums[r], b->row_sums[i]),
           "%s: row %zu (query %zu): lse %.17g/%.17g row_sum %.17g/%.17g max_weight "
           "%.17g/%.17g entropy %.17g/%.17g row_sums %.17g/%.17g",
           what, r, i, a->lse[r], b->lse[i], a->row_sum[r], b->row_sum[i], a->max_weight[r],
           b->max_weight[i], a->entropy[r], b->entropy[i], a->row_sums[r], b->row_sums[i]);
}

/* Every answer row of s against the full trace; rows as in attn_forward_stream. */
static void expect_agrees(const struct attn_stream *s, const struct attn_trace *t,
                          const size_t *rows, const char *what)
{
    size_t blocked = 0;
    set_listed_loose(rows);
    for (size_t r = 0; r < s->n_rows; r++) {
        expect_row_agrees(s, r, t, rows != NULL ? rows[r] : r, what);
        blocked += s->summary.fully_masked[r];
    }
    ck_assert_uint_eq(s->summary.n_fully_masked, blocked);
}

/* The whole answer, byte for byte. */
static bool same_bits(const struct attn_stream *a, const struct attn_stream *b)
{
    size_t n = a->n_rows;
    const struct attn_summary *x = &a->summary, *y = &b->summary;
    return memcmp(a->output.data, b->output.data, n * a->d_v * sizeof(double)) == 0 &&
           memcmp(x->row_sums, y->row_sums, 6 * n * sizeof(double)) == 0 &&
           memcmp(x->argmax, y->argmax, n * sizeof(size_t)) == 0 &&
           memcmp(x->fully_masked, y->fully_masked, n) == 0 &&
           x->n_fully_masked == y->n_fully_masked;
}

static void run_full(struct attn_trace *t, const struct attn_problem *p)
{
    ck_assert_int_eq(attn_trace_alloc(t, p->q->rows, p->k->rows, p->v->cols), ATTN_OK);
    ck_assert_int_eq(attn_forward(t, p), ATTN_OK);
}

static void run_stream(struct attn_stream *s, const struct attn_problem *p,
                       const struct attn_variants *v, const size_t *rows, size_t n_rows,
                       unsigned threads)
{
    ck_assert_int_eq(attn_stream_alloc(s, n_rows, p->v->cols), ATTN_OK);
    ck_assert_int_eq(attn_forward_stream(s, p, v, rows, n_rows, threads), ATTN_OK);
}

/* attn_forward and the streamed pass (2 threads) on every row of p, compared; st is the
 * caller's to free. */
static void expect_stream_agrees(const struct attn_problem *p, struct attn_stream *st,
                                 const char *what)
{
    struct attn_trace t;
    run_full(&t, p);
    run_stream(st, p, NULL, NULL, p->q->rows, 2);
    expect_agrees(st, &t, NULL, what);
    attn_trace_free(&t);
}

/* ---- Agree ---- */

/* Loop: _i picks the kind and the seed; every row, then a rows list with repeats. */
START_TEST(test_agrees_with_forward)
{
    struct problem pr;
    problem_init(&pr, 0x57ea0000u + (uint64_t)_i, (enum kind)(_i % K_COUNT), 1100);
    struct attn_trace t;
    struct attn_stream s;
    run_full(&t, &pr.p);
    run_stream(&s, &pr.p, NULL, NULL, pr.n_q, 1);
    expect_agrees(&s, &t, NULL, "every row");
    attn_stream_free(&s);
    uint64_t seed = (uint64_t)_i;
    size_t n_rows = rng_size(&seed, 1, 150), *rows = malloc(n_rows * sizeof *rows);
    for (size_t r = 0; r < n_rows; r++)
        rows[r] = r % 5 == 4 ? rows[r / 2] : rng_size(&seed, 0, pr.n_q - 1);
    run_stream(&s, &pr.p, NULL, rows, n_rows, 2);
    expect_agrees(&s, &t, rows, "rows list");
    attn_stream_free(&s);
    free(rows);
    attn_trace_free(&t);
    problem_free(&pr);
}
END_TEST

/* skip_summary: the statistics still, argmax and the rest 0 as attn_forward leaves them. */
START_TEST(test_skip_summary)
{
    struct problem pr;
    problem_init(&pr, 0x5c1bu + (uint64_t)_i, (enum kind)(_i % K_COUNT), 700);
    pr.p.skip_summary = true;
    struct attn_trace t;
    struct attn_stream s;
    run_full(&t, &pr.p);
    run_stream(&s, &pr.p, NULL, NULL, pr.n_q, 1);
    expect_agrees(&s, &t, NULL, "skip_summary");
    attn_stream_free(&s);
    attn_trace_free(&t);
    problem_free(&pr);
}
END_TEST

/* 1, 2 and 3 threads give the same bytes (the row blocks' calls do not change). */
START_TEST(test_threads_same_bits)
{
    struct problem pr;
    problem_init(&pr, 0x7e4du + (uint64_t)_i, (enum kind)(_i % K_COUNT), 1100);
    struct attn_stream a, b, c;
    run_stream(&a, &pr.p, NULL, NULL, pr.n_q, 1);
    run_stream(&b, &pr.p, NULL, NULL, pr.n_q, 2);
    run_stream(&c, &pr.p, NULL, NULL, pr.n_q, 3);
    ck_assert(same_bits(&a, &b) && same_bits(&a, &c));
    attn_stream_free(&a);
    attn_stream_free(&b);
    attn_stream_free(&c);
    problem_free(&pr);
}
END_TEST

/* A causal problem of 1300 rows and keys (three key blocks, 21 row blocks), scores up
 * to ±1e300 in a few rows: the max shift and the rescaling keep every row finite. */
START_TEST(test_causal_large_scores)
{
    uint64_t s = 0xca05u;
    enum { N = 1300, D = 8 };
    double *q = rand_fill(&s, N * D, -1, 1), *k = rand_fill(&s, N * D, -1, 1);
    double *v = rand_fill(&s, N * 2, -1, 1);
    v_scale = 1;
    for (size_t i = 0; i < N; i += 97)
        q[i * D] = (i % 2 ? 1e300 : -1e300) / 4;
    struct attn_matrix mq = attn_matrix_view(q, N, D), mk = attn_matrix_view(k, N, D);
    struct attn_matrix mv = attn_matrix_view(v, N, 2);
    struct attn_problem p = { .q = &mq, .k = &mk, .v = &mv, .scale = 1,
                              .mask = { .kind = ATTN_MASK_CAUSAL } };
    struct attn_stream st;
    expect_stream_agrees(&p, &st, "causal 1300");
    for (size_t i = 0; i < N; i++)
        ck_assert(isfinite(st.summary.lse[i]));
    attn_stream_free(&st);
    free(q);
    free(k);
    free(v);
}
END_TEST

/*
 * Values near DBL_MAX / n_k: the streamed pass's unnormalized sums of e·V overflow
 * (700 keys of equal score, each e = 1) where the output, a weighted mean, does not; the
 * pass runs again normalized and agrees with attn_forward, no fault.
 */
START_TEST(test_large_values_no_overflow)
{
    uint64_t s = 0x1a76u;
    enum { NQ = 70, NK = 700, D = 4 };
    double *q = rand_fill(&s, NQ * D, -1, 1), *k = calloc(NK * D, sizeof(double));
    double *v = rand_fill(&s, NK * 2, 0.5, 1);
    ck_assert_ptr_nonnull(k);
    for (size_t j = 0; j < NK * 2; j++)
        v[j] *= 1e306;
    struct attn_matrix mq = attn_matrix_view(q, NQ, D), mk = attn_matrix_view(k, NK, D);
    struct attn_matrix mv = attn_matrix_view(v, NK, 2);
    struct attn_problem p = { .q = &mq, .k = &mk, .v = &mv, .scale = 0.5 };
    struct attn_stream st;
    expect_stream_agrees(&p, &st, "values near DBL_MAX / n_k");
    ck_assert(st.output.data[0] > 5e305 && isfinite(st.output.data[0]));
    attn_stream_free(&st);
    free(q);
    free(k);
    free(v);
}
END_TEST

/* ---- Variants ---- */

/* Round `round`'s variants: each alone in the first rounds, then combinations. */
static struct attn_variants variants_of(int round, struct attn_rope *rope, size_t d_k)
{
    *rope = (struct attn_rope){ .base = round % 2 ? 10000 : 50,
                                .layout = (enum attn_rope_layout)(round / 2 % 2),
                                .rotated = d_k >= 2 ? (round % 3 == 0 ? d_k / 2 * 2 : 2) : 0 };
    bool rope_on = rope->rotated > 0;
    switch (round) {
    case 0:
        return (struct attn_variants){ .rope = rope_on ? rope : NULL, .softcap = rope_on ? 0 : 2 };
    case 1: return (struct attn_variants){ .softcap = 1.5 };
    case 2: return (struct attn_variants){ .alibi = true, .alibi_slope = 0.25 };
    case 3: return (struct attn_variants){ .window = true, .has_left = true, .left = 37,
                                           .has_right = true, .right = 3, .sink_tokens = 4 };
    case 4: return (struct attn_variants){ .window = true, .has_left = true, .left = 600,
                                           .sink_tokens = 2, .band_only = true };
    case 5: return (struct attn_variants){ .sink = true, .sink_logit = 0.5 };
    case 6: return (struct attn_variants){ .sink = true, .sink_logit = 60 }; /* takes all */
    default: break;
    }
    return (struct attn_variants){
        .rope = rope_on && round % 5 != 4 ? rope : NULL,
        .softcap = round % 3 == 2 ? 1.5 : 0,
        .alibi = round % 2 == 0, .alibi_slope = 0.125,
        .window = round % 4 != 3, .has_left = round % 5 != 0, .left = (size_t)(round * 37) % 700,
        .has_right = round % 7 != 0, .right = (size_t)round % 3,
        .sink_tokens = (size_t)round % 3,
        .sink = round % 3 != 0, .sink_logit = 0.5,
        .band_only = round % 6 < 3,
    };
}

/* Loop: _i picks the round (variants) and the problem; every row, a rows list, and
 * 1 vs 3 threads bit for bit. */
START_TEST(test_variants_agree)
{
    int round = _i / 2;
    struct problem pr;
    problem_init(&pr, 0x7a00u + (uint64_t)_i, (enum kind)((size_t)_i % K_COUNT), 1100);
    struct attn_rope rope;
    struct attn_variants var = variants_of(round, &rope, pr.d_k);
    if (var.rope != NULL)
        ck_assert_int_eq(attn_rope_prepare(&rope, pr.n_q, pr.n_k), ATTN_OK);
    struct attn_vtrace t;
    struct attn_stream a, b;
    ck_assert_int_eq(attn_vtrace_alloc(&t, pr.n_q, pr.n_k, pr.d_k, pr.d_v, &var), ATTN_OK);
    ck_assert_int_eq(attn_forward_variants(&t, &pr.p, &var), ATTN_OK);
    run_stream(&a, &pr.p, &var, NULL, pr.n_q, 1);
    run_stream(&b, &pr.p, &var, NULL, pr.n_q, 3);
    char what[32];
    snprintf(what, sizeof what, "round %d", round);
    expect_agrees(&a, &t.base, NULL, what);
    ck_assert(same_bits(&a, &b));
    attn_stream_free(&a);
    size_t rows[] = { pr.n_q - 1, 0, pr.n_q / 2, pr.n_q - 1, pr.n_q / 3 };
    run_stream(&a, &pr.p, &var, rows, 5, 2);
    expect_agrees(&a, &t.base, rows, what);
    attn_stream_free(&a);
    attn_stream_free(&b);
    attn_vtrace_free(&t);
    attn_rope_release(&rope);
    problem_free(&pr);
}
END_TEST

/* A rotated query or key that overflows is q_rope's or k_rope's fault, as the full path
 * says; an overflowing ALiBi bias is masked's. */
START_TEST(test_variants_fault)
{
    struct problem pr;
    problem_init(&pr, 0xfa00u + (uint64_t)_i, K_NONE, 600);
    if (pr.d_k < 2) {
        problem_free(&pr);
        return;
    }
    struct attn_rope rope = { .base = 10000, .rotated = 2 };
    ck_assert_int_eq(attn_rope_prepare(&rope, pr.n_q, pr.n_k), ATTN_OK);
    struct attn_variants var = { .rope = &rope };
    size_t i = (size_t)_i % pr.n_q, j = (size_t)(_i * 7) % pr.n_k;
    if (_i % 3 == 0) /* 1.7e308·(cos θ + sin θ) overflows for most θ */
        pr.q[i * pr.d_k] = pr.q[i * pr.d_k + 1] = 1.7e308;
    else if (_i % 3 == 1)
        pr.k[j * pr.d_k] = pr.k[j * pr.d_k + 1] = -1.7e308;
    else
        var = (struct attn_variants){ .alibi = true, .alibi_slope = 1e306 };
    struct attn_vtrace t;
    struct attn_stream st;
    ck_assert_int_eq(attn_vtrace_alloc(&t, pr.n_q, pr.n_k, pr.d_k, pr.d_v, &var), ATTN_OK);
    enum attn_status want = attn_forward_variants(&t, &pr.p, &var);
    ck_assert_int_eq(attn_stream_alloc(&st, pr.n_q, pr.d_v), ATTN_OK);
    ck_assert_int_eq(attn_forward_stream(&st, &pr.p, &var, NULL, pr.n_q, 2), want);
    if (want == ATTN_EOVERFLOW)
        ck_assert_msg(st.fault_step == t.fault_step && st.fault.row == t.base.fault.row &&
                          st.fault.col == t.base.fault.col,
                      "case %d: fault %d (%zu, %zu), full %d (%zu, %zu)", _i, st.fault_step,
                      st.fault.row, st.fault.col, t.fault_step, t.base.fault.row,
                      t.base.fault.col);
    attn_stream_free(&st);
    attn_vtrace_free(&t);
    attn_rope_release(&rope);
    problem_free(&pr);
}
END_TEST

/* ---- Faults ---- */

/*
 * Loop: one non-finite input (or an overflowing product) per case, in several places;
 * the streamed pass names attn_forward's fault and leaves a zeroed answer.
 */
START_TEST(test_fault_like_forward)
{
    struct problem pr;
    problem_init(&pr, 0xfa17u + (uint64_t)(_i / 6), (enum kind)(_i / 6 % K_COUNT), 1100);
    uint64_t s = (uint64_t)_i;
    size_t i = rng_size(&s, 0, pr.n_q - 1), j = rng_size(&s, 0, pr.n_k - 1);
    switch (_i % 6) {
    case 0: pr.q[i * pr.d_k] = INFINITY; break;
    case 1: pr.k[j * pr.d_k] = -INFINITY; break;
    case 2: pr.q[i * pr.d_k] = 1e308, pr.k[j * pr.d_k] = 1e308; break; /* scores */
    case 3: pr.q[i * pr.d_k] = 1e200, pr.k[j * pr.d_k] = 1e108, pr.p.scale = 1e10; break;
    case 4: /* masked: a bias that overflows, on an allowed cell or not */
        if (pr.p.bias == NULL) {
            pr.bias = rand_fill(&s, pr.n_q * pr.n_k, -1, 1);
            pr.mb = attn_matrix_view(pr.bias, pr.n_q, pr.n_k);
            pr.p.bias = &pr.mb;
        }
        pr.bias[i * pr.n_k + j] = 1.7e308, pr.q[i * pr.d_k] = 1e300, pr.k[j * pr.d_k] = 1e8;
        break;
    default: pr.v[j * pr.d_v] = INFINITY; break; /* output */
    }
    struct attn_trace t;
    struct attn_stream st;
    ck_assert_int_eq(attn_trace_alloc(&t, pr.n_q, pr.n_k, pr.d_v), ATTN_OK);
    enum attn_status want = attn_forward(&t, &pr.p);
    ck_assert_int_eq(attn_stream_alloc(&st, pr.n_q, pr.d_v), ATTN_OK);
    for (unsigned threads = 1; threads <= 3; threads += 2) {
        enum attn_status got = attn_forward_stream(&st, &pr.p, NULL, NULL, pr.n_q, threads);
        ck_assert_int_eq(got, want);
        if (want == ATTN_OK) {
            expect_agrees(&st, &t, NULL, "no fault");
            continue;
        }
        ck_assert_msg(st.fault.step == t.fault.step && st.fault.row == t.fault.row &&
                          st.fault.col == t.fault.col,
                      "case %d: fault %d (%zu, %zu), full %d (%zu, %zu)", _i, st.fault.step,
                      st.fault.row, st.fault.col, t.fault.step, t.fault.row, t.fault.col);
        ck_assert_int_eq(st.fault_step, (int)t.fault.step);
        for (size_t r = 0; r < pr.n_q; r++)
            ck_assert(st.summary.lse[r] == 0 && st.output.data[r * pr.d_v] == 0);
    }
    attn_stream_free(&st);
    attn_trace_free(&t);
    problem_free(&pr);
}
END_TEST

/* ---- Sizes and arguments ---- */

START_TEST(test_bytes_fixed_in_n_k)
{
    size_t small = attn_stream_bytes(200, 10, 64, 64, 2);
    ck_assert_uint_gt(small, 0);
    ck_assert_uint_eq(attn_stream_bytes(200, (size_t)1 << 40, 64, 64, 2), small);
    ck_assert_uint_eq(attn_stream_bytes(200, 10, 64, 64, 3), small);
    /* answer 200·(64 + 6) doubles + 200·(8 + 1) bytes, two threads of scratch (two row
     * blocks: a third thread would have none) */
    size_t answer = 200 * 70 * 8 + 200 * 9;
    /* 132 slots (128 rows and the pads of their kernel groups): queries, scores,
     * accumulator, six running numbers; one row of exponentials */
    size_t scratch = (132 * 64 + 132 * 512 + 132 * 64 + 6 * 132 + 512) * 8;
    ck_assert_uint_eq(small, answer + 2 * scratch);
    ck_assert_uint_eq(attn_stream_bytes(10, 10, 64, 64, 16), 10 * 70 * 8 + 10 * 9 + scratch);
    ck_assert_uint_eq(attn_stream_bytes(0, 10, 64, 64, 1), 0);
    ck_assert_uint_eq(attn_stream_bytes(SIZE_MAX / 8, 10, 64, 64, 1), 0);
}
END_TEST

START_TEST(test_einval)
{
    struct problem pr;
    problem_init(&pr, 0xe1u, K_NONE, 50);
    struct attn_stream s;
    size_t bad_rows[] = { 0, pr.n_q };
    ck_assert_int_eq(attn_stream_alloc(&s, 2, pr.d_v), ATTN_OK);
    ck_assert_int_eq(attn_forward_stream(&s, &pr.p, NULL, bad_rows, 2, 1), ATTN_EINVAL);
    bad_rows[1] = 0;
    ck_assert_int_eq(attn_forward_stream(&s, &pr.p, NULL, bad_rows, 2, 1), ATTN_OK);
    ck_assert_int_eq(attn_forward_stream(&s, &pr.p, NULL, bad_rows, 3, 1), ATTN_EINVAL);
    ck_assert_int_eq(attn_forward_stream(&s, &pr.p, NULL, NULL, 2, 1),
                     pr.n_q == 2 ? ATTN_OK : ATTN_EINVAL);
    struct attn_variants dropout = { .dropout = true, .dropout_p = 0.1 };
    ck_assert_int_eq(attn_forward_stream(&s, &pr.p, &dropout, bad_rows, 2, 1), ATTN_EINVAL);
    struct attn_variants nan_sink = { .sink = true, .sink_logit = NAN };
    ck_assert_int_eq(attn_forward_stream(&s, &pr.p, &nan_sink, bad_rows, 2, 1), ATTN_EINVAL);
    pr.p.scale = 0;
    ck_assert_int_eq(attn_forward_stream(&s, &pr.p, NULL, bad_rows, 2, 1), ATTN_EINVAL);
    ck_assert_int_eq(attn_forward_stream(NULL, &pr.p, NULL, bad_rows, 2, 1), ATTN_EINVAL);
    attn_stream_free(&s);
    attn_stream_free(&s);
    ck_assert_int_eq(attn_stream_alloc(&s, 0, 1), ATTN_EINVAL);
    ck_assert_int_eq(attn_stream_alloc(&s, SIZE_MAX / 4, 4), ATTN_ENOMEM);
    ck_assert_ptr_null(s.block);
    problem_free(&pr);
}
END_TEST

static Suite *stream_suite(void)
{
    Suite *s = suite_create("stream");
    TCase *agree = tcase_create("Agree");
    TCase *variants = tcase_create("Variants");
    TCase *faults = tcase_create("Faults");
    TCase *sizes = tcase_create("Sizes");
    tcase_add_loop_test(agree, test_agrees_with_forward, 0, K_COUNT * 6);
    tcase_add_loop_test(agree, test_skip_summary, 0, K_COUNT);
    tcase_add_loop_test(agree, test_threads_same_bits, 0, K_COUNT);
    tcase_add_test(agree, test_causal_large_scores);
    tcase_add_test(agree, test_large_values_no_overflow);
    suite_add_tcase(s, agree);
    tcase_add_loop_test(variants, test_variants_agree, 0, 2 * 20);
    suite_add_tcase(s, variants);
    tcase_add_loop_test(faults, test_fault_like_forward, 0, 6 * K_COUNT);
    tcase_add_loop_test(faults, test_variants_fault, 0, 9);
    suite_add_tcase(s, faults);
    tcase_add_test(sizes, test_bytes_fixed_in_n_k);
    tcase_add_test(sizes, test_einval);
    suite_add_tcase(s, sizes);
    return s;
}

int main(void)
{
    /* One BLAS thread, as the server runs it: the kernels' bits then depend only on
     * which kernel a row gets (core/stream.c), not on how BLAS splits a call. */
    attn_blas_set_threads(1);
    return suite_run(stream_suite());
}
