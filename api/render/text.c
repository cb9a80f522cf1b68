/*
 * api/render/text.c — aligned plain-text matrices and tables (see text.h).
 *
 * Widths are computed over the cells that will be shown only, so a 512 x 512
 * matrix costs its six shown rows, not all of them.
 */
#include "api/render/text.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/numfmt.h"
#include "api/json/utf8.h"

/* ---- display width ---- */

#define UTF8_INVALID 0xFFFFFFFFu /* not a code point: the byte is shown as '?' */

/*
 * Decodes one character at s (api/json/utf8.h: RFC 3629, no overlong forms,
 * surrogates or code points past U+10FFFF); returns its length. A byte that does
 * not start a well-formed sequence counts as one, decoded as UTF8_INVALID, so
 * nothing but UTF-8 is written whoever calls the renderers. Never reads past a NUL.
 */
static size_t utf8_next(const unsigned char *s, uint32_t *cp)
{
    size_t n = api_utf8_decode(s, API_UTF8_MAX, cp); /* stops at a NUL, see utf8.h */
    if (n > 0)
        return n;
    *cp = UTF8_INVALID;
    return 1;
}

struct range {
    uint32_t lo, hi;
};

/*
 * Shown as escapes, never written: C0, DEL and C1 controls, every format character
 * (Unicode 15's general category Cf: the bidi embeddings, overrides and isolates,
 * the marks U+200E, U+200F and U+061C, zero-width spaces and joiners, the soft
 * hyphen, the BOM, tags; U+2065 is unassigned but default-ignorable), and the line
 * and paragraph separators U+2028 and U+2029. Written raw, any of them could hide,
 * reorder or break a terminal line or an SVG text while the layout counts none.
 */
static const struct range escaped[] = {
    {0x0000, 0x001F}, {0x007F, 0x009F}, {0x00AD, 0x00AD}, {0x0600, 0x0605}, {0x061C, 0x061C},
    {0x06DD, 0x06DD}, {0x070F, 0x070F}, {0x0890, 0x0891}, {0x08E2, 0x08E2}, {0x180E, 0x180E},
    {0x200B, 0x200F}, {0x2028, 0x202E}, {0x2060, 0x206F}, {0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB},
    {0x110BD, 0x110BD}, {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3},
    {0x1D173, 0x1D17A}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F},
};

/* Zero-width code points shown as they are: combining marks, variation selectors, medial jamo. */
static const struct range zero_width[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x05BF, 0x05C7}, {0x0610, 0x061A},
    {0x064B, 0x065F}, {0x0670, 0x0670}, {0x06D6, 0x06DC}, {0x06DF, 0x06E4}, {0x0900, 0x0902},
    {0x093A, 0x094F}, {0x0E31, 0x0E31}, {0x0E34, 0x0E3A}, {0x0E47, 0x0E4E}, {0x1160, 0x11FF},
    {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF}, {0x20D0, 0x20FF}, {0x302A, 0x302D}, {0x3099, 0x309A},
    {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0x1F3FB, 0x1F3FF}, {0xE0000, 0xE0FFF},
};

/* East Asian Wide and Fullwidth blocks (Unicode's EastAsianWidth W/F), and emoji. */
static const struct range wide[] = {
    {0x1100, 0x115F}, {0x2329, 0x232A}, {0x2E80, 0x303E}, {0x3041, 0x33FF}, {0x3400, 0x4DBF},
    {0x4E00, 0x9FFF}, {0xA000, 0xA4CF}, {0xA960, 0xA97F}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF},
    {0xFE10, 0xFE19}, {0xFE30, 0xFE6F}, {0xFF00, 0xFF60}, {0xFFE0, 0xFFE6}, {0x1F300, 0x1F64F},
    {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};

#define N_RANGES(r) (sizeof(r) / sizeof(r)[0])

static bool in_ranges(uint32_t cp, const struct range *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (cp >= r[i].lo && cp <= r[i].hi)
            return true;
    return false;
}

static size_t cp_width(uint32_t cp)
{
    if (in_ranges(cp, zero_width, N_RANGES(zero_width)))
        return 0;
    if (in_ranges(cp, wide, N_RANGES(wide)))
        return 2;
    return 1;
}

