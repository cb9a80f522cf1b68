/*
 * bench/core_bench.c — attnd's in-process numbers: the attention math and the JSON paths.
 *
 *   core_bench core [N...]          attn_forward vs attn_reference vs a bare cblas_dgemm,
 *                                   n = 64 … 2048 (or the N given), d = 64
 *   core_bench floor [N...]         the forward pass against its floor, the bare dgemm pair:
 *                                   every step, weights and output, output and lse, and
 *                                   numpy's naive attention, n = 512, 1024, 2048 (or the N)
 *   core_bench pair N THREADS       the bare dgemm pair at any n (in row blocks, so S is
 *                                   never whole) on THREADS BLAS threads, in ms
 *   core_bench json DIR NAME...     jansson's parse and api_handle on DIR/NAME.json (and
 *                                   DIR/NAME-summary.json, see bench/gen_payloads.py)
 *   core_bench variants [N...]      each attention variant (core/variants.h) against the
 *                                   plain attn_forward in the same run, n = 512, 2048
 *   core_bench precision [N...]     a request in float16 (and bfloat16, float32, float16
 *                                   summed in float16) against the same request in
 *                                   float64, through api_handle, n = 512 (or the N given)
 *   core_bench masks [N...]         8 packed documents against the dense problem (causal),
 *                                   streamed and full, n = 2048, 4096 (or the N given)
 *   core_bench backward [N...]      the backward pass against the forward, every step built,
 *                                   causal, n = 512, 1024 (or the N given)
 *   core_bench blas-core            the OPENBLAS_CORETYPE attnd would advise at startup
 *                                   (empty when OpenBLAS's own choice stands)
 *   core_bench number-paths         which vector paths the number printer and reader
 *                                   take on this CPU, in one line
 *
 * Each figure is the median of repeated runs, repeated until BENCH_BUDGET seconds
 * (default 0.3) have passed and at least 3 runs (1 for the naive reference) were made.
 * BLAS runs on one thread, as in the server (api_global_init).
 *
 * What is measured, exactly:
 * - core: attn_forward (every step into a preallocated trace), attn_reference (plain
 *   loops), and "dgemm": the two products alone (S = Q·Kᵀ, O = S·V) with cblas_dgemm,
 *   the BLAS floor under attention. GFLOP/s counts the two products, 4·n²·d flops;
 *   the scale, mask and softmax passes are not counted, only timed. Before anything
 *   is timed, attn_forward's trace is compared with attn_reference's: the largest
 *   absolute difference over every step is printed. Last, attn_forward_threads on
 *   two threads (an idle server's large request) and its speedup over one.
 * - floor: the rows, each way of asking against the dgemm pair in the same
 *   rounds (see bench_floor); numpy's naive attention in its own process after them.
 * - pair: the dgemm pair alone at any n, blocked over rows of Q, for the long request's
 *   ratio (bench/run.sh measures it on as many threads as attnd has).
 * - JSON: "loadb" is json_loadb + json_decref of the request body (jansson's own
 *   parser: the baseline, since api/ reads bodies with api/json/read.c);
 *   "handle" is api_handle on the body, every part included (parse, validate, copy,
 *   attn_forward, write); "handle[summary]" is the same numbers with include
 *   ["summary"], so its answer is small. Derived, and printed as such:
 *   write = handle − handle[summary] (the response writer, for the bytes and numbers
 *   that differ), read = handle[summary] − forward (parse + validate + copy into
 *   matrices + a small write), where forward is trace allocation + attn_forward +
 *   free at the payload's sizes, as handle[summary] runs it (only weights and output
 *   kept, the summary computed). Throughput is bytes (or numbers) per second.
 *
 * When BENCH_META names a file, the JSON figures are also appended to it as key=value
 * lines (handle_ms_NAME, read_ms_NAME, forward_ms_NAME, write_ms_NAME) for
 * bench/report.py, which sets them beside the HTTP latencies.
 *
 * Not here: HTTP (bench/run.sh drives wrk), asserting targets.
 *
 * Dimension legend: n = n_q = n_k, d = d_k = d_v.
 */
#include <cblas.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_time.h"
#include "api/api.h"
#include "api/json/numfmt.h"
#include "api/json/numparse.h"
#include "core/attention.h"
#include "core/backward.h"
#include "core/stream.h"
#include "core/variants.h"

#define D 64 /* d_k = d_v in every core run */

static double g_budget = 0.3; /* seconds per measurement */


typedef void (*bench_fn)(void *arg);

