/*
 * tests/unit/check_mh_stream.c — unit tests of the streamed multi-head pass
 * (attn_mh_forward_stream) and of the listed-rows copies (attn_trace_select_rows,
 * attn_vtrace_select_rows, attn_mh_trace_select_rows).
 *
 * One Check suite, "mh_stream", with the test cases
 *   Select    each select_rows against a naive index copy (repeats, any order), and
 *             its refusals (a row out of range, no rows) leaving the copy zeroed;
 *   Agree     random problems (self and cross, 1..4 heads, every kv grouping, both weight
 *             layouts, biases on and off, every mask kind, an additive bias, tied keys),
 *             every row and rows lists: against attn_mh_forward (cut by
 *             attn_mh_trace_select_rows) — q, k, v bit for bit, fully_masked and argmax
 *             exactly, the rest to 1e-12 relative; 1, 2 and 3 threads bit for bit;
 *   Variants  RoPE, softcap, ALiBi slopes per head, window and sinks, the sink logit and
 *             combinations, against attn_mh_forward_variants;
 *   Faults    +inf in x, 1e308 weights overflowing Q, a head's scores, W_O, a head's
 *             rotated queries: the fault attn_mh_forward (or attn_mh_forward_variants)
 *             names; dropout and bad arguments are ATTN_EINVAL;
 *   Sizes     attn_mh_stream_bytes grows with n_k by K and V only.
 *
 * The full path is held to the naive reference by check_multihead; agreeing with it is
 * the streamed pass's contract (core/multihead.h).
 */
#include <check.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/multihead.h"
#include "tests/unit/rand_inputs.h"
#include "tests/unit/suite_run.h"

/* Checks inside loops over cells cost a branch until they fail (see check_core.c). */
#define EXPECT(cond, ...)              \
    do {                               \
        if (!(cond))                   \
            ck_abort_msg(__VA_ARGS__); \
    } while (0)

/* |got − want| <= 1e-12·|want| + slack; equal values (infinities too) match. */
static bool near_by(double got, double want, double slack)
{
    return got == want || fabs(got - want) <= 1e-12 * fabs(want) + slack;
}

static bool near(double got, double want)
{
    return near_by(got, want, 1e-300);
}

/* Whether a and b (one shape) hold the same bytes. */
static bool same_matrix(const struct attn_matrix *a, const struct attn_matrix *b)
{
    if (a->rows != b->rows || a->cols != b->cols)
        return false;
    for (size_t i = 0; i < a->rows; i++)
        if (memcmp(a->data + i * a->stride, b->data + i * b->stride, a->cols * sizeof(double)))
            return false;
    return true;
}

/* ---- random multi-head problems ---- */

enum kind { K_NONE, K_CELLS, K_PADDING, K_CAUSAL, K_CAUSAL_CROSS, K_BIAS, K_COUNT };

struct mh_case {
    size_t n_q, n_k, d, heads, kv, d_k;
    bool cross;
    double *x_q, *x_kv, *w_q, *w_k, *w_v, *w_o, *b_q, *b_k, *b_v, *b_o, *bias;
    unsigned char *allow;
    struct attn_matrix mx_q, mx_kv, mw_q, mw_k, mw_v, mw_o, mbias;
    struct attn_mh_problem p;
};

/* A weight of (in, out), stored (out, in) when transposed. */
static double *weight(uint64_t *s, size_t in, size_t out, bool tr, struct attn_matrix *m)
{
    double *w = rand_fill(s, in * out, -1, 1);
    *m = tr ? attn_matrix_view(w, out, in) : attn_matrix_view(w, in, out);
    return w;
}

/*
 * Case `seed` of kind `kind`: sizes up to `big` keys (past one key block of 512 now and
 * then), 1..4 heads of 1..8 columns, a kv grouping dividing the heads, layouts and biases
 * by the seed, and one key input in six a copy of an earlier one (tied keys).
 */
static void case_init(struct mh_case *c, uint64_t seed, enum kind kind, size_t big)
{
    uint64_t s = seed;
    memset(c, 0, sizeof *c);
    c->heads = rng_size(&s, 1, 4), c->d_k = rng_size(&s, 1, 8), c->d = c->heads * c->d_k;
    do
        c->kv = rng_size(&s, 1, c->heads);
    while (c->heads % c->kv != 0);
    c->cross = kind == K_CAUSAL_CROSS || (kind != K_CAUSAL && rng_next(&s) % 2);
    c->n_q = rng_size(&s, 1, 150);
    c->n_k = c->cross ? rng_size(&s, 1, big) : c->n_q;
    if (kind == K_CAUSAL_CROSS && c->n_k == c->n_q)
        c->n_k++;
    bool tr = rng_next(&s) % 2, biases = rng_next(&s) % 3 != 0;
    size_t kv_cols = c->kv * c->d_k;
    c->x_q = rand_fill(&s, c->n_q * c->d, -1, 1);
    c->x_kv = c->cross ? rand_fill(&s, c->n_k * c->d, -1, 1) : c->x_q;
    for (size_t j = 1; j < c->n_k; j++) /* tied keys (and, self, tied queries) */
        if (rng_next(&s) % 6 == 0)
            memcpy(c->x_kv + j * c->d, c->x_kv + rng_size(&s, 0, j - 1) * c->d,
                   c->d * sizeof(double));
    c->mx_q = attn_matrix_view(c->x_q, c->n_q, c->d);
    c->mx_kv = attn_matrix_view(c->x_kv, c->n_k, c->d);
    c->w_q = weight(&s, c->d, c->d, tr, &c->mw_q);
    c->w_k = weight(&s, c->d, kv_cols, tr, &c->mw_k);
    c->w_v = weight(&s, c->d, kv_cols, tr, &c->mw_v);
    c->w_o = weight(&s, c->d, c->d, tr, &c->mw_o);
    if (biases) {
        c->b_q = rand_fill(&s, c->d, -0.5, 0.5), c->b_k = rand_fill(&s, kv_cols, -0.5, 0.5);
        c->b_v = rand_fill(&s, kv_cols, -0.5, 0.5), c->b_o = rand_fill(&s, c->d, -0.5, 0.5);
    }
    c->p = (struct attn_mh_problem){ .x_q = &c->mx_q, .x_kv = &c->mx_kv, .w_q = &c->mw_q,
                                     .w_k = &c->mw_k, .w_v = &c->mw_v, .w_o = &c->mw_o,
                                     .b_q = c->b_q, .b_k = c->b_k, .b_v = c->b_v, .b_o = c->b_o,
                                     .transposed_weights = tr, .heads = c->heads,
                                     .kv_heads = c->kv, .scale = 1 / sqrt((double)c->d_k) };
    if (kind == K_BIAS || kind == K_CELLS) {
        c->bias = rand_fill(&s, c->n_q * c->n_k, -3, 3);
        c->mbias = attn_matrix_view(c->bias, c->n_q, c->n_k);
        c->p.bias = &c->mbias;
    }
    if (kind == K_CELLS || kind == K_PADDING) {
        size_t rows = kind == K_CELLS ? c->n_q : 1;
        c->allow = rand_allow(&s, rows, c->n_k);
        c->p.mask = (struct attn_mask){ ATTN_MASK_CELLS, c->allow, rows };
    }
    if (kind == K_CAUSAL || kind == K_CAUSAL_CROSS)
        c->p.mask.kind = ATTN_MASK_CAUSAL;
}

