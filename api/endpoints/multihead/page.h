/*
 * api/endpoints/multihead/page.h — POST /v1/multihead as text/plain, and the multi-head
 * weights as image/svg+xml (a panel per head, then the mean).
 *
 * Built from render/text.h and render/svg.h, like attention/page.h.
 */
#ifndef API_ENDPOINTS_MULTIHEAD_PAGE_H
#define API_ENDPOINTS_MULTIHEAD_PAGE_H

#include "api/json/buf.h"
#include "api/endpoints/multihead/multihead.h"

/* The text/plain page: header, the eleven steps, included matrices, summary, warnings. */
void api_multihead_text(struct api_buf *b, const struct api_multihead_req *r,
                        const struct attn_mh_trace *t);

/*
 * At most the bytes api_multihead_text writes for r with n_q queries and n_k keys, from
 * the sizes alone (for admission): every matrix it can print (inputs, projections, each
 * head's steps and variants), elided as api_text_matrix elides it, each query's summary
 * and warning lines in every head, and a worked-out row when asked.
 */
size_t api_multihead_text_bytes(const struct api_multihead_req *r, size_t n_q, size_t n_k);

/* One heatmap panel per head and one for the mean, with one colour bar. */
void api_multihead_svg(struct api_buf *b, const struct api_multihead_req *r,
                       const struct attn_mh_trace *t);

#endif