/* Median seconds of fn(arg), run until the budget is spent and min_reps are done. */
static double bench_median(bench_fn fn, void *arg, int min_reps)
{
    enum { MAX_REPS = 1000 };
    static double t[MAX_REPS];
    int n = 0;
    double start = now_s();
    while (n < MAX_REPS && (n < min_reps || now_s() - start < g_budget)) {
        double t0 = now_s();
        fn(arg);
        t[n++] = now_s() - t0;
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/*
 * Medians of fn[i](arg[i]) for i < count, run in turn round after round so that a noisy
 * neighbour slows them alike: their differences are what the JSON bench reports.
 */
enum { INTERLEAVED_MAX = 4 };
static void bench_median_interleaved(const bench_fn *fn, void *const *arg, int count,
                                     int min_reps, double *median)
{
    enum { MAX_REPS = 500 };
    static double x[INTERLEAVED_MAX][MAX_REPS];
    int n = 0;
    double start = now_s();
    while (n < MAX_REPS && (n < min_reps || now_s() - start < count * g_budget)) {
        for (int i = 0; i < count; i++) {
            double t0 = now_s();
            fn[i](arg[i]);
            x[i][n] = now_s() - t0;
        }
        n++;
    }
    for (int i = 0; i < count; i++) {
        qsort(x[i], (size_t)n, sizeof x[i][0], cmp_double);
        median[i] = n % 2 ? x[i][n / 2] : 0.5 * (x[i][n / 2 - 1] + x[i][n / 2]);
    }
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes);
    if (p == NULL) {
        fprintf(stderr, "core_bench: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* splitmix64 by index in [-1, 1), as bench/gen_payloads.py and /v1/multihead's `random`. */
static void fill_random(double *x, size_t count, uint64_t seed, uint64_t stream)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t z = seed + (stream << 40) + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = 2.0 * ((double)(z >> 11) * 0x1p-53) - 1.0;
    }
}

/* ---- core ---- */

struct core_case {
    size_t n;
    struct attn_matrix q, k, v; /* (n, D) each */
    struct attn_problem p;
    struct attn_trace trace;
    double *s, *o;              /* bare dgemm: S (n, n), O (n, D) */
};

static void run_forward(void *arg)
{
    struct core_case *c = arg;
    if (attn_forward(&c->trace, &c->p) != ATTN_OK) {
        fprintf(stderr, "core_bench: attn_forward failed at n = %zu\n", c->n);
        exit(1);
    }
}

/* The same on two threads, as an idle server with two workers runs a large request. */
static void run_forward_2(void *arg)
{
    struct core_case *c = arg;
    if (attn_forward_threads(&c->trace, &c->p, 2) != ATTN_OK) {
        fprintf(stderr, "core_bench: attn_forward_threads failed at n = %zu\n", c->n);
        exit(1);
    }
}

static void run_reference(void *arg)
{
    struct core_case *c = arg;
    if (attn_reference(&c->trace, &c->p) != ATTN_OK) {
        fprintf(stderr, "core_bench: attn_reference failed at n = %zu\n", c->n);
        exit(1);
    }
}

/* S = Q·Kᵀ (n, n), then O = S·V (n, D): the two products attention cannot avoid. */
static void run_dgemm(void *arg)
{
    struct core_case *c = arg;
    int n = (int)c->n;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, D, 1.0, c->q.data, D,
                c->k.data, D, 0.0, c->s, n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, D, n, 1.0, c->s, n,
                c->v.data, D, 0.0, c->o, D);
}

static double max_abs_diff(const struct attn_matrix *a, const struct attn_matrix *b)
{
    double m = 0;
    for (size_t i = 0; i < a->rows; i++)
        for (size_t j = 0; j < a->cols; j++) {
            double x = attn_at(a, i, j), y = attn_at(b, i, j);
            if (isinf(x) && x == y)
                continue; /* a blocked cell in both */
            double dd = fabs(x - y);
            if (!(dd <= m))
                m = dd; /* NaN propagates as the worst */
        }
    return m;
}

/* The sizes named on the command line (at most 16, each 1..8192) into sizes; 2 on a bad one. */
static int parse_sizes(int argc, char **argv, size_t sizes[16], size_t *n_sizes)
{
    *n_sizes = 0;
    for (int i = 0; i < argc && *n_sizes < 16; i++) {
        char *end;
        unsigned long n = strtoul(argv[i], &end, 10);
        if (*end != '\0' || n < 1 || n > 8192) {
            fprintf(stderr, "core_bench: N must be 1..8192, not %s\n", argv[i]);
            return 2;
        }
        sizes[(*n_sizes)++] = n;
    }
    return 0;
}

static int bench_core(int argc, char **argv)
{
    size_t sizes[16] = {64, 128, 256, 512, 1024, 2048};
    size_t n_sizes = 6;
    if (argc > 0 && parse_sizes(argc, argv, sizes, &n_sizes) != 0)
        return 2;
    printf("core: n_q = n_k = n, d_k = d_v = %d, 1 BLAS thread; GFLOP/s counts Q·Kᵀ and "
           "weights·V (4·n²·d)\n", D);
    printf("  %5s  %12s  %21s  %21s  %21s  %8s  %20s\n", "n", "max|fwd-ref|",
           "attn_forward ms  GF/s", "reference ms  GF/s", "bare dgemm ms  GF/s", "fwd/dgemm",
           "2 threads ms  speedup");
    for (size_t si = 0; si < n_sizes; si++) {
        struct core_case c = {.n = sizes[si]};
        size_t n = c.n, nd = n * D;
        c.q = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
        c.k = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
        c.v = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
        fill_random(c.q.data, nd, 7, 0);
        fill_random(c.k.data, nd, 7, 1);
        fill_random(c.v.data, nd, 7, 2);
        c.p = (struct attn_problem){.q = &c.q, .k = &c.k, .v = &c.v, .scale = 1.0 / sqrt(D)};
        c.s = xmalloc(n * n * sizeof(double));
        c.o = xmalloc(nd * sizeof(double));

        /* Validate before timing: the same problem through both paths. */
        struct attn_trace ref;
        if (attn_trace_alloc(&c.trace, n, n, D) != ATTN_OK || attn_trace_alloc(&ref, n, n, D) != ATTN_OK) {
            fprintf(stderr, "core_bench: cannot allocate traces at n = %zu\n", n);
            return 1;
        }
        run_forward(&c);
        double t0 = now_s();
        if (attn_reference(&ref, &c.p) != ATTN_OK) {
            fprintf(stderr, "core_bench: attn_reference failed at n = %zu\n", n);
            return 1;
        }
        double t_ref_once = now_s() - t0;
        double diff = 0;
        const struct attn_matrix *fa[] = {&c.trace.scores, &c.trace.scaled, &c.trace.masked,
                                          &c.trace.weights, &c.trace.output};
        const struct attn_matrix *ra[] = {&ref.scores, &ref.scaled, &ref.masked, &ref.weights,
                                          &ref.output};
        for (int s = 0; s < 5; s++) {
            double dd = max_abs_diff(fa[s], ra[s]);
            if (!(dd <= diff))
                diff = dd;
        }
        attn_trace_free(&ref);

        double flops = 4.0 * (double)n * (double)n * D;
        double t_fwd = bench_median(run_forward, &c, 3);
        /* The naive softmax is O(n³) exp calls (a minute at n = 2048): the validation run counts as one. */
        double t_ref = t_ref_once * 2 > g_budget ? t_ref_once : bench_median(run_reference, &c, 1);
        double t_gemm = bench_median(run_dgemm, &c, 3);
        double t_fwd2 = bench_median(run_forward_2, &c, 3);
        printf("  %5zu  %12.2e  %10.3f %10.2f  %10.3f %10.2f  %10.3f %10.2f  %7.2fx  %12.3f %6.2fx\n",
               n, diff, t_fwd * 1e3, flops / t_fwd * 1e-9, t_ref * 1e3, flops / t_ref * 1e-9,
               t_gemm * 1e3, flops / t_gemm * 1e-9, t_fwd / t_gemm, t_fwd2 * 1e3, t_fwd / t_fwd2);
        fflush(stdout);
        attn_trace_free(&c.trace);
        free(c.q.data), free(c.k.data), free(c.v.data), free(c.s), free(c.o);
    }
    return 0;
}

/* ---- floor: the forward pass against the two products it is made of ---- */

/*
 * One problem at n, three ways of asking for it, each with its own trace allocated once
 * (as the core rows' dgemm pair has its S and O): what the timed calls measure is the
 * pass, not the allocator.
 */
struct floor_case {
    struct core_case c;        /* q, k, v, the dgemm pair's S and O, the every-step trace */
    struct attn_problem lean;  /* the same problem, skip_summary */
    struct attn_trace kept;    /* weights and output only */
    struct attn_stream streamed;/* what run_output_lse fills: output and lse, no matrix */
};

/* Every step kept (ATTN_KEEP_ALL) and the summary: what /v1/attention's default asks. */
static void run_every_step(void *arg)
{
    struct floor_case *f = arg;
    run_forward(&f->c);
}

/* Weights and output only, no summary: a V2 client asking WEIGHTS and OUTPUT. */
static void run_weights_output(void *arg)
{
    struct floor_case *f = arg;
    if (attn_forward(&f->kept, &f->lean) != ATTN_OK) {
        fprintf(stderr, "core_bench: attn_forward (weights, output) failed at n = %zu\n", f->c.n);
        exit(1);
    }
}

/*
 * The "output and lse" row's computation: a kernel author's request (OUTPUT and LSE,
 * no (n_q, n_k) matrix wanted), the streamed pass (core/stream.h) on every row, as
 * the V2 model runs it.
 */
static void run_output_lse(void *arg)
{
    struct floor_case *f = arg;
    if (attn_forward_stream(&f->streamed, &f->lean, NULL, NULL, f->c.n, 1) != ATTN_OK) {
        fprintf(stderr, "core_bench: attn_forward (output, lse) failed at n = %zu\n", f->c.n);
        exit(1);
    }
}

/*
 * numpy's naive attention at n, in seconds, timed by a separate /usr/bin/python3 right
 * after the C rows (bench/numpy_attention.py; BENCH_NUMPY names another command), with
 * env (VAR=value words, or "") before it; NAN with the reason in why when it could not
 * be timed.
 */
static double numpy_seconds(size_t n, const char *env, char why[64])
{
    const char *cmd = getenv("BENCH_NUMPY");
    if (cmd == NULL || *cmd == '\0')
        cmd = "/usr/bin/python3 bench/numpy_attention.py";
    char line[512];
    snprintf(line, sizeof line, "env OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 %s %s %zu %g 2>/dev/null",
             env, cmd, n, g_budget);
    FILE *p = popen(line, "r");
    snprintf(why, 64, "n/a");
    if (p == NULL)
        return NAN;
    char out[128] = "";
    char *got = fgets(out, sizeof out, p);
    int rc = pclose(p);
    char *end;
    double s = got != NULL ? strtod(out, &end) : NAN;
    if (got == NULL || rc != 0 || end == out || !(s > 0)) {
        out[strcspn(out, "\n")] = '\0';
        snprintf(why, 64, "%s", strncmp(out, "n/a", 3) == 0 ? out : "n/a");
        return NAN;
    }
    return s;
}

/*
 * numpy's temporaries (four (n, n) arrays a call) are above glibc's mmap threshold, so
 * each call maps, faults in and unmaps them; where a page fault is dear (a VM) that is
 * most of numpy's time. Run again with glibc keeping freed memory in the heap, numpy's
 * figure is its arithmetic: both are printed.
 */
#define NUMPY_HEAP_KEPT "MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296"

/* Allocates f's inputs and traces at n and fills them; exits on failure. */
static void floor_case_init(struct floor_case *f, size_t n)
{
    struct core_case *c = &f->c;
    size_t nd = n * D;
    *f = (struct floor_case){.c.n = n};
    c->q = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
    c->k = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
    c->v = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
    fill_random(c->q.data, nd, 7, 0);
    fill_random(c->k.data, nd, 7, 1);
    fill_random(c->v.data, nd, 7, 2);
    c->p = (struct attn_problem){.q = &c->q, .k = &c->k, .v = &c->v, .scale = 1.0 / sqrt(D)};
    f->lean = c->p;
    f->lean.skip_summary = true;
    c->s = xmalloc(n * n * sizeof(double));
    c->o = xmalloc(nd * sizeof(double));
    unsigned wo = ATTN_KEEP(ATTN_STEP_WEIGHTS) | ATTN_KEEP(ATTN_STEP_OUTPUT);
    if (attn_trace_alloc_keep(&c->trace, n, n, D, ATTN_KEEP_ALL) != ATTN_OK ||
        attn_trace_alloc_keep(&f->kept, n, n, D, wo) != ATTN_OK ||
        attn_stream_alloc(&f->streamed, n, D) != ATTN_OK) {
        fprintf(stderr, "core_bench: cannot allocate traces at n = %zu\n", n);
        exit(1);
    }
}

static void floor_case_free(struct floor_case *f)
{
    attn_stream_free(&f->streamed);
    attn_trace_free(&f->kept);
    attn_trace_free(&f->c.trace);
    free(f->c.q.data), free(f->c.k.data), free(f->c.v.data), free(f->c.s), free(f->c.o);
}

/* "1.23x PASS" (or MISS) into buf for a ratio against a target: reported, never asserted. */
static const char *ratio_verdict(double ratio, double target, char buf[32])
{
    snprintf(buf, 32, "%.2fx %s", ratio, ratio <= target ? "PASS" : "MISS");
    return buf;
}

/*
 * The floor rows: one thread, d = 64, each way of asking as a ratio to the bare
 * dgemm pair (Q·Kᵀ, then ·V) timed in the same rounds, round after round, so that a
 * neighbour's burst slows all four alike. Before timing, both lean passes' outputs are
 * compared with the every-step pass's (max |Δ output|). numpy runs after the four, in its
 * own process, and is divided by the same pair's median.
 */
static int bench_floor(int argc, char **argv)
{
    size_t sizes[16] = {512, 1024, 2048};
    size_t n_sizes = 3;
    if (argc > 0 && parse_sizes(argc, argv, sizes, &n_sizes) != 0)
        return 2;
    printf("floor: n_q = n_k = n, d_k = d_v = %d, 1 BLAS thread; each as a ratio to the bare "
           "dgemm pair (Q·Kᵀ then ·V) timed in the same rounds (medians, interleaved)\n", D);
    printf("  every step = attn_forward, every step kept and the summary (target <= 1.6x); "
           "weights+output = weights and output kept, no summary (<= 1.3x)\n");
    printf("  output+lse = the streamed pass, no (n, n) matrix (attn_forward_stream; "
           "<= 1.15x); numpy = the lecture note's naive float64 attention (no target),\n"
           "  in its own process after the four, as run (fresh pages for its temporaries "
           "each call) and with glibc keeping freed memory (heap kept)\n");
    printf("  %5s  %10s  %11s  %13s  %15s  %15s  %10s  %10s\n", "n", "dgemm ms",
           "max|Δ out|", "every step ms", "weights+out ms", "output+lse ms", "numpy ms",
           "heap kept");
    for (size_t si = 0; si < n_sizes; si++) {
        struct floor_case f;
        floor_case_init(&f, sizes[si]);
        run_every_step(&f);
        run_weights_output(&f);
        run_output_lse(&f);
        double d1 = max_abs_diff(&f.kept.output, &f.c.trace.output);
        double d2 = max_abs_diff(&f.streamed.output, &f.c.trace.output);
        const bench_fn fns[4] = {run_dgemm, run_every_step, run_weights_output, run_output_lse};
        void *const args[4] = {&f.c, &f, &f, &f};
        double t[4];
        bench_median_interleaved(fns, args, 4, 3, t);
        char why[64], why_kept[64];
        double t_np = numpy_seconds(f.c.n, "", why);
        double t_kept = numpy_seconds(f.c.n, NUMPY_HEAP_KEPT, why_kept);
        printf("  %5zu  %10.3f  %11.2e  %13.3f  %15.3f  %15.3f  ", f.c.n, t[0] * 1e3,
               d1 > d2 ? d1 : d2, t[1] * 1e3, t[2] * 1e3, t[3] * 1e3);
        if (isnan(t_np))
            printf("%10s  %10s\n", why, why_kept);
        else
            printf("%10.3f  %10.3f\n", t_np * 1e3, t_kept * 1e3);
        char r1[32], r2[32], r3[32];
        printf("  %5s  %10s  %11s  %13s  %15s  %15s", "", "ratio", "",
               ratio_verdict(t[1] / t[0], 1.6, r1), ratio_verdict(t[2] / t[0], 1.3, r2),
               ratio_verdict(t[3] / t[0], 1.15, r3));
        if (!isnan(t_np))
            printf("  %9.2fx  %9.2fx", t_np / t[0], t_kept / t[0]);
        printf("\n");
        fflush(stdout);
        floor_case_free(&f);
    }
    return 0;
}

/*
 * The bare dgemm pair at n = n_q = n_k, d = 64, on `threads` BLAS threads, computed in
 * blocks of rows of Q so that S is (block, n), never (n, n) (n = 32,768 would need
 * 8 GiB): the same multiply-adds, 4·n²·d flops. One timed run (it takes seconds at
 * n = 32,768), after a first block to warm up; prints "pair_ms=MS threads=T block=B".
 */
static int bench_pair(int argc, char **argv)
{
    char *end;
    unsigned long n = argc == 2 ? strtoul(argv[0], &end, 10) : 0;
    if (argc != 2 || *end != '\0' || n < 1 || n > (1ul << 20)) {
        fprintf(stderr, "core_bench: pair N THREADS, N in 1..1048576\n");
        return 2;
    }
    unsigned long threads = strtoul(argv[1], &end, 10);
    if (*end != '\0' || threads < 1 || threads > 256) {
        fprintf(stderr, "core_bench: THREADS must be 1..256, not %s\n", argv[1]);
        return 2;
    }
    enum { BLOCK = 512 };
    size_t nd = (size_t)n * D, rows = n < BLOCK ? n : BLOCK;
    double *q = xmalloc(nd * sizeof(double)), *k = xmalloc(nd * sizeof(double));
    double *v = xmalloc(nd * sizeof(double)), *o = xmalloc(nd * sizeof(double));
    double *s = xmalloc(rows * n * sizeof(double));
    fill_random(q, nd, 7, 0), fill_random(k, nd, 7, 1), fill_random(v, nd, 7, 2);
    openblas_set_num_threads((int)threads);
    double t = 0;
    for (int pass = 0; pass < 2; pass++) { /* pass 0: one block, to warm up */
        double t0 = now_s();
        for (size_t i = 0; i < n; i += rows) {
            int m = (int)(n - i < rows ? n - i : rows);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, (int)n, D, 1.0, q + i * D, D,
                        k, D, 0.0, s, (int)n);
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, D, (int)n, 1.0, s, (int)n,
                        v, D, 0.0, o + i * D, D);
            if (pass == 0)
                break;
        }
        t = now_s() - t0;
    }
    printf("pair_ms=%.1f threads=%lu block=%zu\n", t * 1e3, threads, rows);
    free(q), free(k), free(v), free(o), free(s);
    return 0;
}