static void case_free(struct mh_case *c)
{
    if (c->cross)
        free(c->x_kv);
    free(c->x_q), free(c->w_q), free(c->w_k), free(c->w_v), free(c->w_o);
    free(c->b_q), free(c->b_k), free(c->b_v), free(c->b_o), free(c->bias), free(c->allow);
}

/* n random rows of n_q: any order, every fifth a repeat of an earlier one. */
static size_t *rand_rows(uint64_t seed, size_t n_q, size_t n)
{
    size_t *rows = malloc(n * sizeof *rows);
    ck_assert_ptr_nonnull(rows);
    for (size_t r = 0; r < n; r++)
        rows[r] = r % 5 == 4 ? rows[r / 2] : rng_size(&seed, 0, n_q - 1);
    return rows;
}

/* ---- the streamed answer against a full trace of the same rows ---- */

/*
 * row_max is exact where OpenBLAS runs its Haswell or Zen kernels (core/stream.h);
 * elsewhere a key block's scores may differ in the last bit from the whole row's.
 */
static bool row_max_loose(void)
{
    const char *blas = attn_blas_info();
    return strstr(blas, "Haswell") == NULL && strstr(blas, "Zen") == NULL;
}

/* The largest |cell| of m: an output that nearly cancels is held to 1e-13 of it. */
static double max_abs(const struct attn_matrix *m)
{
    double big = 0;
    for (size_t i = 0; i < m->rows; i++)
        for (size_t j = 0; j < m->cols; j++)
            big = fmax(big, fabs(attn_at(m, i, j)));
    return big;
}

/*
 * An entropy near 0 (one weight 1 − 4e-9, as a large score gap gives) is a sum of terms
 * each rounded at 1e-17 of its e^(x − m) ≈ 1, on either path: the two agree to that, not
 * to 1e-12 of the tiny result (seen: 7.667058358631e-08 vs 7.667058359985e-08).
 */
#define ENTROPY_SLACK 1e-15

/* Head `h`'s answer row r against row r of the trace t (already cut to the rows). */
static void expect_head_row(const struct attn_stream *s, const struct attn_trace *t, size_t r,
                            double v_scale, size_t h)
{
    const struct attn_summary *a = &s->summary, *b = &t->summary;
    for (size_t c = 0; c < s->d_v; c++)
        EXPECT(near_by(attn_at(&s->output, r, c), attn_at(&t->output, r, c), 1e-13 * v_scale),
               "head %zu output[%zu][%zu] = %.17g, full %.17g", h, r, c,
               attn_at(&s->output, r, c), attn_at(&t->output, r, c));
    bool same_max = a->row_max[r] == b->row_max[r] ||
                    (row_max_loose() && near(a->row_max[r], b->row_max[r]));
    EXPECT(a->fully_masked[r] == b->fully_masked[r] && a->argmax[r] == b->argmax[r] && same_max,
           "head %zu row %zu: fully %d/%d argmax %zu/%zu row_max %.17g/%.17g", h, r,
           a->fully_masked[r], b->fully_masked[r], a->argmax[r], b->argmax[r], a->row_max[r],
           b->row_max[r]);
    EXPECT(near(a->lse[r], b->lse[r]) && near(a->row_sum[r], b->row_sum[r]) &&
               near(a->max_weight[r], b->max_weight[r]) &&
               near_by(a->entropy[r], b->entropy[r], ENTROPY_SLACK) &&
               near(a->row_sums[r], b->row_sums[r]),
           "head %zu row %zu: lse %.17g/%.17g row_sum %.17g/%.17g max_weight %.17g/%.17g "
           "entropy %.17g/%.17g",
           h, r, a->lse[r], b->lse[r], a->row_sum[r], b->row_sum[r], a->max_weight[r],
           b->max_weight[r], a->entropy[r], b->entropy[r]);
}

/*
 * An output cell: concat's row times W_O's column, its terms each off by the heads'
 * 1e-12; where they cancel, the difference is relative to Σ |concat·w| + |b|.
 */
static void expect_output(const struct attn_mh_stream *s, const struct attn_mh_trace *t,
                          const struct attn_mh_problem *p)
{
    for (size_t r = 0; r < s->n_rows; r++)
        for (size_t c = 0; c < s->d_model; c++) {
            double mag = p->b_o != NULL ? fabs(p->b_o[c]) : 0;
            for (size_t j = 0; j < s->d_model; j++)
                mag += fabs(attn_at(&t->concat, r, j)) *
                       fabs(p->transposed_weights ? attn_at(p->w_o, c, j)
                                                  : attn_at(p->w_o, j, c));
            double got = attn_at(&s->output, r, c), want = attn_at(&t->output, r, c);
            EXPECT(near_by(got, want, 1e-12 * mag + 1e-300),
                   "output[%zu][%zu] = %.17g, full %.17g", r, c, got, want);
        }
}

