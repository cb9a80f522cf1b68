/*
 * api/endpoints/multihead/variants.h — the variants' steps on /v1/multihead's text page
 * (multihead/variants.c; the run and the JSON parts are in multihead/multihead.h).
 */
#ifndef API_ENDPOINTS_MULTIHEAD_VARIANTS_H
#define API_ENDPOINTS_MULTIHEAD_VARIANTS_H

#include "api/endpoints/multihead/multihead.h"
#include "api/json/buf.h"
#include "api/render/text.h"

/* The lines of the variant steps at `stage` (0 before scores, 1 after scaled, 2 after
 * weights), numbered from *number on, a block per head when included. */
void api_multihead_text_variant_steps(struct api_buf *b, const struct api_multihead_req *r,
                                      int stage, int *number, const struct api_labels *queries,
                                      const struct api_labels *keys);

#endif