/* ---- variants ---- */

struct variant_case {
    struct core_case *c;
    struct attn_variants v;
    struct attn_vtrace t;
};

static void run_variant(void *arg)
{
    struct variant_case *vc = arg;
    if (attn_forward_variants(&vc->t, &vc->c->p, &vc->v) != ATTN_OK) {
        fprintf(stderr, "core_bench: attn_forward_variants failed at n = %zu\n", vc->c->n);
        exit(1);
    }
}

/*
 * Each variant alone (and all of them) against the plain forward pass, the two timed in
 * turn round after round so that a busy neighbour slows both alike; the ratio is the
 * variant's cost. Before timing, each variant's trace is compared with
 * attn_reference_variants' (the largest difference over masked, weights and output).
 * The window keeps 64 keys back of 0 ahead (causal within the window): most keys hidden;
 * it runs band_only, as the API does when scores, scaled and softcapped are not asked
 * for, so the keys it hides are not multiplied.
 */
static int bench_variants(int argc, char **argv)
{
    size_t sizes[16] = {512, 2048};
    size_t n_sizes = 2;
    if (argc > 0 && parse_sizes(argc, argv, sizes, &n_sizes) != 0)
        return 2;
    printf("variants: n_q = n_k = n, d_k = d_v = %d, 1 BLAS thread; each against attn_forward in "
           "the same run (medians, interleaved)\n", D);
    printf("  %5s  %-12s  %12s  %10s  %10s  %7s\n", "n", "variant", "max|fwd-ref|",
           "plain ms", "variant ms", "ratio");
    for (size_t si = 0; si < n_sizes; si++) {
        struct core_case c = {.n = sizes[si]};
        size_t n = c.n, nd = n * D;
        c.q = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
        c.k = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
        c.v = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
        fill_random(c.q.data, nd, 7, 0);
        fill_random(c.k.data, nd, 7, 1);
        fill_random(c.v.data, nd, 7, 2);
        c.p = (struct attn_problem){.q = &c.q, .k = &c.k, .v = &c.v, .scale = 1.0 / sqrt(D)};
        if (attn_trace_alloc(&c.trace, n, n, D) != ATTN_OK) {
            fprintf(stderr, "core_bench: cannot allocate a trace at n = %zu\n", n);
            return 1;
        }
        struct attn_rope rope = {.base = 10000, .layout = ATTN_ROPE_HALF, .rotated = D};
        double slope;
        attn_alibi_slopes(1, &slope);
        if (attn_rope_prepare(&rope, n, n) != ATTN_OK) {
            fprintf(stderr, "core_bench: cannot prepare RoPE at n = %zu\n", n);
            return 1;
        }
        const struct { const char *name; struct attn_variants v; } cases[] = {
            {"rope", {.rope = &rope}},
            {"alibi", {.alibi = true, .alibi_slope = slope}},
            {"softcap", {.softcap = 30}},
            {"window", {.window = true, .has_left = true, .left = 64, .has_right = true,
                        .band_only = true}},
            {"sink_logit", {.sink = true, .sink_logit = 0}},
            {"dropout", {.dropout = true, .dropout_p = 0.1, .dropout_seed = 1}},
            {"all", {.rope = &rope, .alibi = true, .alibi_slope = slope, .softcap = 30,
                     .window = true, .has_left = true, .left = 64, .has_right = true,
                     .sink_tokens = 4, .sink = true, .dropout = true, .dropout_p = 0.1}},
        };
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            struct variant_case vc = {.c = &c, .v = cases[k].v};
            struct attn_vtrace ref;
            if (attn_vtrace_alloc(&vc.t, n, n, D, D, &vc.v) != ATTN_OK ||
                attn_vtrace_alloc(&ref, n, n, D, D, &vc.v) != ATTN_OK) {
                fprintf(stderr, "core_bench: cannot allocate traces at n = %zu\n", n);
                return 1;
            }
            run_variant(&vc);
            if (attn_reference_variants(&ref, &c.p, &vc.v) != ATTN_OK) {
                fprintf(stderr, "core_bench: attn_reference_variants failed at n = %zu\n", n);
                return 1;
            }
            double diff = 0;
            const struct attn_matrix *fa[] = {&vc.t.base.masked, &vc.t.base.weights,
                                              &vc.t.base.output};
            const struct attn_matrix *ra[] = {&ref.base.masked, &ref.base.weights,
                                              &ref.base.output};
            for (int s = 0; s < 3; s++) {
                double dd = max_abs_diff(fa[s], ra[s]);
                if (!(dd <= diff))
                    diff = dd;
            }
            attn_vtrace_free(&ref);
            const bench_fn fns[2] = {run_forward, run_variant};
            void *const args[2] = {&c, &vc};
            double med[2];
            bench_median_interleaved(fns, args, 2, 3, med);
            printf("  %5zu  %-12s  %12.2e  %10.3f  %10.3f  %6.2fx\n", n, cases[k].name, diff,
                   med[0] * 1e3, med[1] * 1e3, med[1] / med[0]);
            fflush(stdout);
            attn_vtrace_free(&vc.t);
        }
        attn_rope_release(&rope);
        attn_trace_free(&c.trace);
        free(c.q.data), free(c.k.data), free(c.v.data);
    }
    return 0;
}

