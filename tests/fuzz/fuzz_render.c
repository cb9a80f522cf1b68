/*
 * tests/fuzz/fuzz_render.c — libFuzzer harness for the text and SVG renderers
 * (api/render/text.h, api/render/svg.h), below the endpoints: any shape up to 24 x 24,
 * any doubles (NaN, infinities, subnormals, 1e308), any decimals, any line budget,
 * and labels of any UTF-8 (wide, combining, control characters, very long).
 *
 * Input: rows, cols, decimals, flags, width (one byte each), then 8 bytes per cell
 * (cycled when short), then labels separated by '\n'. Labels reach the renderers as
 * JSON strings do, so bytes that are not UTF-8 are replaced with '?' first.
 * Properties: no crash, leak or undefined behaviour; every rendering is UTF-8 without
 * control characters other than newline, and without bidi or other format characters
 * (they are shown as "<U+202E>" escapes); an SVG is one closed <svg> document.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/buf.h"
#include "api/render/svg.h"
#include "api/render/text.h"

#define FUZZ_MAX_SIDE 24
#define FUZZ_MAX_LABELS (2 * FUZZ_MAX_SIDE)

/* Length of the well-formed UTF-8 sequence at s, or 0 (same rules as RFC 3629). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (c > 0xF4 || len == 0 || len > n)
        return 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

/* The code point of the well-formed sequence of len bytes at s. */
static uint32_t code_point(const unsigned char *s, size_t len)
{
    uint32_t v = len == 1 ? s[0] : s[0] & (0x7Fu >> len);
    for (size_t i = 1; i < len; i++)
        v = (v << 6) | (s[i] & 0x3Fu);
    return v;
}

