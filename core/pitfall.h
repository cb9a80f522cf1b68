/*
 * core/pitfall.h — the learner's mistakes the notes warn about, computed as the mistake
 * computes them, so an answer can show them beside the right one.
 *
 *   softmax down the columns (axis=0) instead of along each row;
 *   softmax without subtracting each row's max (e^x overflows to inf, inf / inf = NaN);
 *   a plain product for the mistaken Q @ K (attn_forward with Kᵀ as its keys does the rest).
 *
 * These keep the non-finite numbers the mistake makes (NaN, ±inf): showing them is
 * their point. Not here: JSON, HTTP, printing.
 *
 * Dimension legend: as attention.h (n_q, n_k, d_k, d_v).
 */
#ifndef ATTN_PITFALL_H
#define ATTN_PITFALL_H

#include "matrix.h"

/*
 * out (n_q, n_k) = softmax(in, axis=0): each column j of in (masked scores, -inf where
 * blocked) shifted by its own max, exponentiated and divided by its sum, as numpy
 * computes it: a column with every cell -inf is NaN.
 */
void attn_softmax_columns(struct attn_matrix *out, const struct attn_matrix *in);

/*
 * out (n_q, n_k) = e^in / Σ_j e^in along each row, without subtracting the row's max:
 * a row where some e^x overflows gets NaN there (inf / inf) and 0 elsewhere; a row
 * with every cell -inf is NaN (0 / 0).
 */
void attn_softmax_rows_unshifted(struct attn_matrix *out, const struct attn_matrix *in);

/* out (n, m) = a (n, k) · b (k, m), in plain loops (NaN and inf propagate). */
void attn_matmul_plain(struct attn_matrix *out, const struct attn_matrix *a,
                       const struct attn_matrix *b);

/* out (cols, rows) = inᵀ. */
void attn_transpose(struct attn_matrix *out, const struct attn_matrix *in);

#endif
