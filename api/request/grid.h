/*
 * api/request/grid.h — the request fields that shape the (n_q, n_k) grid of scores, shared
 * by /v1/attention and /v1/multihead: mask, mask_semantics, bias, labels, round.
 *
 * The caller sets n_q, n_k and q_is_vector from its own inputs, then api_grid_read
 * validates the rest against them, so both endpoints give the same errors and hints
 * (a transposed mask, a bias of the wrong shape, a label count that does not match).
 *
 * Ownership: the grid owns mask_allow and bias.data (api_grid_deinit frees them);
 * labels is borrowed from the request document.
 */
#ifndef API_GRID_H
#define API_GRID_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/http/context.h"
#include "api/http/response.h"
#include "api/http/problem.h"
#include "core/attention.h"

struct api_grid {
    size_t n_q, n_k;            /* set by the caller before api_grid_read */
    bool q_is_vector;           /* set by the caller: one query sent as a vector */

    enum attn_mask_kind mask_kind;
    bool top_left;              /* mask "causal_top_left": CAUSAL aligned top-left */
    unsigned char *mask_allow;  /* (mask_rows, n_k), 1 = may attend, after mask_semantics */
    size_t mask_rows;           /* n_q, or 1 for a key-padding vector */
    bool mask_is_vector;        /* sent as (n_k) */
    bool block_semantics;       /* mask_semantics "block": 1/true = blocked */
    struct attn_matrix bias;    /* (n_q, n_k), or data NULL when absent */
    const json_t *labels;       /* {"queries": [...], "keys": [...]} or NULL; borrowed */
    int round;                  /* decimals, or -1 for shortest */
};

/* Reads mask_semantics, mask, bias, labels and round from doc. On failure g owns nothing new. */
bool api_grid_read(const json_t *doc, const char *prefix, const struct api_limits *limits,
                   struct api_grid *g, struct api_error *err);

void api_grid_deinit(struct api_grid *g);

/* The mask as core takes it (borrowing g's cells). */
struct attn_mask api_grid_mask(const struct api_grid *g);

/* The bias as core takes it, or NULL. */
const struct attn_matrix *api_grid_bias(const struct api_grid *g);

#endif
