/*
 * api/multihead_render.h — POST /v1/multihead and GET /v1/shapes as text/plain, and
 * the multi-head weights as image/svg+xml (a panel per head, then the mean).
 *
 * Built from render_text.h and render_svg.h, like attention_render.h.
 */
#ifndef API_MULTIHEAD_RENDER_H
#define API_MULTIHEAD_RENDER_H

#include "api/buf.h"
#include "api/multihead.h"
#include "api/shapes.h"

/* The text/plain page: header, the eleven steps, included matrices, summary, warnings. */
void api_multihead_text(struct api_buf *b, const struct api_multihead_req *r,
                        const struct attn_mh_trace *t);

/* One heatmap panel per head and one for the mean, with one colour bar. */
void api_multihead_svg(struct api_buf *b, const struct api_multihead_req *r,
                       const struct attn_mh_trace *t);

/* The shape table, aligned. */
void api_shapes_text(struct api_buf *b, const struct api_shapes *s);

#endif
