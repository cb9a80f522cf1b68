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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    size_t rows = 1 + data[0] % FUZZ_MAX_SIDE, cols = 1 + data[1] % FUZZ_MAX_SIDE;
    int decimals = data[2] % 16;
    unsigned flags = data[3];
    size_t width = data[4] < 16 ? 0 : (size_t)data[4];
    data += 5;
    size = size - 5;

    double cells[FUZZ_MAX_SIDE * FUZZ_MAX_SIDE], blocked[FUZZ_MAX_SIDE * FUZZ_MAX_SIDE];
    double extra[FUZZ_MAX_SIDE];
    unsigned char empty[FUZZ_MAX_SIDE];
    size_t cell_bytes = rows * cols * 8 < size ? rows * cols * 8 : size - size % 8;
    for (size_t i = 0; i < rows * cols; i++) {
        if (cell_bytes >= 8)
            memcpy(&cells[i], data + (i * 8) % cell_bytes, 8);
        else
            cells[i] = (double)(i % 7) / 7.0;
        blocked[i] = (flags & 1) && (i % 3 == 0) ? -1.0 / 0.0 : cells[i];
    }
    for (size_t i = 0; i < rows; i++) {
        extra[i] = cells[i * cols];
        empty[i] = (flags & 2) && i % 2 == 0;
    }

    /* Labels: the rest, split at '\n', ill-formed bytes made '?'. */
    size_t rest = size - cell_bytes;
    char *text = malloc(rest + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data + cell_bytes, rest);
    text[rest] = '\0';
    for (size_t i = 0; i < rest;) {
        size_t len = text[i] == '\0' ? 0 : utf8_len((unsigned char *)text + i, rest - i);
        if (len == 0) {
            text[i++] = '?';
            continue;
        }
        i += len;
    }
    const char *labels[FUZZ_MAX_LABELS];
    size_t n_labels = 0;
    for (char *p = text; n_labels < FUZZ_MAX_LABELS && rest > 0;) {
        labels[n_labels++] = p;
        char *nl = strchr(p, '\n');
        if (nl == NULL)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    const char *const *row_names = (flags & 4) && n_labels >= rows ? labels : NULL;
    const char *const *col_names =
        (flags & 8) && n_labels >= rows + cols ? labels + rows : NULL;

    struct api_text_matrix m = {
        .data = cells, .rows = rows, .cols = cols, .stride = cols,
        .row_labels = { row_names, rows, "q" }, .col_labels = { col_names, cols, "k" },
        .extra = (flags & 16) ? extra : NULL, .extra_label = "sum",
        .decimals = decimals, .max_width = width, .indent = (flags & 32) ? "  " : NULL,
    };
    struct api_buf b;
    size_t len;
    api_buf_init(&b);
    api_text_matrix(&b, &m);
    char *out = api_buf_take(&b, &len);
    if (out != NULL)
        check_text("api_text_matrix", out, len);
    free(out);

    if (n_labels > 0) {
        size_t tcols = 1 + (size_t)(flags >> 6) % 3, trows = n_labels / tcols;
        const char *header[3] = { "a", "b", "c" };
        struct api_text_table t = { header, labels, trows, tcols, (flags & 64) ? "lrl" : NULL,
                                    NULL };
        api_buf_init(&b);
        api_text_table(&b, &t);
        out = api_buf_take(&b, &len);
        if (out != NULL)
            check_text("api_text_table", out, len);
        free(out);
        char label[API_TEXT_LABEL];
        struct api_labels l = { labels, n_labels, "q" };
        for (size_t i = 0; i < n_labels; i++) {
            api_text_label(label, &l, i);
            check_text("api_text_label", label, strlen(label));
            (void)api_text_width(labels[i]);
        }
    }
    char number[API_TEXT_NUMBER];
    for (size_t i = 0; i < rows * cols && i < 8; i++) {
        api_text_number(number, cells[i], decimals);
        check_text("api_text_number", number, strlen(number));
    }

    struct api_svg_heatmap h = {
        .data = cells, .rows = rows, .cols = cols, .stride = cols,
        .blocked = (flags & 1) ? blocked : NULL, .blocked_stride = cols,
        .empty_rows = (flags & 2) ? empty : NULL,
        .row_labels = { row_names, rows, "q" }, .col_labels = { col_names, cols, "k" },
        .title = n_labels > 0 ? labels[0] : NULL,
    };
    api_buf_init(&b);
    api_svg_heatmap_document(&b, &h, "Attention weights", n_labels > 1 ? labels[1] : NULL);
    out = api_buf_take(&b, &len);
    if (out != NULL) {
        check_text("api_svg_heatmap_document", out, len);
        if (strncmp(out, "<?xml", 5) != 0 || strstr(out, "</svg>") == NULL ||
            strstr(out, "</svg>") != strrchr(out, '<')) {
            fprintf(stderr, "not one closed <svg> document:\n%s\n", out);
            abort();
        }
    }
    free(out);
    free(text);
    return 0;
}
