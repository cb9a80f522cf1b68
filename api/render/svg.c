/*
 * api/render/svg.c — the SVG heatmap (see svg.h).
 *
 * Sizes are in pixels and always integers, so the bytes depend on the request
 * alone. Text widths are estimated (7 px a display column at 12 px type), which is
 * all the layout needs: room for labels, and whether key labels must turn.
 */
#include "api/render/svg.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/numfmt.h"

/* matplotlib's Blues (ColorBrewer's 9 classes), the anchors it interpolates, 0..255. */
static const unsigned char BLUES[9][3] = {
    {247, 251, 255}, {222, 235, 247}, {198, 219, 239}, {158, 202, 225}, {107, 174, 214},
    {66, 146, 198},  {33, 113, 181},  {8, 81, 156},    {8, 48, 107},
};

/*
 * The colour as matplotlib computes it: a 256-entry table interpolated from the
 * anchors at i/255, looked up at floor(v * 256) (1.0 takes the last entry), each
 * channel rounded half to even as to_hex does.
 */
static void blues_rgb(double v, double rgb[3])
{
    if (!(v > 0)) /* NaN too */
        v = 0;
    if (v > 1)
        v = 1;
    int idx = (int)(v * 256);
    if (idx > 255)
        idx = 255;
    double x = (double)idx / 255.0 * 8.0; /* position among the 9 anchors */
    int a = (int)x;
    if (a > 7)
        a = 7;
    double f = x - a;
    for (int c = 0; c < 3; c++) {
        double lo = BLUES[a][c] / 255.0, hi = BLUES[a + 1][c] / 255.0;
        rgb[c] = nearbyint((lo + (hi - lo) * f) * 255.0);
    }
}

void api_svg_blues(char *buf, double v)
{
    double rgb[3];
    blues_rgb(v, rgb);
    snprintf(buf, 8, "#%02x%02x%02x", (unsigned)rgb[0], (unsigned)rgb[1], (unsigned)rgb[2]);
}

/* seaborn's rule for annotations: relative luminance above 0.408 takes dark text. */
const char *api_svg_text_colour(double v)
{
    double rgb[3], lum = 0;
    static const double weight[3] = { 0.2126, 0.7152, 0.0722 };
    blues_rgb(v, rgb);
    for (int c = 0; c < 3; c++) {
        double s = rgb[c] / 255.0;
        s = s <= 0.03928 ? s / 12.92 : pow((s + 0.055) / 1.055, 2.4);
        lum += weight[c] * s;
    }
    return lum > 0.408 ? "#262626" : "#ffffff";
}

/* ---- layout ---- */

#define PX_PER_COL 7   /* estimated width of one display column of 12 px type */
#define AXIS_TITLE 18  /* room for "queries" (left) and "keys" (below) */
#define PANEL_TITLE 22
#define MIN_ANNOTATED 30 /* the smallest cell that holds "0.00" */
#define MIN_LABELED 14   /* the smallest spacing for one label per row or column */

static size_t label_px(const struct api_labels *l, size_t i)
{
    char tmp[API_TEXT_LABEL];
    api_text_label(tmp, l, i);
    return api_text_width(tmp) * PX_PER_COL;
}

void api_svg_layout(const struct api_svg_heatmap *h, struct api_svg_layout *L)
{
    memset(L, 0, sizeof *L);
    size_t longest = h->rows > h->cols ? h->rows : h->cols;
    size_t cell = 480 / (longest > 0 ? longest : 1);
    cell = cell > 56 ? 56 : cell < 2 ? 2 : cell;
    L->cell = (int)cell;
    L->annotate = cell >= MIN_ANNOTATED;
    L->step_rows = L->step_cols = cell >= MIN_LABELED ? 1 : (MIN_LABELED + cell - 1) / cell;

    size_t rw = 0, cw = 0;
    for (size_t i = 0; i < h->rows; i += L->step_rows) {
        size_t w = label_px(&h->row_labels, i);
        rw = w > rw ? w : rw;
    }
    for (size_t j = 0; j < h->cols; j += L->step_cols) {
        size_t w = label_px(&h->col_labels, j);
        cw = w > cw ? w : cw;
    }
    L->label_w = (int)(rw < 14 ? 24 : rw + 10);
    L->rotate_cols = cw + 4 > cell * L->step_cols;
    L->col_label_h = L->rotate_cols ? (int)cw + 12 : 20;

    int title_h = h->title != NULL && h->title[0] != '\0' ? PANEL_TITLE : 0;
    L->grid_x = AXIS_TITLE + L->label_w;
    L->grid_y = title_h;
    L->width = L->grid_x + (int)(h->cols * cell) + 8;
    L->height = L->grid_y + (int)(h->rows * cell) + L->col_label_h + AXIS_TITLE;
}

