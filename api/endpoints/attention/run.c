/*
 * api/endpoints/attention/run.c — a validated /v1/attention request's working set (for
 * admission) and its computation, with the numeric faults turned into problems
 * that point at the input they came from.
 */
#include "api/endpoints/attention/attention.h"
#include "api/endpoints/block_map.h"
#include "api/endpoints/attention/page.h"
#include "api/endpoints/attention/test_hooks.h"
#include "api/endpoints/teach/ties.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http/admission.h"
#include "api/request/fields.h"
#include "api/json/matrix_write.h"
#include "api/json/spare_threads.h"

/* The steps the answer shows: pages show every step, JSON what include lists. Steps
 * not shown share memory with the next (attn_trace_alloc_keep). */
static unsigned steps_read(const struct api_attention_req *r)
{
    static const enum attn_step step_of[] = {
        [API_PART_SCORES] = ATTN_STEP_SCORES, [API_PART_SCALED] = ATTN_STEP_SCALED,
        [API_PART_MASKED] = ATTN_STEP_MASKED,
    };
    /* explain reads every step of its row, a pitfall the masked scores */
    if (r->for_page || r->explain.on || r->pitfall != API_PITFALL_NONE ||
        API_SOFTMAX_PARTS(r->include) != 0 || r->backward.on) /* the backward reads them all */
        return ATTN_KEEP_ALL;
    unsigned keep = ATTN_KEEP(ATTN_STEP_WEIGHTS) | ATTN_KEEP(ATTN_STEP_OUTPUT);
    for (int p = API_PART_SCORES; p <= API_PART_MASKED; p++)
        if (r->include & (1ul << p))
            keep |= ATTN_KEEP(step_of[p]);
    return keep;
}

static size_t add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* The numbers visible and block_map write: a cell a key of each answer row, a tile each. */
static size_t visibility_numbers(const struct api_attention_req *r)
{
    const struct api_masks *m = &r->variants.masks;
    size_t numbers = 0;
    if (r->include & (1ul << API_PART_VISIBLE)) /* within --max-cells, as every matrix */
        numbers += api_attention_answer_rows(r) * r->k.rows;
    if (r->include & (1ul << API_PART_BLOCK_MAP)) /* within --max-cells (the parse checks) */
        numbers += api_block_map_tiles(r->q.rows, r->k.rows, m->block_q, m->block_k);
    return numbers;
}

/* The numbers a streamed answer writes: the output and a number a row per statistic. */
static size_t stream_numbers(const struct api_attention_req *r)
{
    size_t rows = api_attention_answer_rows(r), numbers = rows * r->v.cols; /* <= max-cells */
    static const int per_row[] = { API_PART_ROW_MAX, API_PART_ROW_SUM, API_PART_LSE };
    for (size_t i = 0; i < sizeof per_row / sizeof per_row[0]; i++)
        if (r->include & (1ul << per_row[i]))
            numbers += rows;
    numbers = add_sat(numbers, api_attention_backward_numbers(r)); /* grad_q, grad_k, ... */
    return numbers + rows + visibility_numbers(r); /* and at most a warning a row */
}

/* A low-format run's bytes: its trace, every step kept, and core's copies of the inputs
 * and weights in the format (core/precision.c); with a report (/v1's) the float64 trace
 * beside it. With backward, also the float64 forward's own variant steps (kept for its
 * backward), that backward's gradients and the low backward's copies
 * (core/precision_backward.c); the low gradients are api_attention_backward_bytes'.
 * Without a report (V2) only the low backward's copies, which come once the forward's
 * are freed. */
static size_t precision_bytes(const struct api_attention_req *r)
{
    size_t n_q = r->q.rows, n_k = r->k.rows, d_k = r->q.cols, d_v = r->v.cols;
    size_t trace = attn_trace_bytes_keep(n_q, n_k, d_v, ATTN_KEEP_ALL);
    size_t held = (n_q * d_k + n_k * d_k + n_k * d_v + 2 * n_q * n_k) * sizeof(double);
    const struct attn_precision *rules = &r->precision.rules;
    size_t low_back = r->backward.on ? attn_backward_precision_bytes(n_q, n_k, d_k, d_v, rules)
                                     : 1;
    if (low_back == 0) /* a size overflowed */
        return SIZE_MAX;
    if (r->report == NULL) /* each term within --max-cells */
        return add_sat(trace, held > low_back ? held : low_back);
    size_t bytes = add_sat(add_sat(trace, trace), held);
    if (!r->backward.on)
        return bytes;
    struct attn_variants v = api_variants_for_head(&r->variants, 0);
    const size_t parts[] = { attn_vtrace_bytes(n_q, n_k, d_k, d_v, &v),
                             attn_grads_bytes(n_q, n_k, d_k, d_v), low_back };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        bytes = parts[i] == 0 ? SIZE_MAX : add_sat(bytes, parts[i]); /* 0: a size overflowed */
    return bytes;
}

