/*
 * core/attention.h — scaled dot-product attention, every step kept.
 *
 *   weights = softmax(Q·Kᵀ · scale + bias, masked)      output = weights · V
 *
 * computed in the five passes the seeds teach (compare, scale, mask, softmax, mix),
 * each written into its own matrix of a caller-owned trace so a client can be shown
 * every intermediate. The fast path uses OpenBLAS (cblas_dgemm); attn_reference is
 * the same contract in naive loops, kept for tests and to validate benchmarks.
 *
 * Not here: JSON, HTTP, printing, exit. Bad shapes are the caller's bug (ATTN_EINVAL);
 * api/ validates requests before calling.
 *
 * Dimension legend, used in every shape comment of core/:
 *   n_q  queries (rows of Q)          n_k  keys (rows of K and V)
 *   d_k  width of a query and a key   d_v  width of a value
 */
#ifndef ATTN_ATTENTION_H
#define ATTN_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>

#include "matrix.h"

enum attn_status {
    ATTN_OK = 0,
    ATTN_ENOMEM,    /* an allocation failed; nothing was leaked */
    ATTN_EINVAL,    /* shapes inconsistent: a programmer error, api/ checks first */
    ATTN_EOVERFLOW, /* a step produced a non-finite number; trace.fault says where */
};

const char *attn_status_str(enum attn_status status);

/* The five steps, numbered as the seeds number them. */
enum attn_step {
    ATTN_STEP_NONE = 0,
    ATTN_STEP_SCORES = 1, /* Q @ Kᵀ                               (n_q, n_k) */
    ATTN_STEP_SCALED,     /* scores * scale                       (n_q, n_k) */
    ATTN_STEP_MASKED,     /* scaled + bias, -inf where blocked    (n_q, n_k) */
    ATTN_STEP_WEIGHTS,    /* softmax(masked) along each row       (n_q, n_k) */
    ATTN_STEP_OUTPUT,     /* weights @ V                          (n_q, d_v) */
};

/* "scores", "scaled", "masked", "weights", "output"; "" for ATTN_STEP_NONE. */
const char *attn_step_name(enum attn_step step);

enum attn_mask_kind {
    ATTN_MASK_NONE = 0, /* every query sees every key */
    ATTN_MASK_CELLS,    /* an explicit table of allowed cells */
    ATTN_MASK_CAUSAL,   /* query i sees key j iff j <= i + (n_k - n_q): bottom-right aligned */
};

struct attn_mask {
    enum attn_mask_kind kind;
    /*
     * ATTN_MASK_CELLS only: allow[r * n_k + j] != 0 lets query i attend to key j,
     * where r = i when rows == n_q, and r = 0 when rows == 1 (a key-padding row
     * applied to every query). Semantics such as PyTorch's "True = blocked" are
     * translated by the caller; core only knows "allowed".
     */
    const unsigned char *allow;
    size_t rows;
};

/* One attention problem. Borrowed pointers: core never frees them. */
struct attn_problem {
    const struct attn_matrix *q;    /* (n_q, d_k) */
    const struct attn_matrix *k;    /* (n_k, d_k) */
    const struct attn_matrix *v;    /* (n_k, d_v) */
    const struct attn_matrix *bias; /* (n_q, n_k) added to the scaled scores, or NULL */
    struct attn_mask mask;
    double scale;                   /* > 0; the usual choice is 1/sqrt(d_k) */
    /* The caller reads no summary but fully_masked: leave row sums, argmax, max weight
     * and entropy at 0 (the entropy costs a log per weight, a good part of a forward). */
    bool skip_summary;
};

#define ATTN_NO_INDEX ((size_t)-1)

/*
 * Per-query facts about the weights. Arrays of n_q, inside the trace's block.
 *
 * row_max, row_sum and lse are the softmax's own row statistics: written by every
 * pass, skip_summary or not (three stores a row), so a caller can have the
 * log-sum-exp without the entropy's logs. With them a row's weights are
 * w_j = e^(masked_j − row_max) / row_sum = e^(masked_j − lse). A sink logit z
 * (core/variants.h) takes part in all three as one more visible score with no
 * column: a fully masked row with a sink has row_max = z, row_sum = 1 and lse = z,
 * the denominator that gave the sink its whole weight (sink_weight = e^(z − lse) = 1).
 *
 * argmax is the first key holding the row's largest masked score: the heaviest key in
 * exact arithmetic, and the same key on every path (a streamed pass never sees the
 * whole row of weights, and two distinct scores can round to one weight).
 */