/* ---- drawing ---- */

/*
 * s as the text of an element: each character shown as render/text.h shows it (a
 * control or format character as its escape), then XML-escaped, so "<U+202E>" is
 * written "&lt;U+202E&gt;" and no title or label can reorder the picture's text.
 */
static void put_text(struct api_buf *b, const char *s)
{
    while (*s != '\0') {
        struct api_text_char c;
        s += api_text_char_next(s, &c);
        api_buf_xml(b, c.bytes);
    }
}

void api_svg_begin(struct api_buf *b, int width, int height, const char *title,
                   const char *subtitle)
{
    api_buf_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                      "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\" "
                      "role=\"img\">\n<title>", width, height, width, height);
    put_text(b, title);
    if (subtitle != NULL && subtitle[0] != '\0') {
        api_buf_puts(b, " (");
        put_text(b, subtitle);
        api_buf_puts(b, ")");
    }
    api_buf_puts(b, "</title>\n<defs>\n"
                    "<linearGradient id=\"attnd-blues\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n");
    for (int k = 0; k < 9; k++)
        api_buf_printf(b, "<stop offset=\"%g\" stop-color=\"#%02x%02x%02x\"/>\n", k / 8.0,
                       BLUES[k][0], BLUES[k][1], BLUES[k][2]);
    api_buf_puts(b, "</linearGradient>\n"
                    "<pattern id=\"attnd-hatch\" width=\"6\" height=\"6\" "
                    "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
                    "<rect width=\"6\" height=\"6\" fill=\"#e0e0e0\"/>"
                    "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#9a9a9a\" "
                    "stroke-width=\"2\"/></pattern>\n</defs>\n");
    api_buf_printf(b, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width, height);
    api_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"16\" font-weight=\"bold\" "
                      "fill=\"#1a1a1a\">", API_SVG_MARGIN, API_SVG_MARGIN + 14);
    put_text(b, title);
    api_buf_puts(b, "</text>\n");
    if (subtitle != NULL && subtitle[0] != '\0') {
        api_buf_printf(b, "<text x=\"%d\" y=\"%d\" fill=\"#555555\">", API_SVG_MARGIN,
                       API_SVG_MARGIN + 30);
        put_text(b, subtitle);
        api_buf_puts(b, "</text>\n");
    }
}

/* ---- tooltips ---- */

/* The longest number a tooltip writes: a shortest double or a rounded one. */
#define TIP_NUMBER API_NUMBER_MAX
/* "<g><title>", " → ", ": ", "</title>\n", "</g>\n" around a cell's own lines. */
#define TIP_FIXED (10 + 5 + 2 + 9 + 5)

static bool is_xml_special(const struct api_text_char *c)
{
    return c->len == 1 && strchr("&<>\"'", c->bytes[0]) != NULL;
}

/*
 * The label of index i as a tooltip shows it, or (b NULL) only its bytes at most:
 * the name shown as render/text.h shows it, kept to API_SVG_TIP_LABEL columns, then
 * XML-escaped; or prefix + i.
 */
static size_t tip_label(struct api_buf *b, const struct api_labels *l, size_t i)
{
    if (l->names == NULL || i >= l->n || l->names[i] == NULL) {
        char tmp[API_TEXT_LABEL];
        api_text_label(tmp, l, i);
        if (b != NULL)
            api_buf_xml(b, tmp);
        return strlen(tmp);
    }
    const char *s = l->names[i];
    size_t total = api_text_width(s);
    size_t budget = total > API_SVG_TIP_LABEL ? API_SVG_TIP_LABEL - 1 : API_SVG_TIP_LABEL;
    size_t cols = 0, bytes = 0;
    while (*s != '\0') {
        struct api_text_char c;
        size_t n = api_text_char_next(s, &c);
        if (cols + c.cols > budget)
            break;
        if (b != NULL)
            api_buf_xml(b, c.bytes);
        bytes += is_xml_special(&c) ? 6 : c.len;
        cols += c.cols;
        s += n;
    }
    if (total > API_SVG_TIP_LABEL) {
        if (b != NULL)
            api_buf_puts(b, "\xE2\x80\xA6"); /* … */
        bytes += 3;
    }
    return bytes;
}