size_t api_text_char_next(const char *s, struct api_text_char *out)
{
    uint32_t cp;
    size_t n = utf8_next((const unsigned char *)s, &cp);
    if (cp >= 0x20 && cp < 0x7F) { /* printable ASCII first: most of what is measured */
        out->bytes[0] = s[0];
        out->bytes[1] = '\0';
        out->len = out->cols = 1;
    } else if (cp == UTF8_INVALID) {
        memcpy(out->bytes, "?", 2);
        out->len = out->cols = 1;
    } else if (in_ranges(cp, escaped, N_RANGES(escaped))) {
        int k = snprintf(out->bytes, sizeof out->bytes, "<U+%04" PRIX32 ">", cp);
        out->len = out->cols = (size_t)k; /* ASCII: one column a byte */
    } else {
        memcpy(out->bytes, s, n);
        out->bytes[n] = '\0';
        out->len = n;
        out->cols = cp_width(cp);
    }
    return n;
}

size_t api_text_width(const char *s)
{
    size_t w = 0;
    while (*s != '\0') {
        struct api_text_char c;
        s += api_text_char_next(s, &c);
        w += c.cols;
    }
    return w;
}

/*
 * s shown visibly (api_text_char_next), cut to max_cols display columns (the last
 * kept column becomes "…" when cut) at a character or escape boundary, never inside
 * one, into out (out_len >= 4 * max_cols + 4).
 */
static void sanitize(char *out, size_t out_len, const char *s, size_t max_cols)
{
    size_t total = api_text_width(s);
    size_t budget = total > max_cols ? max_cols - 1 : max_cols;
    size_t w = 0, o = 0;
    while (*s != '\0') {
        struct api_text_char c;
        size_t n = api_text_char_next(s, &c);
        if (w + c.cols > budget || o + c.len + 4 > out_len)
            break;
        memcpy(out + o, c.bytes, c.len);
        o += c.len;
        w += c.cols;
        s += n;
    }
    if (total > max_cols)
        o += (size_t)snprintf(out + o, out_len - o, "\xE2\x80\xA6"); /* … */
    out[o] = '\0';
}

void api_text_label(char *buf, const struct api_labels *l, size_t i)
{
    if (l->names != NULL && i < l->n && l->names[i] != NULL) {
        sanitize(buf, API_TEXT_LABEL, l->names[i], API_TEXT_MAX_LABEL);
        return;
    }
    snprintf(buf, API_TEXT_LABEL, "%s%zu", l->prefix != NULL ? l->prefix : "", i);
}

bool api_labels_pick(const struct api_labels *from, const size_t *rows, size_t n,
                     struct api_labels *out, const char ***names, char **store)
{
    *names = malloc(n * sizeof **names);
    *store = malloc(n * API_TEXT_LABEL);
    if (*names == NULL || *store == NULL) {
        free(*names);
        free(*store);
        *names = NULL, *store = NULL;
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char *label = *store + i * API_TEXT_LABEL;
        api_text_label(label, from, rows[i]);
        (*names)[i] = label;
    }
    *out = (struct api_labels){ *names, n, from->prefix };
    return true;
}

void api_text_number(char *buf, double x, int decimals)
{
    if (decimals < 0)
        decimals = 0;
    if (decimals > 15)
        decimals = 15;
    if (isnan(x)) {
        snprintf(buf, API_TEXT_NUMBER, "nan");
        return;
    }
    if (isinf(x)) {
        snprintf(buf, API_TEXT_NUMBER, x < 0 ? "-inf" : "inf");
        return;
    }
    if (fabs(x) >= 1e12) {
        snprintf(buf, API_TEXT_NUMBER, "%.*e", decimals, x);
        return;
    }
    double r = api_round_decimals(x, decimals);
    if (r == 0)
        r = 0; /* "-0.0000" would only puzzle a reader */
    snprintf(buf, API_TEXT_NUMBER, "%.*f", decimals, r);
}

void api_text_shape(char *buf, size_t rows, size_t cols, bool as_vector)
{
    if (as_vector)
        snprintf(buf, API_TEXT_SHAPE, "(%zu,)", cols);
    else
        snprintf(buf, API_TEXT_SHAPE, "(%zu, %zu)", rows, cols);
}

/* ---- matrices ---- */

static const char ELLIPSIS[] = "...";

/* Appends s right-aligned (pad first) or left-aligned in `width` columns. */
static void put_padded(struct api_buf *b, const char *s, size_t width, bool right)
{
    size_t w = api_text_width(s);
    size_t pad = width > w ? width - w : 0;
    if (right)
        api_buf_fill(b, ' ', pad);
    api_buf_puts(b, s);
    if (!right)
        api_buf_fill(b, ' ', pad);
}

