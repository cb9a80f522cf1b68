/*
 * core/ties.c — the keys that share a row's largest weight (see ties.h).
 */
#include "ties.h"

double attn_row_largest(const double *row, size_t n_k)
{
    double largest = 0;
    for (size_t j = 0; j < n_k; j++)
        if (row[j] > largest)
            largest = row[j];
    return largest;
}

size_t attn_row_ties(const double *row, size_t n_k, size_t *keys)
{
    double largest = attn_row_largest(row, n_k);
    size_t n = 0;
    for (size_t j = 0; j < n_k; j++) {
        if (!attn_weight_ties(row[j], largest))
            continue;
        if (keys != NULL)
            keys[n] = j;
        n++;
    }
    return n;
}