static void tip_value(struct api_buf *b, const struct api_svg_heatmap *h, double v)
{
    char num[TIP_NUMBER];
    api_format_double(h->tip_rounded ? api_round_decimals(v, h->tip_round) : v, num);
    api_buf_puts(b, num);
}

/*
 * One axis's labels as tooltips show them, each made once: a panel names each label
 * in a whole row or column of cells, and escaping it every time took most of the
 * time the tooltips cost. text holds them one after another, label i from at[i] to
 * at[i + 1]. On failure text.failed is set, and the page fails with it.
 */
struct tip_names {
    struct api_buf text;
    size_t *at; /* n + 1 offsets; owned */
};

static void tip_names_init(struct tip_names *t, const struct api_labels *l, size_t n)
{
    api_buf_init(&t->text);
    t->at = malloc((n + 1) * sizeof *t->at);
    if (t->at == NULL) {
        t->text.failed = true;
        return;
    }
    t->at[0] = 0;
    for (size_t i = 0; i < n; i++) {
        tip_label(&t->text, l, i);
        t->at[i + 1] = t->text.len;
    }
}

static void tip_names_deinit(struct tip_names *t)
{
    api_buf_deinit(&t->text);
    free(t->at);
}

static void tip_name(struct api_buf *b, const struct tip_names *t, size_t i)
{
    /* Empty labels leave the buffer unallocated: no offset into a NULL pointer. */
    if (!t->text.failed && t->at[i + 1] > t->at[i])
        api_buf_append(b, t->text.data + t->at[i], t->at[i + 1] - t->at[i]);
}

/*
 * "<g><title>q → k: 0.7310585786300049</title>\n": a cell's group and its tooltip.
 * v NULL is a masked cell ("masked"); with j SIZE_MAX too, a fully masked row.
 */
static void tip_open(struct api_buf *b, const struct api_svg_heatmap *h,
                     const struct tip_names *rows, const struct tip_names *cols, size_t i,
                     size_t j, const double *v)
{
    api_buf_puts(b, "<g><title>");
    tip_name(b, rows, i);
    if (v == NULL && j == SIZE_MAX) {
        api_buf_puts(b, ": every key masked");
    } else {
        api_buf_puts(b, " \xE2\x86\x92 "); /* → */
        tip_name(b, cols, j);
        if (v == NULL)
            api_buf_puts(b, ": masked");
        else {
            api_buf_puts(b, ": ");
            tip_value(b, h, *v);
        }
    }
    api_buf_puts(b, "</title>\n");
}

/* A cell whose value is not finite: a red square, "inf", "-inf" or "nan" in its tooltip
 * and, when cells carry their values (font > 0), on it. */
static void draw_non_finite(struct api_buf *b, const struct tip_names *rows,
                            const struct tip_names *cols, size_t i, size_t j, double v, int x,
                            int y, int c, int font)
{
    const char *text = isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
    api_buf_puts(b, "<g><title>");
    tip_name(b, rows, i);
    api_buf_puts(b, " \xE2\x86\x92 "); /* → */
    tip_name(b, cols, j);
    api_buf_printf(b, ": %s</title>\n", text);
    api_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", x,
                   y, c, c, API_SVG_NON_FINITE);
    if (font > 0)
        api_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
                          "dominant-baseline=\"central\" font-size=\"%d\" "
                          "fill=\"#ffffff\">%s</text>\n", x + c / 2, y + c / 2, font, text);
    api_buf_puts(b, "</g>\n");
}

static size_t add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t mul_sat(size_t a, size_t b)
{
    return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}

size_t api_svg_tips_bytes(const struct api_labels *row_labels, size_t rows,
                          const struct api_labels *col_labels, size_t cols)
{
    size_t row_bytes = 0, col_bytes = 0;
    for (size_t i = 0; i < rows; i++)
        row_bytes = add_sat(row_bytes, tip_label(NULL, row_labels, i));
    for (size_t j = 0; j < cols; j++)
        col_bytes = add_sat(col_bytes, tip_label(NULL, col_labels, j));
    /* Each cell names its row and its column; each axis label may carry its own. */
    size_t cells = mul_sat(mul_sat(rows, cols), TIP_FIXED + TIP_NUMBER);
    size_t named = add_sat(mul_sat(row_bytes, cols), mul_sat(col_bytes, rows));
    size_t axes = add_sat(add_sat(row_bytes, col_bytes), mul_sat(rows + cols, 20));
    return add_sat(add_sat(cells, named), axes);
}

