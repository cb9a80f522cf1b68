/*
 * api/attention_render.h — POST /v1/attention as text/plain and image/svg+xml.
 *
 * The page layouts for one attention answer, built from the generic pieces of
 * render_text.h and render_svg.h: the text shows the header (shapes, scale),
 * every step with its op and operand shapes and its matrix, row sums after the
 * weights, the summary and the warnings; the SVG is the weights' heatmap.
 *
 * Problems are problem+json whatever format was asked for.
 *
 * Dimension legend: n_q queries, n_k keys, d_k query/key width, d_v value width.
 */
#ifndef API_ATTENTION_RENDER_H
#define API_ATTENTION_RENDER_H

#include <stddef.h>

#include <jansson.h>

#include "api/api.h"
#include "api/attention.h"
#include "api/buf.h"
#include "api/render_text.h"

/*
 * labels[which] (e.g. "queries") as an array of n borrowed strings, malloc'd (the
 * caller frees the array, not the strings), for struct api_labels. NULL when the
 * list is absent, has another length, or memory is short: the labels then fall
 * back to their prefix and index, which is harmless.
 */
const char **api_label_names(const json_t *labels, const char *which, size_t n);

/* The text/plain page for a request and its trace. */
void api_attention_text(struct api_buf *b, const struct api_attention_req *r,
                        const struct attn_trace *t);

/* The weights' heatmap as an SVG document. */
void api_attention_svg(struct api_buf *b, const struct api_attention_req *r,
                       const struct attn_trace *t);

/*
 * The whole endpoint in a chosen format: parse, run, then write JSON, text or SVG.
 * Errors are problem+json whatever the format.
 */
void api_attention_handle_as(const struct api_context *ctx, const char *body, size_t len,
                             enum api_format format, struct api_response *res);

#endif
