/*
 * api/request/heatmap.h — a request's `heatmap` options for the SVG (and the
 * playground): {"vmin", "vmax" (each a number or "auto"), "title"}.
 *
 * The default is the second note's picture: Blues from 0 to 1 and attnd's own title.
 * "auto" is the smallest (vmin) or largest (vmax) weight drawn in the figure, every
 * head's panel and the mean together, so panels compare; the endpoint resolves it.
 */
#ifndef API_REQUEST_HEATMAP_H
#define API_REQUEST_HEATMAP_H

#include <stdbool.h>

#include <jansson.h>

#include "api/http/problem.h"

#define API_HEATMAP_TITLE_MAX 200 /* characters of a title */

struct api_heatmap {
    double vmin, vmax;       /* when not auto */
    bool vmin_auto, vmax_auto;
    const char *title;       /* borrowed from the document, or NULL for attnd's */
};

/*
 * Reads doc's "heatmap" (absent or null: the defaults 0, 1, no title). Errors, each
 * invalid-value or unknown-field at /heatmap/...: not an object, a bound neither a number
 * from 0 to 1 nor "auto", vmin >= vmax when both are numbers, a title not a string or longer
 * than API_HEATMAP_TITLE_MAX characters.
 */
bool api_heatmap_read(const json_t *doc, const char *prefix, struct api_heatmap *out,
                      struct api_error *err);

/*
 * The bounds to draw with, given the smallest and largest weight drawn: "auto" takes
 * them; an empty range (all weights equal, or vmax <= vmin after auto) widens to one
 * unit above vmin so the colours stay defined.
 */
void api_heatmap_bounds(const struct api_heatmap *h, double smallest, double largest,
                        double *vmin, double *vmax);

#endif
