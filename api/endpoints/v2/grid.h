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

/*
 * MASK, BIAS, causal and mask_semantics into g (whose n_q, n_k and q_is_vector the
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

#endif