struct attn_summary {
    double *row_sums;            /* sum of the row's weights: 1, or 0 when fully masked */
    size_t *argmax;              /* first key of the largest masked score; ATTN_NO_INDEX when
                                    fully masked, or (variants) when a sink took every weight
                                    (that key's weight rounded to 0) */
    double *max_weight;          /* that key's weight; 0 when fully masked */
    double *entropy;             /* -sum w ln w, in nats; 0 when fully masked */
    double *row_max;             /* the max the softmax subtracted: the largest visible masked
                                    score (and the sink logit); -inf when fully masked */
    double *row_sum;             /* Σ e^(masked − row_max) over the visible keys (and the sink's
                                    e^(z − row_max)); 0 when fully masked */
    double *lse;                 /* row_max + ln row_sum: the natural log-sum-exp of the
                                    visible masked scores (sink counted); -inf when fully
                                    masked */
    unsigned char *fully_masked; /* 1 when every key of the row was blocked */
    size_t n_fully_masked;       /* how many rows have fully_masked set */
};

/* Where a step first produced a non-finite number (row-major order). */
struct attn_fault {
    enum attn_step step;
    size_t row, col;
};

/*
 * Every step of one forward pass. All matrices are contiguous and live in one
 * allocation (`block`) made by attn_trace_alloc and freed by attn_trace_free.
 * masked holds -INFINITY at blocked cells. A fully masked row has weights 0 and
 * output 0, never NaN.
 */
struct attn_trace {
    size_t n_q, n_k, d_v;
    struct attn_matrix scores;  /* (n_q, n_k) */
    struct attn_matrix scaled;  /* (n_q, n_k) */
    struct attn_matrix masked;  /* (n_q, n_k) */
    struct attn_matrix weights; /* (n_q, n_k) */
    struct attn_matrix output;  /* (n_q, d_v) */
    struct attn_summary summary;
    struct attn_fault fault;    /* set when a pass returns ATTN_EOVERFLOW */
    void *block;
    size_t block_bytes;         /* the block's capacity (core/memory.h) */
};

/*
 * How many doubles a trace of these sizes holds (4·n_q·n_k + n_q·d_v + summary),
 * or 0 when that count overflows size_t. Lets callers check limits before allocating.
 * The summary counts 6·n_q (row_sums, max_weight, entropy, row_max, row_sum, lse);
 * argmax and fully_masked live in the same block but are not doubles.
 */
size_t attn_trace_cells(size_t n_q, size_t n_k, size_t d_v);

/*
 * Allocates the trace's single block, zero-filled. ATTN_ENOMEM leaves *t zeroed;
 * it is also the answer when the block's size overflows size_t. A zero size is
 * ATTN_EINVAL (and leaves *t zeroed too).
 */
enum attn_status attn_trace_alloc(struct attn_trace *t, size_t n_q, size_t n_k, size_t d_v);

/*
 * The same, for a caller that reads only the steps in `keep` (ATTN_KEEP bits; weights
 * and output are always there), and reads the trace only after a forward pass, which
 * writes every cell of every step (zeroing the steps after a fault): this block is
 * not zero-filled. Reused heap memory would have to be cleared by hand, milliseconds
 * on the critical path of an n = 2048 request's 35 MB. A step not kept shares its buffer with the next,
 * which overwrites it in place: for weights and output alone, one (n_q, n_k) buffer
 * instead of four, a quarter of the memory to fault in and stream through. Reading a
 * step that was not kept gives the next step's values. After a fault the steps past
 * it are zeroed, so shared earlier steps may read as zero too.
 */
#define ATTN_KEEP(step) (1u << (step))
#define ATTN_KEEP_ALL                                                                       \
    (ATTN_KEEP(ATTN_STEP_SCORES) | ATTN_KEEP(ATTN_STEP_SCALED) | ATTN_KEEP(ATTN_STEP_MASKED) | \
     ATTN_KEEP(ATTN_STEP_WEIGHTS) | ATTN_KEEP(ATTN_STEP_OUTPUT))
