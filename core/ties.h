/*
 * core/ties.h — which keys share a row's largest weight.
 *
 * argmax names one key even when several weigh the same (seed 000's first row: both
 * keys score 2; seed 002's Q3 = [0.5, 0.5] scores 0.5 against all three keys), and a
 * learner reads a winner into a tie. A key ties when its weight is within
 * ATTN_TIE_RTOL of the row's largest, relative to that largest: softmax of equal
 * scores can differ in the last bits, never by that much.
 *
 * Not here: JSON, HTTP, printing.
 */
#ifndef ATTN_TIES_H
#define ATTN_TIES_H

#include <stdbool.h>
#include <stddef.h>

#define ATTN_TIE_RTOL 1e-9

/* The largest weight of a row of n_k weights (0 for a fully masked row, all 0). */
double attn_row_largest(const double *row, size_t n_k);

/* Whether weight w ties the row's largest weight `largest` (never when largest is 0). */
static inline bool attn_weight_ties(double w, double largest)
{
    return largest > 0 && largest - w <= ATTN_TIE_RTOL * largest;
}

/*
 * How many keys of the row tie its largest weight: 1 when one key wins, 0 for a fully
 * masked row. keys (or NULL) receives their indices in ascending order; it holds n_k.
 */
size_t attn_row_ties(const double *row, size_t n_k, size_t *keys);

#endif
