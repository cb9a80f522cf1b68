/*
 * api/endpoints/v2/grid.c — the V2 inputs and parameters that shape the (n_q, n_k)
 * grid, shared by the models `attention` and `multihead`: MASK, BIAS, and the
 * parameters causal and mask_semantics, into the struct api_grid /v1 reads.
 *
 * Shapes are checked while the request is parsed (api_v2_read_grid), the cells read
 * once it is admitted (api_v2_grid_load). The grid's mask and bias are views into the
 * caller's inputs (and the allowed cells it owns), moved from problem to problem of a
 * batch by api_v2_grid_point.
 */
#include "api/endpoints/v2/grid.h"

#include <stdlib.h>
#include <string.h>

/*
 * MASK or BIAS: (n_q, n_k), (B, n_q, n_k) for a batch, or (n_k): a MASK of key
 * padding, and both for a vector Q. *rows: the mask's rows (1 or n_q).
 */
static bool check_shape(const struct api_grid *g, const struct api_v2_tensor *t, bool is_mask,
                        size_t batch, size_t *rows, struct api_error *err)
{
    size_t n_q = g->n_q, n_k = g->n_k;
    if (t->rank == 1 && t->shape[0] == n_k && (g->q_is_vector || is_mask)) {
        *rows = 1;
        return true;
    }
    if ((t->rank == 2 && t->shape[0] == n_q && t->shape[1] == n_k) ||
        (t->rank == 3 && batch > 0 && t->shape[0] == batch && t->shape[1] == n_q &&
         t->shape[2] == n_k)) {
        *rows = n_q;
        return true;
    }
    api_error_set(err, API_SHAPE_MISMATCH, "%s must be (n_q, n_k) = (%zu, %zu)%s", t->name, n_q,
                  n_k, batch > 0 ? ", or (B, n_q, n_k)" : "");
    api_error_at(err, "/inputs/%zu/shape", t->index);
    if (t->rank == 2 && t->shape[0] == n_k && t->shape[1] == n_q)
        api_error_hint(err, "%s looks transposed: one row per query, one column per key",
                       t->name);
    return false;
}

static bool read_semantics(const json_t *params, bool *causal, bool *block,
                           struct api_error *err)
{
    const char *semantics = "keep";
    if (!api_v2_param_bool(params, "causal", causal, err) ||
        !api_v2_param_string(params, "mask_semantics", &semantics, err))
        return false;
    if (strcmp(semantics, "keep") != 0 && strcmp(semantics, "block") != 0) {
        api_error_set(err, API_INVALID_VALUE, "parameters.mask_semantics is \"keep\" (1 = may "
                      "attend) or \"block\" (1 = blocked)");
        api_error_at(err, "/parameters/mask_semantics");
        return false;
    }
    *block = semantics[0] == 'b';
    return true;
}

bool api_v2_read_grid(struct api_grid *g, const struct api_v2_input *mask,
                      const struct api_v2_input *bias, size_t batch, const json_t *params,
                      struct api_error *err)
{
    g->round = -1;
    bool causal = false;
    if (!read_semantics(params, &causal, &g->block_semantics, err))
        return false;
    if (causal && mask->t != NULL) {
        api_error_set(err, API_INVALID_VALUE, "parameters.causal combines with no MASK: send "
                      "the causal cells in MASK instead");
        api_error_at(err, "/parameters/causal");
        return false;
    }
    if (causal)
        g->mask_kind = ATTN_MASK_CAUSAL;
    if (mask->t != NULL) {
        if (!check_shape(g, mask->t, true, batch, &g->mask_rows, err))
            return false;
        g->mask_kind = ATTN_MASK_CELLS;
        g->mask_is_vector = mask->t->rank == 1;
    }
    if (bias->t != NULL) {
        size_t rows;
        if (!check_shape(g, bias->t, false, batch, &rows, err))
            return false;
        g->bias = attn_matrix_view(NULL, g->n_q, g->n_k); /* its cells: api_v2_grid_load */
    }
    return true;
}

bool api_v2_grid_load(struct api_grid *g, struct api_v2_input *mask, struct api_v2_input *bias,
                      unsigned char **allow, struct api_error *err)
{
    if (!api_v2_input_load(mask, err) || !api_v2_input_load(bias, err))
        return false;
    if (mask->t != NULL) {
        *allow = malloc(mask->t->count);
        if (*allow == NULL) {
            api_error_set(err, API_UNAVAILABLE, "no memory for the mask");
            return false;
        }
        /* After mask_semantics: 1 = may attend, as core reads it. */
        for (size_t i = 0; i < mask->t->count; i++)
            (*allow)[i] = (unsigned char)((mask->data[i] != 0.0) != g->block_semantics);
        g->mask_allow = *allow;
    }
    if (bias->t != NULL)
        g->bias.data = bias->data;
    return true;
}

void api_v2_grid_point(struct api_grid *g, const struct api_v2_input *mask,
                       const struct api_v2_input *bias, unsigned char *allow, size_t b)
{
    size_t cells = g->n_q * g->n_k;
    if (mask->t != NULL && mask->t->rank == 3)
        g->mask_allow = allow + b * cells;
    if (bias->t != NULL && bias->t->rank == 3)
        g->bias.data = bias->data + b * cells;
}