static bool cell_blocked(const struct api_svg_heatmap *h, size_t i, size_t j)
{
    return h->blocked != NULL && isinf(h->blocked[i * h->blocked_stride + j]) &&
           h->blocked[i * h->blocked_stride + j] < 0;
}

static bool row_empty(const struct api_svg_heatmap *h, size_t i)
{
    return h->empty_rows != NULL && h->empty_rows[i];
}

/* v on the panel's colour scale, 0 at vmin and 1 at vmax (clamped when drawn). */
static double on_scale(const struct api_svg_heatmap *h, double v)
{
    if (!(h->vmax > h->vmin))
        return v;
    return (v - h->vmin) / (h->vmax - h->vmin);
}

static void draw_cells(struct api_buf *b, const struct api_svg_heatmap *h,
                       const struct api_svg_layout *L, int gx, int gy)
{
    int c = L->cell;
    int font = c >= 44 ? 12 : 10;
    struct tip_names rows, cols;
    tip_names_init(&rows, &h->row_labels, h->rows);
    tip_names_init(&cols, &h->col_labels, h->cols);
    if (rows.text.failed || cols.text.failed)
        b->failed = true; /* the tooltips cannot name their cells: a 503, not a wrong page */
    for (size_t i = 0; i < h->rows; i++) {
        int y = gy + (int)i * c;
        if (row_empty(h, i)) {
            tip_open(b, h, &rows, &cols, i, SIZE_MAX, NULL);
            api_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                              "fill=\"url(#attnd-hatch)\"/>\n", gx, y, (int)h->cols * c, c);
            if ((int)h->cols * c >= 110 && c >= MIN_LABELED)
                api_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
                                  "dominant-baseline=\"central\" font-size=\"11\" "
                                  "fill=\"#333333\">every key masked</text>\n",
                               gx + (int)h->cols * c / 2, y + c / 2);
            api_buf_puts(b, "</g>\n");
            continue;
        }
        for (size_t j = 0; j < h->cols; j++) {
            int x = gx + (int)j * c;
            double v = h->data[i * h->stride + j];
            if (cell_blocked(h, i, j)) {
                tip_open(b, h, &rows, &cols, i, j, NULL);
                api_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                                  "fill=\"url(#attnd-hatch)\"/>\n</g>\n", x, y, c, c);
                continue;
            }
            if (!isfinite(v)) { /* a low format's overflow (precision): red, named */
                draw_non_finite(b, &rows, &cols, i, j, v, x, y, c, L->annotate ? font : 0);
                continue;
            }
            tip_open(b, h, &rows, &cols, i, j, &v);
            char fill[8];
            api_svg_blues(fill, on_scale(h, v));
            api_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
                           x, y, c, c, fill);
            if (L->annotate)
                api_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
                                  "dominant-baseline=\"central\" font-size=\"%d\" "
                                  "fill=\"%s\">%.2f</text>\n",
                               x + c / 2, y + c / 2, font, api_svg_text_colour(on_scale(h, v)),
                               isfinite(v) ? v : 0.0);
            api_buf_puts(b, "</g>\n");
        }
    }
    tip_names_deinit(&rows);
    tip_names_deinit(&cols);
}

/* ---- tiles ---- */

/* How each kind of tile is outlined, indexed by its value: empty, partial, full. */
static const struct {
    const char *name, *stroke, *width, *dash;
} TILE_STYLE[3] = {
    { "empty", "#737373", "1", "2 2" },
    { "partial", "#d94801", "2", "6 3" },
    { "full", "#08306b", "2", "none" },
};

