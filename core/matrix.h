/*
 * core/matrix.h — the one matrix type of attnd.
 *
 * A matrix is a view: row-major doubles plus a shape. It does not own its data;
 * whoever allocated `data` frees it. `stride` lets a view name a block of columns
 * inside a wider matrix (one attention head inside Q) without copying:
 * element (i, j) is data[i * stride + j], and stride >= cols.
 *
 * Not here: JSON, HTTP, printing. core/ uses libc, libm and cblas only.
 */
#ifndef ATTN_MATRIX_H
#define ATTN_MATRIX_H

#include <stddef.h>

struct attn_matrix {
    double *data;  /* row-major; (i, j) at data[i * stride + j] */
    size_t rows;
    size_t cols;
    size_t stride; /* distance between row starts, >= cols (== cols when contiguous) */
};

/* A contiguous view of rows x cols doubles at data. */
static inline struct attn_matrix attn_matrix_view(double *data, size_t rows, size_t cols)
{
    struct attn_matrix m = { data, rows, cols, cols };
    return m;
}

static inline double attn_at(const struct attn_matrix *m, size_t i, size_t j)
{
    return m->data[i * m->stride + j];
}

/*
 * rows * cols, or 0 with *overflow set when the product does not fit in size_t.
 * Used before every allocation that a request's numbers decide.
 */
static inline size_t attn_cells(size_t rows, size_t cols, int *overflow)
{
    if (cols != 0 && rows > (size_t)-1 / cols) {
        *overflow = 1;
        return 0;
    }
    return rows * cols;
}

#endif
