/*
 * api/endpoints/v2/variants.h — the attention variants as V2 request parameters (softcap,
 * window_left, window_right, sink_tokens, sink_logit, alibi, rope_base, rope_layout,
 * rope_fraction, dropout_p, dropout_seed), read by the same reader as /v1's fields
 * (api/request/variants.h) so both say the same things, with pointers into
 * /parameters.
 */
#ifndef API_ENDPOINTS_V2_VARIANTS_H
#define API_ENDPOINTS_V2_VARIANTS_H

#include <stdbool.h>

#include <jansson.h>

#include "api/http/problem.h"
#include "api/request/v2_tensor.h"
#include "api/request/variants.h"

/* The variants' parameter names, for a model's list of known parameters. */
#define API_V2_VARIANT_PARAMS                                                              \
    "softcap", "window_left", "window_right", "sink_tokens", "sink_logit", "alibi",         \
    "rope_base", "rope_layout", "rope_fraction", "dropout_p", "dropout_seed", "prefix",      \
    "chunk", "block_q", "block_k"
#define API_V2_N_VARIANT_PARAMS 15

/* The document lengths' inputs (both models): INT32 or INT64, one list for the batch. */
#define API_V2_LENGTHS_INPUTS "LENGTHS", "LENGTHS_Q", "LENGTHS_K"
#define API_V2_N_LENGTHS_INPUTS 3
#define API_V2_INTEGERS ((1u << API_V2_INT32) | (1u << API_V2_INT64))

/*
 * Reads the variants' parameters of r (its parameters object may be NULL) and its
 * LENGTHS, LENGTHS_Q and LENGTHS_K inputs (their numbers, here: a list a batch shares)
 * against sizes into v (see api_variants_read). A window side of -1 is unbounded
 * (FlashAttention's window_size); alibi is a slope or "auto", sink_logit one number for
 * every head; prefix and chunk are /v1's, block_q and block_k its block (each default
 * 128). On failure v owns nothing and err points at /parameters/<name> or at the
 * lengths' input (/inputs/<i>, its cell /inputs/<i>/data/<j>, or /inputs when a list
 * the other needs was not sent).
 */
bool api_v2_read_variants(const struct api_v2_infer *r, const struct api_variant_sizes *sizes,
                          struct api_variants *v, struct api_error *err);

#endif
