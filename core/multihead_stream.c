/*
 * core/multihead_stream.c — multi-head attention that builds no (n_q, n_k) matrix: the
 * projections as attn_mh_forward makes them (one cblas_dgemm each, hence its bits), then
 * every head by attn_forward_stream on column-block views, one head after another, then
 * concat and the output projection for the listed rows only.
 *
 * Q is projected whole into a temporary: a head's stream reads its queries through a
 * view of all n_q rows (the causal offset, the mask's and the bias's rows and RoPE's
 * positions are those of the real query index), and a listed row may repeat. K and V
 * are the answer's. What the pass holds at once is attn_mh_stream_bytes.
 *
 * Not here: JSON, HTTP. Dimension letters as in multihead.h's legend.
 */
#include "multihead.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- the answer ---- */

/* Byte offsets in the answer's block: the doubles (q, k, v, concat, output), then the
 * head array aligned for struct attn_stream. */
struct mh_stream_layout {
    size_t heads_off, bytes;
};

static bool mh_stream_layout_of(size_t n_rows, size_t n_k, size_t d_model, size_t heads,
                                size_t kv_heads, struct mh_stream_layout *l)
{
    int overflow = 0;
    size_t kv_cols = kv_heads * (d_model / heads);
    size_t rows3 = attn_cells(attn_cells(n_rows, d_model, &overflow), 3, &overflow);
    size_t kv2 = attn_cells(attn_cells(n_k, kv_cols, &overflow), 2, &overflow);
    size_t align = alignof(struct attn_stream);
    if (overflow || rows3 > SIZE_MAX - kv2 || rows3 + kv2 > (SIZE_MAX - align) / sizeof(double))
        return false;
    l->heads_off = ((rows3 + kv2) * sizeof(double) + align - 1) / align * align;
    size_t array = attn_cells(heads, sizeof(struct attn_stream), &overflow);
    if (overflow || array > SIZE_MAX - l->heads_off)
        return false;
    l->bytes = l->heads_off + array;
    return true;
}

static bool mh_stream_sizes_ok(size_t n_rows, size_t n_q, size_t n_k, size_t d_model,
                               size_t heads, size_t kv_heads)
{
    return n_rows > 0 && n_q > 0 && n_k > 0 && attn_mh_sizes_ok(d_model, heads, kv_heads);
}

/* Lays the block's doubles out as s's matrices. */
static void mh_stream_views(struct attn_mh_stream *s, unsigned char *block)
{
    size_t kv_cols = s->kv_heads * s->d_k;
    double *d = (double *)(void *)block;
    s->q = attn_matrix_view(d, s->n_rows, s->d_model), d += s->n_rows * s->d_model;
    s->k = attn_matrix_view(d, s->n_k, kv_cols), d += s->n_k * kv_cols;
    s->v = attn_matrix_view(d, s->n_k, kv_cols), d += s->n_k * kv_cols;
    s->concat = attn_matrix_view(d, s->n_rows, s->d_model), d += s->n_rows * s->d_model;
    s->output = attn_matrix_view(d, s->n_rows, s->d_model);
}

enum attn_status attn_mh_stream_alloc(struct attn_mh_stream *s, size_t n_rows, size_t n_q,
                                      size_t n_k, size_t d_model, size_t heads, size_t kv_heads)
{
    struct mh_stream_layout l;
    if (s == NULL)
        return ATTN_EINVAL;
    memset(s, 0, sizeof *s);
    if (!mh_stream_sizes_ok(n_rows, n_q, n_k, d_model, heads, kv_heads))
        return ATTN_EINVAL;
    if (!mh_stream_layout_of(n_rows, n_k, d_model, heads, kv_heads, &l))
        return ATTN_ENOMEM;
    /* zero-filled: the head array must read as unallocated heads if one fails below */
    unsigned char *block = calloc(1, l.bytes);
    if (block == NULL)
        return ATTN_ENOMEM;
    *s = (struct attn_mh_stream){ .n_rows = n_rows, .n_q = n_q, .n_k = n_k, .d_model = d_model,
                                  .heads = heads, .kv_heads = kv_heads, .d_k = d_model / heads,
                                  .block = block };
    mh_stream_views(s, block);
    s->head = (struct attn_stream *)(void *)(block + l.heads_off);
    for (size_t i = 0; i < heads; i++)
        if (attn_stream_alloc(&s->head[i], n_rows, s->d_k) != ATTN_OK) {
            attn_mh_stream_free(s);
            return ATTN_ENOMEM;
        }
    return ATTN_OK;
}

