/*
 * api/endpoints/shapes/variants.h — /v1/shapes' rows for the attention variants
 * (?variants=rope,softcap,alibi,window,sink,dropout), and the row type the table and
 * they share.
 */
#ifndef API_ENDPOINTS_SHAPES_VARIANTS_H
#define API_ENDPOINTS_SHAPES_VARIANTS_H

#include <stdbool.h>
#include <stddef.h>

#include "api/http/context.h"
#include "api/http/problem.h"

/* One row of the table. Shapes: left[0] != 0 makes left 3-D ([h, a, b]). */
struct api_shape_row {
    const char *op;
    size_t left[3];
    int right_kind;   /* 0: no right operand (null); 1: a scalar ([]); 2: the matrix right[] */
    size_t right[2];
    size_t result[2];
    const char *meaning;
};

typedef void api_shape_row_fn(const struct api_shape_row *row, void *data);

/* The attention variants /v1/shapes can add rows for (shapes/variants.c). */
enum api_shape_variant {
    API_SHAPE_ROPE = 0, API_SHAPE_SOFTCAP, API_SHAPE_ALIBI, API_SHAPE_WINDOW, API_SHAPE_SINK,
    API_SHAPE_DROPOUT, API_SHAPE_VARIANT_COUNT
};

/* Reads ?variants (a comma-separated list of the names above) into *variants (bits). */
bool api_shapes_read_variants(const struct api_request *req, unsigned *variants,
                              struct api_error *err);

/*
 * Calls fn for the variants' rows that stand before the table's row `before` (3: Q @ K^T,
 * 5: softmax, 6: weights @ V), for n queries, n_kv keys and heads of d_k.
 */
void api_shapes_variant_rows(unsigned variants, size_t n, size_t n_kv, size_t d_k, int before,
                             api_shape_row_fn *fn, void *data);

#endif
