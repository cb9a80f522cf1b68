/*
 * api/endpoints/shapes.h — GET /v1/shapes: the shape table of multi-head attention from its
 * sizes alone, as the first lecture note draws it (X (10, 512) · W_Q (512, 64) →
 * Q (10, 64), ...). Shared by the JSON writer and the text renderer.
 */
#ifndef API_SHAPES_H
#define API_SHAPES_H

#include <stdbool.h>
#include <stddef.h>

#include "api/http/context.h"
#include "api/http/response.h"
#include "api/json/write.h"
#include "api/http/problem.h"

struct api_shapes {
    size_t n, n_kv, d_model, heads, kv_heads, d_k;
};

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

/* Reads n, d_model, heads (required), n_kv, kv_heads (optional) from the query. */
/* The query parameters /v1/shapes takes besides format and lang (NULL-terminated). */
extern const char *const api_shapes_params[];

bool api_shapes_parse(const struct api_request *req, struct api_shapes *s, struct api_error *err);

/* Calls fn for each row, in order: projections, scores, scale, softmax, ·V, concat, ·W_O. */
void api_shapes_rows(const struct api_shapes *s, api_shape_row_fn *fn, void *data);

/* {"n", "n_kv", "d_model", "heads", "kv_heads", "d_k", "rows": [...]} */
void api_shapes_write(struct jw *w, const struct api_shapes *s);

#endif