/* The whole streamed answer against t, a full trace cut to the same rows. */
static void expect_agrees(const struct attn_mh_stream *s, const struct attn_mh_trace *t,
                          const struct attn_mh_problem *p)
{
    ck_assert_msg(same_matrix(&s->q, &t->q), "q differs");
    ck_assert_msg(same_matrix(&s->k, &t->k), "k differs");
    ck_assert_msg(same_matrix(&s->v, &t->v), "v differs");
    double v_scale = max_abs(&t->v);
    for (size_t h = 0; h < s->heads; h++) {
        size_t blocked = 0;
        for (size_t r = 0; r < s->n_rows; r++) {
            expect_head_row(&s->head[h], &t->head[h], r, v_scale, h);
            blocked += s->head[h].summary.fully_masked[r];
        }
        ck_assert_uint_eq(s->head[h].summary.n_fully_masked, blocked);
        ck_assert_uint_eq(blocked, t->head[h].summary.n_fully_masked);
    }
    for (size_t r = 0; r < s->n_rows; r++)
        for (size_t c = 0; c < s->d_model; c++)
            EXPECT(near_by(attn_at(&s->concat, r, c), attn_at(&t->concat, r, c), 1e-13 * v_scale),
                   "concat[%zu][%zu] = %.17g, full %.17g", r, c, attn_at(&s->concat, r, c),
                   attn_at(&t->concat, r, c));
    expect_output(s, t, p);
}

/* Every byte of two streamed answers of one shape. */
static bool same_answer(const struct attn_mh_stream *a, const struct attn_mh_stream *b)
{
    bool same = same_matrix(&a->q, &b->q) && same_matrix(&a->k, &b->k) &&
                same_matrix(&a->v, &b->v) && same_matrix(&a->concat, &b->concat) &&
                same_matrix(&a->output, &b->output);
    for (size_t h = 0; same && h < a->heads; h++) {
        const struct attn_stream *x = &a->head[h], *y = &b->head[h];
        size_t n = x->n_rows;
        same = same_matrix(&x->output, &y->output) &&
               memcmp(x->summary.row_sums, y->summary.row_sums, 6 * n * sizeof(double)) == 0 &&
               memcmp(x->summary.argmax, y->summary.argmax, n * sizeof(size_t)) == 0 &&
               memcmp(x->summary.fully_masked, y->summary.fully_masked, n) == 0;
    }
    return same;
}

static void run_full(struct attn_mh_trace *t, const struct mh_case *c)
{
    ck_assert_int_eq(attn_mh_trace_alloc(t, c->n_q, c->n_k, c->d, c->heads, c->kv), ATTN_OK);
    ck_assert_int_eq(attn_mh_forward(t, &c->p), ATTN_OK);
}

static void run_stream(struct attn_mh_stream *s, const struct mh_case *c,
                       const struct attn_variants *v, const size_t *rows, size_t n_rows,
                       unsigned threads)
{
    ck_assert_int_eq(attn_mh_stream_alloc(s, n_rows, c->n_q, c->n_k, c->d, c->heads, c->kv),
                     ATTN_OK);
    ck_assert_int_eq(attn_mh_forward_stream(s, &c->p, v, rows, n_rows, threads), ATTN_OK);
}

/* ---- Select ---- */

/* A single-head trace of random sizes with every step, by attn_forward. */
static void single_trace(struct attn_trace *t, uint64_t seed, double **inputs)
{
    uint64_t s = seed;
    size_t n_q = rng_size(&s, 1, 40), n_k = rng_size(&s, 1, 30), d = rng_size(&s, 1, 6);
    inputs[0] = rand_fill(&s, n_q * d, -2, 2);
    inputs[1] = rand_fill(&s, n_k * d, -2, 2);
    inputs[2] = rand_fill(&s, n_k * d, -2, 2);
    static struct attn_matrix mq, mk, mv;
    mq = attn_matrix_view(inputs[0], n_q, d), mk = attn_matrix_view(inputs[1], n_k, d);
    mv = attn_matrix_view(inputs[2], n_k, d);
    struct attn_problem p = { .q = &mq, .k = &mk, .v = &mv, .scale = 0.5,
                              .mask = { .kind = ATTN_MASK_CAUSAL } };
    ck_assert_int_eq(attn_trace_alloc(t, n_q, n_k, d), ATTN_OK);
    ck_assert_int_eq(attn_forward(t, &p), ATTN_OK);
}

/* dst's row r of m against src's row rows[r], cell by cell (a naive index copy). */
static void expect_rows_of(const struct attn_matrix *dst, const struct attn_matrix *src,
                           const size_t *rows, size_t n, const char *what)
{
    if (src->data == NULL) { /* a step src does not hold (a variant off) */
        ck_assert_ptr_null(dst->data);
        return;
    }
    ck_assert_uint_eq(dst->rows, n);
    ck_assert_uint_eq(dst->cols, src->cols);
    for (size_t r = 0; r < n; r++)
        for (size_t j = 0; j < src->cols; j++) {
            double got = attn_at(dst, r, j), want = attn_at(src, rows[r], j);
            EXPECT(memcmp(&got, &want, sizeof got) == 0, "%s[%zu][%zu] = %.17g, src[%zu] %.17g",
                   what, r, j, got, rows[r], want);
        }
}

/* dst = src's listed rows: every step and summary entry, n_fully_masked recounted. */
static void expect_trace_rows(const struct attn_trace *dst, const struct attn_trace *src,
                              const size_t *rows, size_t n)
{
    expect_rows_of(&dst->scores, &src->scores, rows, n, "scores");
    expect_rows_of(&dst->scaled, &src->scaled, rows, n, "scaled");
    expect_rows_of(&dst->masked, &src->masked, rows, n, "masked");
    expect_rows_of(&dst->weights, &src->weights, rows, n, "weights");
    expect_rows_of(&dst->output, &src->output, rows, n, "output");
    const struct attn_summary *a = &dst->summary, *b = &src->summary;
    size_t blocked = 0;
    for (size_t r = 0; r < n; r++) {
        size_t i = rows[r];
        EXPECT(a->row_sums[r] == b->row_sums[i] && a->argmax[r] == b->argmax[i] &&
                   a->max_weight[r] == b->max_weight[i] && a->entropy[r] == b->entropy[i] &&
                   a->row_max[r] == b->row_max[i] && a->row_sum[r] == b->row_sum[i] &&
                   a->lse[r] == b->lse[i] && a->fully_masked[r] == b->fully_masked[i],
               "summary row %zu (query %zu) differs", r, i);
        blocked += b->fully_masked[i];
    }
    ck_assert_uint_eq(a->n_fully_masked, blocked);
}

