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

/* The keys row i may see: [0, sinks) and [from, to) of the window, below causal_end,
 * and where `allow` (a CELLS mask row, or NULL) says 1. */
struct attn_vrow {
    size_t sinks, from, to, causal_end;
    const unsigned char *allow;
};

/*
 * Row i's view of p's mask and v's window and sinks, for n_q queries over n_k keys
 * (query i stands at key i + n_k − n_q). Defined in variants.c.
 */
struct attn_vrow attn_vrow_of(const struct attn_problem *p, const struct attn_variants *v,
                              size_t n_q, size_t n_k, size_t i);

/* Whether the window and sinks let the row see key j, the mask and causality aside. */
static inline bool attn_vrow_in_band(const struct attn_vrow *r, size_t j)
{
    return j < r->sinks || (j >= r->from && j < r->to);
}

static inline bool attn_vrow_sees(const struct attn_vrow *r, size_t j)
{
    return attn_vrow_in_band(r, j) && j < r->causal_end &&
           (r->allow == NULL || r->allow[j] != 0);
}

#endif