/* Must never be written raw: controls (but newline), Unicode 15's Cf, U+2028 and U+2029. */
static int hidden(uint32_t c)
{
    static const uint32_t r[][2] = {
        {0x00, 0x09}, {0x0B, 0x1F}, {0x7F, 0x9F}, {0xAD, 0xAD}, {0x600, 0x605}, {0x61C, 0x61C},
        {0x6DD, 0x6DD}, {0x70F, 0x70F}, {0x890, 0x891}, {0x8E2, 0x8E2}, {0x180E, 0x180E},
        {0x200B, 0x200F}, {0x2028, 0x202E}, {0x2060, 0x2064}, {0x2066, 0x206F}, {0xFEFF, 0xFEFF},
        {0xFFF9, 0xFFFB}, {0x110BD, 0x110BD}, {0x110CD, 0x110CD}, {0x13430, 0x1343F},
        {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (c >= r[i][0] && c <= r[i][1])
            return 1;
    return 0;
}

/* Clean text: UTF-8 with no hidden character. */
static void check_text(const char *what, const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        const unsigned char *p = (const unsigned char *)s + i;
        size_t len = utf8_len(p, n - i);
        if (len == 0 || hidden(code_point(p, len))) {
            fprintf(stderr, "%s: byte %zu (0x%02x) is not clean UTF-8 text:\n%.*s\n", what, i,
                    p[0], (int)n, s);
            abort();
        }
        i += len;
    }
}

/* What one input decodes to: the matrix, its flags and the labels' text. */
struct fuzz_case {
    size_t rows, cols, width;
    int decimals;
    unsigned flags;
    double cells[FUZZ_MAX_SIDE * FUZZ_MAX_SIDE], blocked[FUZZ_MAX_SIDE * FUZZ_MAX_SIDE];
    double extra[FUZZ_MAX_SIDE];
    unsigned char empty[FUZZ_MAX_SIDE];
    char *text; /* owned: the labels, split in place */
    const char *labels[FUZZ_MAX_LABELS];
    size_t n_labels;
};

/* The header bytes and the cells (cycled when short); returns the bytes the cells took. */
static size_t read_cells(struct fuzz_case *c, const uint8_t *data, size_t size)
{
    c->rows = 1 + data[0] % FUZZ_MAX_SIDE;
    c->cols = 1 + data[1] % FUZZ_MAX_SIDE;
    c->decimals = data[2] % 16;
    c->flags = data[3];
    c->width = data[4] < 16 ? 0 : (size_t)data[4];
    data += 5;
    size -= 5;
    size_t n = c->rows * c->cols;
    size_t cell_bytes = n * 8 < size ? n * 8 : size - size % 8;
    for (size_t i = 0; i < n; i++) {
        if (cell_bytes >= 8)
            memcpy(&c->cells[i], data + (i * 8) % cell_bytes, 8);
        else
            c->cells[i] = (double)(i % 7) / 7.0;
        c->blocked[i] = (c->flags & 1) && (i % 3 == 0) ? -1.0 / 0.0 : c->cells[i];
    }
    for (size_t i = 0; i < c->rows; i++) {
        c->extra[i] = c->cells[i * c->cols];
        c->empty[i] = (c->flags & 2) && i % 2 == 0;
    }
    return cell_bytes;
}

/* Labels: the rest, split at '\n', ill-formed bytes made '?'. False when out of memory. */
static bool read_labels(struct fuzz_case *c, const uint8_t *rest, size_t n)
{
    c->text = malloc(n + 1);
    if (c->text == NULL)
        return false;
    memcpy(c->text, rest, n);
    c->text[n] = '\0';
    for (size_t i = 0; i < n;) {
        size_t len = c->text[i] == '\0' ? 0 : utf8_len((unsigned char *)c->text + i, n - i);
        if (len == 0) {
            c->text[i++] = '?';
            continue;
        }
        i += len;
    }
    c->n_labels = 0;
    for (char *p = c->text; c->n_labels < FUZZ_MAX_LABELS && n > 0;) {
        c->labels[c->n_labels++] = p;
        char *nl = strchr(p, '\n');
        if (nl == NULL)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    return true;
}

static const char *const *row_names(const struct fuzz_case *c)
{
    return (c->flags & 4) && c->n_labels >= c->rows ? c->labels : NULL;
}

static const char *const *col_names(const struct fuzz_case *c)
{
    return (c->flags & 8) && c->n_labels >= c->rows + c->cols ? c->labels + c->rows : NULL;
}

/* Takes b's text and checks it (NULL when out of memory: nothing to check). */
static char *checked(struct api_buf *b, const char *what, size_t *len)
{
    char *out = api_buf_take(b, len);
    if (out != NULL)
        check_text(what, out, *len);
    return out;
}

static void check_matrix(const struct fuzz_case *c)
{
    struct api_text_matrix m = {
        .data = c->cells, .rows = c->rows, .cols = c->cols, .stride = c->cols,
        .row_labels = { row_names(c), c->rows, "q" }, .col_labels = { col_names(c), c->cols, "k" },
        .extra = (c->flags & 16) ? c->extra : NULL, .extra_label = "sum",
        .decimals = c->decimals, .max_width = c->width, .indent = (c->flags & 32) ? "  " : NULL,
    };
    struct api_buf b;
    size_t len;
    api_buf_init(&b);
    api_text_matrix(&b, &m);
    free(checked(&b, "api_text_matrix", &len));
}

static void check_table_and_labels(const struct fuzz_case *c)
{
    if (c->n_labels == 0)
        return;
    size_t tcols = 1 + (size_t)(c->flags >> 6) % 3, trows = c->n_labels / tcols;
    const char *header[3] = { "a", "b", "c" };
    struct api_text_table t = { header, c->labels, trows, tcols, (c->flags & 64) ? "lrl" : NULL,
                                NULL };
    struct api_buf b;
    size_t len;
    api_buf_init(&b);
    api_text_table(&b, &t);
    free(checked(&b, "api_text_table", &len));
    char label[API_TEXT_LABEL];
    struct api_labels l = { c->labels, c->n_labels, "q" };
    for (size_t i = 0; i < c->n_labels; i++) {
        api_text_label(label, &l, i);
        check_text("api_text_label", label, strlen(label));
        (void)api_text_width(c->labels[i]);
    }
}

static void check_numbers(const struct fuzz_case *c)
{
    char number[API_TEXT_NUMBER];
    for (size_t i = 0; i < c->rows * c->cols && i < 8; i++) {
        api_text_number(number, c->cells[i], c->decimals);
        check_text("api_text_number", number, strlen(number));
    }
}

static void check_svg(const struct fuzz_case *c)
{
    struct api_svg_heatmap h = {
        .data = c->cells, .rows = c->rows, .cols = c->cols, .stride = c->cols,
        .blocked = (c->flags & 1) ? c->blocked : NULL, .blocked_stride = c->cols,
        .empty_rows = (c->flags & 2) ? c->empty : NULL,
        .row_labels = { row_names(c), c->rows, "q" }, .col_labels = { col_names(c), c->cols, "k" },
        .title = c->n_labels > 0 ? c->labels[0] : NULL,
    };
    struct api_buf b;
    size_t len;
    api_buf_init(&b);
    api_svg_heatmap_document(&b, &h, "Attention weights", c->n_labels > 1 ? c->labels[1] : NULL);
    char *out = checked(&b, "api_svg_heatmap_document", &len);
    if (out != NULL && (strncmp(out, "<?xml", 5) != 0 || strstr(out, "</svg>") == NULL ||
                        strstr(out, "</svg>") != strrchr(out, '<'))) {
        fprintf(stderr, "not one closed <svg> document:\n%s\n", out);
        abort();
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    static struct fuzz_case c; /* large; the fuzzer runs one input at a time */
    size_t cell_bytes = read_cells(&c, data, size);
    if (!read_labels(&c, data + 5 + cell_bytes, size - 5 - cell_bytes))
        return 0;
    check_matrix(&c);
    check_table_and_labels(&c);
    check_numbers(&c);
    check_svg(&c);
    free(c.text);
    return 0;
}
