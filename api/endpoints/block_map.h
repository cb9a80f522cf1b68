/*
 * api/endpoints/block_map.h — `visible` (which keys each query sees, 0/1) and
 * `block_map` (its tiles: 2 full, 1 partial, 0 empty, and the sparsity) as JSON, from the
 * rules alone (core/block_map.h): the same on the full and the streamed path, and the
 * same for every head of a multi-head request.
 *
 * Not here: reading `block` (request/masks.h), the rules (core/variants.h).
 */
#ifndef API_ENDPOINTS_BLOCK_MAP_H
#define API_ENDPOINTS_BLOCK_MAP_H

#include <stdbool.h>
#include <stddef.h>

#include "api/http/problem.h"
#include "api/json/write.h"
#include "core/attention.h"
#include "core/block_map.h"
#include "core/variants.h"

/* What the rules are read from: the mask and the variants (their training masks). */
struct api_visibility {
    const struct attn_problem *p;
    const struct attn_variants *v;
    size_t n_q, n_k;
    const size_t *rows;  /* `rows`: the answer's query indices, or NULL for every query */
    size_t n_rows;       /* the answer's rows */
};

/*
 * What visible and block_map are written from, made in the run step, where running out
 * of memory is a 503 (the writer cannot fail): a row's scratch and the tiles. Owned;
 * api_shown_release frees both (safe on a zeroed one).
 */
struct api_shown {
    unsigned char *row;         /* n_k bytes when visible is asked, else NULL */
    struct attn_block_map map;  /* tiles when block_map is asked, else zeroed */
};

bool api_shown_prepare(struct api_shown *s, const struct api_visibility *vis, bool visible,
                       bool block_map, size_t block_q, size_t block_k, struct api_error *err);
void api_shown_release(struct api_shown *s);

/* The 0/1 matrix (n_rows, n_k) as JSON; one row written as a vector when as_vector. */
void api_write_visible(struct jw *w, const struct api_visibility *vis, const struct api_shown *s,
                       bool as_vector);

/* {"block": [B_q, B_k], "tiles": [[...]], "sparsity": s} of the whole problem (rows aside). */
void api_write_block_map(struct jw *w, const struct api_shown *s);

/* The tiles of n_q by n_k in block_q by block_k: what admission counts. */
size_t api_block_map_tiles(size_t n_q, size_t n_k, size_t block_q, size_t block_k);

#endif
