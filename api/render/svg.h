/*
 * api/render/svg.h — attention weights as an SVG heatmap, drawn as the second
 * lecture note draws them with matplotlib: imshow with the "Blues" colormap from 0
 * to 1, every cell annotated with its value to 2 decimals, key labels along x,
 * query labels along y, a colour bar and a title.
 *
 * A picture is a document (api_svg_begin ... api_svg_end) holding one or more
 * panels and one colour bar, so a multi-head answer can lay out a panel per head
 * and one for the mean with the same functions. Output is deterministic (integer
 * coordinates, fixed decimals): the same request gives the same bytes.
 *
 * Every text (titles, labels) is shown as render/text.h shows labels, a control or
 * format character as its escape "<U+202E>", then XML-escaped; labels are cut as
 * there.
 * Cells too small to hold "0.00" lose their annotations, and labels are thinned
 * to every n-th, so a big matrix stays a valid, readable picture. Blocked cells
 * are hatched; a fully masked row is hatched across and says so.
 *
 * Every cell is a group with a <title> (the browser's tooltip, a screen reader's
 * name): "query → key: value", the value exact (the shortest text that reads back as
 * the same double) or rounded as the request's round says, since the 2-decimal
 * annotation cannot tell 0.731 from 0.7311; a masked cell says "masked", a fully
 * masked row "every key masked". The tooltip's labels are kept to API_SVG_TIP_LABEL
 * columns, not the axis's API_TEXT_MAX_LABEL, and an axis label that was cut has its
 * longer text as its own tooltip, so a cut label can still be read.
 *
 * Not here: I/O, JSON, HTTP. Everything is appended to a struct api_buf.
 */
#ifndef API_RENDER_SVG_H
#define API_RENDER_SVG_H

#include <stdbool.h>
#include <stddef.h>

#include "api/json/buf.h"
#include "api/render/text.h"

/*
 * A block map drawn over a panel's cells (DESIGN.md, "Masks of today's training, and the
 * block map"): each tile of block_q x block_k cells (the last of a row or column may be
 * smaller) outlined by its kind, full solid dark blue, partial dashed orange, empty dotted
 * grey, never filled, so the weights and the hatching of blocked cells show through. Each
 * is a <rect class="attnd-tile" data-kind="full|partial|empty" data-tile="r c"> with its
 * <title>, and the picture gains a legend line of the three kinds. Borrowed.
 */
struct api_svg_tiles {
    const unsigned char *kinds; /* (rows, cols): 0 empty, 1 partial, 2 full */
    size_t rows, cols;          /* tiles: ceil(panel rows / block_q), ceil(cols / block_k) */
    size_t block_q, block_k;    /* cells a tile spans */
    const char *words[3];       /* the kinds' names in the answer's language: empty, partial, full */
    const char *tile;           /* "tile", in the answer's language: the tooltips' word */
    const char *legend;         /* written after the kinds' keys, e.g. the block and sparsity */
};

/* At most the bytes the tiles of a block map add to a picture (their tooltips' words at
 * most API_SVG_TILE_WORDS bytes), for admission. Saturates at SIZE_MAX. */
#define API_SVG_TILE_WORDS 256
size_t api_svg_tiles_bytes(size_t tiles);

/* One heatmap panel. Every pointer is borrowed. */
struct api_svg_heatmap {
    const double *data;        /* (rows, cols) weights in [0, 1], (i, j) at data[i*stride + j] */
    size_t rows, cols, stride;
    const double *blocked;     /* (rows, cols) with -inf where a cell was masked, or NULL */
    size_t blocked_stride;
    const unsigned char *empty_rows; /* (rows) nonzero when every key of the row is blocked, or NULL */
    struct api_labels row_labels, col_labels; /* queries on y, keys on x */
    const char *title;         /* the panel's title, e.g. "head 0"; NULL or "" for none */
    double vmin, vmax;         /* the colour scale's ends; vmax <= vmin (zeroed) means 0 to 1 */
    bool tip_rounded;          /* the tooltips' values rounded to tip_round decimals */
    int tip_round;             /* 0..15, as the request's round; else the shortest exact text */
    /* The words drawn around it, in the answer's language (render/ knows none): the axis
       names and, for the whole picture, the first panel's note on masked cells. NULL:
       "keys", "queries" and the English note. */
    const char *axis_x, *axis_y, *note;
    const struct api_svg_tiles *tiles; /* drawn over the cells, or NULL */
};