size_t api_attention_working_set(const struct api_attention_req *r, enum api_format format,
                                 size_t body_len)
{
    if (r->streamed) /* the stream's answer and scratch; q, k and v if random makes them */
        return api_working_set(add_sat(add_sat(api_attention_stream_bytes(r),
                                               api_attention_random_bytes(r)),
                                       api_attention_backward_bytes(r)),
                               stream_numbers(r), body_len);
    size_t n_k = r->k.rows, d_v = r->v.cols; /* each <= --max-cells */
    size_t trace = r->precision.on ? precision_bytes(r)
                   : r->variants.any
                       ? api_attention_variants_bytes(r)
                       : attn_trace_bytes_keep(r->q.rows, n_k, d_v, steps_read(r));
    size_t random = api_attention_random_bytes(r); /* q, k, v `random` makes once admitted */
    trace = trace > SIZE_MAX - random ? SIZE_MAX : trace + random;
    trace = add_sat(trace, api_attention_backward_bytes(r)); /* the gradients and dO */
    size_t picked = api_attention_rows_bytes(r); /* `rows`' copy of its rows */
    trace = trace > SIZE_MAX - picked ? SIZE_MAX : trace + picked;
    /* What is written: every row, or `rows`' (repeats allowed, n_rows·n_k <= --max-cells) */
    size_t n_q = api_attention_answer_rows(r) > r->q.rows ? api_attention_answer_rows(r)
                                                          : r->q.rows;
    size_t qk = n_q * n_k;
    size_t pitfall = api_pitfall_cells(r->pitfall, n_q, n_k, d_v); /* its own wrong steps */
    if (format == API_FORMAT_TEXT) { /* the page, and what a pitfall computes besides */
        size_t page = api_attention_text_bytes(r);
        /* visibility_numbers: the doubles visible is printed from, the block map's tiles */
        size_t bytes = api_working_set(trace, pitfall + visibility_numbers(r), body_len);
        return bytes > SIZE_MAX - page ? SIZE_MAX : bytes + page;
    }
    size_t numbers = 0;
    for (int p = API_PART_SCORES; p <= API_PART_WEIGHTS; p++)
        if (r->for_page || (r->include & (1ul << p)))
            numbers += qk;
    if (r->for_page || (r->include & (1ul << API_PART_OUTPUT)))
        numbers += n_q * d_v;
    if (r->for_page || (r->include & (1ul << API_PART_SUMMARY)))
        numbers += 5 * n_q; /* row_sums, max_weight, entropy, argmax, fully_masked */
    const struct api_explain_sizes sizes = { n_q, n_k, r->q.cols, d_v, 0 };
    numbers += api_explain_numbers(&r->explain, &sizes);
    numbers += pitfall;
    numbers += api_tie_numbers(1, n_q, n_k); /* the warnings are always written */
    if (r->include & (1ul << API_PART_SHIFTED))
        numbers += qk;
    if (r->include & (1ul << API_PART_EXP))
        numbers += qk;
    static const int per_row[] = { API_PART_ROW_MAX, API_PART_ROW_SUM, API_PART_LSE };
    for (size_t i = 0; i < sizeof per_row / sizeof per_row[0]; i++)
        if (r->include & (1ul << per_row[i]))
            numbers += n_q;
    if (r->variants.any) /* every step kept, the variants' own included */
        numbers += 5 * qk;
    if (r->precision.on) /* the report: 6 steps' errors, and the backward's 11 at the most */
        numbers += r->backward.on ? 102 : 36;
    numbers += visibility_numbers(r);
    numbers = add_sat(numbers, api_attention_backward_numbers(r));
    return api_working_set(trace, numbers, body_len);
}

size_t api_attention_trace_bytes(const struct api_attention_req *r)
{
    if (r->precision.on)
        return precision_bytes(r);
    return attn_trace_bytes_keep(r->q.rows, r->k.rows, r->v.cols, steps_read(r));
}

const char *api_attention_limit_field(const struct api_attention_req *r)
{
    if (r->k.rows >= r->v.cols)
        return api_attention_random_field(r, r->q.rows >= r->k.rows ? "/q" : "/k");
    return api_attention_random_field(r, "/v");
}