/* ---- JSON ---- */

/* The whole file, NUL-terminated, in one malloc'd block (exits on failure). */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "core_bench: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size < 0) {
        fprintf(stderr, "core_bench: %s: cannot size\n", path);
        exit(1);
    }
    char *buf = xmalloc((size_t)size + 1);
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "core_bench: %s: short read\n", path);
        exit(1);
    }
    fclose(f);
    buf[size] = '\0';
    *len = (size_t)size;
    return buf;
}

/* How many JSON numbers a document holds: tokens that start with '-' or a digit outside strings. */
static size_t count_numbers(const char *s, size_t len)
{
    size_t count = 0;
    int in_string = 0, in_token = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (in_string) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_string = 0;
            continue;
        }
        if (ch == '"') {
            in_string = 1, in_token = 0;
        } else if (ch == '-' || (ch >= '0' && ch <= '9') || ch == '.' || ch == 'e' || ch == 'E' ||
                   ch == '+') {
            if (!in_token && (ch == '-' || (ch >= '0' && ch <= '9')))
                count++;
            in_token = 1;
        } else {
            in_token = 0; /* also ends true/false/null, whose letters never start a count */
        }
    }
    return count;
}

struct json_case {
    const char *body;
    size_t len;
    const struct api_context *ctx;
    size_t res_len;  /* bytes of the last answer */
    size_t res_nums; /* numbers in the last answer */
    int status;
    size_t n_q, n_k, d_v;
    struct attn_trace trace;
    struct attn_matrix q, k, v;
};