/* The fill of a cell whose value is not finite (a low format's overflow): red, off the
 * blue scale. */
#define API_SVG_NON_FINITE "#b2182b"

/* Display columns of a label kept in a tooltip (longer ones end in "…"). */
#define API_SVG_TIP_LABEL 64

/* Where a panel's parts go, relative to its top-left corner, in pixels. */
struct api_svg_layout {
    int width, height;         /* the whole panel */
    int grid_x, grid_y;        /* the cells' top-left corner */
    int cell;                  /* side of one cell */
    int label_w;               /* room for the query labels */
    int col_label_h;           /* room for the key labels */
    bool rotate_cols;          /* key labels written vertically */
    bool annotate;             /* cells carry their values */
    size_t step_rows, step_cols; /* every n-th label is written */
};

#define API_SVG_COLORBAR_WIDTH 64 /* the colour bar with its tick labels */
#define API_SVG_MARGIN 12
#define API_SVG_TITLE_H 34         /* the document's title line */

void api_svg_layout(const struct api_svg_heatmap *h, struct api_svg_layout *out);

/*
 * Opens the document: the XML declaration, <svg> of width x height, its <title>,
 * a white background and the shared definitions (the colour gradient, the hatch),
 * and the title line written at the top. subtitle (or NULL) is a smaller second part.
 */
void api_svg_begin(struct api_buf *b, int width, int height, const char *title,
                   const char *subtitle);

/* Draws one panel with its top-left corner at (x, y). */
void api_svg_panel(struct api_buf *b, const struct api_svg_heatmap *h, int x, int y);

/* The colour bar, 0 at the bottom and 1 at the top, `height` pixels tall at (x, y). */
void api_svg_colorbar(struct api_buf *b, int x, int y, int height);

/* The same from vmin to vmax (its ticks with as many decimals as the range needs). */
void api_svg_colorbar_range(struct api_buf *b, int x, int y, int height, double vmin,
                            double vmax);

/* A note line (e.g. about hatched rows) with its baseline at (x, y). */
void api_svg_note(struct api_buf *b, int x, int y, const char *text);

/* Closes the document. */
void api_svg_end(struct api_buf *b);

/* A whole picture of one panel: title, panel, colour bar, and a note when anything is masked. */
void api_svg_heatmap_document(struct api_buf *b, const struct api_svg_heatmap *h,
                              const char *title, const char *subtitle);

/*
 * Several panels in one picture (multi-head: one per head, then the mean), laid out
 * left to right, at most `per_row` a row (0 means 4), with one colour bar at the
 * right of the first row and one title; a note when any panel has masked cells.
 */
void api_svg_panels_document(struct api_buf *b, const struct api_svg_heatmap *panels,
                             size_t n, size_t per_row, const char *title,
                             const char *subtitle);

/*
 * The bytes the tooltips add to one panel of rows x cols cells with these labels, at
 * most: for admission, which counts an answer before it is drawn. Saturates at
 * SIZE_MAX.
 */
size_t api_svg_tips_bytes(const struct api_labels *row_labels, size_t rows,
                          const struct api_labels *col_labels, size_t cols);

/* matplotlib's Blues at v (clamped to [0, 1]) as "#rrggbb"; buf holds 8 bytes. */
void api_svg_blues(char *buf, double v);

/* The annotation colour that reads on that fill: dark grey on light cells, white on dark. */
const char *api_svg_text_colour(double v);

#endif
