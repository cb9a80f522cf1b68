/*
 * api/endpoints/bertviz.h — ?format=bertviz: the weights of /v1/attention and
 * /v1/multihead as bertviz's head_view and model_view take them, so a notebook
 * that already draws with bertviz feeds it attnd's answer unchanged:
 *
 *   self-attention   {"tokens": [n], "attention": [1][1][h][n][n]}
 *   cross-attention  {"encoder_tokens": [n_k], "decoder_tokens": [n_q],
 *                     "cross_attention": [1][1][h][n_q][n_k]}
 *
 * One layer and a batch of one, as bertviz nests them ([layer][batch][head][q][k]);
 * heads are the query heads (GQA's shared kv heads expanded, one map per query
 * head). The numbers are the weights the JSON answer writes, byte for byte (round
 * included).
 *
 * Cross-attention is chosen when the inputs were sent as x_q and x_kv, when n_q ≠
 * n_k (a square head view cannot draw it), or when the query labels differ from
 * the key labels (the two sides are not the same tokens). Tokens are the labels
 * (self: the keys', else the queries'), else t0, t1, ….
 *
 * Not here: choosing the format (api/http/negotiate.c), the computation.
 *
 * Dimension legend: h heads, n_q queries, n_k keys.
 */
#ifndef API_ENDPOINTS_BERTVIZ_H
#define API_ENDPOINTS_BERTVIZ_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/http/response.h"
#include "api/json/write.h"
#include "core/attention.h"

/* What one bertviz answer draws; everything borrowed. */
struct api_bertviz {
    const struct attn_trace *heads; /* [h]: each one's weights (n_q, n_k) */
    size_t n_heads;
    size_t n_q, n_k;
    const json_t *labels;           /* the request's {"queries", "keys"}, or NULL */
    bool cross_inputs;              /* sent as x_q and x_kv */
};

/* Whether b is answered as cross-attention (encoder/decoder tokens): see above. */
bool api_bertviz_is_cross(const struct api_bertviz *b);

/*
 * The bytes a bertviz answer adds to a working set whose numbers already count the
 * h·n_q·n_k weights (include "weights" alone): its n_q + n_k tokens, each the room
 * of a number ("t4194303" is shorter) plus the labels, which are at most the body's
 * bytes. Saturates at SIZE_MAX.
 */
size_t api_bertviz_token_bytes(size_t n_q, size_t n_k, size_t body_len);

/* Writes the answer object into w (started with the request's round). */
void api_bertviz_write(struct jw *w, const struct api_bertviz *b);

/* The whole answer into res: written with the request's round, in segments if allowed. */
void api_bertviz_respond(struct api_response *res, const struct api_bertviz *b, int round,
                         bool segments_ok);

#endif