/* The shown rows (or columns): all n, or the first and last `edge` around a gap. */
struct span {
    size_t n, edge; /* edge == 0: everything shown */
};

static size_t span_count(const struct span *s)
{
    return s->edge == 0 ? s->n : 2 * s->edge;
}

/* The k-th shown index. */
static size_t span_index(const struct span *s, size_t k)
{
    return s->edge == 0 || k < s->edge ? k : s->n - 2 * s->edge + k;
}

/* Is there a gap just before the k-th shown index? */
static bool span_gap_before(const struct span *s, size_t k)
{
    return s->edge != 0 && k == s->edge;
}

/* The width of column j: its label or its widest cell among the shown rows. */
static size_t col_width(const struct api_text_matrix *m, const struct span *rows, size_t j)
{
    char tmp[API_TEXT_NUMBER > API_TEXT_LABEL ? API_TEXT_NUMBER : API_TEXT_LABEL];
    api_text_label(tmp, &m->col_labels, j);
    size_t w = api_text_width(tmp);
    for (size_t k = 0; k < span_count(rows); k++) {
        api_text_number(tmp, m->data[span_index(rows, k) * m->stride + j], m->decimals);
        if (strlen(tmp) > w)
            w = strlen(tmp);
    }
    return w;
}

/* How a matrix is laid out: which rows and columns show, and how wide each part is. */
struct matrix_layout {
    const char *indent;
    struct span rows, cols;
    size_t label_w, extra_w;
    size_t widths[64];  /* the shown columns' widths, when they fit here */
    size_t *col_w;      /* widths, or NULL: recomputed per row when there are too many */
};

/* Row-label column and extra column widths, over the shown rows. */
static void measure_rows(const struct api_text_matrix *m, struct matrix_layout *l)
{
    char tmp[API_TEXT_NUMBER > API_TEXT_LABEL ? API_TEXT_NUMBER : API_TEXT_LABEL];
    l->label_w = 0;
    l->extra_w = 0;
    for (size_t k = 0; k < span_count(&l->rows); k++) {
        size_t i = span_index(&l->rows, k);
        api_text_label(tmp, &m->row_labels, i);
        size_t w = api_text_width(tmp);
        l->label_w = w > l->label_w ? w : l->label_w;
        if (m->extra != NULL) {
            api_text_number(tmp, m->extra[i], m->decimals);
            l->extra_w = strlen(tmp) > l->extra_w ? strlen(tmp) : l->extra_w;
        }
    }
    if (span_gap_before(&l->rows, API_TEXT_EDGE) && l->label_w < 3)
        l->label_w = 3;
    if (m->extra != NULL && m->extra_label != NULL && api_text_width(m->extra_label) > l->extra_w)
        l->extra_w = api_text_width(m->extra_label);
}

/* Columns: all when they fit the budget, else API_TEXT_EDGE (or fewer) each side. */
static struct span fit_columns(const struct api_text_matrix *m, const struct matrix_layout *l)
{
    size_t budget = m->max_width != 0 ? m->max_width : API_TEXT_WIDTH;
    size_t fixed = api_text_width(l->indent) + l->label_w + (m->extra != NULL ? 3 + l->extra_w : 0);
    struct span cols = { m->cols, 0 };
    size_t total = fixed;
    for (size_t j = 0; j < m->cols && total <= budget; j++)
        total += 2 + col_width(m, &l->rows, j);
    if (total <= budget || m->cols <= 2)
        return cols;
    size_t edge = API_TEXT_EDGE;
    if (2 * edge >= m->cols)
        edge = (m->cols - 1) / 2;
    for (; edge > 1; edge--) {
        size_t t = fixed + 2 + strlen(ELLIPSIS);
        for (size_t j = 0; j < edge; j++)
            t += 4 + col_width(m, &l->rows, j) + col_width(m, &l->rows, m->cols - 1 - j);
        if (t <= budget)
            break;
    }
    cols.edge = edge;
    return cols;
}

/* Before the k-th shown column: its two spaces, after an ellipsis where columns are cut. */
static void column_gap(struct api_buf *b, const struct span *cols, size_t k)
{
    if (span_gap_before(cols, k)) {
        api_buf_puts(b, "  ");
        api_buf_puts(b, ELLIPSIS);
    }
    api_buf_puts(b, "  ");
}

