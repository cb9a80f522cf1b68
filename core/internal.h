/*
 * core/internal.h — helpers shared by the fast path (attention.c) and the naive
 * reference (reference.c). Private to core/: api/ and server/ never include it.
 *
 * Only bookkeeping lives here: argument checks, trace reset, fault recording.
 * No pass of the computation is shared, so the reference stays an independent
 * check of the fast path.
 */
#ifndef ATTN_INTERNAL_H
#define ATTN_INTERNAL_H

#include <stddef.h>

#include "attention.h"

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

#endif