static atomic_ulong threaded_runs;

unsigned long api_attention_threaded_runs(void)
{
    return atomic_load(&threaded_runs);
}

/*
 * A failed run's problem: a non-finite step at its cell, pointing at the input it came
 * from (the five numbered as the seeds number them when no variant ran), or the status.
 */
static void run_failed(const struct api_attention_req *r, const char *prefix,
                       enum attn_status st, int step, const struct attn_fault *f,
                       struct api_error *err)
{
    if (st != ATTN_EOVERFLOW) {
        api_error_set(err, st == ATTN_ENOMEM ? API_UNAVAILABLE : API_INTERNAL,
                      "the computation failed: %s", attn_status_str(st));
        return;
    }
    const char *name = attn_variant_step_name(step);
    if (r->variants.any)
        api_error_set(err, API_NUMERIC_OVERFLOW, "step %s produced a non-finite number at cell "
                      "[%zu, %zu]", name, f->row, f->col);
    else
        api_error_set(err, API_NUMERIC_OVERFLOW, "step %d (%s) produced a non-finite number at "
                      "cell [%zu, %zu]", step, name, f->row, f->col);
    api_error_step_cell(err, name, f->row, f->col);
    api_attention_overflow_at(r, prefix, step, f->row, f->col, err);
}

/*
 * The float64 pass a low format's report compares with, into exact (allocated for the
 * variants by attn_vtrace_alloc): with the variants, every cell of every step, as the
 * low pass computes them; their own steps are what the float64 backward reads.
 */
static enum attn_status exact_pass(const struct api_attention_req *r, struct attn_vtrace *exact,
                                   const struct attn_problem *p, const struct attn_variants *v)
{
    if (!r->variants.any)
        return attn_forward(&exact->base, p);
    return attn_forward_variants(exact, p, v);
}

/*
 * The low pass into trace; softcap's and the sink logit's own steps into r->vsteps, where
 * the writers read them (as api_attention_run_variants leaves them).
 */
static enum attn_status low_pass(const struct api_attention_req *r, struct attn_trace *trace,
                                 const struct attn_problem *p, const struct attn_variants *v)
{
    if (v->softcap == 0 && !v->sink && v->rope == NULL && !v->dropout)
        return attn_forward_precision_variants(trace, p, v, &r->precision.rules);
    struct attn_vtrace *vt = r->vsteps;
    attn_vtrace_free(vt);
    enum attn_status st = attn_vtrace_alloc_steps(vt, r->q.rows, r->k.rows, r->q.cols, v);
    if (st != ATTN_OK)
        return st;
    vt->base = *trace; /* lent for the pass */
    st = attn_forward_precision_vtrace(vt, p, v, &r->precision.rules);
    *trace = vt->base;
    memset(&vt->base, 0, sizeof vt->base);
    return st;
}

/*
 * The problem in its low format into trace, and, when it has a report, in float64 beside
 * it: a float64 overflow is the request's problem as without precision; the low format's
 * are the answer. With backward the float64 pass stays (r->backward.run->exact) for the
 * float64 backward the report compares the low one with.
 */
static bool run_precision(const struct api_attention_req *r, const char *prefix,
                          struct attn_trace *trace, struct api_error *err)
{
    struct attn_vtrace exact = { 0 }; /* only for a report (V2 asks none) */
    bool report = r->report != NULL;
    struct attn_problem p = api_attention_problem(r);
    struct attn_variants v = api_variants_for_head(&r->variants, 0);
    if (attn_trace_alloc(trace, r->q.rows, r->k.rows, r->v.cols) != ATTN_OK)
        return api_attention_no_memory(r, err);
    if (report && attn_vtrace_alloc(&exact, r->q.rows, r->k.rows, r->q.cols, r->v.cols, &v) !=
                      ATTN_OK) {
        attn_trace_free(trace);
        return api_attention_no_memory(r, err);
    }
    enum attn_status st = report ? exact_pass(r, &exact, &p, &v) : ATTN_OK;
    if (st == ATTN_OK)
        st = low_pass(r, trace, &p, &v);
    if (st == ATTN_OK && report) {
        const struct api_precision_input in[] = { { "q", &r->q }, { "k", &r->k }, { "v", &r->v },
                                                  { "bias", p.bias } };
        api_precision_report_fill(r->report, in, 4, &r->precision.rules, trace, &exact.base);
    } else if (st != ATTN_OK) {
        run_failed(r, prefix, st, (int)exact.base.fault.step, &exact.base.fault, err);
        attn_trace_free(trace);
    }
    if (st == ATTN_OK && report && r->backward.on)
        r->backward.run->exact = exact; /* the backward's to free */
    else
        attn_vtrace_free(&exact);
    return st == ATTN_OK;
}

