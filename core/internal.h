/*
 * core/internal.h — helpers shared by the fast path (attention.c) and the naive
 * reference (reference.c). Private to core/: api/ and server/ never include it.
 *
 * Only bookkeeping lives here: argument checks, trace reset, fault recording, and
 * which keys a row may see (the variants' fast path and the streamed pass read the
 * same rules). No pass of the computation is shared with the references, so they
 * stay an independent check of the fast paths.
 */
#ifndef ATTN_INTERNAL_H
#define ATTN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "attention.h"

struct attn_variants; /* variants.h */

/*
 * ATTN_OK when `p` is a well-formed problem and `t` was allocated for its sizes
 * (n_q, n_k, d_v); ATTN_EINVAL otherwise. Checks every rule written in attention.h,
 * including that each size and stride fits in an int (the index type of BLAS).
 */
enum attn_status attn_check_problem(const struct attn_trace *t, const struct attn_problem *p);

/* Clears the fault and the summary of `t` before a pass writes into it. */
void attn_trace_reset(struct attn_trace *t);

/*
 * Records that `step` first produced a non-finite number at (row, col), zeroes the
 * steps after it and the summary (so a reused trace shows nothing stale), and
 * returns ATTN_EOVERFLOW.
 */
enum attn_status attn_trace_fault(struct attn_trace *t, enum attn_step step, size_t row, size_t col);

/* ---- listed query rows (core/rows.c) ---- */

/* Whether rows lists n_rows >= 1 query indices, each < n_q (rows not NULL). */
bool attn_rows_in_range(const size_t *rows, size_t n_rows, size_t n_q);

/* dst's row r = src's row rows[r] for r < n_rows (src's columns); a no-op when either
 * matrix has no data (a step not held). */
void attn_copy_rows(struct attn_matrix *dst, const struct attn_matrix *src, const size_t *rows,
                    size_t n_rows);

/* dst (allocated for n_rows rows, src's n_k and d_v) = src's listed rows: the five steps,
 * the summary (n_fully_masked recounted) and the fault. */
void attn_trace_copy_rows(struct attn_trace *dst, const struct attn_trace *src,
                          const size_t *rows, size_t n_rows);

/* ---- shared by multihead.c and multihead_stream.c ---- */

/* The bytes of attn_stream_alloc's block for (n_rows, d_v); 0 on overflow or a zero size. */
size_t attn_stream_answer_bytes(size_t n_rows, size_t d_v);

struct attn_mh_problem; /* multihead.h */

/* Whether heads and kv_heads divide d_model and heads, all three >= 1. */
bool attn_mh_sizes_ok(size_t d_model, size_t heads, size_t kv_heads);

/* Whether p's inputs have these sizes (weights in p's layout) and fit BLAS's int. */
bool attn_mh_shapes_ok(const struct attn_mh_problem *p, size_t n_q, size_t n_k, size_t d_model,
                       size_t heads, size_t kv_heads);

/* out (rows, cols) = x (rows, in) · W (+ b), W being (in, cols) or, transposed, (cols, in):
 * one cblas_dgemm, so the streamed pass projects to attn_mh_forward's bits. */
void attn_mh_project(struct attn_matrix *out, const struct attn_matrix *x,
                     const struct attn_matrix *w, const double *b, bool transposed);

/* The first non-finite cell of m in row-major order; false when every cell is finite. */
bool attn_first_non_finite(const struct attn_matrix *m, size_t *row, size_t *col);

/* Column block `block` of width `width` in m, as a view sharing m's memory: a head. */
static inline struct attn_matrix attn_column_block(const struct attn_matrix *m, size_t block,
                                                   size_t width)
{
    struct attn_matrix v = { m->data + block * width, m->rows, width, m->stride };
    return v;
}

/*
 * The keys row i may see: the sink tokens [sinks_from, sinks) and [from, to) (the
 * window, or the whole span without one), both already inside the row's document and
 * chunk (sinks_from <= from), below causal_end, and where `allow` (a CELLS mask row, or
 * NULL) says 1. `at` is the query's place among the keys, i + off (inside its
 * document), which ALiBi measures from.
 */
struct attn_vrow {
    size_t sinks_from, sinks, from, to, causal_end;
    double at;
    const unsigned char *allow;
};

/*
 * Row i's view of p's mask and v's window and sinks, for n_q queries over n_k keys
 * (query i stands at key i + n_k − n_q). Defined in variants.c.
 */
struct attn_vrow attn_vrow_of(const struct attn_problem *p, const struct attn_variants *v,
                              size_t n_q, size_t n_k, size_t i);

/*
 * out (rows, d) = x with each row's pairs turned by its row of the tables (variants.c):
 * the float64 rotation both the fast path and the low formats' pass use.
 */
struct attn_rope;
void attn_rope_rotate(const struct attn_matrix *x, struct attn_matrix *out,
                      const struct attn_rope *rope, const double *cos_t, const double *sin_t);

/* grad_q and grad_k = grad_q_rope and grad_k_rope turned back by RoPE's angles (the
 * rotation's transpose) in float64, or copied without RoPE (backward.c). ATTN_ENOMEM
 * when the turn's table (a row of −sin) cannot be had. */
struct attn_grads;
enum attn_status attn_grads_turn_back(struct attn_grads *g, const struct attn_variants *v);

/* Whether fwd holds what a backward reads for p and v (its fault aside), with g and d_out
 * of p's sizes (backward.c). */
struct attn_vtrace;
bool attn_grads_fit(const struct attn_grads *g, const struct attn_problem *p,
                    const struct attn_variants *v, const struct attn_vtrace *fwd,
                    const struct attn_matrix *d_out);

/* Whether the window, sinks, documents and chunk let the row see key j, the mask and
 * causality aside. */
/* Where a row's two spans end once causal clips them: its sinks are [sinks_from,
 * *sinks_end), its window [from, *end) (either empty when its end is not past its start). */
static inline void attn_vrow_ends(const struct attn_vrow *r, size_t *sinks_end, size_t *end)
{
    *sinks_end = r->sinks < r->causal_end ? r->sinks : r->causal_end;
    *end = r->to < r->causal_end ? r->to : r->causal_end;
}

static inline bool attn_vrow_in_band(const struct attn_vrow *r, size_t j)
{
    return (j >= r->sinks_from && j < r->sinks) || (j >= r->from && j < r->to);
}

static inline bool attn_vrow_sees(const struct attn_vrow *r, size_t j)
{
    return attn_vrow_in_band(r, j) && j < r->causal_end &&
           (r->allow == NULL || r->allow[j] != 0);
}

/*
 * attn_forward's row blocks (attention.c), which the streamed pass's row blocks are too
 * (stream.h). 128, not 64: OpenBLAS packs K (and V) again for every call, and at
 * d = 64 the forward pass measured 5–6% faster in blocks of 128 at n = 512…2048
 * (docs/performance.md); 256 was no faster than 128 but at n = 2048.
 */
#define ATTN_ROW_BLOCK 128

#endif
