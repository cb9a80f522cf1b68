/*
 * api/request/variants.h — reading the attention variants' fields (rope, softcap,
 * alibi, window, sink_tokens, sink_logit, dropout, and the masks of training through
 * api/request/masks.h), shared by /v1/attention, its
 * batch items and /v1/multihead, and handing them to core as struct attn_variants.
 *
 * Each mistake is a struct api_error naming the culprit by JSON pointer with a hint:
 * a rotated width of 0, p outside [0, 1), slopes of the wrong length, a softcap <= 0.
 * A window that empties a row is not a mistake: core answers it as a fully masked row.
 *
 * Ownership: an api_variants owns its arrays (positions, slopes, sink logits) and the
 * prepared rotation tables; api_variants_deinit frees them. Nothing is borrowed from
 * the document after api_variants_read returns.
 */
#ifndef API_REQUEST_VARIANTS_H
#define API_REQUEST_VARIANTS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/http/problem.h"
#include "api/request/masks.h"
#include "core/variants.h"

/* The variants' rows for an endpoint's table of known fields (struct api_field). */
#define API_VARIANT_FIELDS                                                               \
    { "rope", "rotary embedding of q and k: {\"base\", \"layout\", \"fraction\"}" },       \
    { "softcap", "caps the scaled scores at ±c: c·tanh(scaled/c)" },                      \
    { "alibi", "ALiBi slope(s): a number, one per head, or \"auto\"" },                   \
    { "window", "sliding window {\"left\", \"right\"} around each query's position" },    \
    { "sink_tokens", "the first keys, visible through any window" },                      \
    { "sink_logit", "an extra logit in each row's softmax that carries no value" },       \
    { "dropout", "drop weights at random: {\"p\", \"seed\"}" },                           \
    API_MASK_FIELDS

/* The sizes the variants are read against. */
struct api_variant_sizes {
    size_t heads;         /* 1 for /v1/attention */
    size_t n_q, n_k, d_k; /* d_k of one head */
    bool q_is_vector;     /* positions_q may then be one number's list */
};

struct api_variants {
    bool any;                     /* some variant is asked for */
    struct attn_rope rope;        /* prepared when has_rope (tables owned here) */
    bool has_rope;
    double rope_fraction;
    double *positions_q;          /* (n_q) or NULL */
    double *positions_k;          /* (n_k) or NULL */
    double softcap;               /* 0: none */
    bool alibi, alibi_auto;
    double *alibi_slopes;         /* (heads) when alibi */
    bool window, has_left, has_right;
    size_t left, right;
    size_t sink_tokens;
    bool sink;
    double *sink_logits;          /* (heads) when sink */
    bool dropout;
    double dropout_p;
    unsigned long long dropout_seed;
    unsigned long long dropout_offset; /* added to every draw's k: a V2 batch's problem b
                                          starts after b problems' cells */
    size_t heads, n_q, n_k;
    struct api_masks masks;       /* documents, prefix, chunk, block; top_left from the grid */
};

/*
 * Reads the variants' fields of doc (under prefix) against sizes; absent fields leave
 * their variant off. On failure v owns nothing (no deinit needed).
 */
bool api_variants_read(const json_t *doc, const char *prefix, const struct api_variant_sizes *s,
                       struct api_variants *v, struct api_error *err);

void api_variants_deinit(struct api_variants *v);

/* The mask "causal_top_left" (read with the grid): causal aligns top-left. */
void api_variants_set_top_left(struct api_variants *v, bool on);

/*
 * Checks a request's `include` (node, at pointer ptr; NULL: absent) against the
 * variants asked for: naming a variant's step ("q_rope", "k_rope", "softcapped",
 * "dropout_keep", "dropped") whose variant is off is 422 invalid-value at ptr/i with a
 * hint naming the field that produces it. Names already validated by the caller.
 */
bool api_variants_check_include(const struct api_variants *v, const json_t *node, const char *ptr,
                                struct api_error *err);

/* Core's view for head h (0 for /v1/attention): borrows v's arrays and tables. */
struct attn_variants api_variants_for_head(const struct api_variants *v, size_t h);

#endif