/* The header line: the column labels (and their widths kept for the rows). */
static void matrix_header(struct api_buf *b, const struct api_text_matrix *m,
                          struct matrix_layout *l)
{
    char tmp[API_TEXT_LABEL];
    api_buf_puts(b, l->indent);
    api_buf_fill(b, ' ', l->label_w);
    for (size_t k = 0; k < span_count(&l->cols); k++) {
        size_t j = span_index(&l->cols, k), w = col_width(m, &l->rows, j);
        if (l->col_w != NULL)
            l->col_w[k] = w;
        column_gap(b, &l->cols, k);
        api_text_label(tmp, &m->col_labels, j);
        put_padded(b, tmp, w, true);
    }
    if (m->extra != NULL) {
        api_buf_puts(b, " | ");
        put_padded(b, m->extra_label != NULL ? m->extra_label : "", l->extra_w, true);
    }
    api_buf_puts(b, "\n");
}

/* Row i: its label, its shown cells, its extra value. */
static void matrix_row(struct api_buf *b, const struct api_text_matrix *m,
                       const struct matrix_layout *l, size_t i)
{
    char tmp[API_TEXT_NUMBER > API_TEXT_LABEL ? API_TEXT_NUMBER : API_TEXT_LABEL];
    api_buf_puts(b, l->indent);
    api_text_label(tmp, &m->row_labels, i);
    put_padded(b, tmp, l->label_w, false);
    for (size_t k = 0; k < span_count(&l->cols); k++) {
        size_t j = span_index(&l->cols, k);
        size_t w = l->col_w != NULL ? l->col_w[k] : col_width(m, &l->rows, j);
        column_gap(b, &l->cols, k);
        api_text_number(tmp, m->data[i * m->stride + j], m->decimals);
        put_padded(b, tmp, w, true);
    }
    if (m->extra != NULL) {
        api_buf_puts(b, " | ");
        api_text_number(tmp, m->extra[i], m->decimals);
        put_padded(b, tmp, l->extra_w, true);
    }
    api_buf_puts(b, "\n");
}

void api_text_matrix(struct api_buf *b, const struct api_text_matrix *m)
{
    struct matrix_layout l = {
        .indent = m->indent != NULL ? m->indent : "",
        .rows = { m->rows, m->rows > API_TEXT_MAX_ROWS ? API_TEXT_EDGE : 0 },
    };
    measure_rows(m, &l);
    l.cols = fit_columns(m, &l);
    l.col_w = span_count(&l.cols) <= sizeof l.widths / sizeof l.widths[0] ? l.widths : NULL;
    matrix_header(b, m, &l);
    for (size_t r = 0; r < span_count(&l.rows); r++) {
        if (span_gap_before(&l.rows, r)) {
            api_buf_puts(b, l.indent);
            api_buf_puts(b, ELLIPSIS); /* no trailing spaces */
            api_buf_puts(b, "\n");
        }
        matrix_row(b, m, &l, span_index(&l.rows, r));
    }
}

size_t api_text_matrix_bytes(size_t rows, size_t cols)
{
    size_t lines = 1 + (rows > API_TEXT_MAX_ROWS ? 2 * API_TEXT_EDGE + 1 : rows);
    /* fit_columns shows every column only while they fit the budget, 3 columns each at
       least (two spaces and a digit), else API_TEXT_EDGE each side; 2 always fit. */
    size_t fitting = API_TEXT_WIDTH / 3 + 2 * API_TEXT_EDGE + 2;
    size_t shown = cols < fitting ? cols : fitting;
    /* Every cell: two spaces, a label's or number's bytes, padding to a number's width;
       and as many more for the row label, the ellipsis column and the extra column. */
    size_t cell = API_TEXT_LABEL + API_TEXT_NUMBER + 4;
    return lines * ((shown + 4) * cell + 32);
}

/* ---- tile grids ---- */

/* The glyph of one tile; an unknown value draws as empty rather than reading past glyphs. */
static const char *tile_glyph(const struct api_text_tiles *t, size_t r, size_t c)
{
    unsigned char kind = t->tiles[r * t->cols + c];
    return t->glyphs[kind < 3 ? kind : 0];
}