static void run_loadb(void *arg)
{
    struct json_case *c = arg;
    json_error_t e;
    json_t *doc = json_loadb(c->body, c->len, JSON_REJECT_DUPLICATES, &e);
    if (doc == NULL) {
        fprintf(stderr, "core_bench: json_loadb: %s\n", e.text);
        exit(1);
    }
    json_decref(doc);
}

static void run_handle(void *arg)
{
    struct json_case *c = arg;
    struct api_request req = {.method = "POST", .path = "/v1/attention",
                              .content_type = "application/json", .body = c->body,
                              .body_len = c->len};
    struct api_response res;
    memset(&res, 0, sizeof res);
    api_handle(c->ctx, &req, &res);
    c->status = res.status;
    c->res_len = res.body_len;
    if (c->res_nums == 0 && res.body != NULL)
        c->res_nums = count_numbers(res.body, res.body_len);
    api_response_deinit(&res);
}

/*
 * What api_handle's compute costs for the payload's include ["summary"] variant, the
 * one read is derived from: allocate (only weights and output kept, as the endpoint
 * does when no other step is shown), attn_forward with the summary, free.
 */
static void run_alloc_forward(void *arg)
{
    struct json_case *c = arg;
    struct attn_problem p = {.q = &c->q, .k = &c->k, .v = &c->v, .scale = 1.0 / sqrt((double)c->q.cols)};
    unsigned keep = ATTN_KEEP(ATTN_STEP_WEIGHTS) | ATTN_KEEP(ATTN_STEP_OUTPUT);
    if (attn_trace_alloc_keep(&c->trace, c->n_q, c->n_k, c->d_v, keep) != ATTN_OK ||
        attn_forward(&c->trace, &p) != ATTN_OK) {
        fprintf(stderr, "core_bench: forward failed\n");
        exit(1);
    }
    attn_trace_free(&c->trace);
}

/* The sizes of q, k and v in a request document. */
static void payload_dims(const char *body, size_t len, size_t *n_q, size_t *d_k, size_t *n_k,
                         size_t *d_v)
{
    json_error_t e;
    json_t *doc = json_loadb(body, len, 0, &e);
    json_t *q = json_object_get(doc, "q"), *k = json_object_get(doc, "k"), *v = json_object_get(doc, "v");
    if (doc == NULL || !json_is_array(q) || !json_is_array(k) || !json_is_array(v)) {
        fprintf(stderr, "core_bench: payload is not an attention request\n");
        exit(1);
    }
    *n_q = json_array_size(q), *n_k = json_array_size(k);
    *d_k = json_array_size(json_array_get(k, 0)), *d_v = json_array_size(json_array_get(v, 0));
    json_decref(doc);
}

/* Appends key=value to the BENCH_META file, if one is named. */
static void meta_put(const char *key, const char *name, double value)
{
    const char *path = getenv("BENCH_META");
    if (path == NULL || *path == '\0')
        return;
    FILE *f = fopen(path, "a");
    if (f == NULL)
        return;
    fprintf(f, "%s_%s=%.6f\n", key, name, value);
    fclose(f);
}

/* A time found as a difference of two medians, with its rates; "-" for one at or below
 * zero, which only noise produces and which no rate can be made of. */
static void print_difference(double seconds, double bytes, double numbers)
{
    if (seconds <= 0)
        printf("%8s %8s %8s", "-", "-", "-");
    else
        printf("%8.2f %8.1f %8.2f", seconds * 1e3, bytes / seconds * 1e-6, numbers / seconds * 1e-6);
}