static size_t tiles_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* One tile's outline at (x, y), w x h pixels, with its tooltip. */
static void tile_rect(struct api_buf *b, const struct api_svg_tiles *t, size_t tr, size_t tc,
                      int x, int y, int w, int h)
{
    unsigned char kind = t->kinds[tr * t->cols + tc];
    if (kind > 2)
        kind = 0;
    int in = w >= 8 && h >= 8; /* each tile its own edge, when there is room for it */
    api_buf_printf(b, "<rect class=\"attnd-tile\" data-kind=\"%s\" data-tile=\"%zu %zu\" "
                      "x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                      "stroke=\"%s\" stroke-width=\"%s\" stroke-dasharray=\"%s\"><title>",
                   TILE_STYLE[kind].name, tr, tc, x + in, y + in, w - 2 * in, h - 2 * in,
                   TILE_STYLE[kind].stroke, TILE_STYLE[kind].width, TILE_STYLE[kind].dash);
    put_text(b, t->tile != NULL ? t->tile : "tile");
    api_buf_printf(b, " (%zu, %zu): ", tr, tc);
    put_text(b, t->words[kind] != NULL ? t->words[kind] : TILE_STYLE[kind].name);
    api_buf_puts(b, "</title></rect>\n");
}

/* The tiles over a panel's cells, its grid at (gx, gy) in cells of c pixels; empty tiles
 * first, then partial, then full, so the stronger outline lies on a shared edge. */
static void draw_tiles(struct api_buf *b, const struct api_svg_heatmap *h, int gx, int gy, int c)
{
    const struct api_svg_tiles *t = h->tiles;
    if (t->block_q == 0 || t->block_k == 0)
        return;
    for (unsigned char kind = 0; kind < 3; kind++)
        for (size_t tr = 0; tr < t->rows; tr++)
            for (size_t tc = 0; tc < t->cols; tc++) {
                size_t i0 = tr * t->block_q, j0 = tc * t->block_k;
                if (t->kinds[tr * t->cols + tc] != kind || i0 >= h->rows || j0 >= h->cols)
                    continue;
                size_t n_i = tiles_min(t->block_q, h->rows - i0);
                size_t n_j = tiles_min(t->block_k, h->cols - j0);
                tile_rect(b, t, tr, tc, gx + (int)j0 * c, gy + (int)i0 * c, (int)n_j * c,
                          (int)n_i * c);
            }
}

size_t api_svg_tiles_bytes(size_t tiles)
{
    /* A tile's rect, attributes and numbers (about 260 bytes), its tooltip's words. */
    return mul_sat(tiles, 320 + API_SVG_TILE_WORDS);
}

/* The legend line: a key of each kind (full, partial, empty), then t->legend. */
#define TILES_LEGEND_H 18
static void tiles_legend(struct api_buf *b, const struct api_svg_tiles *t, int x, int y)
{
    api_buf_puts(b, "<g class=\"attnd-tile-legend\">\n");
    for (int kind = 2; kind >= 0; kind--) {
        const char *word = t->words[kind] != NULL ? t->words[kind] : TILE_STYLE[kind].name;
        api_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"18\" height=\"10\" fill=\"none\" "
                          "stroke=\"%s\" stroke-width=\"%s\" stroke-dasharray=\"%s\"/>\n",
                       x, y - 9, TILE_STYLE[kind].stroke, TILE_STYLE[kind].width,
                       TILE_STYLE[kind].dash);
        api_svg_note(b, x + 24, y, word);
        x += 24 + (int)api_text_width(word) * PX_PER_COL + 14;
    }
    if (t->legend != NULL)
        api_svg_note(b, x, y, t->legend);
    api_buf_puts(b, "</g>\n");
}

/* The legend line's width, for the picture's. */
static int tiles_legend_w(const struct api_svg_tiles *t)
{
    int w = 0;
    for (int kind = 0; kind < 3; kind++)
        w += 24 + (int)api_text_width(t->words[kind] != NULL ? t->words[kind]
                                                             : TILE_STYLE[kind].name) *
                      PX_PER_COL + 14;
    return w + (t->legend != NULL ? (int)api_text_width(t->legend) * PX_PER_COL : 0);
}

/* An axis label's text (cut) and "</text>"; a cut one carries its longer text as a tooltip. */
static void put_label(struct api_buf *b, const char *shown, const struct api_labels *l, size_t i)
{
    bool cut = l->names != NULL && i < l->n && l->names[i] != NULL &&
               api_text_width(l->names[i]) > API_TEXT_MAX_LABEL;
    if (cut) {
        api_buf_puts(b, "<title>");
        tip_label(b, l, i);
        api_buf_puts(b, "</title>");
    }
    put_text(b, shown);
    api_buf_puts(b, "</text>\n");
}