void attn_mh_stream_free(struct attn_mh_stream *s)
{
    if (s == NULL)
        return;
    if (s->head != NULL)
        for (size_t i = 0; i < s->heads; i++)
            attn_stream_free(&s->head[i]);
    free(s->block);
    memset(s, 0, sizeof *s);
}

/* a + b, or SIZE_MAX (never a real size) when it overflows or either already did. */
static size_t add_bytes(size_t a, size_t b)
{
    return a == SIZE_MAX || b == SIZE_MAX || a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t attn_mh_stream_bytes(size_t n_rows, size_t n_q, size_t n_k, size_t d_model,
                            size_t heads, size_t kv_heads, unsigned threads)
{
    struct mh_stream_layout l;
    if (!mh_stream_sizes_ok(n_rows, n_q, n_k, d_model, heads, kv_heads) ||
        !mh_stream_layout_of(n_rows, n_k, d_model, heads, kv_heads, &l))
        return 0;
    int overflow = 0;
    size_t d_k = d_model / heads;
    size_t answer = attn_stream_answer_bytes(n_rows, d_k);
    size_t answers = attn_cells(answer, heads, &overflow);
    size_t q_whole = attn_cells(attn_cells(n_q, d_model, &overflow), sizeof(double), &overflow);
    /* the heads run one after another: one head's streamed pass (its answer counted again,
     * a few bytes a row, as attn_stream_bytes counts it) at a time */
    size_t one_head = attn_stream_bytes(n_rows, n_k, d_k, d_k, threads);
    if (overflow || answer == 0 || one_head == 0)
        return 0;
    size_t total = add_bytes(add_bytes(add_bytes(l.bytes, answers), q_whole), one_head);
    return total == SIZE_MAX ? 0 : total;
}

/* ---- the pass ---- */

static enum attn_status mh_stream_check(const struct attn_mh_stream *out,
                                        const struct attn_mh_problem *p,
                                        const struct attn_variants *variants,
                                        const size_t *rows, size_t n_rows)
{
    if (out == NULL || p == NULL || out->block == NULL || out->n_rows != n_rows ||
        !attn_mh_shapes_ok(p, out->n_q, out->n_k, out->d_model, out->heads, out->kv_heads))
        return ATTN_EINVAL;
    if (rows == NULL ? n_rows != out->n_q : !attn_rows_in_range(rows, n_rows, out->n_q))
        return ATTN_EINVAL;
    /* dropout needs the weights it drops: the full path's (attn_forward_stream says so
     * too, but only when its head comes, after the projections' work) */
    for (size_t i = 0; variants != NULL && i < out->heads; i++)
        if (variants[i].dropout)
            return ATTN_EINVAL;
    return ATTN_OK;
}

/* The fault at m's first non-finite cell, if any; row through rows (NULL: itself). */
static enum attn_status mh_stream_fault(struct attn_mh_stream *s, enum attn_mh_step step,
                                        const struct attn_matrix *m, const size_t *rows)
{
    size_t row, col;
    if (!attn_first_non_finite(m, &row, &col))
        return ATTN_OK;
    s->fault = (struct attn_mh_fault){ step, 0, ATTN_STEP_NONE,
                                       rows != NULL ? rows[row] : row, col };
    return ATTN_EOVERFLOW;
}

/* Q (whole, the caller's), K and V; the first fault in attn_mh_forward's order. */
static enum attn_status mh_stream_project(struct attn_mh_stream *s, struct attn_matrix *q,
                                          const struct attn_mh_problem *p)
{
    bool tr = p->transposed_weights;
    enum attn_status st;
    attn_mh_project(q, p->x_q, p->w_q, p->b_q, tr);
    if ((st = mh_stream_fault(s, ATTN_MH_Q, q, NULL)) != ATTN_OK)
        return st;
    attn_mh_project(&s->k, p->x_kv, p->w_k, p->b_k, tr);
    if ((st = mh_stream_fault(s, ATTN_MH_K, &s->k, NULL)) != ATTN_OK)
        return st;
    attn_mh_project(&s->v, p->x_kv, p->w_v, p->b_v, tr);
    return mh_stream_fault(s, ATTN_MH_V, &s->v, NULL);
}

/* Every head in order on views of q (whole), k and v; a head's fault stops the pass. */
static enum attn_status mh_stream_heads(struct attn_mh_stream *s, const struct attn_matrix *q,
                                        const struct attn_mh_problem *p,
                                        const struct attn_variants *variants, const size_t *rows,
                                        unsigned threads)
{
    for (size_t i = 0; i < s->heads; i++) {
        size_t g = attn_mh_kv_head(i, s->heads, s->kv_heads);
        struct attn_matrix qh = attn_column_block(q, i, s->d_k);
        struct attn_matrix kh = attn_column_block(&s->k, g, s->d_k);
        struct attn_matrix vh = attn_column_block(&s->v, g, s->d_k);
        struct attn_problem hp = { .q = &qh, .k = &kh, .v = &vh, .bias = p->bias,
                                   .mask = p->mask, .scale = p->scale };
        struct attn_stream *hs = &s->head[i];
        enum attn_status st = attn_forward_stream(hs, &hp, variants != NULL ? &variants[i] : NULL,
                                                  rows, s->n_rows, threads);
        if (st == ATTN_EOVERFLOW)
            s->fault = (struct attn_mh_fault){ ATTN_MH_HEAD, i, (enum attn_step)hs->fault_step,
                                               hs->fault.row, hs->fault.col };
        if (st != ATTN_OK)
            return st;
    }
    return ATTN_OK;
}

/* concat's row r = the heads' output rows r side by side; q's row r = Q's row rows[r]. */
static void mh_stream_gather(struct attn_mh_stream *s, const struct attn_matrix *q,
                             const size_t *rows)
{
    for (size_t r = 0; r < s->n_rows; r++) {
        for (size_t i = 0; i < s->heads; i++)
            memcpy(s->concat.data + r * s->d_model + i * s->d_k,
                   s->head[i].output.data + r * s->d_k, s->d_k * sizeof(double));
        memcpy(s->q.data + r * s->d_model, q->data + (rows != NULL ? rows[r] : r) * q->stride,
               s->d_model * sizeof(double));
    }
}

enum attn_status attn_mh_forward_stream(struct attn_mh_stream *out,
                                        const struct attn_mh_problem *p,
                                        const struct attn_variants *variants,
                                        const size_t *rows, size_t n_rows, unsigned threads)
{
    enum attn_status st = mh_stream_check(out, p, variants, rows, n_rows);
    if (st != ATTN_OK)
        return st;
    memset(&out->fault, 0, sizeof out->fault);
    if (out->n_q > SIZE_MAX / sizeof(double) / out->d_model)
        return ATTN_ENOMEM;
    struct attn_matrix q = attn_matrix_view(malloc(out->n_q * out->d_model * sizeof(double)),
                                            out->n_q, out->d_model);
    if (q.data == NULL)
        return ATTN_ENOMEM;
    if ((st = mh_stream_project(out, &q, p)) == ATTN_OK &&
        (st = mh_stream_heads(out, &q, p, variants, rows, threads)) == ATTN_OK) {
        mh_stream_gather(out, &q, rows);
        attn_mh_project(&out->output, &out->concat, p->w_o, p->b_o, p->transposed_weights);
        st = mh_stream_fault(out, ATTN_MH_OUTPUT, &out->output, rows);
    }
    free(q.data);
    return st;
}