/* The whole problem into trace, variants or not. */
static bool run_whole(const struct api_attention_req *r, const char *prefix,
                      struct attn_trace *trace, struct api_error *err)
{
    if (r->precision.on)
        return run_precision(r, prefix, trace, err);
    if (r->variants.any)
        return api_attention_run_variants(r, prefix, trace, err);
    if (attn_trace_alloc_keep(trace, r->q.rows, r->k.rows, r->v.cols, steps_read(r)) != ATTN_OK)
        return api_attention_no_memory(r, err);
    struct attn_problem p = api_attention_problem(r);
    p.skip_summary = !r->for_page && !(r->include & (1ul << API_PART_SUMMARY));
    /* An idle server lends its other workers to a large problem: the same bits. */
    unsigned threads = api_spare_threads_for(r->q.rows * r->k.rows);
    enum attn_status st = attn_forward_threads(trace, &p, threads);
    if (threads > 1)
        atomic_fetch_add(&threaded_runs, 1);
    if (st == ATTN_OK)
        return true;
    run_failed(r, prefix, st, (int)trace->fault.step, &trace->fault, err);
    attn_trace_free(trace);
    return false;
}

bool api_attention_run(const struct api_attention_req *r, const char *prefix,
                       struct attn_trace *trace, struct api_error *err)
{
    return run_whole(r, prefix, trace, err) && api_attention_select_rows(r, trace, err) &&
           (!r->backward.on || api_attention_run_backward(r, trace, err));
}

/* ---- the streamed path: no (n_q, n_k) matrix ---- */

bool api_attention_streams(const struct api_attention_req *r)
{
    const unsigned long streamable = (1ul << API_PART_OUTPUT) | (1ul << API_PART_ROW_MAX) |
                                     (1ul << API_PART_ROW_SUM) | (1ul << API_PART_LSE) |
                                     (1ul << API_PART_BLOCK_MAP);
    unsigned long asked = r->include;
    if (r->backward.on) { /* the gradients a streamed backward gives, or none streams */
        if (!api_attention_backward_streams(r))
            return false;
        asked &= ~((1ul << API_PART_GRAD_OUTPUT) | (1ul << API_PART_GRAD_V) |
                   (1ul << API_PART_DELTA) | (1ul << API_PART_GRAD_Q) |
                   (1ul << API_PART_GRAD_K) | (1ul << API_PART_GRAD_SINK_LOGIT));
    }
    return !r->for_page && !r->explain.on && r->pitfall == API_PITFALL_NONE &&
           !r->variants.dropout && !r->precision.on && (asked & ~streamable) == 0;
}

/* The threads a streamed run may take: as many as the full path would be lent. */
static unsigned stream_threads(const struct api_attention_req *r)
{
    return api_spare_threads_for(r->q.rows * r->k.rows);
}

size_t api_attention_stream_bytes(const struct api_attention_req *r)
{
    /* Admission comes before the run, which may find more threads free: count the most. */
    unsigned most = api_spare_threads_most_for(r->q.rows * r->k.rows);
    return attn_stream_bytes(api_attention_answer_rows(r), r->k.rows, r->q.cols, r->v.cols, most);
}

bool api_attention_stream(const struct api_attention_req *r, const char *prefix,
                          struct attn_stream *out, struct api_error *err)
{
    size_t n_rows = api_attention_answer_rows(r);
    if (attn_stream_alloc(out, n_rows, r->v.cols) != ATTN_OK)
        return api_attention_no_memory(r, err);
    struct attn_problem p = api_attention_problem(r);
    p.skip_summary = true; /* the row statistics are kept whatever this says */
    struct attn_variants v = api_variants_for_head(&r->variants, 0);
    unsigned threads = stream_threads(r);
    enum attn_status st = attn_forward_stream(out, &p, r->variants.any ? &v : NULL, r->rows,
                                              n_rows, threads);
    if (threads > 1)
        atomic_fetch_add(&threaded_runs, 1);
    if (st == ATTN_OK)
        return true;
    run_failed(r, prefix, st, out->fault_step, &out->fault, err);
    attn_stream_free(out);
    return false;
}
