/*
 * tests/unit/check_core.c — unit tests of core/: attention against the seeds' worked
 * examples, against the naive reference, at the numeric limits, and on bad input.
 *
 * What it is: one Check suite, "core", with the test cases
 *   Core       names, the trace's single block, the BLAS description;
 *   Seeds      the lecture notes' examples, to the last digit;
 *   Reference  random problems (every mask kind) and strided views: fast path == reference;
 *   Limits     scores of ±1e300, fully masked rows, overflow in each step, huge traces;
 *   Errors     every ATTN_EINVAL rule, one broken argument at a time.
 * Tests marked "both" run once with attn_forward (even _i) and once with
 * attn_reference, so the reference is itself held to the hand-computed numbers.
 *
 * Expected numbers were computed independently, in double precision with the
 * libm exp and log over the same formulas, not by this code.
 *
 * What it is not: a test of api/ or server/. Run under valgrind with CK_FORK=no.
 */
#include <cblas.h>
#include <check.h>

#include "tests/unit/suite_run.h"
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "core/memory.h"
#include "core/softmax_row.h"
#include "tests/unit/rand_inputs.h"

typedef enum attn_status (*attn_fn)(struct attn_trace *, const struct attn_problem *);

/* Loop tests over {0, 1}: 0 is the fast path, 1 the reference. */
static attn_fn impl_of(int i)
{
    return i % 2 == 0 ? attn_forward : attn_reference;
}

/* ---- comparing numbers ---- */