/* Whether t is all zero bytes, as a refused select_rows leaves it. */
static bool zeroed(const void *t, size_t size)
{
    const unsigned char *b = t;
    for (size_t i = 0; i < size; i++)
        if (b[i] != 0)
            return false;
    return true;
}

/* Loop: rows with repeats, in any order, against the naive copy; a causal mask makes
 * the first row fully masked when n_k < n_q, so n_fully_masked is recounted. */
START_TEST(test_trace_select_rows)
{
    double *in[3];
    struct attn_trace src, dst;
    single_trace(&src, 0x5e1ec7u + (uint64_t)_i, in);
    size_t n = 1 + (size_t)_i % 9, *rows = rand_rows((uint64_t)_i, src.n_q, n);
    if (_i % 3 == 0)
        rows[0] = 0; /* with n_k < n_q, a fully masked row */
    ck_assert_int_eq(attn_trace_select_rows(&dst, &src, rows, n), ATTN_OK);
    ck_assert_uint_eq(dst.n_q, n);
    ck_assert_uint_eq(dst.n_k, src.n_k);
    expect_trace_rows(&dst, &src, rows, n);
    attn_trace_free(&dst);
    rows[n - 1] = src.n_q; /* out of range */
    memset(&dst, 0xab, sizeof dst);
    ck_assert_int_eq(attn_trace_select_rows(&dst, &src, rows, n), ATTN_EINVAL);
    ck_assert(zeroed(&dst, sizeof dst));
    memset(&dst, 0xab, sizeof dst);
    ck_assert_int_eq(attn_trace_select_rows(&dst, &src, rows, 0), ATTN_EINVAL);
    ck_assert(zeroed(&dst, sizeof dst));
    ck_assert_int_eq(attn_trace_select_rows(&dst, &src, NULL, 1), ATTN_EINVAL);
    attn_trace_free(&src);
    free(rows), free(in[0]), free(in[1]), free(in[2]);
}
END_TEST

/* Every variant step that has rows (dropout included: the full path keeps it). */
static struct attn_variants all_variants(struct attn_rope *rope)
{
    *rope = (struct attn_rope){ .base = 100, .rotated = 2 };
    return (struct attn_variants){ .rope = rope, .softcap = 2, .sink = true, .sink_logit = 0.3,
                                   .dropout = true, .dropout_p = 0.25, .dropout_seed = 7 };
}

START_TEST(test_vtrace_select_rows)
{
    uint64_t s = 0x7ace;
    size_t n_q = 23, n_k = 17, d = 4, n = 11, *rows = rand_rows(5, n_q, n);
    double *q = rand_fill(&s, n_q * d, -1, 1), *k = rand_fill(&s, n_k * d, -1, 1);
    double *v = rand_fill(&s, n_k * d, -1, 1);
    struct attn_matrix mq = attn_matrix_view(q, n_q, d), mk = attn_matrix_view(k, n_k, d);
    struct attn_matrix mv = attn_matrix_view(v, n_k, d);
    struct attn_problem p = { .q = &mq, .k = &mk, .v = &mv, .scale = 0.5 };
    struct attn_rope rope;
    struct attn_variants var = all_variants(&rope);
    ck_assert_int_eq(attn_rope_prepare(&rope, n_q, n_k), ATTN_OK);
    struct attn_vtrace src, dst;
    ck_assert_int_eq(attn_vtrace_alloc(&src, n_q, n_k, d, d, &var), ATTN_OK);
    ck_assert_int_eq(attn_forward_variants(&src, &p, &var), ATTN_OK);
    src.fault_step = ATTN_STEP_SOFTCAPPED; /* copied as it stands */
    ck_assert_int_eq(attn_vtrace_select_rows(&dst, &src, rows, n, n_q, n_k, d, &var), ATTN_OK);
    expect_rows_of(&dst.q_rope, &src.q_rope, rows, n, "q_rope");
    expect_rows_of(&dst.softcapped, &src.softcapped, rows, n, "softcapped");
    expect_rows_of(&dst.keep, &src.keep, rows, n, "keep");
    expect_rows_of(&dst.dropped, &src.dropped, rows, n, "dropped");
    ck_assert(same_matrix(&dst.k_rope, &src.k_rope));
    for (size_t r = 0; r < n; r++)
        ck_assert(dst.sink_weight[r] == src.sink_weight[rows[r]]);
    ck_assert_int_eq(dst.fault_step, ATTN_STEP_SOFTCAPPED);
    ck_assert_ptr_null(dst.base.block);
    attn_vtrace_free(&dst);
    rows[3] = n_q;
    memset(&dst, 0xab, sizeof dst);
    ck_assert_int_eq(attn_vtrace_select_rows(&dst, &src, rows, n, n_q, n_k, d, &var), ATTN_EINVAL);
    ck_assert(zeroed(&dst, sizeof dst));
    ck_assert_int_eq(attn_vtrace_select_rows(&dst, &src, rows, 0, n_q, n_k, d, &var), ATTN_EINVAL);
    ck_assert(zeroed(&dst, sizeof dst));
    attn_vtrace_free(&src);
    attn_rope_release(&rope);
    free(rows), free(q), free(k), free(v);
}
END_TEST

