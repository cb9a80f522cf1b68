/*
 * core/pitfall.c — the learner's mistakes, computed as they compute (see pitfall.h).
 */
#include "pitfall.h"

#include <math.h>

static double *at(struct attn_matrix *m, size_t i, size_t j)
{
    return &m->data[i * m->stride + j];
}

void attn_softmax_columns(struct attn_matrix *out, const struct attn_matrix *in)
{
    for (size_t j = 0; j < in->cols; j++) {
        double max = -INFINITY, sum = 0;
        for (size_t i = 0; i < in->rows; i++)
            if (attn_at(in, i, j) > max)
                max = attn_at(in, i, j);
        /* numpy's max of an all -inf column is -inf, and -inf - -inf is NaN. */
        for (size_t i = 0; i < in->rows; i++) {
            double e = exp(attn_at(in, i, j) - max);
            *at(out, i, j) = e;
            sum += e;
        }
        for (size_t i = 0; i < in->rows; i++)
            *at(out, i, j) /= sum;
    }
}

void attn_softmax_rows_unshifted(struct attn_matrix *out, const struct attn_matrix *in)
{
    for (size_t i = 0; i < in->rows; i++) {
        double sum = 0;
        for (size_t j = 0; j < in->cols; j++) {
            double e = exp(attn_at(in, i, j)); /* the mistake: no shift, so it may be inf */
            *at(out, i, j) = e;
            sum += e;
        }
        for (size_t j = 0; j < in->cols; j++)
            *at(out, i, j) /= sum;
    }
}

void attn_matmul_plain(struct attn_matrix *out, const struct attn_matrix *a,
                       const struct attn_matrix *b)
{
    for (size_t i = 0; i < a->rows; i++)
        for (size_t j = 0; j < b->cols; j++) {
            double s = 0;
            for (size_t c = 0; c < a->cols; c++)
                s += attn_at(a, i, c) * attn_at(b, c, j);
            *at(out, i, j) = s;
        }
}

void attn_transpose(struct attn_matrix *out, const struct attn_matrix *in)
{
    for (size_t i = 0; i < in->rows; i++)
        for (size_t j = 0; j < in->cols; j++)
            *at(out, j, i) = attn_at(in, i, j);
}