void api_svg_panel(struct api_buf *b, const struct api_svg_heatmap *h, int x, int y)
{
    struct api_svg_layout L;
    api_svg_layout(h, &L);
    int c = L.cell;
    int gx = x + L.grid_x, gy = y + L.grid_y;
    int gw = (int)h->cols * c, gh = (int)h->rows * c;
    char tmp[API_TEXT_LABEL];

    api_buf_puts(b, "<g>\n");
    if (h->title != NULL && h->title[0] != '\0') {
        api_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"13\" "
                          "font-weight=\"bold\" fill=\"#1a1a1a\">", gx + gw / 2, y + 15);
        put_text(b, h->title);
        api_buf_puts(b, "</text>\n");
    }
    draw_cells(b, h, &L, gx, gy);
    if (h->tiles != NULL)
        draw_tiles(b, h, gx, gy, c);
    api_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                      "stroke=\"#808080\"/>\n", gx, gy, gw, gh);

    /* Query labels on the left, key labels below, as imshow's ticks. */
    for (size_t i = 0; i < h->rows; i += L.step_rows) {
        api_text_label(tmp, &h->row_labels, i);
        api_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" "
                          "dominant-baseline=\"central\" fill=\"#1a1a1a\">",
                       gx - 6, gy + (int)i * c + c / 2);
        put_label(b, tmp, &h->row_labels, i);
    }
    for (size_t j = 0; j < h->cols; j += L.step_cols) {
        int cx = gx + (int)j * c + c / 2;
        api_text_label(tmp, &h->col_labels, j);
        if (L.rotate_cols)
            api_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" "
                              "dominant-baseline=\"central\" transform=\"rotate(-90 %d %d)\" "
                              "fill=\"#1a1a1a\">", cx, gy + gh + 6, cx, gy + gh + 6);
        else
            api_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
                              "fill=\"#1a1a1a\">", cx, gy + gh + 15);
        put_label(b, tmp, &h->col_labels, j);
    }
    api_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#555555\">",
                   gx + gw / 2, gy + gh + L.col_label_h + 12);
    put_text(b, h->axis_x != NULL ? h->axis_x : "keys");
    api_buf_puts(b, "</text>\n");
    api_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
                      "transform=\"rotate(-90 %d %d)\" fill=\"#555555\">",
                   x + 12, gy + gh / 2, x + 12, gy + gh / 2);
    put_text(b, h->axis_y != NULL ? h->axis_y : "queries");
    api_buf_puts(b, "</text>\n");
    api_buf_puts(b, "</g>\n");
}

void api_svg_colorbar(struct api_buf *b, int x, int y, int height)
{
    api_svg_colorbar_range(b, x, y, height, 0, 1);
}

void api_svg_colorbar_range(struct api_buf *b, int x, int y, int height, double vmin,
                            double vmax)
{
    double range = vmax - vmin;
    /* 0.0 … 1.0 as the note's colour bar; narrower ranges need more digits per tick. */
    int decimals = range >= 1 ? 1 : range >= 0.1 ? 2 : range >= 0.01 ? 3 : 4;
    api_buf_printf(b, "<g>\n<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"%d\" "
                      "fill=\"url(#attnd-blues)\" stroke=\"#808080\"/>\n", x, y, height);
    for (int t = 0; t <= 5; t++) {
        int ty = y + height - t * height / 5;
        api_buf_printf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#808080\"/>"
                          "<text x=\"%d\" y=\"%d\" dominant-baseline=\"central\" "
                          "font-size=\"11\" fill=\"#1a1a1a\">%.*f</text>\n",
                       x + 14, ty, x + 18, ty, x + 21, ty, decimals, vmin + range * t / 5.0);
    }
    api_buf_puts(b, "</g>\n");
}

void api_svg_note(struct api_buf *b, int x, int y, const char *text)
{
    api_buf_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#555555\">", x, y);
    put_text(b, text);
    api_buf_puts(b, "</text>\n");
}

void api_svg_end(struct api_buf *b)
{
    api_buf_puts(b, "</svg>\n");
}

#define NOTE "hatched: masked cells; a hatched row attends to no key (its weights are 0)"
#define NOTE_W 460 /* its width at 11 px */