/* Loop: a multi-head trace with per-head variants cut to a rows list, by index. */
START_TEST(test_mh_select_rows)
{
    struct mh_case c;
    case_init(&c, 0x3e1u + (uint64_t)_i, (enum kind)(_i % K_COUNT), 40);
    struct attn_rope rope = { .base = 500, .rotated = c.d_k / 2 * 2 };
    struct attn_variants var[4];
    struct attn_vtrace vs[4], vd[4];
    double slopes[4];
    attn_alibi_slopes(c.heads, slopes);
    if (rope.rotated > 0)
        ck_assert_int_eq(attn_rope_prepare(&rope, c.n_q, c.n_k), ATTN_OK);
    for (size_t h = 0; h < c.heads; h++) {
        var[h] = (struct attn_variants){ .rope = rope.rotated > 0 ? &rope : NULL, .softcap = 3,
                                         .alibi = true, .alibi_slope = slopes[h], .sink = true,
                                         .sink_logit = 0.1 * (double)h };
        ck_assert_int_eq(attn_vtrace_alloc_steps(&vs[h], c.n_q, c.n_k, c.d_k, &var[h]), ATTN_OK);
    }
    struct attn_mh_trace src, dst;
    ck_assert_int_eq(attn_mh_trace_alloc(&src, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
    ck_assert_int_eq(attn_mh_forward_variants(&src, &c.p, var, vs), ATTN_OK);
    size_t n = 1 + (size_t)_i % 7, *rows = rand_rows((uint64_t)_i + 9, c.n_q, n);
    ck_assert_int_eq(attn_mh_trace_select_rows(&dst, &src, rows, n, var, vs, vd), ATTN_OK);
    ck_assert_uint_eq(dst.n_q, n);
    expect_rows_of(&dst.q, &src.q, rows, n, "q");
    expect_rows_of(&dst.concat, &src.concat, rows, n, "concat");
    expect_rows_of(&dst.output, &src.output, rows, n, "output");
    expect_rows_of(&dst.weights_mean, &src.weights_mean, rows, n, "weights_mean");
    ck_assert(same_matrix(&dst.k, &src.k) && same_matrix(&dst.v, &src.v));
    for (size_t h = 0; h < c.heads; h++) {
        expect_trace_rows(&dst.head[h], &src.head[h], rows, n);
        expect_rows_of(&vd[h].softcapped, &vs[h].softcapped, rows, n, "softcapped");
        expect_rows_of(&vd[h].q_rope, &vs[h].q_rope, rows, n, "q_rope");
        ck_assert(same_matrix(&vd[h].k_rope, &vs[h].k_rope));
        for (size_t r = 0; r < n; r++)
            ck_assert(vd[h].sink_weight[r] == vs[h].sink_weight[rows[r]]);
        attn_vtrace_free(&vd[h]);
    }
    attn_mh_trace_free(&dst);
    /* without the variants' steps; then the refusals, each leaving dst zeroed */
    ck_assert_int_eq(attn_mh_trace_select_rows(&dst, &src, rows, n, NULL, NULL, NULL), ATTN_OK);
    expect_rows_of(&dst.output, &src.output, rows, n, "output");
    attn_mh_trace_free(&dst);
    ck_assert_int_eq(attn_mh_trace_select_rows(&dst, &src, rows, n, var, vs, NULL), ATTN_EINVAL);
    ck_assert(zeroed(&dst, sizeof dst));
    rows[n - 1] = c.n_q + (size_t)_i;
    memset(&dst, 0xab, sizeof dst);
    ck_assert_int_eq(attn_mh_trace_select_rows(&dst, &src, rows, n, NULL, NULL, NULL), ATTN_EINVAL);
    ck_assert(zeroed(&dst, sizeof dst));
    ck_assert_int_eq(attn_mh_trace_select_rows(&dst, &src, rows, 0, NULL, NULL, NULL), ATTN_EINVAL);
    ck_assert(zeroed(&dst, sizeof dst));
    for (size_t h = 0; h < c.heads; h++)
        attn_vtrace_free(&vs[h]);
    attn_mh_trace_free(&src);
    attn_rope_release(&rope);
    free(rows);
    case_free(&c);
}
END_TEST

/* ---- Agree ---- */

/* Loop: _i picks the kind and the seed; every row, then a rows list on two threads. */
START_TEST(test_agrees_with_forward)
{
    struct mh_case c;
    case_init(&c, 0x3a5e0000u + (uint64_t)_i, (enum kind)(_i % K_COUNT), 700);
    struct attn_mh_trace full, cut;
    struct attn_mh_stream s;
    run_full(&full, &c);
    run_stream(&s, &c, NULL, NULL, c.n_q, 1);
    expect_agrees(&s, &full, &c.p);
    attn_mh_stream_free(&s);
    size_t n = 1 + (size_t)_i * 7 % 90, *rows = rand_rows((uint64_t)_i, c.n_q, n);
    run_stream(&s, &c, NULL, rows, n, 2);
    ck_assert_int_eq(attn_mh_trace_select_rows(&cut, &full, rows, n, NULL, NULL, NULL), ATTN_OK);
    expect_agrees(&s, &cut, &c.p);
    attn_mh_stream_free(&s);
    attn_mh_stream_free(&s); /* twice: a no-op */
    attn_mh_trace_free(&cut);
    attn_mh_trace_free(&full);
    free(rows);
    case_free(&c);
}
END_TEST

/* 1, 2 and 3 threads give the same bytes (up to 150 queries: up to three row blocks). */
START_TEST(test_threads_same_bits)
{
    struct mh_case c;
    case_init(&c, 0x7e4d00u + (uint64_t)_i, (enum kind)(_i % K_COUNT), 1100);
    struct attn_mh_stream a, b, d;
    run_stream(&a, &c, NULL, NULL, c.n_q, 1);
    run_stream(&b, &c, NULL, NULL, c.n_q, 2);
    run_stream(&d, &c, NULL, NULL, c.n_q, 3);
    ck_assert(same_answer(&a, &b) && same_answer(&a, &d));
    attn_mh_stream_free(&a);
    attn_mh_stream_free(&b);
    attn_mh_stream_free(&d);
    case_free(&c);
}
END_TEST

/* ---- Variants ---- */

/* Head h's variants in round `round`: each alone, then combinations; ALiBi's slopes are
 * the paper's for the heads, and each head's sink logit its own. */
static struct attn_variants variants_of(int round, size_t h, const double *slopes,
                                        const struct attn_rope *rope)
{
    double z = 0.5 + 0.25 * (double)h;
    switch (round) {
    case 0: return (struct attn_variants){ .rope = rope };
    case 1: return (struct attn_variants){ .softcap = 1.5 };
    case 2: return (struct attn_variants){ .alibi = true, .alibi_slope = slopes[h] };
    case 3: return (struct attn_variants){ .window = true, .has_left = true, .left = 9,
                                           .has_right = true, .right = 2, .sink_tokens = 3 };
    case 4: return (struct attn_variants){ .sink = true, .sink_logit = z };
    case 5: return (struct attn_variants){ .window = true, .has_left = true, .left = 30,
                                           .sink_tokens = 1, .band_only = true };
    default: break;
    }
    return (struct attn_variants){
        .rope = round % 3 != 0 ? rope : NULL, .softcap = round % 2 ? 2 : 0,
        .alibi = round % 4 < 2, .alibi_slope = slopes[h],
        .window = round % 5 != 0, .has_left = true, .left = (size_t)round * 5,
        .has_right = round % 2 == 0, .right = 1, .sink_tokens = (size_t)round % 3,
        .sink = round % 3 != 1, .sink_logit = z,
    };
}

/* Loop: _i picks the round and the problem; every row and a rows list against the full
 * path with the same variants (cut with its steps), and 1 vs 3 threads bit for bit. */
START_TEST(test_variants_agree)
{
    int round = _i / 2;
    struct mh_case c;
    case_init(&c, 0x7a7a00u + (uint64_t)_i, (enum kind)(_i % K_COUNT), 700);
    struct attn_rope rope = { .base = round % 2 ? 10000 : 50, .rotated = c.d_k / 2 * 2,
                              .layout = (enum attn_rope_layout)(round % 2) };
    if (rope.rotated > 0)
        ck_assert_int_eq(attn_rope_prepare(&rope, c.n_q, c.n_k), ATTN_OK);
    double slopes[4];
    attn_alibi_slopes(c.heads, slopes);
    struct attn_variants var[4];
    struct attn_vtrace vs[4], vd[4];
    for (size_t h = 0; h < c.heads; h++) {
        var[h] = variants_of(round, h, slopes, rope.rotated > 0 ? &rope : NULL);
        ck_assert_int_eq(attn_vtrace_alloc_steps(&vs[h], c.n_q, c.n_k, c.d_k, &var[h]), ATTN_OK);
    }
    struct attn_mh_trace full, cut;
    struct attn_mh_stream a, b;
    ck_assert_int_eq(attn_mh_trace_alloc(&full, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
    ck_assert_int_eq(attn_mh_forward_variants(&full, &c.p, var, vs), ATTN_OK);
    run_stream(&a, &c, var, NULL, c.n_q, 1);
    run_stream(&b, &c, var, NULL, c.n_q, 3);
    expect_agrees(&a, &full, &c.p);
    ck_assert(same_answer(&a, &b));
    attn_mh_stream_free(&a);
    size_t rows[] = { c.n_q - 1, 0, c.n_q / 2, c.n_q - 1, c.n_q / 3 };
    run_stream(&a, &c, var, rows, 5, 2);
    ck_assert_int_eq(attn_mh_trace_select_rows(&cut, &full, rows, 5, var, vs, vd), ATTN_OK);
    expect_agrees(&a, &cut, &c.p);
    for (size_t h = 0; h < c.heads; h++) {
        attn_vtrace_free(&vs[h]);
        attn_vtrace_free(&vd[h]);
    }
    attn_mh_stream_free(&a);
    attn_mh_stream_free(&b);
    attn_mh_trace_free(&cut);
    attn_mh_trace_free(&full);
    attn_rope_release(&rope);
    case_free(&c);
}
END_TEST

/* ---- Faults ---- */

/* Cell (in, out) of a weight with `outs` outputs, as c's layout stores it (d_model in). */
static double *w_cell(const struct mh_case *c, double *w, size_t in, size_t out, size_t outs)
{
    return c->p.transposed_weights ? &w[out * c->d + in] : &w[in * outs + out];
}

/*
 * 1e200 down column col of W_Q and the matching column of W_K (the kv head of col's
 * head): Q and K stay finite, but that head's scores reach 1e400 for most x.
 */
static void overflow_scores(struct mh_case *c, size_t col)
{
    size_t head = col / c->d_k, kv_cols = c->kv * c->d_k;
    size_t kcol = attn_mh_kv_head(head, c->heads, c->kv) * c->d_k + col % c->d_k;
    for (size_t l = 0; l < c->d; l++) {
        double w = 1e200 * (l % 2 ? 1 : 0.5);
        *w_cell(c, c->w_q, l, col, c->d) = w;
        *w_cell(c, c->w_k, l, kcol, kv_cols) = w;
    }
}

/*
 * Case _i % 5 of one fault: +inf in x_q; +inf in x_kv (K first); 1e308 in a column of
 * W_Q (Q overflows); 1e200 in matching columns of W_Q and W_K (Q and K finite, a head's
 * scores overflow); +inf in W_O (the output). The streamed pass names the fault that
 * attn_mh_forward names: step, head, the head's step, row, col.
 */
START_TEST(test_fault_like_forward)
{
    struct mh_case c;
    case_init(&c, 0xfa0700u + (uint64_t)(_i / 5), (enum kind)(_i / 5 % K_COUNT), 300);
    uint64_t s = (uint64_t)_i;
    size_t i = rng_size(&s, 0, c.n_q - 1), col = rng_size(&s, 0, c.d - 1);
    switch (_i % 5) {
    case 0: c.x_q[i * c.d + rng_size(&s, 0, c.d - 1)] = INFINITY; break;
    case 1: c.x_kv[(c.n_k - 1) * c.d] = INFINITY; break;
    case 2: /* Q's (i, col) is 2·d·1e308 at least: it overflows, maybe an earlier cell too */
        for (size_t l = 0; l < c.d; l++)
            *w_cell(&c, c.w_q, l, col, c.d) = 1e308, c.x_q[i * c.d + l] = 2;
        break;
    case 3: overflow_scores(&c, col); break;
    default: *w_cell(&c, c.w_o, rng_size(&s, 0, c.d - 1), col, c.d) = INFINITY; break;
    }
    struct attn_mh_trace full;
    struct attn_mh_stream st;
    ck_assert_int_eq(attn_mh_trace_alloc(&full, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
    enum attn_status want = attn_mh_forward(&full, &c.p);
    if (_i % 5 != 3) /* the others fault surely; the scores' overflow with most x */
        ck_assert_int_eq(want, ATTN_EOVERFLOW);
    ck_assert_int_eq(attn_mh_stream_alloc(&st, c.n_q, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
    for (unsigned threads = 1; threads <= 3; threads += 2) {
        ck_assert_int_eq(attn_mh_forward_stream(&st, &c.p, NULL, NULL, c.n_q, threads), want);
        const struct attn_mh_fault *a = &st.fault, *b = &full.fault;
        ck_assert_msg(a->step == b->step && a->head == b->head && a->head_step == b->head_step &&
                          a->row == b->row && a->col == b->col,
                      "case %d: fault %d head %zu step %d (%zu, %zu), full %d head %zu step %d "
                      "(%zu, %zu)", _i, a->step, a->head, a->head_step, a->row, a->col,
                      b->step, b->head, b->head_step, b->row, b->col);
    }
    attn_mh_stream_free(&st);
    attn_mh_trace_free(&full);
    case_free(&c);
}
END_TEST

/* How many of the scores' overflow cases faulted in a head: they must mostly. */
START_TEST(test_head_fault_happens)
{
    int heads = 0;
    for (int i = 3; i < 5 * 2 * K_COUNT; i += 5) {
        struct mh_case c;
        case_init(&c, 0xfa0700u + (uint64_t)(i / 5), (enum kind)(i / 5 % K_COUNT), 300);
        uint64_t s = (uint64_t)i;
        (void)rng_size(&s, 0, c.n_q - 1);
        size_t col = rng_size(&s, 0, c.d - 1), head = col / c.d_k;
        overflow_scores(&c, col);
        struct attn_mh_stream st;
        ck_assert_int_eq(attn_mh_stream_alloc(&st, c.n_q, c.n_q, c.n_k, c.d, c.heads, c.kv),
                         ATTN_OK);
        if (attn_mh_forward_stream(&st, &c.p, NULL, NULL, c.n_q, 1) == ATTN_EOVERFLOW &&
            st.fault.step == ATTN_MH_HEAD && st.fault.head == head)
            heads++;
        attn_mh_stream_free(&st);
        case_free(&c);
    }
    ck_assert_int_ge(heads, K_COUNT); /* of 2·K_COUNT */
}
END_TEST

/*
 * Loop: a head whose rotated queries overflow (Q's two rotated columns 1.7e308, finite;
 * turned by θ = 1 radian at position 1 they pass DBL_MAX): the fault names the head and
 * q_rope (a variant's step, variants.h's numbering) as attn_mh_forward_variants does.
 */
START_TEST(test_variant_fault_like_forward)
{
    struct mh_case c;
    case_init(&c, 0xf0e0u + (uint64_t)_i, K_NONE, 40);
    if (c.d_k < 2 || c.n_q < 2) {
        case_free(&c);
        return;
    }
    size_t head = (size_t)_i % c.heads, c0 = head * c.d_k;
    for (size_t l = 0; l < c.d; l++) {
        *w_cell(&c, c.w_q, l, c0, c.d) = l == 0 ? 1.7e308 : 0;
        *w_cell(&c, c.w_q, l, c0 + 1, c.d) = l == 0 ? 1.7e308 : 0;
    }
    for (size_t r = 0; r < c.n_q; r++)
        c.x_q[r * c.d] = 1;
    c.p.b_q = NULL;
    struct attn_rope rope = { .base = 10000, .rotated = 2 };
    ck_assert_int_eq(attn_rope_prepare(&rope, c.n_q, c.n_k), ATTN_OK);
    struct attn_variants var[4];
    struct attn_vtrace vs[4];
    for (size_t h = 0; h < c.heads; h++) {
        var[h] = (struct attn_variants){ .rope = &rope };
        ck_assert_int_eq(attn_vtrace_alloc_steps(&vs[h], c.n_q, c.n_k, c.d_k, &var[h]), ATTN_OK);
    }
    struct attn_mh_trace full;
    struct attn_mh_stream st;
    ck_assert_int_eq(attn_mh_trace_alloc(&full, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
    ck_assert_int_eq(attn_mh_forward_variants(&full, &c.p, var, vs), ATTN_EOVERFLOW);
    ck_assert_int_eq(attn_mh_stream_alloc(&st, c.n_q, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
    ck_assert_int_eq(attn_mh_forward_stream(&st, &c.p, var, NULL, c.n_q, 2), ATTN_EOVERFLOW);
    ck_assert_int_eq(st.fault.step, ATTN_MH_HEAD);
    ck_assert_uint_eq(st.fault.head, head);
    ck_assert_int_eq((int)st.fault.head_step, ATTN_STEP_Q_ROPE);
    ck_assert_int_eq(full.fault.step, ATTN_MH_HEAD);
    ck_assert_uint_eq(full.fault.head, head);
    ck_assert_int_eq((int)full.fault.head_step, ATTN_STEP_Q_ROPE);
    ck_assert_uint_eq(st.fault.row, full.fault.row);
    ck_assert_uint_eq(st.fault.col, full.fault.col);
    for (size_t h = 0; h < c.heads; h++)
        attn_vtrace_free(&vs[h]);
    attn_mh_stream_free(&st);
    attn_mh_trace_free(&full);
    attn_rope_release(&rope);
    case_free(&c);
}
END_TEST

/* With a rows list, a fault in W_O names the first listed row's real index. */
START_TEST(test_output_fault_real_row)
{
    struct mh_case c;
    case_init(&c, 0x0f17u, K_NONE, 50);
    size_t col = c.d - 1;
    if (c.p.transposed_weights)
        c.w_o[col * c.d] = INFINITY;
    else
        c.w_o[col] = INFINITY;
    size_t rows[] = { c.n_q - 1, 0 };
    struct attn_mh_stream st;
    ck_assert_int_eq(attn_mh_stream_alloc(&st, 2, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
    ck_assert_int_eq(attn_mh_forward_stream(&st, &c.p, NULL, rows, 2, 1), ATTN_EOVERFLOW);
    ck_assert_int_eq(st.fault.step, ATTN_MH_OUTPUT);
    ck_assert_uint_eq(st.fault.row, c.n_q - 1);
    ck_assert_uint_eq(st.fault.col, col);
    attn_mh_stream_free(&st);
    case_free(&c);
}
END_TEST

START_TEST(test_einval)
{
    struct mh_case c;
    case_init(&c, 0xe1e1u, K_NONE, 50);
    struct attn_mh_stream st;
    size_t rows[] = { 0, c.n_q };
    ck_assert_int_eq(attn_mh_stream_alloc(&st, 2, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
    ck_assert_int_eq(attn_mh_forward_stream(&st, &c.p, NULL, rows, 2, 1), ATTN_EINVAL);
    rows[1] = 0;
    ck_assert_int_eq(attn_mh_forward_stream(&st, &c.p, NULL, rows, 2, 1), ATTN_OK);
    ck_assert_int_eq(attn_mh_forward_stream(&st, &c.p, NULL, rows, 1, 1), ATTN_EINVAL);
    ck_assert_int_eq(attn_mh_forward_stream(&st, &c.p, NULL, NULL, 2, 1),
                     c.n_q == 2 ? ATTN_OK : ATTN_EINVAL);
    struct attn_variants var[4] = { { 0 } };
    var[c.heads - 1] = (struct attn_variants){ .dropout = true, .dropout_p = 0.1 };
    ck_assert_int_eq(attn_mh_forward_stream(&st, &c.p, var, rows, 2, 1), ATTN_EINVAL);
    c.p.heads = c.heads + 1;
    ck_assert_int_eq(attn_mh_forward_stream(&st, &c.p, NULL, rows, 2, 1), ATTN_EINVAL);
    attn_mh_stream_free(&st);
    ck_assert_int_eq(attn_mh_forward_stream(&st, &c.p, NULL, rows, 2, 1), ATTN_EINVAL);
    ck_assert_int_eq(attn_mh_stream_alloc(&st, 0, 1, 1, 4, 2, 1), ATTN_EINVAL);
    ck_assert(zeroed(&st, sizeof st));
    ck_assert_int_eq(attn_mh_stream_alloc(&st, 1, 1, 1, 6, 4, 1), ATTN_EINVAL);
    ck_assert_int_eq(attn_mh_stream_alloc(&st, 1, 1, 1, 4, 4, 3), ATTN_EINVAL);
    ck_assert_int_eq(attn_mh_stream_alloc(&st, SIZE_MAX / 8, 1, 1, 4, 2, 1), ATTN_ENOMEM);
    ck_assert(zeroed(&st, sizeof st));
    case_free(&c);
}
END_TEST

/* ---- Sizes ---- */

START_TEST(test_bytes_fixed_in_n_k)
{
    /* 200 listed rows (two row blocks) of 1000 queries, d_model 256 in 4 heads over 2 kv heads */
    size_t kv_cols = 2 * 64, small = attn_mh_stream_bytes(200, 1000, 4096, 256, 4, 2, 2);
    ck_assert_uint_gt(small, 0);
    /* doubling n_k adds K and V (kv_cols doubles a key each) and nothing (n_q, n_k) */
    size_t twice = attn_mh_stream_bytes(200, 1000, 8192, 256, 4, 2, 2);
    ck_assert_uint_eq(twice - small, 2 * 4096 * kv_cols * sizeof(double));
    /* at least: the answer's matrices, whole Q, the heads' answers and one head's pass */
    size_t matrices = (3 * 200 * 256 + 2 * 4096 * kv_cols) * sizeof(double);
    size_t q_whole = 1000 * 256 * sizeof(double);
    size_t head_answer = 200 * (64 + 6) * 8 + 200 * 9;
    ck_assert_uint_ge(small, matrices + q_whole + 4 * head_answer +
                                 attn_stream_bytes(200, 4096, 64, 64, 2));
    ck_assert_uint_le(small, matrices + q_whole + 4 * head_answer +
                                 attn_stream_bytes(200, 4096, 64, 64, 2) + 4 * 256);
    /* one thread's scratch less with one thread */
    ck_assert_uint_lt(attn_mh_stream_bytes(200, 1000, 4096, 256, 4, 2, 1), small);
    ck_assert_uint_eq(attn_mh_stream_bytes(0, 1000, 4096, 256, 4, 2, 1), 0);
    ck_assert_uint_eq(attn_mh_stream_bytes(200, 1000, 4096, 256, 3, 1, 1), 0);
    ck_assert_uint_eq(attn_mh_stream_bytes(200, SIZE_MAX / 4, 4096, 256, 4, 2, 1), 0);
    ck_assert_uint_eq(attn_mh_stream_bytes(200, 1000, SIZE_MAX / 4, 256, 4, 2, 1), 0);
}
END_TEST

static Suite *mh_stream_suite(void)
{
    Suite *s = suite_create("mh_stream");
    TCase *select = tcase_create("Select");
    TCase *agree = tcase_create("Agree");
    TCase *variants = tcase_create("Variants");
    TCase *faults = tcase_create("Faults");
    TCase *sizes = tcase_create("Sizes");
    tcase_add_loop_test(select, test_trace_select_rows, 0, 12);
    tcase_add_test(select, test_vtrace_select_rows);
    tcase_add_loop_test(select, test_mh_select_rows, 0, 2 * K_COUNT);
    suite_add_tcase(s, select);
    tcase_add_loop_test(agree, test_agrees_with_forward, 0, 6 * K_COUNT);
    tcase_add_loop_test(agree, test_threads_same_bits, 0, K_COUNT);
    suite_add_tcase(s, agree);
    tcase_add_loop_test(variants, test_variants_agree, 0, 2 * 14);
    suite_add_tcase(s, variants);
    tcase_add_loop_test(faults, test_fault_like_forward, 0, 5 * 2 * K_COUNT);
    tcase_add_test(faults, test_head_fault_happens);
    tcase_add_loop_test(faults, test_variant_fault_like_forward, 0, 8);
    tcase_add_test(faults, test_output_fault_real_row);
    tcase_add_test(faults, test_einval);
    suite_add_tcase(s, faults);
    tcase_add_test(sizes, test_bytes_fixed_in_n_k);
    suite_add_tcase(s, sizes);
    return s;
}

int main(void)
{
    /* One BLAS thread, as the server runs it (see check_stream.c). */
    attn_blas_set_threads(1);
    return suite_run(mh_stream_suite());
}