/* part's share of whole as "NN%", in buf; "-" when part came out at or below zero. */
static const char *share_or_dash(double part, double whole, char buf[16])
{
    if (part <= 0)
        return "-";
    snprintf(buf, 16, "%.0f%%", 100 * part / whole);
    return buf;
}

static int bench_json(const char *dir, int argc, char **names)
{
    struct api_context ctx = {.limits = api_default_limits(), .ready = true, .http_library = "bench"};
    printf("JSON, in process (api_handle = parse + validate + attn_forward + write, one thread):\n");
    printf("  %-7s %9s %9s | %-26s | %9s %9s %9s | %9s | %-27s | %-27s\n", "payload",
           "request", "numbers", "json_loadb ms  MB/s  Mnum/s", "handle ms", "response", "numbers",
           "[summ] ms", "write ms    MB/s    Mnum/s", "read ms     MB/s    Mnum/s");
    for (int i = 0; i < argc; i++) {
        char path[4096];
        struct json_case full = {.ctx = &ctx}, summ = {.ctx = &ctx};
        snprintf(path, sizeof path, "%s/%s.json", dir, names[i]);
        char *body = read_file(path, &full.len);
        full.body = body;
        size_t req_nums = count_numbers(body, full.len);
        double t_load = bench_median(run_loadb, &full, 3);
        run_handle(&full); /* the status, sizes and counts; a warm-up too */
        if (full.status != 200) {
            fprintf(stderr, "core_bench: %s: status %d\n", path, full.status);
            return 1;
        }
        snprintf(path, sizeof path, "%s/%s-summary.json", dir, names[i]);
        FILE *probe = fopen(path, "rb");
        if (probe == NULL) { /* tiny: no variant, the per-request cost is the figure */
            double t_full = bench_median(run_handle, &full, 3);
            printf("  %-7s %9zu %9zu | %8.4f %8.1f %8.2f | %9.4f %9zu %9zu | %9s |\n", names[i],
                   full.len, req_nums, t_load * 1e3, full.len / t_load * 1e-6,
                   req_nums / t_load * 1e-6, t_full * 1e3, full.res_len, full.res_nums, "-");
            meta_put("handle_ms", names[i], t_full * 1e3);
            free(body);
            continue;
        }
        fclose(probe);
        char *sbody = read_file(path, &summ.len);
        summ.body = sbody;
        run_handle(&summ);
        if (summ.status != 200) {
            fprintf(stderr, "core_bench: %s: status %d\n", path, summ.status);
            return 1;
        }

        size_t d_k;
        struct json_case fw = {0};
        payload_dims(body, full.len, &fw.n_q, &d_k, &fw.n_k, &fw.d_v);
        fw.q = attn_matrix_view(xmalloc(fw.n_q * d_k * sizeof(double)), fw.n_q, d_k);
        fw.k = attn_matrix_view(xmalloc(fw.n_k * d_k * sizeof(double)), fw.n_k, d_k);
        fw.v = attn_matrix_view(xmalloc(fw.n_k * fw.d_v * sizeof(double)), fw.n_k, fw.d_v);
        fill_random(fw.q.data, fw.n_q * d_k, 7, 0);
        fill_random(fw.k.data, fw.n_k * d_k, 7, 1);
        fill_random(fw.v.data, fw.n_k * fw.d_v, 7, 2);
        /* The forward pass timed in the same rounds as the two requests: timed minutes
         * apart, a neighbour's burst could make it longer than the summary request that
         * contains it. */
        const bench_fn fns[] = {run_handle, run_handle, run_alloc_forward};
        void *const args[] = {&full, &summ, &fw};
        double t[3];
        bench_median_interleaved(fns, args, 3, 3, t);
        free(fw.q.data), free(fw.k.data), free(fw.v.data);
        double t_full = t[0], t_summ = t[1], t_fwd = t[2];
        double w_t = t_full - t_summ, r_t = t_summ - t_fwd;
        char r_share[16], w_share[16];
        double w_bytes = (double)full.res_len - (double)summ.res_len;
        double w_nums = (double)full.res_nums - (double)summ.res_nums;
        printf("  %-7s %9zu %9zu | %8.2f %8.1f %8.2f | %9.2f %9zu %9zu | %9.2f | ", names[i],
               full.len, req_nums, t_load * 1e3, full.len / t_load * 1e-6,
               req_nums / t_load * 1e-6, t_full * 1e3, full.res_len, full.res_nums, t_summ * 1e3);
        print_difference(w_t, w_bytes, w_nums);
        printf(" | ");
        print_difference(r_t, (double)full.len, (double)req_nums);
        printf("\n  %-7s   of handle: read %s (json_loadb alone would be %.0f%%), forward %.0f%% "
               "(alloc + attn_forward + free: %.2f ms), write %s\n", "",
               share_or_dash(r_t, t_full, r_share), 100 * t_load / t_full, 100 * t_fwd / t_full,
               t_fwd * 1e3, share_or_dash(w_t, t_full, w_share));
        if (w_t <= 0 || r_t <= 0)
            printf("  %-7s   (-: the difference came out at or below zero; the machine was too "
                   "noisy in these rounds to tell read from write)\n", "");
        fflush(stdout);
        meta_put("handle_ms", names[i], t_full * 1e3);
        meta_put("forward_ms", names[i], t_fwd * 1e3);
        if (r_t > 0 && w_t > 0) { /* the report splits api_handle only with both */
            meta_put("read_ms", names[i], r_t * 1e3);
            meta_put("write_ms", names[i], w_t * 1e3);
        }
        free(body);
        free(sbody);
    }
    return 0;
}

/* The number paths this CPU takes: the bench's figures for reading and writing depend
 * on them more than on anything else about the machine. */
static int print_number_paths(void)
{
    unsigned lanes = api_format_lanes();
    printf("printer %s, reader %s\n",
           lanes == 8   ? "in 8 lanes (AVX-512)"
           : lanes == 4 ? "in 4 lanes (AVX2; its 8 need AVX-512)"
                        : "one number at a time",
           api_read_json_number_path() == API_NUMBER_PATH_AVX512VBMI2
               ? "32 bytes at a time (AVX-512 VBMI2)"
           : api_read_json_number_path() == API_NUMBER_PATH_AVX2 ? "32 bytes at a time (AVX2)"
                                                                 : "bytewise");
    return 0;
}

/* ---- the backward pass ---- */

struct backward_case {
    struct variant_case *fwd;
    struct attn_grads g;
    struct attn_matrix d_out;
};

static void run_backward(void *arg)
{
    struct backward_case *bc = arg;
    if (attn_backward(&bc->g, &bc->fwd->c->p, &bc->fwd->v, &bc->fwd->t, &bc->d_out) != ATTN_OK) {
        fprintf(stderr, "core_bench: attn_backward failed at n = %zu\n", bc->fwd->c->n);
        exit(1);
    }
}