static bool any_masked(const struct api_svg_heatmap *h)
{
    for (size_t i = 0; i < h->rows; i++) {
        if (row_empty(h, i))
            return true;
        for (size_t j = 0; j < h->cols; j++)
            if (cell_blocked(h, i, j))
                return true;
    }
    return false;
}

void api_svg_panels_document(struct api_buf *b, const struct api_svg_heatmap *panels,
                             size_t n, size_t per_row, const char *title,
                             const char *subtitle)
{
    if (per_row == 0)
        per_row = 4;
    if (n == 0) {
        api_svg_begin(b, 200, 60, title, subtitle);
        api_svg_end(b);
        return;
    }
    /* First pass: where each panel goes, the size of the whole. */
    int top = API_SVG_MARGIN + API_SVG_TITLE_H + 6;
    int x = API_SVG_MARGIN, y = top, row_h = 0, width = 0, bar_x = 0, bar_y = 0, bar_h = 0;
    bool masked = false;
    for (size_t p = 0; p < n; p++) {
        struct api_svg_layout L;
        api_svg_layout(&panels[p], &L);
        if (p > 0 && p % per_row == 0) {
            y += row_h + 8;
            x = API_SVG_MARGIN;
            row_h = 0;
        }
        if (p == 0) {
            bar_y = y + L.grid_y;
            int grid_h = (int)panels[0].rows * L.cell;
            bar_h = grid_h < 120 ? 120 : grid_h;
            row_h = L.grid_y + bar_h + 8;
        }
        x += L.width + 8;
        row_h = L.height > row_h ? L.height : row_h;
        if (p + 1 == per_row || p + 1 == n)
            bar_x = bar_x == 0 ? x : bar_x; /* right of the first row */
        width = x > width ? x : width;
        masked = masked || any_masked(&panels[p]);
    }
    int note_h = masked ? 18 : 0;
    const struct api_svg_tiles *tiles = panels[0].tiles; /* its legend, under the note */
    int legend_h = tiles != NULL ? TILES_LEGEND_H : 0;
    width += API_SVG_COLORBAR_WIDTH + API_SVG_MARGIN;
    int height = y + row_h + note_h + legend_h + API_SVG_MARGIN;
    /* Wide enough for the title line, the subtitle and the note, not only the panels. */
    int texts_w = (int)(api_text_width(title) * 10);
    if (subtitle != NULL && (int)api_text_width(subtitle) * PX_PER_COL > texts_w)
        texts_w = (int)api_text_width(subtitle) * PX_PER_COL;
    if (masked && NOTE_W > texts_w)
        texts_w = NOTE_W;
    if (tiles != NULL && tiles_legend_w(tiles) > texts_w)
        texts_w = tiles_legend_w(tiles);
    if (width < texts_w + 2 * API_SVG_MARGIN)
        width = texts_w + 2 * API_SVG_MARGIN;

    /* Second pass: draw. */
    api_svg_begin(b, width, height, title, subtitle);
    x = API_SVG_MARGIN;
    y = top;
    row_h = 0;
    for (size_t p = 0; p < n; p++) {
        struct api_svg_layout L;
        api_svg_layout(&panels[p], &L);
        if (p > 0 && p % per_row == 0) {
            y += row_h + 8;
            x = API_SVG_MARGIN;
            row_h = 0;
        }
        if (p == 0)
            row_h = L.grid_y + bar_h + 8;
        api_svg_panel(b, &panels[p], x, y);
        x += L.width + 8;
        row_h = L.height > row_h ? L.height : row_h;
    }
    if (panels[0].vmax > panels[0].vmin)
        api_svg_colorbar_range(b, bar_x, bar_y, bar_h, panels[0].vmin, panels[0].vmax);
    else
        api_svg_colorbar(b, bar_x, bar_y, bar_h);
    if (masked)
        api_svg_note(b, API_SVG_MARGIN, y + row_h + 12,
                     n > 0 && panels[0].note != NULL ? panels[0].note : NOTE);
    if (tiles != NULL)
        tiles_legend(b, tiles, API_SVG_MARGIN, y + row_h + note_h + 12);
    api_svg_end(b);
}

void api_svg_heatmap_document(struct api_buf *b, const struct api_svg_heatmap *h,
                              const char *title, const char *subtitle)
{
    api_svg_panels_document(b, h, 1, 1, title, subtitle);
}
