/*
 * api/endpoints/block_map.h — `visible` (which keys each query sees, 0/1) and
 * `block_map` (its tiles: 2 full, 1 partial, 0 empty, and the sparsity) as JSON, from the
 * rules alone (core/block_map.h): the same on the full and the streamed path, and the
 * same for every head of a multi-head request.
 *
 * The same two on the pages: the text page prints visible as a 0/1 matrix and the block map
 * as a character a tile; the heatmap draws the tiles over its cells (render/svg.h's
 * api_svg_tiles), each with the words of the answer's language.
 *
 * Not here: reading `block` (request/masks.h), the rules (core/variants.h), laying out
 * text or SVG (render/).
 */
#ifndef API_ENDPOINTS_BLOCK_MAP_H
#define API_ENDPOINTS_BLOCK_MAP_H

#include <stdbool.h>
#include <stddef.h>

#include "api/http/problem.h"
#include "api/json/buf.h"
#include "api/json/write.h"
#include "api/render/svg.h"
#include "api/render/text.h"
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

/* visible on a text page: "visible = ...", then the 0/1 matrix (n_rows, n_k) labelled as
 * every matrix is. Fails b when its (n_rows, n_k) numbers cannot be had. */
void api_text_visible(struct api_buf *b, const struct api_visibility *vis,
                      const struct api_labels *queries, const struct api_labels *keys);

/* The block map on a text page: "block_map = ...", the block, the tiles' shape and the
 * sparsity (to `decimals`), a line a tile row named as its first query (queries: every
 * query of the problem, `rows` aside), a character a tile (█ full, ▒ partial, · empty),
 * and the legend. Fails b when the tiles cannot be had. */
void api_text_block_map(struct api_buf *b, const struct api_visibility *vis, size_t block_q,
                        size_t block_k, int decimals, const struct api_labels *queries);

/* At most the bytes those two write for n_rows answer rows of n_q by n_k in tiles of
 * block_q by block_k (each only when `visible`, `block_map`), for admission. */
size_t api_text_visibility_bytes(bool visible, bool block_map, size_t n_rows, size_t n_q,
                                 size_t n_k, size_t block_q, size_t block_k);

/* The tiles a heatmap draws over its cells, with their words: owns the map. */
struct api_page_tiles {
    struct attn_block_map map;
    struct api_svg_tiles svg;  /* points into map and legend */
    char legend[160];
};

/* The block map of vis in tiles of block_q by block_k, ready for a panel (h->tiles =
 * &out->svg); false (and *out zeroed) when the tiles cannot be had. Free with
 * api_page_tiles_free. */
bool api_page_tiles_init(struct api_page_tiles *out, const struct api_visibility *vis,
                         size_t block_q, size_t block_k);

void api_page_tiles_free(struct api_page_tiles *t);

#endif
