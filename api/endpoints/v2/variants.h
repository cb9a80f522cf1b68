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
#include "api/request/variants.h"

/* The variants' parameter names, for a model's list of known parameters. */
#define API_V2_VARIANT_PARAMS                                                              \
    "softcap", "window_left", "window_right", "sink_tokens", "sink_logit", "alibi",         \
    "rope_base", "rope_layout", "rope_fraction", "dropout_p", "dropout_seed"
#define API_V2_N_VARIANT_PARAMS 11

/*
 * Reads the variants' parameters of params (an object, or NULL) against sizes into v
 * (see api_variants_read). A window side of -1 is unbounded (FlashAttention's
 * window_size); alibi is a slope or "auto", sink_logit one number for every head. On
 * failure v owns nothing and err points at /parameters/<name>.
 */
bool api_v2_read_variants(const json_t *params, const struct api_variant_sizes *sizes,
                          struct api_variants *v, struct api_error *err);

#endif
