/*
 * api/endpoints/v2/grid.h — the V2 inputs and parameters that shape the (n_q, n_k)
 * grid, shared by the models `attention` and `multihead` (v2/grid.c).
 */
#ifndef API_ENDPOINTS_V2_GRID_H
#define API_ENDPOINTS_V2_GRID_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/endpoints/v2/common.h"
#include "api/request/grid.h"
#include "api/request/variants.h"

/*
 * MASK, BIAS, causal (true, false or "top_left": g->top_left) and mask_semantics into g (whose n_q, n_k and q_is_vector the
 * caller set): shapes and parameters checked, nothing allocated. The grid's cells are
 * views: never api_grid_deinit it.
 */
bool api_v2_read_grid(struct api_grid *g, const struct api_v2_input *mask,
                      const struct api_v2_input *bias, size_t batch, const json_t *params,
                      struct api_error *err);

/*
 * Once admitted: reads MASK and BIAS, the mask's allowed cells into *allow (owned by
 * the caller, all problems), and points g at the first problem's cells.
 */
bool api_v2_grid_load(struct api_grid *g, struct api_v2_input *mask, struct api_v2_input *bias,
                      unsigned char **allow, struct api_error *err);

/* Moves g's batched MASK and BIAS views to problem b. */
void api_v2_grid_point(struct api_grid *g, const struct api_v2_input *mask,
                       const struct api_v2_input *bias, unsigned char *allow, size_t b);

/*
 * BLOCK_MAP (both models): the tiles of the problem g points at, from the rules alone
 * (core/block_map.h), in v's masks.block_q by block_k. dims: (rows, cols) of one problem.
 * check: when picks asks for output `block_map` (an index into the model's names), it
 * is sent as INT8 unless it asks for a datatype, and its tiles fit --max-cells (else
 * limit-exceeded at /parameters/block_q, or block_k when only that was sent). fill
 * writes one problem's tiles into dst (2 full, 1 partial, 0 empty); false (err) when
 * memory runs out. done sets the output's sparsity: empty tiles over all of them.
 */
void api_v2_block_map_dims(const struct api_grid *g, const struct api_variants *v,
                           size_t dims[2]);
bool api_v2_block_map_check(struct api_v2_picks *picks, size_t block_map, const json_t *params,
                            const struct api_grid *g, const struct api_variants *v,
                            const struct api_limits *limits, struct api_error *err);
bool api_v2_block_map_fill(const struct api_grid *g, const struct api_variants *v, double *dst,
                           struct api_error *err);
void api_v2_block_map_done(struct api_v2_out *out);

#endif