/* Tiles `from` .. `to` (exclusive) of tile row r. */
static void tile_run(struct api_buf *b, const struct api_text_tiles *t, size_t r, size_t from,
                     size_t to)
{
    for (size_t c = from; c < to; c++)
        api_buf_puts(b, tile_glyph(t, r, c));
}

void api_text_tiles(struct api_buf *b, const struct api_text_tiles *t)
{
    const char *indent = t->indent != NULL ? t->indent : "";
    struct span rows = { t->rows, t->rows > API_TEXT_MAX_ROWS ? API_TEXT_EDGE : 0 };
    char label[API_TEXT_LABEL];
    size_t label_w = span_gap_before(&rows, API_TEXT_EDGE) ? strlen(ELLIPSIS) : 0;
    for (size_t k = 0; k < span_count(&rows); k++) {
        api_text_label(label, &t->row_labels, span_index(&rows, k) * t->row_step);
        size_t w = api_text_width(label);
        label_w = w > label_w ? w : label_w;
    }
    /* One column a tile: all of them when they fit, else `edge` each side of " ... ". */
    size_t budget = t->max_width != 0 ? t->max_width : API_TEXT_WIDTH;
    size_t fixed = api_text_width(indent) + label_w + 2;
    size_t room = budget > fixed ? budget - fixed : 0;
    size_t edge = 0; /* 0: every tile shown */
    if (t->cols > room && t->cols > 2)
        edge = room >= 7 ? (room - 5) / 2 : 1; /* " ... " takes 5 */
    for (size_t k = 0; k < span_count(&rows); k++) {
        size_t r = span_index(&rows, k);
        if (span_gap_before(&rows, k)) {
            api_buf_puts(b, indent);
            api_buf_puts(b, ELLIPSIS); /* no trailing spaces */
            api_buf_puts(b, "\n");
        }
        api_buf_puts(b, indent);
        api_text_label(label, &t->row_labels, r * t->row_step);
        put_padded(b, label, label_w, false);
        api_buf_puts(b, "  ");
        if (edge == 0) {
            tile_run(b, t, r, 0, t->cols);
        } else {
            tile_run(b, t, r, 0, edge);
            api_buf_puts(b, " ... ");
            tile_run(b, t, r, t->cols - edge, t->cols);
        }
        api_buf_puts(b, "\n");
    }
}

size_t api_text_tiles_bytes(size_t rows, size_t cols)
{
    size_t lines = rows > API_TEXT_MAX_ROWS ? 2 * API_TEXT_EDGE + 1 : rows;
    size_t shown = cols < API_TEXT_WIDTH ? cols : API_TEXT_WIDTH; /* one column a tile */
    /* A line: the indent, a label's bytes and padding, four bytes a glyph, " ... ". */
    return lines * (API_TEXT_LABEL + API_TEXT_WIDTH + 4 * shown + 16);
}

/* ---- tables ---- */

void api_text_table(struct api_buf *b, const struct api_text_table *t)
{
    enum { MAX_COLS = 16 };
    size_t w[MAX_COLS] = { 0 };
    size_t cols = t->cols < MAX_COLS ? t->cols : MAX_COLS;
    const char *indent = t->indent != NULL ? t->indent : "";
    char cell[4 * 80 + 8];

    for (size_t c = 0; c < cols; c++) {
        sanitize(cell, sizeof cell, t->header[c] != NULL ? t->header[c] : "", 80);
        w[c] = api_text_width(cell);
        for (size_t r = 0; r < t->rows; r++) {
            const char *s = t->cells[r * t->cols + c];
            sanitize(cell, sizeof cell, s != NULL ? s : "", 80);
            size_t cw = api_text_width(cell);
            w[c] = cw > w[c] ? cw : w[c];
        }
    }
    for (size_t r = 0; r <= t->rows; r++) {
        const char *const *line = r == 0 ? t->header : t->cells + (r - 1) * t->cols;
        api_buf_puts(b, indent);
        for (size_t c = 0; c < cols; c++) {
            bool right = t->align != NULL && t->align[c] == 'r';
            sanitize(cell, sizeof cell, line[c] != NULL ? line[c] : "", 80);
            if (c > 0)
                api_buf_puts(b, "  ");
            if (c == cols - 1 && !right)
                api_buf_puts(b, cell); /* no trailing spaces */
            else
                put_padded(b, cell, w[c], right);
        }
        api_buf_puts(b, "\n");
    }
}
