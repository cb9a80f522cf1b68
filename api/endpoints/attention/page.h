/*
 * api/endpoints/attention/page.h — POST /v1/attention as text/plain and image/svg+xml.
 *
 * The page layouts for one attention answer, built from the generic pieces of
 * render/text.h and render/svg.h: the text shows the header (shapes, scale),
 * every step with its op and operand shapes and its matrix, row sums after the
 * weights, the summary and the warnings; the SVG is the weights' heatmap.
 *
 * Problems are problem+json whatever format was asked for.
 *
 * Dimension legend: n_q queries, n_k keys, d_k query/key width, d_v value width.
 */
#ifndef API_ENDPOINTS_ATTENTION_PAGE_H
#define API_ENDPOINTS_ATTENTION_PAGE_H

#include <stddef.h>

#include <jansson.h>

#include "api/endpoints/attention/attention.h"
#include "api/json/buf.h"
#include "api/render/text.h"

/*
 * labels[which] (e.g. "queries") as an array of n borrowed strings, malloc'd (the
 * caller frees the array, not the strings), for struct api_labels. NULL when the
 * list is absent, has another length, or memory is short: the labels then fall
 * back to their prefix and index, which is harmless.
 */
const char **api_label_names(const json_t *labels, const char *which, size_t n);

/*
 * The bytes the heatmap's tooltips add to each panel of n_q x n_k cells with these
 * labels (api_svg_tips_bytes), for admission. Labels that cannot be read for want of
 * memory count as absent: the page then fails with a 503 in any case.
 */
size_t api_page_tips_bytes(const json_t *labels, size_t n_q, size_t n_k);

/*
 * At most the bytes api_attention_text writes for req, from its sizes alone (for
 * admission): every step it can print, elided as api_text_matrix elides it, the
 * summary and warning lines of each query, and a worked-out row or pitfall when asked.
 */
size_t api_attention_text_bytes(const struct api_attention_req *req);

/* The text/plain page for a request and its trace. */
void api_attention_text(struct api_buf *b, const struct api_attention_req *r,
                        const struct attn_trace *t);

/*
 * The smallest and largest weight a heatmap draws: blocked cells (-inf in masked) and
 * empty rows are hatched instead; 0 and 1 when nothing is drawn.
 */
void api_weights_range(const struct attn_matrix *w, const struct attn_matrix *masked,
                       const unsigned char *empty_rows, double *lo, double *hi);

/* The bytes the block map's tiles add to the heatmap (include "block_map"), for admission. */
size_t api_attention_svg_tiles_bytes(const struct api_attention_req *req);

/* The weights' heatmap as an SVG document; with include "block_map" (and no `rows`), the
 * tiles drawn over the cells. */
void api_attention_svg(struct api_buf *b, const struct api_attention_req *r,
                       const struct attn_trace *t);

#endif