/* The streamed pair: attn_forward_stream for the output and lse, then attn_backward_stream. */
struct streamed_pair {
    struct backward_case *bc;
    struct attn_stream fwd;
    struct attn_stream_grads g;
};

static void run_streamed_pair(void *arg)
{
    struct streamed_pair *sp = arg;
    const struct attn_problem *p = &sp->bc->fwd->c->p;
    if (attn_forward_stream(&sp->fwd, p, NULL, NULL, sp->fwd.n_rows, 1) != ATTN_OK ||
        attn_backward_stream(&sp->g, p, NULL, &sp->fwd.output, sp->fwd.summary.lse,
                             &sp->bc->d_out) != ATTN_OK) {
        fprintf(stderr, "core_bench: the streamed pair failed at n = %zu\n", sp->bc->fwd->c->n);
        exit(1);
    }
}

/* The whole pair: every forward step, then every gradient step. */
static void run_whole_pair(void *arg)
{
    struct backward_case *bc = arg;
    run_variant(bc->fwd);
    run_backward(bc);
}

/*
 * The backward pass (core/backward.h: every gradient step built) against the forward pass
 * with every step built, causal, n = 512 and 1024 (or the N given), d = 64, one thread,
 * timed in turn; target at most 2.5x (it makes four products to the forward's two, and
 * writes five (n, n) steps to the forward's four).
 */
static int bench_backward(int argc, char **argv)
{
    size_t sizes[16] = {512, 1024};
    size_t n_sizes = 2;
    if (argc > 0 && parse_sizes(argc, argv, sizes, &n_sizes) != 0)
        return 2;
    printf("backward: every gradient step against the forward's every step, causal, n_q = n_k = "
           "n, d_k = d_v = %d, 1 thread (medians, interleaved)\n", D);
    printf("  %5s  %10s  %12s  %-10s  %12s  %12s  %s\n", "n", "forward ms", "backward ms", "ratio",
           "whole f+b ms", "streamed ms", "streamed/whole (no (n, n) matrix)");
    for (size_t si = 0; si < n_sizes; si++) {
        size_t n = sizes[si], nd = n * D;
        struct core_case c = {.n = n};
        c.q = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
        c.k = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
        c.v = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
        double *d_out = xmalloc(nd * sizeof(double));
        fill_random(c.q.data, nd, 11, 0);
        fill_random(c.k.data, nd, 11, 1);
        fill_random(c.v.data, nd, 11, 2);
        fill_random(d_out, nd, 11, 3);
        c.p = (struct attn_problem){.q = &c.q, .k = &c.k, .v = &c.v, .scale = 1.0 / sqrt(D),
                                    .mask = {.kind = ATTN_MASK_CAUSAL}};
        struct variant_case vc = {.c = &c};
        struct backward_case bc = {.fwd = &vc, .d_out = attn_matrix_view(d_out, n, D)};
        if (attn_vtrace_alloc(&vc.t, n, n, D, D, &vc.v) != ATTN_OK ||
            attn_grads_alloc(&bc.g, n, n, D, D) != ATTN_OK) {
            fprintf(stderr, "core_bench: cannot allocate at n = %zu\n", n);
            return 1;
        }
        run_variant(&vc);
        const bench_fn fns[2] = {run_variant, run_backward};
        void *const args[2] = {&vc, &bc};
        double t[2];
        char verdict[32];
        bench_median_interleaved(fns, args, 2, 3, t);
        struct streamed_pair sp = {.bc = &bc};
        if (attn_stream_alloc(&sp.fwd, n, D) != ATTN_OK ||
            attn_stream_grads_alloc(&sp.g, n, n, D, D) != ATTN_OK) {
            fprintf(stderr, "core_bench: cannot allocate the streamed pair at n = %zu\n", n);
            return 1;
        }
        const bench_fn pairs[2] = {run_whole_pair, run_streamed_pair};
        void *const pair_args[2] = {&bc, &sp};
        double tp[2];
        bench_median_interleaved(pairs, pair_args, 2, 3, tp);
        printf("  %5zu  %10.3f  %12.3f  %s  %12.3f  %12.3f  %.2fx\n", n, t[0] * 1e3, t[1] * 1e3,
               ratio_verdict(t[1] / t[0], 2.5, verdict), tp[0] * 1e3, tp[1] * 1e3, tp[1] / tp[0]);
        fflush(stdout);
        attn_stream_free(&sp.fwd);
        attn_stream_grads_free(&sp.g);
        attn_grads_free(&bc.g);
        attn_vtrace_free(&vc.t);
        free(c.q.data), free(c.k.data), free(c.v.data), free(d_out);
    }
    return 0;
}

/* ---- the masks of training: the work follows the mask ---- */

struct stream_case {
    const struct attn_problem *p;
    struct attn_variants v;
    struct attn_stream out;
    size_t n;
};

static void run_stream(void *arg)
{
    struct stream_case *sc = arg;
    if (attn_forward_stream(&sc->out, sc->p, &sc->v, NULL, sc->n, 1) != ATTN_OK) {
        fprintf(stderr, "core_bench: attn_forward_stream failed at n = %zu\n", sc->n);
        exit(1);
    }
}

/*
 * A packed batch of 8 equal documents against the same problem dense (causal both),
 * n = 2048 and 4096, d = 64, one thread, timed in turn round after round: streamed
 * (output and lse, what a kernel returns: the key blocks of other documents are skipped)
 * and the full pass with band_only (every step built: the products skip the other
 * documents' tiles, but the (n, n) steps are still written). The documents see an
 * eighth of the dense problem's visible cells; a row block of 128 queries computes the
 * keys from its document's start to its own diagonal, about 1.3x to 1.5x those cells at
 * these n, so the streamed target is a quarter of the dense time.
 */
