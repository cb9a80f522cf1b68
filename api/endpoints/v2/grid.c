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

#include "core/block_map.h"

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

/*
 * causal: true (bottom-right, FlashAttention's), "top_left" (SDPA's is_causal), false.
 * A string is the one way to say the second that keeps true meaning what it always did.
 */
static bool read_causal(const json_t *params, bool *causal, bool *top_left,
                        struct api_error *err)
{
    const json_t *p = json_object_get(params, "causal");
    if (!json_is_string(p))
        return api_v2_param_bool(params, "causal", causal, err);
    if (strcmp(json_string_value(p), "top_left") != 0) {
        api_error_set(err, API_INVALID_VALUE, "parameters.causal is true, false or "
                      "\"top_left\", not \"%.64s\"", json_string_value(p));
        api_error_at(err, "/parameters/causal");
        api_error_hint(err, "true aligns bottom-right (FlashAttention: query i sees key j iff "
                       "j <= i + n_k - n_q), \"top_left\" top-left (SDPA's is_causal: j <= i)");
        return false;
    }
    *causal = *top_left = true;
    return true;
}

static bool read_semantics(const json_t *params, bool *causal, bool *top_left, bool *block,
                           struct api_error *err)
{
    const char *semantics = "keep";
    if (!read_causal(params, causal, top_left, err) ||
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
    if (!read_semantics(params, &causal, &g->top_left, &g->block_semantics, err))
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

void api_v2_block_map_dims(const struct api_grid *g, const struct api_variants *v,
                           size_t dims[2])
{
    dims[0] = g->n_q / v->masks.block_q + (g->n_q % v->masks.block_q != 0);
    dims[1] = g->n_k / v->masks.block_k + (g->n_k % v->masks.block_k != 0);
}

bool api_v2_block_map_check(struct api_v2_picks *picks, size_t block_map, const json_t *params,
                            const struct api_grid *g, const struct api_variants *v,
                            const struct api_limits *limits, struct api_error *err)
{
    bool asked = false;
    for (size_t i = 0; i < picks->n; i++)
        if (picks->index[i] == block_map) {
            asked = true;
            if (!picks->dtype_asked[i]) /* tiles are 0, 1 and 2: a byte each */
                picks->dtype[i] = API_V2_INT8;
        }
    if (!asked || api_check_block_map(&v->masks, g->n_q, g->n_k, "", limits, err))
        return true;
    bool k_only = json_object_get(params, "block_q") == NULL &&
                  json_object_get(params, "block_k") != NULL;
    api_error_at(err, "/parameters/%s", k_only ? "block_k" : "block_q");
    return false;
}

bool api_v2_block_map_fill(const struct api_grid *g, const struct api_variants *v, double *dst,
                           struct api_error *err)
{
    /* The rules alone, as /v1's block_map reads them: the mask cells g points at, the
       training masks, the window; a head's slope or sink logit hides no key, so head 0
       stands for every head. */
    const struct attn_problem p = { .mask = api_grid_mask(g) };
    const struct attn_variants rules = api_variants_for_head(v, 0);
    struct attn_block_map m;
    if (attn_block_map(&m, &p, &rules, g->n_q, g->n_k, v->masks.block_q, v->masks.block_k) !=
        ATTN_OK) { /* the rules were checked against the sizes: only memory is left */
        api_error_set(err, API_UNAVAILABLE, "no memory for the block map");
        return false;
    }
    for (size_t t = 0; t < m.rows * m.cols; t++)
        dst[t] = m.tiles[t];
    attn_block_map_free(&m);
    return true;
}

void api_v2_block_map_done(struct api_v2_out *out)
{
    size_t empty = 0;
    for (size_t t = 0; t < out->count; t++)
        empty += out->data[t] == ATTN_TILE_EMPTY;
    /* empty / all, as core's attn_block_map_sparsity divides: a batch of equal problems
       gives each problem's own number (B·e / B·n rounds as e / n does). */
    out->has_sparsity = true;
    out->sparsity = (double)empty / (double)out->count;
}