enum attn_status attn_trace_alloc_keep(struct attn_trace *t, size_t n_q, size_t n_k, size_t d_v,
                                       unsigned keep);

/*
 * The bytes attn_trace_alloc_keep would allocate for these sizes, or 0 when the size
 * overflows: what a caller budgeting memory asks before allocating.
 */
size_t attn_trace_bytes_keep(size_t n_q, size_t n_k, size_t d_v, unsigned keep);

/* Frees the block and zeroes *t. Safe on a zeroed trace; twice is a no-op. */
void attn_trace_free(struct attn_trace *t);

/*
 * dst (allocated here for n_rows rows; free with attn_trace_free) = src's listed query
 * rows, in that order (each < src->n_q, repeats allowed): the five steps and the summary
 * by row, n_fully_masked recounted, the fault as it stands. ATTN_EINVAL for n_rows == 0 or a row out of range,
 * ATTN_ENOMEM; both leave *dst zeroed. Steps src does not hold (data NULL) stay zero.
 */
enum attn_status attn_trace_select_rows(struct attn_trace *dst, const struct attn_trace *src,
                                        const size_t *rows, size_t n_rows);

/*
 * Runs every step into `out`, which must have been allocated for (n_q, n_k, d_v).
 * Scores use cblas_dgemm(RowMajor, NoTrans, Trans); the output cblas_dgemm(NoTrans,
 * NoTrans). Returns ATTN_EOVERFLOW with out->fault set at the first step that yields
 * a non-finite number (the later steps are then not computed).
 *
 * ATTN_EINVAL, with `out` untouched, unless: q, k, v (and bias) are views with data,
 * rows, cols >= 1 and stride >= cols, rows and stride <= INT_MAX (BLAS's index type);
 * q->cols == k->cols; v->rows == k->rows; bias is (n_q, n_k); a CELLS mask has `allow`
 * and rows n_q or 1; scale is finite and > 0; `out` was allocated for (q->rows,
 * k->rows, v->cols).
 * On ATTN_EOVERFLOW the steps up to fault.step hold their values (the faulty cell
 * included), the later steps and the summary are zero. A blocked cell's -inf in
 * `masked` is never a fault; an allowed cell whose scaled + bias overflows is.
 * A trace may be reused for several problems of its sizes.
 */
enum attn_status attn_forward(struct attn_trace *out, const struct attn_problem *p);

/*
 * attn_forward on up to `threads` threads (at most 16, at most one per 128 queries):
 * the queries' blocks of 128 rows, each computed with BLAS calls of its own, are
 * taken one at a time by whichever thread is free. The calls are the same whatever
 * the thread count, so the numbers are attn_forward's bit for bit
 * (tests/unit/check_core.c compares them). Worth it for one large problem on an otherwise
 * idle machine; the caller decides. The blocks of a thread that cannot be started
 * are taken by the others.
 * threads < 2 is attn_forward.
 */
enum attn_status attn_forward_threads(struct attn_trace *out, const struct attn_problem *p,
                                      unsigned threads);

/* The same contract as attn_forward in plain loops, no BLAS: the reference. */
enum attn_status attn_reference(struct attn_trace *out, const struct attn_problem *p);

/*
 * BLAS policy. attnd's server already runs one request per thread, so extra
 * BLAS threads would only oversubscribe the cores; the server sets 1.
 */
void attn_blas_set_threads(int threads); /* threads < 1 means 1 */
/*
 * A short description of the BLAS in use, e.g. "OpenBLAS 0.3.21 ... Haswell". Static
 * storage, built on the first call; safe to call from several threads.
 */
const char *attn_blas_info(void);

/*
 * The OPENBLAS_CORETYPE this CPU could run, when OpenBLAS chose weaker kernels than
 * that: its detection goes by CPU model numbers, and a virtual machine that reports
 * an unknown model gets the generic "Prescott" kernels (SSE3), several times slower
 * at dgemm than the AVX2 or AVX-512 ones the CPU supports. NULL when OpenBLAS's
 * choice stands (or the CPU is not x86-64). OpenBLAS picks its kernels when it is
 * loaded, before main, so the variable only helps the next start: this is advice.
 */
const char *attn_blas_better_core(void);

#endif