static int bench_masks(int argc, char **argv)
{
    size_t sizes[16] = {2048, 4096};
    size_t n_sizes = 2;
    if (argc > 0 && parse_sizes(argc, argv, sizes, &n_sizes) != 0)
        return 2;
    printf("masks: 8 packed documents against the dense problem, causal, n_q = n_k = n, "
           "d_k = d_v = %d, 1 thread (medians, interleaved)\n", D);
    printf("  %5s  %-22s  %10s  %10s  %s\n", "n", "path", "dense ms", "8 docs ms", "ratio");
    for (size_t si = 0; si < n_sizes; si++) {
        size_t n = sizes[si], nd = n * D, starts[9];
        for (int d = 0; d <= 8; d++)
            starts[d] = n * (size_t)d / 8;
        struct attn_matrix q = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
        struct attn_matrix k = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
        struct attn_matrix v = attn_matrix_view(xmalloc(nd * sizeof(double)), n, D);
        fill_random(q.data, nd, 9, 0);
        fill_random(k.data, nd, 9, 1);
        fill_random(v.data, nd, 9, 2);
        struct attn_problem p = {.q = &q, .k = &k, .v = &v, .scale = 1.0 / sqrt(D),
                                 .mask = {.kind = ATTN_MASK_CAUSAL}, .skip_summary = true};
        const struct attn_variants docs = {.doc_q = starts, .doc_k = starts, .n_docs = 8};
        struct stream_case sc[2] = {{.p = &p, .n = n}, {.p = &p, .v = docs, .n = n}};
        if (attn_stream_alloc(&sc[0].out, n, D) != ATTN_OK ||
            attn_stream_alloc(&sc[1].out, n, D) != ATTN_OK) {
            fprintf(stderr, "core_bench: cannot allocate the answers at n = %zu\n", n);
            return 1;
        }
        bench_fn fns[2] = {run_stream, run_stream};
        void *args[2] = {&sc[0], &sc[1]};
        double t[2];
        bench_median_interleaved(fns, args, 2, 3, t);
        char verdict[32];
        printf("  %5zu  %-22s  %10.3f  %10.3f  %s\n", n, "streamed, output+lse", t[0] * 1e3,
               t[1] * 1e3, ratio_verdict(t[1] / t[0], 0.25, verdict));
        attn_stream_free(&sc[0].out);
        attn_stream_free(&sc[1].out);
        struct core_case c = {.n = n, .q = q, .k = k, .v = v, .p = p};
        struct attn_variants banded = docs;
        banded.band_only = true;
        struct variant_case vc = {.c = &c, .v = banded};
        if (attn_trace_alloc(&c.trace, n, n, D) != ATTN_OK ||
            attn_vtrace_alloc(&vc.t, n, n, D, D, &vc.v) != ATTN_OK) {
            fprintf(stderr, "core_bench: cannot allocate traces at n = %zu\n", n);
            return 1;
        }
        const bench_fn full[2] = {run_forward, run_variant};
        void *const full_args[2] = {&c, &vc};
        bench_median_interleaved(full, full_args, 2, 3, t);
        printf("  %5zu  %-22s  %10.3f  %10.3f  %.2fx\n", n, "full, band_only", t[0] * 1e3,
               t[1] * 1e3, t[1] / t[0]);
        fflush(stdout);
        attn_vtrace_free(&vc.t);
        attn_trace_free(&c.trace);
        free(q.data), free(k.data), free(v.data);
    }
    return 0;
}

/*
 * The precision rows: one request of random inputs (n_q = n_k = n, d = 64), answering the
 * output and its report, in float64 and in each low format, through api_handle in the
 * same rounds, each as a ratio to float64 (target for float16 summed in float32: at most
 * 10x; "same" runs the exact emulation of a 16-bit accumulator and has no target).
 */
static int bench_precision(int argc, char **argv)
{
    size_t sizes[16], n_sizes;
    if (parse_sizes(argc, argv, sizes, &n_sizes) != 0)
        return 2;
    if (n_sizes == 0) {
        sizes[0] = 512;
        n_sizes = 1;
    }
    static const char *const forms[] = {
        "", ",\"precision\":{\"format\":\"float16\"}", ",\"precision\":{\"format\":\"bfloat16\"}",
        ",\"precision\":{\"format\":\"float32\"}",
        ",\"precision\":{\"format\":\"float16\",\"accumulate\":\"same\"}",
    };
    static const char *const labels[] = { "float64", "float16", "bfloat16", "float32",
                                          "float16 same" };
    enum { FORMS = 5 };
    struct api_context ctx = {.limits = api_default_limits(), .ready = true, .http_library = "bench"};
    printf("precision: a request of random inputs, n_q = n_k = n, d_k = d_v = %d, include "
           "[\"output\"], through api_handle, 1 thread; each a ratio to float64 in the same "
           "rounds (float16 target <= 10x)\n", D);
    printf("  %5s  %-13s  %10s  %8s\n", "n", "format", "ms", "ratio");
    for (size_t s = 0; s < n_sizes; s++) {
        struct json_case cases[FORMS];
        char bodies[FORMS][256];
        bench_fn fns[FORMS];
        void *args[FORMS];
        for (int f = 0; f < FORMS; f++) {
            snprintf(bodies[f], sizeof bodies[f], "{\"random\":{\"seed\":1,\"n_q\":%zu,\"n_k\":%zu,"
                     "\"d_k\":%d,\"d_v\":%d},\"include\":[\"output\"]%s}", sizes[s], sizes[s],
                     D, D, forms[f]);
            cases[f] = (struct json_case){.body = bodies[f], .len = strlen(bodies[f]), .ctx = &ctx};
            run_handle(&cases[f]);
            if (cases[f].status != 200) {
                fprintf(stderr, "core_bench: precision %s: status %d\n", labels[f], cases[f].status);
                return 1;
            }
            fns[f] = run_handle;
            args[f] = &cases[f];
        }
        double t[FORMS];
        bench_median_interleaved(fns, args, FORMS, 3, t);
        for (int f = 0; f < FORMS; f++) {
            char verdict[32] = "";
            if (f == 1)
                ratio_verdict(t[f] / t[0], 10, verdict);
            else
                snprintf(verdict, sizeof verdict, "%.2fx", t[f] / t[0]);
            printf("  %5zu  %-13s  %10.2f  %s\n", sizes[s], labels[f], t[f] * 1e3, verdict);
        }
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *budget = getenv("BENCH_BUDGET");
    if (budget != NULL && *budget != '\0') {
        char *end;
        double b = strtod(budget, &end);
        if (*end != '\0' || !(b > 0 && b <= 60)) {
            fprintf(stderr, "core_bench: BENCH_BUDGET must be seconds in (0, 60], not %s\n", budget);
            return 2;
        }
        g_budget = b;
    }
    api_global_init(); /* one BLAS thread, as the server */
    if (argc >= 2 && strcmp(argv[1], "core") == 0)
        return bench_core(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "floor") == 0)
        return bench_floor(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "pair") == 0)
        return bench_pair(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "variants") == 0)
        return bench_variants(argc - 2, argv + 2);
    if (argc >= 4 && strcmp(argv[1], "json") == 0)
        return bench_json(argv[2], argc - 3, argv + 3);
    if (argc >= 2 && strcmp(argv[1], "precision") == 0)
        return bench_precision(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "masks") == 0)
        return bench_masks(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "backward") == 0)
        return bench_backward(argc - 2, argv + 2);
    if (argc == 2 && strcmp(argv[1], "blas-core") == 0) { /* attnd's startup advice, if any */
        const char *core = attn_blas_better_core();
        printf("%s\n", core != NULL ? core : "");
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "number-paths") == 0)
        return print_number_paths();
    fprintf(stderr, "usage: core_bench core | core_bench floor | core_bench pair N THREADS | core_bench variants | core_bench json DIR NAME... | core_bench precision [N...] | core_bench masks [N...] | core_bench backward [N...] | core_bench blas-core"
                    " | core_bench number-paths\n");
    return 2;
}
