/*
 * api/endpoints/shapes/shapes.h — GET /v1/shapes: the shape table of multi-head attention from its
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
#include "api/endpoints/shapes/variants.h"

struct api_shapes {
    size_t n, n_kv, d_model, heads, kv_heads, d_k;
    unsigned variants; /* bits of enum api_shape_variant: ?variants=rope,softcap,... */
    size_t block_q, block_k; /* the block map's tile: ?block_q, ?block_k, default 128 */
    bool backward;           /* ?backward=true: the gradients' rows after the forward's */
};

/* Reads n, d_model, heads (required), n_kv, kv_heads, block_q, block_k (optional). */
/* The query parameters /v1/shapes takes besides format and lang (NULL-terminated). */
extern const char *const api_shapes_params[];

bool api_shapes_parse(const struct api_request *req, struct api_shapes *s, struct api_error *err);

/* Calls fn for each row, in order: projections, scores, scale, softmax, ·V, concat, ·W_O. */
void api_shapes_rows(const struct api_shapes *s, api_shape_row_fn *fn, void *data);

/* {"n", "n_kv", "d_model", "heads", "kv_heads", "d_k", ["variants",] "rows": [...]} */
void api_shapes_write(struct jw *w, const struct api_shapes *s);

#endif
