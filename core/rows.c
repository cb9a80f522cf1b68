/*
 * core/rows.c — a trace's listed query rows: the copy behind `rows` on the full path,
 * where the problem is computed whole (its keys, causal offset and masks are the whole
 * problem's) and the answer keeps only the rows a client listed, in its order.
 *
 * The row helpers are shared with variants.c and multihead.c through internal.h, so a
 * single-head trace, the variants' steps and every head of a multi-head trace are cut
 * by one rule.
 *
 * Not here: JSON, HTTP. Dimension letters as in attention.h.
 */
#include "attention.h"

#include <string.h>

#include "internal.h"

bool attn_rows_in_range(const size_t *rows, size_t n_rows, size_t n_q)
{
    if (rows == NULL || n_rows == 0)
        return false;
    for (size_t r = 0; r < n_rows; r++)
        if (rows[r] >= n_q)
            return false;
    return true;
}

void attn_copy_rows(struct attn_matrix *dst, const struct attn_matrix *src, const size_t *rows,
                    size_t n_rows)
{
    if (src->data == NULL || dst->data == NULL)
        return;
    for (size_t r = 0; r < n_rows; r++)
        memcpy(dst->data + r * dst->stride, src->data + rows[r] * src->stride,
               src->cols * sizeof(double));
}

#define PICK(dst, src, field, rows, n)                \
    do {                                              \
        for (size_t i_ = 0; i_ < (n); i_++)           \
            (dst)->field[i_] = (src)->field[(rows)[i_]]; \
    } while (0)

static void copy_summary(struct attn_summary *dst, const struct attn_summary *src,
                         const size_t *rows, size_t n)
{
    PICK(dst, src, row_sums, rows, n);
    PICK(dst, src, argmax, rows, n);
    PICK(dst, src, max_weight, rows, n);
    PICK(dst, src, entropy, rows, n);
    PICK(dst, src, row_max, rows, n);
    PICK(dst, src, row_sum, rows, n);
    PICK(dst, src, lse, rows, n);
    PICK(dst, src, fully_masked, rows, n);
    /* recounted, not copied: a listed row may repeat, or a blocked one be left out */
    dst->n_fully_masked = 0;
    for (size_t i = 0; i < n; i++)
        dst->n_fully_masked += dst->fully_masked[i] != 0;
}

void attn_trace_copy_rows(struct attn_trace *dst, const struct attn_trace *src,
                          const size_t *rows, size_t n_rows)
{
    const struct attn_matrix *from[] = { &src->scores, &src->scaled, &src->masked,
                                         &src->weights, &src->output };
    struct attn_matrix *to[] = { &dst->scores, &dst->scaled, &dst->masked, &dst->weights,
                                 &dst->output };
    for (size_t s = 0; s < sizeof from / sizeof from[0]; s++)
        attn_copy_rows(to[s], from[s], rows, n_rows);
    copy_summary(&dst->summary, &src->summary, rows, n_rows);
    dst->fault = src->fault;
}

enum attn_status attn_trace_select_rows(struct attn_trace *dst, const struct attn_trace *src,
                                        const size_t *rows, size_t n_rows)
{
    if (dst == NULL)
        return ATTN_EINVAL;
    memset(dst, 0, sizeof *dst);
    if (src == NULL || src->block == NULL || !attn_rows_in_range(rows, n_rows, src->n_q))
        return ATTN_EINVAL;
    enum attn_status st = attn_trace_alloc(dst, n_rows, src->n_k, src->d_v);
    if (st != ATTN_OK)
        return st;
    attn_trace_copy_rows(dst, src, rows, n_rows);
    return ATTN_OK;
}
