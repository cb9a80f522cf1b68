/*
 * core/block_map.h — which keys each query sees, as the 0/1 `visible` matrix and as a
 * block map of tiles (DESIGN.md, "Masks of today's training, and the block map").
 *
 * Both follow from the rules alone (the mask, causal and the prefix, the window and the
 * sink tokens, the documents, the chunk: variants.h), never from a computed matrix, so
 * they cost no (n_q, n_k) step and work beside the streamed pass too. A tile of the
 * block map is B_q queries by B_k keys (the last of a row or column may be smaller):
 * 2 when every cell of it is visible, 1 when some are, 0 when none is. Kernels
 * (FlexAttention's BlockMask) skip the empty tiles and the mask of the full ones.
 *
 * Not here: JSON, HTTP, drawing.
 */
#ifndef ATTN_BLOCK_MAP_H
#define ATTN_BLOCK_MAP_H

#include <stddef.h>

#include "attention.h"
#include "variants.h"

enum attn_tile {
    ATTN_TILE_EMPTY = 0,
    ATTN_TILE_PARTIAL = 1,
    ATTN_TILE_FULL = 2,
};

/*
 * out[j] = 1 when query i (of n_q) may see key j (of n_k), else 0, for every j < n_k:
 * attn_key_visible's answer, read from the row's spans. p's mask and v's rules only
 * (p's inputs are not read); v may be a zeroed struct.
 */
void attn_visible_row(const struct attn_problem *p, const struct attn_variants *v, size_t n_q,
                      size_t n_k, size_t i, unsigned char *out);

struct attn_block_map {
    size_t block_q, block_k;  /* B_q, B_k */
    size_t rows, cols;        /* ceil(n_q / B_q), ceil(n_k / B_k) */
    unsigned char *tiles;     /* (rows, cols) of enum attn_tile; owned */
    size_t empty;             /* how many tiles are ATTN_TILE_EMPTY */
};

/*
 * The block map of n_q queries by n_k keys in tiles of block_q by block_k. ATTN_EINVAL
 * for a zero size or block, or rules that do not fit the sizes (attn_rules_ok);
 * ATTN_ENOMEM when the tiles cannot be had. Either leaves *out zeroed. Free with
 * attn_block_map_free.
 */
enum attn_status attn_block_map(struct attn_block_map *out, const struct attn_problem *p,
                                const struct attn_variants *v, size_t n_q, size_t n_k,
                                size_t block_q, size_t block_k);

/* ⌈n / block⌉: the tiles along one side of n cells (the last one may be smaller). */
size_t attn_tiles_along(size_t n, size_t block);

/* empty / (rows · cols): the share of tiles a kernel skips. */
double attn_block_map_sparsity(const struct attn_block_map *m);

/* Frees the tiles and zeroes *m; safe on a zeroed map. */
void attn_block_map_free(struct attn_block_map *m);

#endif
