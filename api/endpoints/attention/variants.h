/*
 * api/endpoints/attention/variants.h — what the attention answers show of the variants
 * (see attention/variants.c): each step's op as it reads with the variants asked for,
 * and the variants' own steps where they stand among the five.
 */
#ifndef API_ENDPOINTS_ATTENTION_VARIANTS_H
#define API_ENDPOINTS_ATTENTION_VARIANTS_H

#include <stdbool.h>
#include <stddef.h>

#include "api/endpoints/attention/attention.h"
#include "api/json/buf.h"
#include "api/render/text.h"
#include "api/request/variants.h"

/* The ops of the five steps that the variants change (the same text without them). */
struct api_variant_ops {
    char scores[32], masked[160], weights[96], output[32];
};

void api_variant_ops_of(const struct api_variants *v, bool block_semantics,
                        struct api_variant_ops *ops);

/* Where the variants' steps stand: before scores (rope), after scaled (softcap), after
 * weights (dropout). */
enum api_variant_stage {
    API_STAGE_BEFORE_SCORES = 0,
    API_STAGE_AFTER_SCALED,
    API_STAGE_AFTER_WEIGHTS,
    API_STAGE_COUNT
};

struct api_variant_step {
    const char *name; /* "q_rope", ... */
    int part;         /* enum api_attention_part */
    char operand;     /* 'q' (n_q, d_k), 'k' (n_k, d_k) or 'g' (n_q, n_k) */
    const char *op;
};

/*
 * The variants asked for, in words for a heatmap's subtitle ("; RoPE (half), softcap 30,
 * ..."), or "" when none is; cut to len - 1 bytes.
 */
void api_variants_describe(const struct api_variants *v, char *buf, size_t len);

/* The steps that run at `stage` (at most 2) into out; how many. */
size_t api_variant_steps_at(const struct api_variants *v, enum api_variant_stage stage,
                            struct api_variant_step *out);

/* The matrix of step `part` in vt. */
const struct attn_matrix *api_variant_step_matrix(const struct attn_vtrace *vt, int part);

/* The text page's lines for the variant steps at `stage`, numbered from *number on. */
void api_attention_text_variant_steps(struct api_buf *b, const struct api_attention_req *r,
                                      enum api_variant_stage stage, int *number, int decimals,
                                      const struct api_labels *queries,
                                      const struct api_labels *keys);

#endif
