/*
 * api/request/masks.h — reading the masks of training (DESIGN.md, "Masks of today's
 * training, and the block map"): documents, prefix and chunk, and the block map's tile
 * size `block`, shared by /v1/attention, its batch items, /v1/multihead and V2 (through
 * api/request/variants.c, which holds an api_masks and hands it to core).
 *
 * Each mistake is a struct api_error naming the culprit by JSON pointer with a hint:
 * lengths that do not add up to n_q or n_k, a length below 1, lists of unequal count,
 * a prefix past the keys, a chunk or block of 0.
 *
 * Ownership: an api_masks owns its two start lists; api_masks_deinit frees them.
 */
#ifndef API_REQUEST_MASKS_H
#define API_REQUEST_MASKS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/http/context.h"
#include "api/http/problem.h"
#include "core/variants.h"

/* The block map's tile when `block` is absent: FlexAttention's. */
#define API_BLOCK_DEFAULT 128

#define API_MASK_FIELDS                                                                   \
    { "documents", "packed documents: {\"lengths\"} or {\"lengths_q\", \"lengths_k\"}" },   \
    { "prefix", "keys before this position pass causal (a prefix-LM)" },                    \
    { "chunk", "chunked attention: each query sees the keys of its chunk (Llama 4)" },      \
    { "block", "the block map's tile [B_q, B_k], default [128, 128]" }

struct api_masks {
    bool top_left;           /* mask "causal_top_left": set by the caller from the grid */
    size_t prefix;           /* 0: none */
    size_t chunk;            /* 0: none */
    size_t *doc_q, *doc_k;   /* n_docs + 1 starts each, or NULL: one document */
    size_t n_docs;
    bool lengths_shared;     /* sent as "lengths" (one list for queries and keys) */
    size_t block_q, block_k; /* the block map's tile */
};

/* Reads documents, prefix, chunk and block of doc (under prefix) for n_q queries and n_k
 * keys. On failure m owns nothing. */
bool api_masks_read(const json_t *doc, const char *prefix, size_t n_q, size_t n_k,
                    struct api_masks *m, struct api_error *err);

void api_masks_deinit(struct api_masks *m);

/* Whether the block map of n_q by n_k in m's tiles fits --max-cells; else 422
 * limit-exceeded at prefix/block (or prefix when block was not sent). */
bool api_check_block_map(const struct api_masks *m, size_t n_q, size_t n_k, const char *prefix,
                         const struct api_limits *limits, struct api_error *err);

/* Whether a rule beyond the mask field hides keys: documents or a chunk. */
bool api_masks_hide(const struct api_masks *m);

/* Sets out's training masks from m (borrowing the start lists). */
void api_masks_apply(const struct api_masks *m, struct attn_variants *out);

#endif