/* |got - want| <= atol + rtol·|want|; equal infinities match. */
static int near(double got, double want, double atol, double rtol)
{
    if (got == want)
        return 1;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/*
 * Checks inside loops over cells: Check records every ck_assert it passes (a write
 * per call), which made the random cases crawl under valgrind; this one costs a
 * branch until it fails.
 */
#define EXPECT(cond, ...)                  \
    do {                                   \
        if (!(cond))                       \
            ck_abort_msg(__VA_ARGS__);     \
    } while (0)

/* Hand-computed values: a few ulps. */
#define SEED_ATOL 1e-15
#define SEED_RTOL (4 * DBL_EPSILON)
/* Fast path against the reference (different summation orders). */
#define REF_ATOL 1e-12
#define REF_RTOL 1e-12

static void expect_near(double got, double want, const char *what, size_t i, size_t j)
{
    ck_assert_msg(near(got, want, SEED_ATOL, SEED_RTOL), "%s[%zu][%zu] = %.17g, want %.17g",
                  what, i, j, got, want);
}

/* Row i of m (cols) equals want (cols). */
static void expect_row(const struct attn_matrix *m, size_t i, const double *want, const char *what)
{
    for (size_t j = 0; j < m->cols; j++)
        expect_near(attn_at(m, i, j), want[j], what, i, j);
}

/* The whole of m equals want (rows, cols) row-major. */
static void expect_matrix(const struct attn_matrix *m, const double *want, const char *what)
{
    for (size_t i = 0; i < m->rows; i++)
        expect_row(m, i, want + i * m->cols, what);
}

/* Not a NaN anywhere in the trace's steps and summary. */
static void expect_no_nan(const struct attn_trace *t)
{
    const struct attn_matrix *steps[] = { &t->scores, &t->scaled, &t->masked, &t->weights,
                                          &t->output };

    for (size_t s = 0; s < 5; s++)
        for (size_t i = 0; i < steps[s]->rows; i++)
            for (size_t j = 0; j < steps[s]->cols; j++)
                EXPECT(!isnan(attn_at(steps[s], i, j)), "NaN in %s[%zu][%zu]",
                       attn_step_name((enum attn_step)(s + 1)), i, j);
    for (size_t i = 0; i < t->n_q; i++)
        EXPECT(!isnan(t->summary.row_sums[i]) && !isnan(t->summary.max_weight[i]) &&
                   !isnan(t->summary.entropy[i]),
               "NaN in the summary of row %zu", i);
}

/* ---- building problems over arrays ---- */

/* Views over contiguous arrays and the problem that borrows them. Not copyable. */
struct views {
    struct attn_matrix q, k, v, bias;
    struct attn_problem p;
};

/* q (n_q, d_k), k (n_k, d_k), v (n_k, d_v); no mask, no bias. */
static void views_init(struct views *c, double *q, size_t n_q, size_t d_k, double *k, size_t n_k,
                       double *v, size_t d_v, double scale)
{
    memset(c, 0, sizeof *c);
    c->q = attn_matrix_view(q, n_q, d_k);
    c->k = attn_matrix_view(k, n_k, d_k);
    c->v = attn_matrix_view(v, n_k, d_v);
    c->p.q = &c->q;
    c->p.k = &c->k;
    c->p.v = &c->v;
    c->p.mask.kind = ATTN_MASK_NONE;
    c->p.scale = scale;
}

/* bias (n_q, n_k) */
static void views_bias(struct views *c, double *bias)
{
    c->bias = attn_matrix_view(bias, c->q.rows, c->k.rows);
    c->p.bias = &c->bias;
}

static void views_mask(struct views *c, enum attn_mask_kind kind, const unsigned char *allow,
                       size_t rows)
{
    c->p.mask.kind = kind;
    c->p.mask.allow = allow;
    c->p.mask.rows = rows;
}

/* Allocates t for c's sizes and runs fn; returns fn's status. */
static enum attn_status run(attn_fn fn, struct attn_trace *t, const struct views *c)
{
    ck_assert_int_eq(attn_trace_alloc(t, c->q.rows, c->k.rows, c->v.cols), ATTN_OK);
    return fn(t, &c->p);
}

/* ---- Core ---- */

START_TEST(test_names)
{
    ck_assert_str_eq(attn_step_name(ATTN_STEP_NONE), "");
    ck_assert_str_eq(attn_step_name(ATTN_STEP_SCORES), "scores");
    ck_assert_str_eq(attn_step_name(ATTN_STEP_SCALED), "scaled");
    ck_assert_str_eq(attn_step_name(ATTN_STEP_MASKED), "masked");
    ck_assert_str_eq(attn_step_name(ATTN_STEP_WEIGHTS), "weights");
    ck_assert_str_eq(attn_step_name(ATTN_STEP_OUTPUT), "output");
    ck_assert_str_eq(attn_step_name((enum attn_step)42), "");
    ck_assert_str_eq(attn_status_str(ATTN_OK), "ok");
    ck_assert_str_eq(attn_status_str(ATTN_ENOMEM), "out of memory");
    ck_assert_str_eq(attn_status_str(ATTN_EINVAL), "invalid argument");
    ck_assert_str_eq(attn_status_str(ATTN_EOVERFLOW), "a step produced a non-finite number");
    ck_assert_str_eq(attn_status_str((enum attn_status)42), "unknown status");
}
END_TEST

/* Every array of the trace inside one zeroed block, in order, none overlapping. */
START_TEST(test_trace_layout)
{
    struct attn_trace t;
    const size_t n_q = 3, n_k = 5, d_v = 2;
    const double *base;

    ck_assert_int_eq(attn_trace_alloc(&t, n_q, n_k, d_v), ATTN_OK);
    ck_assert_uint_eq(attn_trace_cells(n_q, n_k, d_v), 4 * 15 + 6 + 6 * 3);
    ck_assert_uint_eq(t.n_q, n_q);
    ck_assert_uint_eq(t.n_k, n_k);
    ck_assert_uint_eq(t.d_v, d_v);
    base = t.block;
    ck_assert_ptr_eq(t.scores.data, base);
    ck_assert_ptr_eq(t.scaled.data, base + 15);
    ck_assert_ptr_eq(t.masked.data, base + 30);
    ck_assert_ptr_eq(t.weights.data, base + 45);
    ck_assert_ptr_eq(t.output.data, base + 60);
    ck_assert_ptr_eq(t.summary.row_sums, base + 66);
    ck_assert_ptr_eq(t.summary.max_weight, base + 69);
    ck_assert_ptr_eq(t.summary.entropy, base + 72);
    ck_assert_ptr_eq(t.summary.row_max, base + 75);
    ck_assert_ptr_eq(t.summary.row_sum, base + 78);
    ck_assert_ptr_eq(t.summary.lse, base + 81);
    ck_assert_ptr_eq((const void *)t.summary.argmax, (const void *)(base + 84));
    ck_assert_uint_eq((uintptr_t)t.summary.argmax % _Alignof(size_t), 0);
    ck_assert_ptr_eq((const void *)t.summary.fully_masked, (const void *)(t.summary.argmax + n_q));
    ck_assert_uint_eq(t.scores.rows, n_q);
    ck_assert_uint_eq(t.scores.cols, n_k);
    ck_assert_uint_eq(t.scores.stride, n_k);
    ck_assert_uint_eq(t.output.cols, d_v);
    ck_assert_uint_eq(t.output.stride, d_v);
    for (size_t c = 0; c < 84; c++)
        ck_assert(base[c] == 0.0);
    ck_assert_int_eq(t.fault.step, ATTN_STEP_NONE);
    attn_trace_free(&t);
    ck_assert_ptr_null(t.block);
    ck_assert_uint_eq(t.n_q, 0);
}
END_TEST

START_TEST(test_trace_free_twice)
{
    struct attn_trace t, zero;

    memset(&zero, 0, sizeof zero);
    ck_assert_int_eq(attn_trace_alloc(&t, 2, 2, 2), ATTN_OK);
    attn_trace_free(&t);
    ck_assert(memcmp(&t, &zero, sizeof t) == 0);
    attn_trace_free(&t);
    ck_assert(memcmp(&t, &zero, sizeof t) == 0);
    attn_trace_free(NULL);
}
END_TEST

START_TEST(test_blas_info)
{
    const char *info = attn_blas_info();

    /* OpenBLAS's own description, and the core it runs, whatever the build names */
    ck_assert_ptr_nonnull(strstr(info, "OpenBLAS"));
    ck_assert_msg(strstr(info, openblas_get_corename()) != NULL, "%s: no core %s", info,
                  openblas_get_corename());
    ck_assert_str_eq(attn_blas_info(), info);
    attn_blas_set_threads(0); /* clamped to 1, must not crash */
    attn_blas_set_threads(1);
}
END_TEST

/* A trace reused for a second problem shows that problem only. */
START_TEST(test_trace_reuse)
{
    double q[] = { 1, 0 }, k[] = { 1, 0, 0, 1 }, v[] = { 10, 0, 0, 20 };
    double big_q[] = { 1e200, 0 }, big_k[] = { 1e200, 0, 0, 1 };
    struct views ok, bad;
    struct attn_trace t;

    views_init(&ok, q, 1, 2, k, 2, v, 2, 1.0);
    views_init(&bad, big_q, 1, 2, big_k, 2, v, 2, 1.0);
    ck_assert_int_eq(run(attn_forward, &t, &ok), ATTN_OK);
    ck_assert_int_eq(attn_forward(&t, &bad.p), ATTN_EOVERFLOW);
    ck_assert_int_eq(t.fault.step, ATTN_STEP_SCORES);
    /* Steps after the fault are cleared, not left from the first problem. */
    ck_assert(t.weights.data[0] == 0.0 && t.output.data[0] == 0.0);
    ck_assert(t.summary.row_sums[0] == 0.0);
    ck_assert_int_eq(attn_forward(&t, &ok.p), ATTN_OK);
    ck_assert_int_eq(t.fault.step, ATTN_STEP_NONE);
    expect_near(t.output.data[0], 7.310585786300049, "output", 0, 0);
    attn_trace_free(&t);
}
END_TEST

/* ---- Seeds ---- */

/* Seed 000: d_k = 4, scale 1/√4. "both" */
START_TEST(test_seed000)
{
    double q[] = { 1, 0, 1, 0, 0, 1, 0, 1 };       /* (2, 4) */
    double k[] = { 1, 0, 1, 0, 1, 1, 1, 1 };       /* (2, 4) */
    double v[] = { 10, 0, 0, 10 };                 /* (2, 2) */
    const double scores[] = { 2, 2, 0, 2 };        /* (2, 2) */
    const double scaled[] = { 1, 1, 0, 1 };        /* (2, 2) */
    const double weights[] = { 0.5, 0.5, 0.2689414213699951, 0.7310585786300049 };
    const double output[] = { 5, 5, 2.6894142136999513, 7.310585786300049 };
    const double entropy[] = { 0.6931471805599453, 0.5822031088882179 };
    const double max_weight[] = { 0.5, 0.7310585786300049 };
    struct views c;
    struct attn_trace t;

    views_init(&c, q, 2, 4, k, 2, v, 2, 1.0 / sqrt(4.0));
    ck_assert_int_eq(run(impl_of(_i), &t, &c), ATTN_OK);
    expect_matrix(&t.scores, scores, "scores");
    expect_matrix(&t.scaled, scaled, "scaled");
    expect_matrix(&t.masked, scaled, "masked");
    expect_matrix(&t.weights, weights, "weights");
    expect_matrix(&t.output, output, "output");
    for (size_t i = 0; i < 2; i++) {
        expect_near(t.summary.row_sums[i], 1.0, "row_sums", i, 0);
        expect_near(t.summary.entropy[i], entropy[i], "entropy", i, 0);
        expect_near(t.summary.max_weight[i], max_weight[i], "max_weight", i, 0);
        ck_assert_uint_eq(t.summary.fully_masked[i], 0);
    }
    /* Row 0 is a tie: the lowest index wins. */
    ck_assert_uint_eq(t.summary.argmax[0], 0);
    ck_assert_uint_eq(t.summary.argmax[1], 1);
    ck_assert_uint_eq(t.summary.n_fully_masked, 0);
    ck_assert_int_eq(t.fault.step, ATTN_STEP_NONE);
    attn_trace_free(&t);
}
END_TEST

/* Seed 002's keys (3, 2) and values (3, 2); its examples are unscaled (scale 1). */
static double seed002_keys[] = { 1, 0, 0, 1, 0.8, 0.2 };
static double seed002_values[] = { 10, 0, 0, 20, 8, 4 };

/* One query q = [1, 0]: scores [1, 0, 0.8]. "both" */
START_TEST(test_seed002_one_query)
{
    double q[] = { 1, 0 };
    const double scores[] = { 1, 0, 0.8 };
    const double weights[] = { 0.4573288840552853, 0.16824189429781772, 0.37442922164689685 };
    const double output[] = { 7.568722613728028, 4.862554772543941 };
    struct views c;
    struct attn_trace t;

    views_init(&c, q, 1, 2, seed002_keys, 3, seed002_values, 2, 1.0);
    ck_assert_int_eq(run(impl_of(_i), &t, &c), ATTN_OK);
    expect_row(&t.scores, 0, scores, "scores");
    expect_row(&t.scaled, 0, scores, "scaled");
    expect_row(&t.weights, 0, weights, "weights");
    expect_row(&t.output, 0, output, "output");
    ck_assert_uint_eq(t.summary.argmax[0], 0);
    expect_near(t.summary.max_weight[0], 0.4573288840552853, "max_weight", 0, 0);
    expect_near(t.summary.entropy[0], 1.0254802267810252, "entropy", 0, 0);
    attn_trace_free(&t);
}
END_TEST

/* The text example: scores [1, 0] → weights ≈ [0.73, 0.27]; values [10,0],[0,20] → [7.3, 5.4]. "both" */
START_TEST(test_seed002_text_example)
{
    double q[] = { 1, 0 }, k[] = { 1, 0, 0, 1 }, v[] = { 10, 0, 0, 20 };
    const double weights[] = { 0.7310585786300049, 0.2689414213699951 };
    const double output[] = { 7.310585786300049, 5.3788284273999025 };
    struct views c;
    struct attn_trace t;

    views_init(&c, q, 1, 2, k, 2, v, 2, 1.0);
    ck_assert_int_eq(run(impl_of(_i), &t, &c), ATTN_OK);
    expect_row(&t.weights, 0, weights, "weights");
    expect_row(&t.output, 0, output, "output");
    attn_trace_free(&t);
}
END_TEST

/* Three queries Q1..Q3 over the same keys: each row of the weights sums to 1. "both" */
START_TEST(test_seed002_three_queries)
{
    double q[] = { 1, 0, 0, 1, 0.5, 0.5 }; /* (3, 2) */
    const double weights[] = {
        0.4573288840552853, 0.16824189429781772, 0.37442922164689685,
        0.2024420754938147, 0.5502946151303707,  0.2472633093758146,
        1.0 / 3,            1.0 / 3,             1.0 / 3,
    };
    const double output[] = {
        7.568722613728028, 4.862554772543941,
        4.002527229944664, 11.994945540110672,
        6.0,               7.999999999999999,
    };
    const size_t argmax[] = { 0, 1, 0 }; /* Q3 ties all three keys: the lowest wins */
    struct views c;
    struct attn_trace t;

    views_init(&c, q, 3, 2, seed002_keys, 3, seed002_values, 2, 1.0);
    ck_assert_int_eq(run(impl_of(_i), &t, &c), ATTN_OK);
    expect_matrix(&t.weights, weights, "weights");
    expect_matrix(&t.output, output, "output");
    for (size_t i = 0; i < 3; i++) {
        double sum = 0.0;
        for (size_t j = 0; j < 3; j++)
            sum += attn_at(&t.weights, i, j);
        expect_near(sum, 1.0, "row sum", i, 0);
        expect_near(t.summary.row_sums[i], 1.0, "row_sums", i, 0);
        ck_assert_uint_eq(t.summary.argmax[i], argmax[i]);
    }
    attn_trace_free(&t);
}
END_TEST

/* Seed 002's experiment table, each row one query against (possibly changed) keys. */
struct experiment {
    const char *what;
    double q[2];
    double key0[2];   /* the first key; the other two are seed 002's */
    size_t argmax;
    double max_weight;
    double entropy;
};

static const struct experiment experiments[] = {
    { "Q1 as given", { 1, 0 }, { 1, 0 }, 0, 0.4573288840552853, 1.0254802267810252 },
    { "Q1 [1,0] -> [2,0]", { 2, 0 }, { 1, 0 }, 0, 0.553815550392465, 0.8893186240421779 },
    { "Q3 as given", { 0.5, 0.5 }, { 1, 0 }, 0, 1.0 / 3, 1.0986122886681096 },
    { "Q3 [0.5,0.5] -> [0.9,0.1]", { 0.9, 0.1 }, { 1, 0 }, 0, 0.43450438362141586,
      1.048979203003205 },
    { "Q1, first key [1,0] -> [-1,0]", { 1, 0 }, { -1, 0 }, 2, 0.6193377616715132,
      0.8860101322334724 },
};
#define N_EXPERIMENTS (sizeof experiments / sizeof experiments[0])

/* Runs experiment e with fn; fills its argmax, max weight and entropy. */
static void run_experiment(attn_fn fn, const struct experiment *e, size_t *argmax, double *max_w,
                           double *entropy)
{
    double q[2] = { e->q[0], e->q[1] };
    double k[6] = { e->key0[0], e->key0[1], 0, 1, 0.8, 0.2 };
    struct views c;
    struct attn_trace t;

    views_init(&c, q, 1, 2, k, 3, seed002_values, 2, 1.0);
    ck_assert_int_eq(run(fn, &t, &c), ATTN_OK);
    *argmax = t.summary.argmax[0];
    *max_w = t.summary.max_weight[0];
    *entropy = t.summary.entropy[0];
    attn_trace_free(&t);
}

/* Loop over the table × {fast, reference}. */
START_TEST(test_seed002_experiment)
{
    const struct experiment *e = &experiments[_i / 2];
    size_t argmax;
    double max_w, entropy;

    run_experiment(impl_of(_i), e, &argmax, &max_w, &entropy);
    ck_assert_msg(argmax == e->argmax, "%s: argmax %zu, want %zu", e->what, argmax, e->argmax);
    ck_assert_msg(near(max_w, e->max_weight, SEED_ATOL, SEED_RTOL), "%s: max weight %.17g", e->what,
                  max_w);
    ck_assert_msg(near(entropy, e->entropy, SEED_ATOL, SEED_RTOL), "%s: entropy %.17g", e->what,
                  entropy);
}
END_TEST

/* What the experiments teach, as relations between the rows above. */
START_TEST(test_seed002_experiment_lessons)
{
    size_t a[N_EXPERIMENTS];
    double w[N_EXPERIMENTS], h[N_EXPERIMENTS];

    for (size_t e = 0; e < N_EXPERIMENTS; e++)
        run_experiment(attn_forward, &experiments[e], &a[e], &w[e], &h[e]);
    /* A bigger query, same direction: same winner, sharper (heavier, lower entropy). */
    ck_assert_uint_eq(a[1], a[0]);
    ck_assert(w[1] > w[0] && h[1] < h[0]);
    /* Q3 turned toward key 0: the three-way tie breaks clearly for key 0. */
    ck_assert(w[3] > w[2] && h[3] < h[2]);
    /* The first key reversed: the winner moves from key 0 to key 2 (the fruit). */
    ck_assert_uint_ne(a[4], a[0]);
    ck_assert_uint_eq(a[4], 2);
}
END_TEST

/* ---- Reference: random problems ---- */

enum rand_kind {
    RK_NONE, RK_CELLS, RK_PADDING, RK_CAUSAL_SQUARE, RK_CAUSAL_TALL, RK_CAUSAL_WIDE,
    RK_BIAS, RK_CELLS_BIAS, RK_COUNT
};

/* A random problem in heap arrays. */
struct rand_case {
    size_t n_q, n_k, d_k, d_v;
    double *q, *k, *v, *bias;  /* (n_q, d_k) (n_k, d_k) (n_k, d_v) (n_q, n_k) */
    unsigned char *allow;      /* (n_q, n_k), or (1, n_k) for key padding */
    struct views c;
};

/* Sizes 1..64 chosen so that each causal kind gets the n_q/n_k relation it names. */
static void rand_sizes(struct rand_case *r, uint64_t *s, enum rand_kind kind)
{
    r->d_k = rng_size(s, 1, 64);
    r->d_v = rng_size(s, 1, 64);
    r->n_q = rng_size(s, 1, 64);
    r->n_k = rng_size(s, 1, 64);
    if (kind == RK_CAUSAL_SQUARE)
        r->n_k = r->n_q;
    if (kind == RK_CAUSAL_TALL) { /* n_q > n_k: the first rows are fully masked */
        r->n_k = rng_size(s, 1, 63);
        r->n_q = rng_size(s, r->n_k + 1, 64);
    }
    if (kind == RK_CAUSAL_WIDE) { /* n_q < n_k */
        r->n_q = rng_size(s, 1, 63);
        r->n_k = rng_size(s, r->n_q + 1, 64);
    }
}

static void rand_case_init(struct rand_case *r, uint64_t seed, enum rand_kind kind)
{
    uint64_t s = seed;
    double scale;

    memset(r, 0, sizeof *r);
    rand_sizes(r, &s, kind);
    r->q = rand_fill(&s, r->n_q * r->d_k, -2, 2);
    r->k = rand_fill(&s, r->n_k * r->d_k, -2, 2);
    r->v = rand_fill(&s, r->n_k * r->d_v, -10, 10);
    scale = rng_next(&s) % 2 ? 1.0 / sqrt((double)r->d_k) : rng_real(&s, 0.1, 3);
    views_init(&r->c, r->q, r->n_q, r->d_k, r->k, r->n_k, r->v, r->d_v, scale);
    if (kind == RK_BIAS || kind == RK_CELLS_BIAS) {
        r->bias = rand_fill(&s, r->n_q * r->n_k, -3, 3);
        views_bias(&r->c, r->bias);
    }
    if (kind == RK_CELLS || kind == RK_CELLS_BIAS) {
        r->allow = rand_allow(&s, r->n_q, r->n_k);
        views_mask(&r->c, ATTN_MASK_CELLS, r->allow, r->n_q);
    }
    if (kind == RK_PADDING) {
        r->allow = rand_allow(&s, 1, r->n_k);
        views_mask(&r->c, ATTN_MASK_CELLS, r->allow, 1);
    }
    if (kind == RK_CAUSAL_SQUARE || kind == RK_CAUSAL_TALL || kind == RK_CAUSAL_WIDE)
        views_mask(&r->c, ATTN_MASK_CAUSAL, NULL, 0);
}

static void rand_case_free(struct rand_case *r)
{
    free(r->q);
    free(r->k);
    free(r->v);
    free(r->bias);
    free(r->allow);
}

/* Every cell of got within REF tolerance of want; -inf only where want has it. */
static void compare_matrix(const struct attn_matrix *got, const struct attn_matrix *want,
                           const char *what, uint64_t seed)
{
    ck_assert_uint_eq(got->rows, want->rows);
    ck_assert_uint_eq(got->cols, want->cols);
    for (size_t i = 0; i < got->rows; i++) {
        for (size_t j = 0; j < got->cols; j++) {
            double a = attn_at(got, i, j), b = attn_at(want, i, j);
            EXPECT(!isnan(a) && near(a, b, REF_ATOL, REF_RTOL),
                   "case %llu: %s[%zu][%zu] = %.17g, reference %.17g",
                   (unsigned long long)seed, what, i, j, a, b);
        }
    }
}

/* Summaries agree; argmax exactly, unless the two top weights are a near-tie. */
static void compare_summary(const struct attn_trace *got, const struct attn_trace *want,
                            uint64_t seed)
{
    const struct attn_summary *a = &got->summary, *b = &want->summary;

    ck_assert_uint_eq(a->n_fully_masked, b->n_fully_masked);
    for (size_t i = 0; i < got->n_q; i++) {
        EXPECT(a->fully_masked[i] == b->fully_masked[i] &&
                   near(a->row_sums[i], b->row_sums[i], REF_ATOL, REF_RTOL) &&
                   near(a->max_weight[i], b->max_weight[i], REF_ATOL, REF_RTOL) &&
                   near(a->entropy[i], b->entropy[i], REF_ATOL, REF_RTOL),
               "case %llu: summary of row %zu", (unsigned long long)seed, i);
        if (a->argmax[i] != b->argmax[i])
            EXPECT(a->argmax[i] != ATTN_NO_INDEX && b->argmax[i] != ATTN_NO_INDEX &&
                       near(attn_at(&want->weights, i, a->argmax[i]),
                            attn_at(&want->weights, i, b->argmax[i]), REF_ATOL, REF_RTOL),
                   "case %llu: argmax of row %zu: %zu, reference %zu", (unsigned long long)seed,
                   i, a->argmax[i], b->argmax[i]);
    }
}

static void compare_traces(const struct attn_trace *got, const struct attn_trace *want,
                           uint64_t seed)
{
    compare_matrix(&got->scores, &want->scores, "scores", seed);
    compare_matrix(&got->scaled, &want->scaled, "scaled", seed);
    compare_matrix(&got->masked, &want->masked, "masked", seed);
    compare_matrix(&got->weights, &want->weights, "weights", seed);
    compare_matrix(&got->output, &want->output, "output", seed);
    compare_summary(got, want, seed);
}

/* Checks what the mask promised: blocked cells -inf with weight 0, fully masked rows. */
static void check_mask_effects(const struct attn_trace *t, const struct attn_problem *p)
{
    for (size_t i = 0; i < t->n_q; i++) {
        size_t seen = 0;
        for (size_t j = 0; j < t->n_k; j++) {
            int allowed = 1;
            if (p->mask.kind == ATTN_MASK_CAUSAL)
                allowed = j + t->n_q <= i + t->n_k;
            else if (p->mask.kind == ATTN_MASK_CELLS)
                allowed = p->mask.allow[(p->mask.rows == 1 ? 0 : i) * t->n_k + j];
            seen += (size_t)allowed;
            EXPECT(allowed || (attn_at(&t->masked, i, j) == -INFINITY &&
                               attn_at(&t->weights, i, j) == 0.0),
                   "blocked cell [%zu][%zu] not -inf with weight 0", i, j);
        }
        EXPECT(t->summary.fully_masked[i] == (seen == 0) &&
                   (seen != 0 || t->summary.argmax[i] == ATTN_NO_INDEX),
               "fully masked row %zu misreported", i);
    }
}

#define RAND_PER_KIND 25

/* Loop: _i selects kind (_i % RK_COUNT) and seed. */
START_TEST(test_random_vs_reference)
{
    uint64_t seed = 0x5eed0000u + (uint64_t)_i;
    struct rand_case r;
    struct attn_trace fast, ref;

    rand_case_init(&r, seed, (enum rand_kind)(_i % RK_COUNT));
    ck_assert_int_eq(run(attn_forward, &fast, &r.c), ATTN_OK);
    ck_assert_int_eq(run(attn_reference, &ref, &r.c), ATTN_OK);
    compare_traces(&fast, &ref, seed);
    check_mask_effects(&fast, &r.c.p);
    expect_no_nan(&fast);
    attn_trace_free(&fast);
    attn_trace_free(&ref);
    rand_case_free(&r);
}
END_TEST

/* ---- Reference: the row statistics against a naive loop ---- */

/*
 * Row i's statistics from its masked scores in long double: the largest finite cell,
 * Σ e^(x − max) and max + ln Σ; every cell -inf (blocked) is a fully masked row, whose
 * statistics are exactly -inf, 0, -inf.
 */
static void expect_row_stats(const struct attn_trace *t, const char *what, uint64_t seed)
{
    for (size_t i = 0; i < t->n_q; i++) {
        const double *x = t->masked.data + i * t->n_k;
        long double max = -INFINITY, sum = 0;
        for (size_t j = 0; j < t->n_k; j++)
            if (x[j] != -INFINITY && x[j] > max)
                max = x[j];
        for (size_t j = 0; max != -INFINITY && j < t->n_k; j++)
            if (x[j] != -INFINITY)
                sum += expl((long double)x[j] - max);
        const struct attn_summary *s = &t->summary;
        if (max == -INFINITY) {
            EXPECT(s->row_max[i] == -INFINITY && s->row_sum[i] == 0 && s->lse[i] == -INFINITY,
                   "%s case %llu: fully masked row %zu: %g %g %g", what,
                   (unsigned long long)seed, i, s->row_max[i], s->row_sum[i], s->lse[i]);
            continue;
        }
        double lse = (double)(max + logl(sum));
        EXPECT(s->row_max[i] == (double)max && near(s->row_sum[i], (double)sum, 0, REF_RTOL) &&
                   near(s->lse[i], lse, REF_ATOL, REF_RTOL),
               "%s case %llu: row %zu: max %.17g sum %.17g lse %.17g, naive %.17g %.17g %.17g",
               what, (unsigned long long)seed, i, s->row_max[i], s->row_sum[i], s->lse[i],
               (double)max, (double)sum, lse);
    }
}

/* Loop: _i selects kind and seed. Every path fills row_max, row_sum and lse, with
 * skip_summary too; a fault leaves them zero. */
START_TEST(test_row_stats_vs_naive)
{
    uint64_t seed = 0x57a70000u + (uint64_t)_i;
    struct rand_case r;
    struct attn_trace fast, lean, threads, ref;

    rand_case_init(&r, seed, (enum rand_kind)(_i % RK_COUNT));
    ck_assert_int_eq(run(attn_forward, &fast, &r.c), ATTN_OK);
    ck_assert_int_eq(run(attn_reference, &ref, &r.c), ATTN_OK);
    r.c.p.skip_summary = true;
    ck_assert_int_eq(run(attn_forward, &lean, &r.c), ATTN_OK);
    ck_assert_int_eq(attn_trace_alloc(&threads, r.n_q, r.n_k, r.d_v), ATTN_OK);
    ck_assert_int_eq(attn_forward_threads(&threads, &r.c.p, 3), ATTN_OK);
    expect_row_stats(&fast, "forward", seed);
    expect_row_stats(&lean, "skip_summary", seed);
    expect_row_stats(&threads, "threads", seed);
    expect_row_stats(&ref, "reference", seed);
    /* A fault zeroes them with the rest of the summary. */
    r.q[0] = INFINITY;
    ck_assert_int_eq(attn_forward(&lean, &r.c.p), ATTN_EOVERFLOW);
    for (size_t i = 0; i < r.n_q; i++)
        ck_assert(lean.summary.row_max[i] == 0 && lean.summary.row_sum[i] == 0 &&
                  lean.summary.lse[i] == 0);
    attn_trace_free(&fast);
    attn_trace_free(&lean);
    attn_trace_free(&threads);
    attn_trace_free(&ref);
    rand_case_free(&r);
}
END_TEST

/*
 * argmax is the first key of the largest masked score: scores 0, 1e-20, 1e-20, 0 give
 * four weights of exactly 1/4 (e^-1e-20 rounds to 1), and the heaviest key in exact
 * arithmetic is key 1, not key 0, which the first largest weight would name. "both"
 */
START_TEST(test_argmax_first_max_score)
{
    double q[] = { 1 }, k[] = { 0, 1e-20, 1e-20, 0 }, v[] = { 1, 2, 3, 4 };
    struct views c;
    struct attn_trace t;

    views_init(&c, q, 1, 1, k, 4, v, 1, 1.0);
    ck_assert_int_eq(run(impl_of(_i), &t, &c), ATTN_OK);
    for (size_t j = 0; j < 4; j++)
        ck_assert(attn_at(&t.weights, 0, j) == 0.25);
    ck_assert_uint_eq(t.summary.argmax[0], 1);
    ck_assert(t.summary.max_weight[0] == 0.25);
    ck_assert(t.summary.row_max[0] == 1e-20 && t.summary.row_sum[0] == 4);
    attn_trace_free(&t);
}
END_TEST

/* Every byte of every step and of the summary alike: the threaded path's promise. */
static void expect_same_bits(const struct attn_trace *a, const struct attn_trace *b)
{
    const struct attn_matrix *ma[] = { &a->scores, &a->scaled, &a->masked, &a->weights,
                                       &a->output };
    const struct attn_matrix *mb[] = { &b->scores, &b->scaled, &b->masked, &b->weights,
                                       &b->output };
    size_t n_q = a->n_q;

    for (size_t s = 0; s < 5; s++)
        EXPECT(memcmp(ma[s]->data, mb[s]->data, ma[s]->rows * ma[s]->cols * sizeof(double)) == 0,
               "step %zu differs", s + 1);
    EXPECT(memcmp(a->summary.row_sums, b->summary.row_sums, n_q * sizeof(double)) == 0 &&
               memcmp(a->summary.max_weight, b->summary.max_weight, n_q * sizeof(double)) == 0 &&
               memcmp(a->summary.entropy, b->summary.entropy, n_q * sizeof(double)) == 0 &&
               memcmp(a->summary.argmax, b->summary.argmax, n_q * sizeof(size_t)) == 0 &&
               memcmp(a->summary.fully_masked, b->summary.fully_masked, n_q) == 0,
           "summaries differ");
    ck_assert_uint_eq(a->summary.n_fully_masked, b->summary.n_fully_masked);
    ck_assert_int_eq(a->fault.step, b->fault.step);
}

/* Loop: attn_forward_threads on 2, 3, 4 threads gives attn_forward's bits, every kind. */
START_TEST(test_threads_same_bits)
{
    uint64_t seed = 0x7eed0000u + (uint64_t)_i;
    unsigned threads = 2 + (unsigned)(_i % 3);
    struct rand_case r;
    struct attn_trace one, many;

    rand_case_init(&r, seed, (enum rand_kind)(_i % RK_COUNT));
    ck_assert_int_eq(run(attn_forward, &one, &r.c), ATTN_OK);
    ck_assert_int_eq(attn_trace_alloc(&many, r.n_q, r.n_k, r.d_v), ATTN_OK);
    ck_assert_int_eq(attn_forward_threads(&many, &r.c.p, threads), ATTN_OK);
    expect_same_bits(&one, &many);
    attn_trace_free(&one);
    attn_trace_free(&many);
    rand_case_free(&r);
}
END_TEST

/*
 * Loop: when only the output overflows (an infinite value in V), the fast path gives up
 * and attn_forward reruns every step pass by pass. Steps 1-4 do not read V, so the
 * rerun must give them the fast path's bits exactly, every mask kind and bias: both
 * paths share the row arithmetic, and this keeps the passes' iteration honest too.
 * (The summary, fully masked rows included, is zeroed by the fault, as documented.)
 */
START_TEST(test_steps_rerun_same_bits)
{
    uint64_t seed = 0x5e750000u + (uint64_t)_i;
    struct rand_case r;
    struct attn_trace fast, rerun;

    rand_case_init(&r, seed, (enum rand_kind)(_i % RK_COUNT));
    ck_assert_int_eq(run(attn_forward, &fast, &r.c), ATTN_OK);
    r.v[0] = INFINITY; /* V[0][0]: every output row's first cell is inf or NaN */
    ck_assert_int_eq(attn_trace_alloc(&rerun, r.n_q, r.n_k, r.d_v), ATTN_OK);
    ck_assert_int_eq(attn_forward(&rerun, &r.c.p), ATTN_EOVERFLOW);
    ck_assert_int_eq(rerun.fault.step, ATTN_STEP_OUTPUT);
    ck_assert_uint_eq(rerun.fault.row, 0);
    ck_assert_uint_eq(rerun.fault.col, 0);
    const struct attn_matrix *a[] = { &fast.scores, &fast.scaled, &fast.masked, &fast.weights };
    const struct attn_matrix *b[] = { &rerun.scores, &rerun.scaled, &rerun.masked,
                                      &rerun.weights };
    for (size_t k = 0; k < 4; k++)
        EXPECT(memcmp(a[k]->data, b[k]->data, r.n_q * r.n_k * sizeof(double)) == 0,
               "step %zu differs between the fast path and the rerun (seed %llx)", k + 1,
               (unsigned long long)seed);
    ck_assert_uint_eq(rerun.summary.n_fully_masked, 0); /* a fault zeroes the summary */
    attn_trace_free(&fast);
    attn_trace_free(&rerun);
    rand_case_free(&r);
}
END_TEST

/*
 * Sizes where BLAS takes its blocked kernels and the blocks end mid-panel (301 rows:
 * three row blocks, the last of 45), causal and not: still attn_forward's bits.
 */
START_TEST(test_threads_same_bits_large)
{
    enum { N_Q = 301, N_K = 517, D = 64 };
    uint64_t s = 0x1a7e;
    double *q = rand_fill(&s, N_Q * D, -2, 2), *k = rand_fill(&s, N_K * D, -2, 2);
    double *v = rand_fill(&s, N_K * D, -10, 10);
    struct views c;
    struct attn_trace one, many;

    views_init(&c, q, N_Q, D, k, N_K, v, D, 0.125);
    if (_i == 1)
        views_mask(&c, ATTN_MASK_CAUSAL, NULL, 0);
    ck_assert_int_eq(run(attn_forward, &one, &c), ATTN_OK);
    ck_assert_int_eq(attn_trace_alloc(&many, N_Q, N_K, D), ATTN_OK);
    for (unsigned threads = 2; threads <= 3; threads++) {
        ck_assert_int_eq(attn_forward_threads(&many, &c.p, threads), ATTN_OK);
        expect_same_bits(&one, &many);
    }
    attn_trace_free(&one);
    attn_trace_free(&many);
    free(q);
    free(k);
    free(v);
}
END_TEST

/*
 * src (rows, cols) copied into columns [off, off + cols) of a wider matrix whose other
 * cells are NaN: if a strided pass ever read outside its view, the NaN would show.
 */
static double *widen(const double *src, size_t rows, size_t cols, size_t off, size_t width)
{
    double *w = malloc(rows * width * sizeof *w);

    ck_assert_ptr_nonnull(w);
    for (size_t c = 0; c < rows * width; c++)
        w[c] = NAN;
    for (size_t i = 0; i < rows; i++)
        memcpy(w + i * width + off, src + i * cols, cols * sizeof *w);
    return w;
}

/* The view of columns [off, off + cols) of a (rows, width) matrix. */
static struct attn_matrix column_block(double *wide, size_t rows, size_t cols, size_t off,
                                       size_t width)
{
    struct attn_matrix m = { wide + off, rows, cols, width };
    return m;
}

/* Loop: a column block of a wider Q, K, V and bias gives what contiguous copies give. */
START_TEST(test_strided_views)
{
    uint64_t seed = 0x57e1de00u + (uint64_t)_i, s = seed;
    struct rand_case r;
    struct attn_trace dense, strided, ref;
    size_t off = rng_size(&s, 0, 5), pad = off + rng_size(&s, 1, 5);
    double *wq, *wk, *wv, *wb;
    struct views c;

    rand_case_init(&r, seed, _i % 2 ? RK_CELLS_BIAS : RK_CAUSAL_WIDE);
    if (r.bias == NULL) {
        r.bias = rand_fill(&s, r.n_q * r.n_k, -1, 1);
        views_bias(&r.c, r.bias);
    }
    wq = widen(r.q, r.n_q, r.d_k, off, r.d_k + pad);
    wk = widen(r.k, r.n_k, r.d_k, off, r.d_k + pad);
    wv = widen(r.v, r.n_k, r.d_v, off, r.d_v + pad);
    wb = widen(r.bias, r.n_q, r.n_k, off, r.n_k + pad);
    c = r.c;
    c.q = column_block(wq, r.n_q, r.d_k, off, r.d_k + pad);
    c.k = column_block(wk, r.n_k, r.d_k, off, r.d_k + pad);
    c.v = column_block(wv, r.n_k, r.d_v, off, r.d_v + pad);
    c.bias = column_block(wb, r.n_q, r.n_k, off, r.n_k + pad);
    c.p.q = &c.q;
    c.p.k = &c.k;
    c.p.v = &c.v;
    c.p.bias = &c.bias;

    ck_assert_int_eq(run(attn_forward, &dense, &r.c), ATTN_OK);
    ck_assert_int_eq(run(attn_forward, &strided, &c), ATTN_OK);
    ck_assert_int_eq(run(attn_reference, &ref, &c), ATTN_OK);
    compare_traces(&strided, &dense, seed);
    compare_traces(&strided, &ref, seed);
    expect_no_nan(&strided);
    attn_trace_free(&dense);
    attn_trace_free(&strided);
    attn_trace_free(&ref);
    free(wq);
    free(wk);
    free(wv);
    free(wb);
    rand_case_free(&r);
}
END_TEST

/* ---- Limits ---- */

/*
 * Scores of ±1e300 (scale 1): Q = I (4, 4) makes scores = Kᵀ exactly, so
 * K (3, 4) holds the wanted score rows as columns. "both"
 */
START_TEST(test_huge_scores)
{
    double q[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    const double h = 1e300;
    const double scores[] = { /* (4, 3) */
        h, h, h,
        h, -h, h,
        -h, -h, -h,
        h, 0, -h,
    };
    const double third = 1.0 / 3;
    const double weights[] = { third, third, third, 0.5, 0, 0.5, third, third, third, 1, 0, 0 };
    double k[12], v[3] = { 3, 6, 9 }; /* k (3, 4), v (3, 1) */
    const double output[] = { 6, 6, 6, 3 };
    struct views c;
    struct attn_trace t;

    for (size_t j = 0; j < 3; j++)
        for (size_t i = 0; i < 4; i++)
            k[j * 4 + i] = scores[i * 3 + j];
    views_init(&c, q, 4, 4, k, 3, v, 1, 1.0);
    ck_assert_int_eq(run(impl_of(_i), &t, &c), ATTN_OK);
    expect_matrix(&t.scores, scores, "scores");
    expect_matrix(&t.weights, weights, "weights");
    expect_matrix(&t.output, output, "output");
    expect_no_nan(&t);
    /* The max shift keeps lse finite: h + ln 3 rounds to h. */
    const double row_max[] = { h, h, -h, h }, row_sum[] = { 3, 2, 3, 1 };
    for (size_t i = 0; i < 4; i++) {
        ck_assert(isfinite(t.summary.lse[i]) && t.summary.lse[i] == row_max[i]);
        ck_assert(t.summary.row_max[i] == row_max[i] && t.summary.row_sum[i] == row_sum[i]);
    }
    attn_trace_free(&t);
}
END_TEST

/*
 * Weights far below the row's max: e^-710 and e^-744 are subnormal, e^-800 is 0,
 * and -1e300 must not turn into NaN on the way. Expected values from libm's exp:
 * the fast path hands such cells to it (ulp-exact below -707 matters, since a
 * subnormal has few bits). The fast path only: the reference's 1 / Σ e^(x_l - x_j)
 * overflows for such a cell and gives it 0.
 */
START_TEST(test_tiny_weights)
{
    double q[1] = { 1 };
    double k[6] = { 0, -706.5, -707.5, -710, -744, -800 };
    double v[6] = { 1, 1, 1, 1, 1, 1 };
    struct views c;
    struct attn_trace t;

    views_init(&c, q, 1, 1, k, 6, v, 1, 1.0);
    ck_assert_int_eq(run(attn_forward, &t, &c), ATTN_OK);
    /* The sum is 1 + e^-706.5 + ...: exactly 1 in double, so each weight is its exp. */
    ck_assert(attn_at(&t.weights, 0, 0) == 1.0);
    for (size_t j = 1; j < 6; j++) {
        double want = exp(k[j]), got = attn_at(&t.weights, 0, j);
        ck_assert_msg(fabs(got - want) <= nextafter(want, INFINITY) - want,
                      "weights[0][%zu] = %a, want %a", j, got, want);
    }
    ck_assert(attn_at(&t.weights, 0, 5) == 0.0);
    ck_assert(t.summary.entropy[0] > 0.0 && t.summary.entropy[0] < 1e-300);
    attn_trace_free(&t);
}
END_TEST

/*
 * The row kernel's exponential against libm's, cell by cell: within one ulp over
 * the whole range softmax uses (0 down to below the subnormals), exact at 0 and for
 * -inf, and the same whether it writes over its input or not.
 */
START_TEST(test_row_exp_vs_libm)
{
    enum { N = 4099 }; /* not a multiple of any vector width */
    static double x[N], w[N], in_place[N];
    uint64_t seed = 0x5eed;
    const double edges[] = { 0.0, -0.0, -1e-300, -0x1p-30, -0.5, -1, -707, -707.0000001, -708,
                             -745, -745.2, -746, -1e300, -INFINITY };
    size_t n_edges = sizeof edges / sizeof edges[0];
    double sum = 0.0, got_sum;

    for (size_t j = 0; j < N; j++)
        x[j] = j < n_edges ? edges[j] : rng_real(&seed, j % 2 ? -30.0 : -750.0, 0.0);
    got_sum = attn_row_exp(x, 0.0, w, N);
    for (size_t j = 0; j < N; j++) {
        double want = exp(x[j]);
        double ulp = nextafter(want, INFINITY) - want;
        ck_assert_msg(fabs(w[j] - want) <= ulp, "e^%a = %a, libm %a", x[j], w[j], want);
        sum += want;
    }
    ck_assert(w[0] == 1.0 && w[1] == 1.0 && w[n_edges - 1] == 0.0);
    ck_assert_msg(fabs(got_sum - sum) <= N * DBL_EPSILON * sum, "sum %a, want %a", got_sum, sum);
    memcpy(in_place, x, sizeof x);
    ck_assert(attn_row_exp(in_place, 0.0, in_place, N) == got_sum);
    ck_assert(memcmp(in_place, w, sizeof w) == 0);
}
END_TEST

/*
 * The entropy's logarithm against long double logl, weight by weight: at most 0.53
 * ulp off (glibc's log is 0.52) over the weights' whole range, log-uniform from the
 * subnormals up to 1, with the edges of its fast range (1 - 1/16, the least normal)
 * and of its table's subintervals (multiples of 2^-8 and 2^-7 around 1), and equal to
 * libm's log where it hands the weight over (near 1, subnormal). A wrong table entry
 * or constant shows here as whole ulps.
 */
START_TEST(test_row_logs_vs_logl)
{
    enum { N = 200003 };
    static double x[N], logs[N];
    uint64_t seed = 0x106;
    const double edges[] = { 1.0, 0.9375, nextafter(0.9375, 1.0), nextafter(0.9375, 0.0),
                             0.5, nextafter(0.5, 0.0), 0.6875, nextafter(0.6875, 0.0),
                             0x1p-1022, nextafter(0x1p-1022, 0.0), 0x1p-1074, 0.99999,
                             1.0 / 3, 0.2689414213699951, 0.7310585786300049 };
    size_t n_edges = sizeof edges / sizeof edges[0], k = 0;
    double worst = 0.0;
    /* logl is a reference only where long double is wider than double when it runs
     * (valgrind runs x87 arithmetic as double): otherwise libm's log, within an ulp */
    volatile long double one = 1.0L, wider = one + 0x1p-60L;
    bool extended = wider != one;

    for (; k < n_edges; k++)
        x[k] = edges[k];
    for (int i = 0; i < 256 && k < N; i++) /* every subinterval's ends, at a few scales */
        for (int e = -3; e <= 0; e++, k++)
            x[k] = ldexp(i < 128 ? 0.6875 + i / 256.0 : 1.0 + (i - 128) / 128.0, e - 1);
    for (; k < N; k++)
        x[k] = exp(rng_real(&seed, -745.0, 0.0)); /* log-uniform, subnormals included */
    attn_row_logs(x, logs, N);
    for (size_t j = 0; j < N; j++) {
        if (!(x[j] > 0.0) || x[j] > 1.0)
            continue;
        long double want = extended ? logl((long double)x[j]) : (long double)log(x[j]);
        double near = (double)want, ulp = nextafter(fabs(near), INFINITY) - fabs(near);
        double off = near == 0.0 ? fabs(logs[j]) : (double)(fabsl((long double)logs[j] - want) / ulp);
        if (!(x[j] >= 0x1p-1022 && x[j] <= 0.9375)) /* handed to libm */
            ck_assert_msg(logs[j] == log(x[j]), "log(%a) = %a, libm %a", x[j], logs[j], log(x[j]));
        ck_assert_msg(off <= (extended ? 0.53 : 1.0), "log(%a) = %a, %.3f ulp off", x[j], logs[j], off);
        worst = off > worst ? off : worst;
    }
    ck_assert(logs[0] == 0.0); /* log 1 */
    if (extended)              /* a real measure: rounding alone is 0.5 */
        ck_assert(worst > 0.45 && worst <= 0.53);
}
END_TEST

/* core/softmax_row.c built for the baseline alone (tests/unit/softmax_row_baseline.c). */
bool baseline_row_scale(const double *s, double *x, size_t n, double scale);
double baseline_row_max(const double *x, size_t n);
bool baseline_row_scale_max(const double *s, double *x, size_t n, double scale, double *max);
double baseline_row_exp(const double *x, double max, double *w, size_t n);
bool baseline_row_divide(double *w, size_t n, double sum);
struct attn_row_facts baseline_row_facts_of(const double *w, size_t n);
void baseline_row_logs(const double *x, double *logs, size_t n);

/*
 * The row functions the program runs (on this CPU, its AVX-512 or AVX2 build where it
 * has them) give the baseline build's bits: rows of every length up to 300 (vector
 * tails), values near, far and blocked, a cell in the subnormal range; the AVX-512
 * loops' tables read by loads (_i = 0), by gathers (1) and as timed on first use (2).
 */
START_TEST(test_row_same_bits_as_baseline)
{
    enum { MAX_N = 300 };
    static double s[MAX_N], x1[MAX_N], x2[MAX_N], w1[MAX_N], w2[MAX_N];
    uint64_t seed = 0xba5e;
    attn_row_use_gathers(_i == 2 ? -1 : _i);

    for (size_t row = 0; row < 3000; row++) {
        size_t n = 1 + row % MAX_N;
        for (size_t j = 0; j < n; j++)
            s[j] = rng_real(&seed, row % 5 == 0 ? -2000.0 : -40.0, 40.0);
        if (row % 7 == 0 && n > 1) /* blocked, but not the whole row (core skips that) */
            s[n / 2] = -INFINITY;
        double scale = rng_real(&seed, 0.01, 2.0);
        ck_assert(attn_row_scale(s, x1, n, scale) == baseline_row_scale(s, x2, n, scale));
        ck_assert(memcmp(x1, x2, n * sizeof *x1) == 0);
        double max = attn_row_max(x1, n), max1, max2;
        ck_assert(memcmp(&max, &(double){ baseline_row_max(x1, n) }, sizeof max) == 0);
        /* the fused pass: the two calls' bits, in the program's build and the baseline */
        ck_assert(attn_row_scale_max(s, w1, n, scale, &max1) == attn_row_scale(s, x2, n, scale) &&
                  baseline_row_scale_max(s, w2, n, scale, &max2) == attn_row_scale(s, x2, n, scale));
        ck_assert(memcmp(w1, x1, n * sizeof *w1) == 0 && memcmp(w2, x1, n * sizeof *w2) == 0);
        ck_assert(memcmp(&max1, &max, sizeof max) == 0 && memcmp(&max2, &max, sizeof max) == 0);
        double sum = attn_row_exp(x1, max, w1, n);
        ck_assert(memcmp(&sum, &(double){ baseline_row_exp(x1, max, w2, n) }, sizeof sum) == 0);
        ck_assert_msg(memcmp(w1, w2, n * sizeof *w1) == 0, "row %zu: exp", row);
        ck_assert(attn_row_divide(w1, n, sum) && baseline_row_divide(w2, n, sum));
        ck_assert_msg(memcmp(w1, w2, n * sizeof *w1) == 0, "row %zu: divide", row);
        struct attn_row_facts f1 = attn_row_facts_of(w1, n), f2 = baseline_row_facts_of(w1, n);
        ck_assert(memcmp(&f1.sum, &f2.sum, sizeof f1.sum) == 0 && f1.argmax == f2.argmax &&
                  f1.max_weight == f2.max_weight &&
                  memcmp(&f1.entropy, &f2.entropy, sizeof f1.entropy) == 0);
        attn_row_logs(w1, x1, n);
        baseline_row_logs(w1, x2, n);
        for (size_t j = 0; j < n; j++) /* only a positive weight's log is specified */
            ck_assert_msg(!(w1[j] > 0.0) || memcmp(&x1[j], &x2[j], sizeof x1[j]) == 0,
                          "row %zu: log", row);
    }
    attn_row_use_gathers(-1);
}
END_TEST

/*
 * The logs and exponentials the program runs (on an AVX-512 CPU, core's own AVX-512
 * loops) against the baseline build's, over their whole domain: logs of x in
 * [2^-1074, 1] spread over every binade, exponentials of t in [-1100, 0], row lengths
 * 1 to 40 (every tail of an 8-lane loop), zeros and -inf among them; tables read by
 * loads (_i = 0), by gathers (1) and as timed on first use (2).
 */
START_TEST(test_exp_log_same_bits_as_baseline)
{
    enum { MAX_N = 40 };
    double x[MAX_N], a[MAX_N], b[MAX_N];
    uint64_t seed = 0x10c5;
    attn_row_use_gathers(_i == 2 ? -1 : _i);
    for (size_t row = 0; row < 20000; row++) {
        size_t n = 1 + row % MAX_N;
        for (size_t j = 0; j < n; j++)
            x[j] = j % 11 == 3 ? 0.0 : ldexp(rng_real(&seed, 0.5, 1.0), -(int)(row % 1076));
        if (row % 5 == 0)
            x[n / 2] = 1.0;
        attn_row_logs(x, a, n);
        baseline_row_logs(x, b, n);
        for (size_t j = 0; j < n; j++)
            ck_assert_msg(!(x[j] > 0.0) || memcmp(&a[j], &b[j], sizeof a[j]) == 0,
                          "log(%a): %a, baseline %a", x[j], a[j], b[j]);
        for (size_t j = 0; j < n; j++)
            x[j] = j % 13 == 5 ? -INFINITY : -rng_real(&seed, 0.0, row % 3 ? 40.0 : 1100.0);
        double s1 = attn_row_exp(x, 0.0, a, n), s2 = baseline_row_exp(x, 0.0, b, n);
        ck_assert(memcmp(a, b, n * sizeof *a) == 0 && memcmp(&s1, &s2, sizeof s1) == 0);
    }
    attn_row_use_gathers(-1);
}
END_TEST

/* x / y as one IEEE 754 division, kept out of any rewriting by the compiler. */
static double divided(double x, double y)
{
    volatile double q = x / y;
    return q;
}

/*
 * attn_row_divide's quotients are divisions' bits (its AVX-512 loop multiplies by the
 * reciprocal, corrects and checks, core/softmax_row.c): 2^20 random pairs over many
 * binades of weight and sum, then the edges: quotients that are powers of two (from
 * above and below), weights equal to the sum, weights near 2^-900 and subnormal, zeros,
 * sums of 1, just above 1, and 2^900, and beyond it (the division path), every tail.
 */
START_TEST(test_row_divide_exact)
{
    enum { N = 1 << 12 };
    static double w[N], want[N];
    uint64_t seed = 0xd1d;
    for (int round = 0; round < 256; round++) {
        double sum = round % 16 == 0 ? 1.0 : ldexp(rng_real(&seed, 1.0, 2.0), round % 40);
        for (size_t j = 0; j < N; j++)
            w[j] = ldexp(rng_real(&seed, 0.5, 1.0), -(int)((j + round) % 70)) * sum;
        for (size_t j = 0; j < N; j++)
            want[j] = divided(w[j], sum);
        ck_assert(attn_row_divide(w, N, sum));
        for (size_t j = 0; j < N; j++)
            ck_assert_msg(memcmp(&w[j], &want[j], sizeof w[j]) == 0,
                          "round %d: %a / %a = %a, want %a", round, w[j] * sum, sum, w[j], want[j]);
    }
    const double sums[] = { 1.0, 0x1.0000000000001p0, 3.0, 0x1.fffffffffffffp0, 1e6 / 7, 0x1p900,
                            0x1p901, 0.5 };
    for (size_t s = 0; s < sizeof sums / sizeof sums[0]; s++) {
        double sum = sums[s];
        const double cells[] = { sum, sum / 2, sum / 4, 0.0, 1.0, 0x1p-900, 0x1.fffffffffffffp-901,
                                 0x1p-1022, 0x1p-1074, 0x1p-1000, nextafter(sum / 2, 0.0),
                                 nextafter(sum / 2, INFINITY), 0x1p-52, 1e-300, 0.1 };
        enum { CELLS = sizeof cells / sizeof cells[0] };
        for (size_t n = 1; n <= 3 * CELLS; n++) {
            for (size_t j = 0; j < n; j++) {
                w[j] = cells[(j * 7 + n) % CELLS];
                want[j] = divided(w[j], sum);
            }
            ck_assert(attn_row_divide(w, n, sum));
            for (size_t j = 0; j < n; j++)
                ck_assert_msg(memcmp(&w[j], &want[j], sizeof w[j]) == 0,
                              "%zu cells over %a: cell %zu is %a, want %a", n, sum, j, w[j], want[j]);
        }
    }
    double inf_row[9] = { 1, 1, 1, 1, 1, 1, 1, INFINITY, 1 }; /* a quotient not finite: false */
    ck_assert(!attn_row_divide(inf_row, 9, 1.5));
}
END_TEST

/*
 * Defence in depth (issue 32): callers check that a row is finite before its facts, but
 * a row of NaN must not send the argmax scan past its end. Its max is -inf, equal to no
 * weight; here the cell after the row holds -inf, where the unbounded scan stopped.
 */
START_TEST(test_row_facts_stay_in_row)
{
    double cells[4] = { NAN, NAN, NAN, -INFINITY }; /* a row of 3, then something else */
    struct attn_row_facts f = attn_row_facts_of(cells, 3);
    ck_assert_uint_lt(f.argmax, 3);
    double one[] = { 0.25, 0.75, 0.75 }; /* and the ordinary rule still holds: the first tie */
    ck_assert_uint_eq(attn_row_facts_of(one, 3).argmax, 1);
}
END_TEST

/* Common inputs of the fully masked tests: q (4, 1), k (4, 1), v (4, 2). */
static double fm_q[] = { 1, 2, 3, 4 };
static double fm_k[] = { 1, 0, -1, 0.5 };
static double fm_v[] = { 1, 2, 3, 4, 5, 6, 7, 8 };

/* Row i is fully masked: weights, output, summary all zero, argmax none. */
static void expect_fully_masked(const struct attn_trace *t, size_t i)
{
    for (size_t j = 0; j < t->n_k; j++) {
        ck_assert(attn_at(&t->masked, i, j) == -INFINITY);
        ck_assert(attn_at(&t->weights, i, j) == 0.0);
    }
    for (size_t c = 0; c < t->d_v; c++)
        ck_assert(attn_at(&t->output, i, c) == 0.0);
    ck_assert_uint_eq(t->summary.fully_masked[i], 1);
    ck_assert(t->summary.row_sums[i] == 0.0);
    ck_assert_uint_eq(t->summary.argmax[i], ATTN_NO_INDEX);
    ck_assert(t->summary.max_weight[i] == 0.0);
    ck_assert(t->summary.entropy[i] == 0.0);
}

/* A cells mask (3, 3) with an all-zero middle row. "both" */
START_TEST(test_fully_masked_cells)
{
    static const unsigned char allow[] = { 1, 1, 1, 0, 0, 0, 0, 1, 0 };
    struct views c;
    struct attn_trace t;

    views_init(&c, fm_q, 3, 1, fm_k, 3, fm_v, 2, 1.0);
    views_mask(&c, ATTN_MASK_CELLS, allow, 3);
    ck_assert_int_eq(run(impl_of(_i), &t, &c), ATTN_OK);
    expect_fully_masked(&t, 1);
    ck_assert_uint_eq(t.summary.fully_masked[0], 0);
    ck_assert_uint_eq(t.summary.fully_masked[2], 0);
    ck_assert_uint_eq(t.summary.n_fully_masked, 1);
    /* Row 2 sees key 1 only: weight 1 on it, output = v[1], entropy 0. */
    ck_assert(attn_at(&t.weights, 2, 1) == 1.0);
    ck_assert(attn_at(&t.output, 2, 0) == 3.0 && attn_at(&t.output, 2, 1) == 4.0);
    ck_assert_uint_eq(t.summary.argmax[2], 1);
    ck_assert(t.summary.entropy[2] == 0.0);
    expect_no_nan(&t);
    attn_trace_free(&t);
}
END_TEST

/* Inputs of the keep tests: q (nq, d), k (nk, d), v (nk, 2), a bias and a cells mask
 * (nq, nk) that blocks a third of the keys but never all of a row's. */
static void keep_inputs(double *q, double *k, double *v, double *bias, unsigned char *allow,
                        size_t nq, size_t nk, size_t d)
{
    for (size_t i = 0; i < nq * d; i++)
        q[i] = sin((double)i + 1.0) * 3;
    for (size_t i = 0; i < nk * d; i++)
        k[i] = cos((double)i * 0.7) * 2;
    for (size_t i = 0; i < nk * 2; i++)
        v[i] = (double)i * 0.25 - 1;
    for (size_t i = 0; i < nq * nk; i++) {
        bias[i] = (double)(i % 5) * 0.1;
        allow[i] = (unsigned char)(i % 3 != 0 || i % nk == 1);
    }
}

/* attn_trace_alloc_keep: for every choice of kept steps, the kept steps, weights and
 * output are bit for bit those of a full trace, with a bias and a mask in play; the
 * block shrinks by one (n_q, n_k) matrix per step not kept. */
START_TEST(test_trace_keep)
{
    enum { NQ = 5, NK = 7, D = 3 };
    double q[NQ * D], k[NK * D], v[NK * 2], bias[NQ * NK];
    unsigned char allow[NQ * NK];
    keep_inputs(q, k, v, bias, allow, NQ, NK, D);
    struct views c;
    struct attn_trace full;
    views_init(&c, q, NQ, D, k, NK, v, 2, 0.5);
    views_bias(&c, bias);
    views_mask(&c, ATTN_MASK_CELLS, allow, NQ);
    ck_assert_int_eq(run(attn_forward, &full, &c), ATTN_OK);
    const struct attn_matrix *want[] = { NULL, &full.scores, &full.scaled, &full.masked,
                                         &full.weights, &full.output };
    for (unsigned kept = 0; kept < 8; kept++) { /* any of scores, scaled, masked */
        unsigned keep = ATTN_KEEP(ATTN_STEP_WEIGHTS) | ATTN_KEEP(ATTN_STEP_OUTPUT);
        size_t shared = 0;
        for (int s = 0; s < 3; s++) {
            if (kept & (1u << s))
                keep |= ATTN_KEEP(ATTN_STEP_SCORES + s);
            else
                shared++;
        }
        struct attn_trace t;
        ck_assert_int_eq(attn_trace_alloc_keep(&t, NQ, NK, 2, keep), ATTN_OK);
        ck_assert_int_eq(attn_forward(&t, &c.p), ATTN_OK);
        const struct attn_matrix *got[] = { NULL, &t.scores, &t.scaled, &t.masked, &t.weights,
                                            &t.output };
        for (int s = ATTN_STEP_SCORES; s <= ATTN_STEP_OUTPUT; s++) {
            if (!(keep & ATTN_KEEP(s)))
                continue;
            size_t n = want[s]->rows * want[s]->cols * sizeof(double);
            ck_assert_msg(memcmp(want[s]->data, got[s]->data, n) == 0, "keep %#x: step %d", keep,
                          s);
        }
        /* The block holds 4 - shared (n_q, n_k) matrices: output follows the last. */
        ck_assert_ptr_eq(t.output.data, (double *)t.block + (4 - shared) * NQ * NK);
        attn_trace_free(&t);
    }
    attn_trace_free(&full);
}
END_TEST

/*
 * attn_trace_alloc_keep's block is not zero-filled: a forward pass must write every
 * cell itself. With the block full of NaN before each pass (kept steps or all of
 * them, summary or not, a fault or not), the trace is bit for bit that of a zeroed
 * one.
 */
START_TEST(test_trace_keep_unzeroed)
{
    enum { NQ = 5, NK = 70, D = 3 }; /* NK past a vector's width, with a tail */
    double q[NQ * D], k[NK * D], v[NK * 2], bias[NQ * NK];
    unsigned char allow[NQ * NK];
    const unsigned keeps[] = { ATTN_KEEP_ALL,
                               ATTN_KEEP(ATTN_STEP_WEIGHTS) | ATTN_KEEP(ATTN_STEP_OUTPUT) };
    keep_inputs(q, k, v, bias, allow, NQ, NK, D);
    memset(allow + 3 * NK, 0, NK); /* row 3 fully masked */
    for (int variant = 0; variant < 3; variant++) { /* plain, no summary, a fault */
        struct views c;
        struct attn_trace want;
        views_init(&c, q, NQ, D, k, NK, v, 2, variant == 2 ? 1e308 : 0.5);
        views_bias(&c, bias);
        views_mask(&c, ATTN_MASK_CELLS, allow, NQ);
        c.p.skip_summary = variant == 1;
        enum attn_status st = run(attn_forward, &want, &c);
        ck_assert_int_eq(st, variant == 2 ? ATTN_EOVERFLOW : ATTN_OK);
        for (size_t n = 0; n < sizeof keeps / sizeof keeps[0]; n++) {
            struct attn_trace t;
            ck_assert_int_eq(attn_trace_alloc_keep(&t, NQ, NK, 2, keeps[n]), ATTN_OK);
            memset(t.block, 0xFF, attn_trace_bytes_keep(NQ, NK, 2, keeps[n])); /* NaN */
            ck_assert_int_eq(attn_forward(&t, &c.p), st);
            if (st == ATTN_OK) {
                ck_assert(memcmp(want.weights.data, t.weights.data, NQ * NK * sizeof(double)) == 0);
            } else {
                ck_assert(t.fault.step == want.fault.step && t.fault.col == want.fault.col);
                if (keeps[n] == ATTN_KEEP_ALL) /* the steps after the fault were zeroed */
                    ck_assert(memcmp(want.masked.data, t.masked.data,
                                     NQ * NK * sizeof(double)) == 0);
            }
            ck_assert(memcmp(want.output.data, t.output.data, NQ * 2 * sizeof(double)) == 0);
            ck_assert(memcmp(want.summary.row_sums, t.summary.row_sums, NQ * sizeof(double)) == 0);
            ck_assert(memcmp(want.summary.entropy, t.summary.entropy, NQ * sizeof(double)) == 0);
            ck_assert(memcmp(want.summary.argmax, t.summary.argmax, NQ * sizeof(size_t)) == 0);
            ck_assert(memcmp(want.summary.fully_masked, t.summary.fully_masked, NQ) == 0);
            ck_assert_uint_eq(want.summary.n_fully_masked, t.summary.n_fully_masked);
            attn_trace_free(&t);
        }
        attn_trace_free(&want);
    }
}
END_TEST

/* skip_summary: the same steps, the fully masked rows still flagged, the rest of the
 * summary left at 0 (and computed on the same trace when asked for again). */
START_TEST(test_skip_summary)
{
    static const unsigned char allow[] = { 1, 1, 1, 0, 0, 0, 0, 1, 0 };
    struct views c;
    struct attn_trace full, lean;

    views_init(&c, fm_q, 3, 1, fm_k, 3, fm_v, 2, 1.0);
    views_mask(&c, ATTN_MASK_CELLS, allow, 3);
    ck_assert_int_eq(run(attn_forward, &full, &c), ATTN_OK);
    c.p.skip_summary = true;
    ck_assert_int_eq(run(attn_forward, &lean, &c), ATTN_OK);
    size_t cells = full.n_q * full.n_k;
    ck_assert(memcmp(full.weights.data, lean.weights.data, cells * sizeof(double)) == 0);
    ck_assert(memcmp(full.output.data, lean.output.data,
                     full.n_q * full.d_v * sizeof(double)) == 0);
    ck_assert_uint_eq(lean.summary.n_fully_masked, 1);
    ck_assert_uint_eq(lean.summary.fully_masked[1], 1);
    ck_assert(full.summary.row_sums[0] != 0.0 && full.summary.entropy[0] != 0.0);
    for (size_t i = 0; i < lean.n_q; i++)
        ck_assert(lean.summary.row_sums[i] == 0.0 && lean.summary.entropy[i] == 0.0 &&
                  lean.summary.max_weight[i] == 0.0);
    c.p.skip_summary = false;
    ck_assert_int_eq(attn_forward(&lean, &c.p), ATTN_OK);
    ck_assert(memcmp(full.summary.entropy, lean.summary.entropy, full.n_q * sizeof(double)) == 0);
    attn_trace_free(&full);
    attn_trace_free(&lean);
}
END_TEST

/* A key-padding row that blocks every key: every query fully masked. "both" */
START_TEST(test_fully_masked_padding)
{
    static const unsigned char allow[] = { 0, 0, 0 };
    struct views c;
    struct attn_trace t;

    views_init(&c, fm_q, 2, 1, fm_k, 3, fm_v, 2, 1.0);
    views_mask(&c, ATTN_MASK_CELLS, allow, 1);
    ck_assert_int_eq(run(impl_of(_i), &t, &c), ATTN_OK);
    expect_fully_masked(&t, 0);
    expect_fully_masked(&t, 1);
    ck_assert_uint_eq(t.summary.n_fully_masked, 2);
    expect_no_nan(&t);
    attn_trace_free(&t);
}
END_TEST

/* Causal, n_q = 4 > n_k = 2: query i sees key j iff j <= i - 2. "both" */
START_TEST(test_causal_tall)
{
    struct views c;
    struct attn_trace t;

    views_init(&c, fm_q, 4, 1, fm_k, 2, fm_v, 2, 1.0);
    views_mask(&c, ATTN_MASK_CAUSAL, NULL, 0);
    ck_assert_int_eq(run(impl_of(_i), &t, &c), ATTN_OK);
    expect_fully_masked(&t, 0);
    expect_fully_masked(&t, 1);
    ck_assert_uint_eq(t.summary.n_fully_masked, 2);
    /* Query 2 sees key 0 only; query 3 both keys (scores 4·1, 4·0). */
    ck_assert(attn_at(&t.weights, 2, 0) == 1.0 && attn_at(&t.weights, 2, 1) == 0.0);
    ck_assert(attn_at(&t.masked, 2, 1) == -INFINITY);
    expect_near(attn_at(&t.weights, 3, 0), 0.98201379003790845, "weights", 3, 0);
    ck_assert_uint_eq(t.summary.argmax[2], 0);
    ck_assert_uint_eq(t.summary.argmax[3], 0);
    expect_no_nan(&t);
    attn_trace_free(&t);
}
END_TEST

/* Causal, n_q = 2 < n_k = 4 (bottom-right): query 0 sees keys 0..2, query 1 all four. "both" */
START_TEST(test_causal_wide)
{
    struct views c;
    struct attn_trace t;

    views_init(&c, fm_q, 2, 1, fm_k, 4, fm_v, 2, 1.0);
    views_mask(&c, ATTN_MASK_CAUSAL, NULL, 0);
    ck_assert_int_eq(run(impl_of(_i), &t, &c), ATTN_OK);
    ck_assert(attn_at(&t.masked, 0, 3) == -INFINITY);
    ck_assert(attn_at(&t.weights, 0, 3) == 0.0);
    for (size_t j = 0; j < 3; j++)
        ck_assert(attn_at(&t.masked, 0, j) == attn_at(&t.scaled, 0, j));
    for (size_t j = 0; j < 4; j++)
        ck_assert(attn_at(&t.weights, 1, j) > 0.0);
    ck_assert_uint_eq(t.summary.n_fully_masked, 0);
    attn_trace_free(&t);
}
END_TEST

/* status is EOVERFLOW at (step, row, col); every later step and the summary are zero. */
static void expect_fault(enum attn_status st, const struct attn_trace *t, enum attn_step step,
                         size_t row, size_t col)
{
    const struct attn_matrix *by_step[] = { NULL, &t->scores, &t->scaled, &t->masked,
                                            &t->weights, &t->output };

    ck_assert_int_eq(st, ATTN_EOVERFLOW);
    ck_assert_str_eq(attn_step_name(t->fault.step), attn_step_name(step));
    ck_assert_uint_eq(t->fault.row, row);
    ck_assert_uint_eq(t->fault.col, col);
    for (size_t s = (size_t)step + 1; s <= ATTN_STEP_OUTPUT; s++)
        for (size_t c = 0; c < by_step[s]->rows * by_step[s]->cols; c++)
            ck_assert(by_step[s]->data[c] == 0.0);
    for (size_t i = 0; i < t->n_q; i++)
        ck_assert(t->summary.row_sums[i] == 0.0 && t->summary.fully_masked[i] == 0);
}

/* Q·Kᵀ overflows: scores row 1 = [1e200, inf, -inf]; the first bad cell is (1, 1). "both" */
START_TEST(test_overflow_scores)
{
    double q[] = { 1, 1e200 }, k[] = { 1, 1e200, -1e200 }, v[] = { 1, 2, 3 };
    struct views c;
    struct attn_trace t;

    views_init(&c, q, 2, 1, k, 3, v, 1, 1.0);
    expect_fault(run(impl_of(_i), &t, &c), &t, ATTN_STEP_SCORES, 1, 1);
    ck_assert(attn_at(&t.scores, 1, 1) == INFINITY);
    attn_trace_free(&t);
}
END_TEST

/* A finite score times a huge scale: scores [1, 1e10], scale 1e300 → scaled (0, 1) = inf. "both" */
START_TEST(test_overflow_scaled)
{
    double q[] = { 1 }, k[] = { 1, 1e10 }, v[] = { 1, 2 };
    struct views c;
    struct attn_trace t;

    views_init(&c, q, 1, 1, k, 2, v, 1, 1e300);
    expect_fault(run(impl_of(_i), &t, &c), &t, ATTN_STEP_SCALED, 0, 1);
    ck_assert(attn_at(&t.scores, 0, 1) == 1e10);
    attn_trace_free(&t);
}
END_TEST

/*
 * scaled + bias overflows where the mask allows it: masked row 0 = [-inf (blocked),
 * 1, 1e308 + 1e308 = inf]; the blocked -inf is not the fault, (0, 2) is. "both"
 */
START_TEST(test_overflow_masked)
{
    static const unsigned char allow[] = { 0, 1, 1, 1, 1, 1 };
    double q[] = { 1, -1 }, k[] = { 1, 1, 1e308 }, v[] = { 1, 2, 3 };
    double bias[] = { 0, 0, 1e308, 0, 0, 0 };
    struct views c;
    struct attn_trace t;

    views_init(&c, q, 2, 1, k, 3, v, 1, 1.0);
    views_bias(&c, bias);
    views_mask(&c, ATTN_MASK_CELLS, allow, 2);
    expect_fault(run(impl_of(_i), &t, &c), &t, ATTN_STEP_MASKED, 0, 2);
    ck_assert(attn_at(&t.masked, 0, 0) == -INFINITY);
    attn_trace_free(&t);
}
END_TEST

/* -inf from scaled + bias at an allowed cell is a fault too: (1, 2) = -1e308 + -1e308. "both" */
START_TEST(test_overflow_masked_negative)
{
    double q[] = { 1, -1 }, k[] = { 1, 1, 1e308 }, v[] = { 1, 2, 3 };
    double bias[] = { 0, 0, 0, 0, 0, -1e308 }; /* row 1: -1e308 + -1e308 */
    struct views c;
    struct attn_trace t;

    views_init(&c, q, 2, 1, k, 3, v, 1, 1.0);
    views_bias(&c, bias);
    expect_fault(run(impl_of(_i), &t, &c), &t, ATTN_STEP_MASKED, 1, 2);
    attn_trace_free(&t);
}
END_TEST

/* The same overflowing cell, blocked by the mask: no fault, its weight is 0. "both" */
START_TEST(test_overflow_masked_but_blocked)
{
    static const unsigned char allow[] = { 1, 1, 0 };
    double q[] = { 1 }, k[] = { 1, 1, 1e308 }, v[] = { 1, 2, 3 };
    double bias[] = { 0, 0, 1e308 };
    struct views c;
    struct attn_trace t;

    views_init(&c, q, 1, 1, k, 3, v, 1, 1.0);
    views_bias(&c, bias);
    views_mask(&c, ATTN_MASK_CELLS, allow, 1);
    ck_assert_int_eq(run(impl_of(_i), &t, &c), ATTN_OK);
    ck_assert(attn_at(&t.masked, 0, 2) == -INFINITY);
    ck_assert(attn_at(&t.weights, 0, 0) == 0.5 && attn_at(&t.weights, 0, 2) == 0.0);
    expect_near(attn_at(&t.output, 0, 0), 1.5, "output", 0, 0);
    attn_trace_free(&t);
}
END_TEST

/*
 * weights·V overflows although the output is a weighted mean of finite values. The
 * weights only need to sum to a hair over 1: query 1's scores [0, -36.85] give
 * e = [1, 9.9e-17]; 1 + 9.9e-17 rounds to 1, so the weights are [1, 9.9e-17] and
 * DBL_MAX + 9.9e-17·DBL_MAX is 0.89 ulp past DBL_MAX: inf, in any summation order.
 * (Equal scores over V = [DBL_MAX, DBL_MAX] do not overflow: 0.5·M + 0.5·M = M.)
 * Query 0 (scores [0, 0]) shows exactly that, finite, so the fault is (1, 1). "both"
 */
START_TEST(test_overflow_output)
{
    double q[] = { 0, 1 }, k[] = { 0, -36.85 };
    double v[] = { 1, DBL_MAX, 1, DBL_MAX }; /* (2, 2) */
    struct views c;
    struct attn_trace t;

    views_init(&c, q, 2, 1, k, 2, v, 2, 1.0);
    expect_fault(run(impl_of(_i), &t, &c), &t, ATTN_STEP_OUTPUT, 1, 1);
    ck_assert(attn_at(&t.output, 0, 1) == DBL_MAX);
    ck_assert(attn_at(&t.weights, 1, 0) == 1.0);
    ck_assert(attn_at(&t.weights, 1, 1) > 0.0);
    attn_trace_free(&t);
}
END_TEST

/*
 * Steps outrank rows: query 0's scaled + bias overflows (masked (0, 0) = 1e300 +
 * DBL_MAX) but query 1's score is already infinite (1e200 · 1e300), so the fault is the score's
 * (1, 0), as a step-by-step run finds it; also when the queries are computed on two
 * threads, the masked fault's block first. "both"; _i >= 2: attn_forward_threads.
 */
START_TEST(test_overflow_step_before_row)
{
    /* scores [[1e300, 1], [inf, 1e200]]; masked (0, 0) = 1e300 + DBL_MAX = inf */
    double q[] = { 1, 1e200 }, k[] = { 1e300, 1 }, v[] = { 1, 2 };
    double bias[] = { DBL_MAX, 0, 0, 0 };
    struct views c;
    struct attn_trace t;
    enum attn_status st;

    views_init(&c, q, 2, 1, k, 2, v, 1, 1.0);
    views_bias(&c, bias);
    if (_i < 2) {
        st = run(impl_of(_i), &t, &c);
    } else {
        ck_assert_int_eq(attn_trace_alloc(&t, 2, 2, 1), ATTN_OK);
        st = attn_forward_threads(&t, &c.p, 2);
    }
    expect_fault(st, &t, ATTN_STEP_SCORES, 1, 0);
    ck_assert(attn_at(&t.scores, 0, 0) == 1e300 && attn_at(&t.scores, 1, 1) == 1e200);
    attn_trace_free(&t);
}
END_TEST

/* attn_trace_cells and attn_trace_alloc on sizes whose counts or bytes overflow. */
START_TEST(test_trace_sizes_overflow)
{
    struct attn_trace t, zero;

    memset(&zero, 0, sizeof zero);
    ck_assert_uint_eq(attn_trace_cells(2, 3, 4), 4 * 6 + 8 + 6 * 2);
    ck_assert_uint_eq(attn_trace_cells(SIZE_MAX, 2, 1), 0);          /* n_q·n_k */
    ck_assert_uint_eq(attn_trace_cells(SIZE_MAX / 4 + 1, 1, 1), 0);  /* 4·n_q·n_k */
    ck_assert_uint_eq(attn_trace_cells(1, 1, SIZE_MAX), 0);          /* + n_q·d_v */
    ck_assert_uint_eq(attn_trace_cells(SIZE_MAX / 6 + 1, 0, 0), 0);  /* 6·n_q summary */

    /* Count overflow: ENOMEM, *t zeroed (it held garbage before). */
    memset(&t, 0xab, sizeof t);
    ck_assert_int_eq(attn_trace_alloc(&t, SIZE_MAX, 2, 1), ATTN_ENOMEM);
    ck_assert(memcmp(&t, &zero, sizeof t) == 0);
    /* The count fits but its bytes do not: ENOMEM before any calloc. */
    ck_assert_uint_ne(attn_trace_cells(1, SIZE_MAX / 16, 1), 0);
    memset(&t, 0xab, sizeof t);
    ck_assert_int_eq(attn_trace_alloc(&t, 1, SIZE_MAX / 16, 1), ATTN_ENOMEM);
    ck_assert(memcmp(&t, &zero, sizeof t) == 0);
    attn_trace_free(&t);
    attn_trace_free(&t);
}
END_TEST

/* Zero sizes are not a trace: EINVAL, *t zeroed. */
START_TEST(test_trace_sizes_zero)
{
    struct attn_trace t, zero;
    const size_t sizes[][3] = { { 0, 1, 1 }, { 1, 0, 1 }, { 1, 1, 0 } };

    memset(&zero, 0, sizeof zero);
    for (size_t c = 0; c < 3; c++) {
        memset(&t, 0xab, sizeof t);
        ck_assert_int_eq(attn_trace_alloc(&t, sizes[c][0], sizes[c][1], sizes[c][2]), ATTN_EINVAL);
        ck_assert(memcmp(&t, &zero, sizeof t) == 0);
    }
    ck_assert_int_eq(attn_trace_alloc(NULL, 1, 1, 1), ATTN_EINVAL);
}
END_TEST

/* Whether the first n bytes of p are all zero. */
static bool all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return false;
    return true;
}

/*
 * core/memory.h: a freed block of ATTN_HUGE_BYTES or more is kept when the keeping is on
 * and it is no larger than allowed; the next that fits gets it (zeroed when asked);
 * of two, the larger is kept; lowering the limit or releasing frees it.
 */
START_TEST(test_block_kept)
{
    const size_t mid = ATTN_HUGE_BYTES + (512u << 10), big = ATTN_HUGE_BYTES + (1u << 20);
    size_t cap, cap2;

    ck_assert_uint_eq(attn_block_release(), 0);
    void *a = attn_block_alloc(big, false, &cap); /* off by default: nothing kept */
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq(cap, big);
    attn_block_free(a, cap);
    ck_assert_uint_eq(attn_block_release(), 0);

    attn_block_keep_max(2 * big);
    a = attn_block_alloc(ATTN_HUGE_BYTES - 4096, false, &cap); /* glibc's heap keeps those */
    attn_block_free(a, cap);
    ck_assert_uint_eq(attn_block_release(), 0);
    a = attn_block_alloc(3 * big, false, &cap); /* over the limit */
    attn_block_free(a, cap);
    ck_assert_uint_eq(attn_block_release(), 0);

    a = attn_block_alloc(big, false, &cap);
    memset(a, 0xab, big);
    attn_block_free(a, cap);
    void *b = attn_block_alloc(mid, true, &cap); /* fits in the kept one: it, zeroed */
    ck_assert_ptr_eq(b, a);
    ck_assert_uint_eq(cap, big);
    ck_assert(all_zero(b, mid));
    void *c = attn_block_alloc(mid, false, &cap2); /* the slot is empty: a new one */
    ck_assert_ptr_ne(c, b);
    ck_assert_uint_eq(cap2, mid);
    attn_block_free(c, cap2);
    attn_block_free(b, cap); /* the larger replaces the smaller */
    ck_assert_ptr_eq(attn_block_alloc(big, false, &cap), b);
    attn_block_free(b, cap);
    void *d = attn_block_alloc(big + 1, false, &cap2); /* too large for it: a new one */
    ck_assert_ptr_ne(d, b);
    attn_block_free(d, cap2);
    ck_assert_uint_eq(attn_block_release(), big + 1); /* the larger again */
    ck_assert_uint_eq(attn_block_release(), 0);

    a = attn_block_alloc(big, false, &cap);
    attn_block_free(a, cap);
    attn_block_keep_max(mid); /* a kept block over the new limit goes */
    ck_assert_uint_eq(attn_block_release(), 0);
    attn_block_keep_max(0);
}
END_TEST

/*
 * A trace whose block is kept: the next trace of its size gets the block, and its pass
 * the bits of a fresh one (attn_trace_alloc's zero-filled trace reads as zeros first).
 */
START_TEST(test_trace_block_kept)
{
    enum { N = 1050, D = 4 }; /* 4·N·N doubles: past ATTN_HUGE_BYTES */
    uint64_t seed = 0xb10c;
    double *q = rand_fill(&seed, N * D, -2, 2), *k = rand_fill(&seed, N * D, -2, 2);
    double *v = rand_fill(&seed, N * D, -1, 1);
    struct views c;
    struct attn_trace fresh, reused;

    views_init(&c, q, N, D, k, N, v, D, 0.5);
    ck_assert_int_eq(run(attn_forward, &fresh, &c), ATTN_OK);
    attn_block_keep_max((size_t)1 << 30);
    ck_assert_int_eq(attn_trace_alloc(&reused, N, N, D), ATTN_OK);
    ck_assert(attn_forward(&reused, &c.p) == ATTN_OK);
    void *block = reused.block;
    attn_trace_free(&reused);
    ck_assert_int_eq(attn_trace_alloc(&reused, N, N, D), ATTN_OK);
    ck_assert_ptr_eq(reused.block, block);
    ck_assert(all_zero(reused.block, reused.block_bytes));
    ck_assert_int_eq(attn_forward(&reused, &c.p), ATTN_OK);
    expect_same_bits(&fresh, &reused);
    attn_trace_free(&reused);
    ck_assert_uint_eq(attn_block_release(), fresh.block_bytes);
    attn_block_keep_max(0);
    attn_trace_free(&fresh);
    free(q);
    free(k);
    free(v);
}
END_TEST

/* ---- Errors ---- */

/* A valid problem (q (3, 2), k (2, 2), v (2, 2)) and one broken copy per row of the table. */
struct bad_case {
    const char *what;
    void (*breaks)(struct views *c, struct attn_trace *t);
};

static double e_q[] = { 1, 2, 3, 4, 5, 6 }, e_k[] = { 1, 0, 0, 1 }, e_v[] = { 1, 2, 3, 4 };
static double e_bias[] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
static const unsigned char e_allow[] = { 1, 1, 1, 1, 1, 1 };

static void break_dk(struct views *c, struct attn_trace *t) { (void)t; c->k.cols = 1; }
static void break_v_rows(struct views *c, struct attn_trace *t) { (void)t; c->v.rows = 1; }
static void break_trace_nq(struct views *c, struct attn_trace *t)
{
    attn_trace_free(t);
    ck_assert_int_eq(attn_trace_alloc(t, 2, c->k.rows, c->v.cols), ATTN_OK);
}
static void break_trace_dv(struct views *c, struct attn_trace *t)
{
    attn_trace_free(t);
    ck_assert_int_eq(attn_trace_alloc(t, c->q.rows, c->k.rows, 3), ATTN_OK);
}
static void break_trace_none(struct views *c, struct attn_trace *t) { (void)c; attn_trace_free(t); }
static void break_bias_rows(struct views *c, struct attn_trace *t)
{
    (void)t;
    views_bias(c, e_bias);
    c->bias.rows = 2;
}
static void break_bias_cols(struct views *c, struct attn_trace *t)
{
    (void)t;
    views_bias(c, e_bias);
    c->bias = attn_matrix_view(e_bias, 3, 3);
}
static void break_bias_data(struct views *c, struct attn_trace *t)
{
    (void)t;
    views_bias(c, e_bias);
    c->bias.data = NULL;
}
static void break_mask_rows(struct views *c, struct attn_trace *t)
{
    (void)t;
    views_mask(c, ATTN_MASK_CELLS, e_allow, 2); /* (2, n_k): a transposed (n_k, n_q) table */
}
static void break_mask_null(struct views *c, struct attn_trace *t)
{
    (void)t;
    views_mask(c, ATTN_MASK_CELLS, NULL, 3);
}
static void break_mask_kind(struct views *c, struct attn_trace *t)
{
    (void)t;
    views_mask(c, (enum attn_mask_kind)99, e_allow, 3);
}
static void break_scale_zero(struct views *c, struct attn_trace *t) { (void)t; c->p.scale = 0; }
static void break_scale_neg(struct views *c, struct attn_trace *t) { (void)t; c->p.scale = -1; }
static void break_scale_nan(struct views *c, struct attn_trace *t) { (void)t; c->p.scale = NAN; }
static void break_scale_inf(struct views *c, struct attn_trace *t)
{
    (void)t;
    c->p.scale = INFINITY;
}
static void break_stride(struct views *c, struct attn_trace *t) { (void)t; c->q.stride = 1; }
static void break_q_null(struct views *c, struct attn_trace *t) { (void)t; c->p.q = NULL; }
static void break_q_data(struct views *c, struct attn_trace *t) { (void)t; c->q.data = NULL; }
static void break_v_empty(struct views *c, struct attn_trace *t) { (void)t; c->v.cols = 0; }

static const struct bad_case bad_cases[] = {
    { "q and k differ in d_k", break_dk },
    { "v has fewer rows than k", break_v_rows },
    { "trace allocated for another n_q", break_trace_nq },
    { "trace allocated for another d_v", break_trace_dv },
    { "trace not allocated", break_trace_none },
    { "bias has 2 rows, n_q is 3", break_bias_rows },
    { "bias has 3 columns, n_k is 2", break_bias_cols },
    { "bias without data", break_bias_data },
    { "mask has 2 rows, n_q is 3", break_mask_rows },
    { "cells mask without a table", break_mask_null },
    { "unknown mask kind", break_mask_kind },
    { "scale 0", break_scale_zero },
    { "scale -1", break_scale_neg },
    { "scale NaN", break_scale_nan },
    { "scale inf", break_scale_inf },
    { "q stride below its columns", break_stride },
    { "no q", break_q_null },
    { "q without data", break_q_data },
    { "v with no columns", break_v_empty },
};
#define N_BAD_CASES (sizeof bad_cases / sizeof bad_cases[0])

/* Loop over the table × {fast, reference}: each is ATTN_EINVAL. */
START_TEST(test_einval)
{
    const struct bad_case *b = &bad_cases[_i / 2];
    struct views c;
    struct attn_trace t;
    enum attn_status st;
    double before;

    views_init(&c, e_q, 3, 2, e_k, 2, e_v, 2, 1.0);
    ck_assert_int_eq(attn_trace_alloc(&t, 3, 2, 2), ATTN_OK);
    ck_assert_int_eq(impl_of(_i)(&t, &c.p), ATTN_OK); /* valid before breaking */
    b->breaks(&c, &t);
    before = t.block != NULL ? t.output.data[0] : 0.0;
    st = impl_of(_i)(&t, &c.p);
    ck_assert_msg(st == ATTN_EINVAL, "%s: %s", b->what, attn_status_str(st));
    /* The trace is left as it was. */
    ck_assert(t.block == NULL || t.output.data[0] == before);
    attn_trace_free(&t);
}
END_TEST

START_TEST(test_einval_null)
{
    struct views c;
    struct attn_trace t;

    views_init(&c, e_q, 3, 2, e_k, 2, e_v, 2, 1.0);
    ck_assert_int_eq(attn_trace_alloc(&t, 3, 2, 2), ATTN_OK);
    ck_assert_int_eq(attn_forward(&t, NULL), ATTN_EINVAL);
    ck_assert_int_eq(attn_forward(NULL, &c.p), ATTN_EINVAL);
    ck_assert_int_eq(attn_reference(&t, NULL), ATTN_EINVAL);
    ck_assert_int_eq(attn_reference(NULL, &c.p), ATTN_EINVAL);
    attn_trace_free(&t);
}
END_TEST

/* ---- the suite ---- */

static Suite *core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *core = tcase_create("Core");
    TCase *seeds = tcase_create("Seeds");
    TCase *reference = tcase_create("Reference");
    TCase *limits = tcase_create("Limits");
    TCase *errors = tcase_create("Errors");

    tcase_add_test(core, test_names);
    tcase_add_test(core, test_trace_layout);
    tcase_add_test(core, test_trace_free_twice);
    tcase_add_test(core, test_blas_info);
    tcase_add_loop_test(core, test_exp_log_same_bits_as_baseline, 0, 3);
    tcase_add_test(core, test_trace_reuse);
    tcase_add_test(core, test_skip_summary);
    tcase_add_test(core, test_trace_keep);
    tcase_add_test(core, test_trace_keep_unzeroed);
    suite_add_tcase(s, core);

    tcase_add_loop_test(seeds, test_seed000, 0, 2);
    tcase_add_loop_test(seeds, test_seed002_one_query, 0, 2);
    tcase_add_loop_test(seeds, test_seed002_text_example, 0, 2);
    tcase_add_loop_test(seeds, test_seed002_three_queries, 0, 2);
    tcase_add_loop_test(seeds, test_seed002_experiment, 0, (int)(2 * N_EXPERIMENTS));
    tcase_add_test(seeds, test_seed002_experiment_lessons);
    suite_add_tcase(s, seeds);

    tcase_add_loop_test(reference, test_random_vs_reference, 0, RK_COUNT * RAND_PER_KIND);
    tcase_add_loop_test(reference, test_strided_views, 0, 24);
    tcase_add_loop_test(reference, test_row_stats_vs_naive, 0, RK_COUNT * 10);
    tcase_add_loop_test(reference, test_argmax_first_max_score, 0, 2);
    tcase_add_loop_test(reference, test_threads_same_bits, 0, RK_COUNT * 6);
    tcase_add_loop_test(reference, test_steps_rerun_same_bits, 0, RK_COUNT * 6);
    tcase_add_loop_test(reference, test_threads_same_bits_large, 0, 2);
    tcase_set_timeout(reference, 120); /* valgrind runs it tens of times slower */
    suite_add_tcase(s, reference);

    tcase_add_loop_test(limits, test_huge_scores, 0, 2);
    tcase_add_test(limits, test_tiny_weights);
    tcase_add_test(limits, test_row_exp_vs_libm);
    tcase_add_test(limits, test_row_logs_vs_logl);
    tcase_add_loop_test(limits, test_row_same_bits_as_baseline, 0, 3);
    tcase_add_test(limits, test_row_facts_stay_in_row);
    tcase_add_test(limits, test_row_divide_exact);
    tcase_add_loop_test(limits, test_fully_masked_cells, 0, 2);
    tcase_add_loop_test(limits, test_fully_masked_padding, 0, 2);
    tcase_add_loop_test(limits, test_causal_tall, 0, 2);
    tcase_add_loop_test(limits, test_causal_wide, 0, 2);
    tcase_add_loop_test(limits, test_overflow_scores, 0, 2);
    tcase_add_loop_test(limits, test_overflow_scaled, 0, 2);
    tcase_add_loop_test(limits, test_overflow_masked, 0, 2);
    tcase_add_loop_test(limits, test_overflow_masked_negative, 0, 2);
    tcase_add_loop_test(limits, test_overflow_masked_but_blocked, 0, 2);
    tcase_add_loop_test(limits, test_overflow_output, 0, 2);
    tcase_add_loop_test(limits, test_overflow_step_before_row, 0, 3);
    tcase_add_test(limits, test_trace_sizes_overflow);
    tcase_add_test(limits, test_trace_sizes_zero);
    tcase_add_test(limits, test_block_kept);
    tcase_add_test(limits, test_trace_block_kept);
    suite_add_tcase(s, limits);

    tcase_add_loop_test(errors, test_einval, 0, (int)(2 * N_BAD_CASES));
    tcase_add_test(errors, test_einval_null);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    attn_blas_set_threads(1); /* as the server does; also keeps valgrind runs quick */
    return suite_run(core_suite());
}
