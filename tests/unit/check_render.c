/*
 * tests/unit/check_render.c — the text and SVG renderings, without a network.
 *
 * Suites: Text (display widths, numbers, labels with controls shown as escapes,
 * alignment, numpy-style elision, the attention page byte for byte), Svg (the Blues colormap, the seed 002
 * heatmap against its reference picture byte for byte, escaping, big and masked
 * matrices), Negotiation (Accept and ?format through api_handle, problems stay
 * problem+json, the playground's route). XML validity is checked by a real parser
 * in tests/http/render.test.mjs.
 *
 * Run from the repository root (make unit does): the reference picture is read
 * from tests/data/.
 */
#include <check.h>

#include "tests/unit/suite_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/json/buf.h"
#include "api/render/svg.h"
#include "api/render/text.h"

#define SEED000 "\"q\":[[1,0,1,0],[0,1,0,1]],\"k\":[[1,0,1,0],[1,1,1,1]],\"v\":[[10,0],[0,10]]"
/* Seed 002's three queries with the lecture's labels, unscaled. */
#define SEED002_HEATMAP                                                                   \
    "{\"q\":[[1,0],[0,1],[0.5,0.5]],\"k\":[[1,0],[0,1],[0.8,0.2]],"                       \
    "\"v\":[[10,0],[0,20],[8,4]],\"scale\":1,"                                            \
    "\"labels\":{\"queries\":[\"Q1\",\"Q2\",\"Q3\"],"                                      \
    "\"keys\":[\"\xEC\x82\xAC\xEA\xB3\xBC\",\"\xEC\x82\xAC\xEB\x9E\x8C\",\"\xEA\xB3\xBC\xEC\x9D\xBC\"]}}"
#define SEED002_REFERENCE "tests/data/seed002_heatmap.svg"

static struct api_context test_context(void)
{
    struct api_context ctx = {
        .limits = api_default_limits(), .ready = true, .http_library = "0.9.75"};
    return ctx;
}

static struct api_response call(const char *method, const char *path, const char *accept,
                                const char *body, const char *format)
{
    struct api_context ctx = test_context();
    struct api_param p = { "format", format };
    struct api_request req = { method, path, format ? &p : NULL, format ? 1 : 0, accept, NULL,
                               body, body ? strlen(body) : 0, NULL, NULL };
    struct api_response res = { 0 };
    api_handle(&ctx, &req, &res);
    return res;
}

static char *take(struct api_buf *b)
{
    size_t len;
    char *s = api_buf_take(b, &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(strlen(s), len);
    return s;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* ---- Text ---- */

START_TEST(test_display_width)
{
    ck_assert_uint_eq(api_text_width(""), 0);
    ck_assert_uint_eq(api_text_width("k12"), 3);
    ck_assert_uint_eq(api_text_width("\xEC\x82\xAC\xEA\xB3\xBC"), 4);       /* 사과 */
    ck_assert_uint_eq(api_text_width("\xE6\xB3\xA8\xE6\x84\x8F"), 4);       /* 注意 */
    ck_assert_uint_eq(api_text_width("\xEF\xBC\xA1"), 2);                   /* Ａ fullwidth */
    ck_assert_uint_eq(api_text_width("e\xCC\x81"), 1);                      /* e + combining acute */
    ck_assert_uint_eq(api_text_width("\xF0\x9F\x98\x80"), 2);               /* 😀 */
    ck_assert_uint_eq(api_text_width("\xC3\xA9t\xC3\xA9"), 3);              /* été */
}
END_TEST

START_TEST(test_numbers)
{
    static const struct { double x; int d; const char *want; } cases[] = {
        { 0.5, 4, "0.5000" }, { 0.7310585786300049, 4, "0.7311" }, { 2.675, 2, "2.68" },
        { -0.00001, 4, "0.0000" }, { 5, 0, "5" }, { -1.5, 1, "-1.5" },
        { -INFINITY, 4, "-inf" }, { INFINITY, 2, "inf" }, { NAN, 4, "nan" },
        { 1e300, 4, "1.0000e+300" }, { -2.5e13, 2, "-2.50e+13" },
    };
    char buf[API_TEXT_NUMBER];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        api_text_number(buf, cases[i].x, cases[i].d);
        ck_assert_str_eq(buf, cases[i].want);
    }
    char shape[API_TEXT_SHAPE];
    api_text_shape(shape, 2, 4, false);
    ck_assert_str_eq(shape, "(2, 4)");
    api_text_shape(shape, 1, 3, true);
    ck_assert_str_eq(shape, "(3,)");
}
END_TEST

START_TEST(test_labels_sanitized_and_cut)
{
    const char *names[] = { "a\nb\x1b[31m", "a-very-long-label-indeed", NULL,
                            "\xEC\x82\xAC\xEA\xB3\xBC\xEC\x82\xAC\xEA\xB3\xBC\xEC\x82\xAC\xEA\xB3\xBC"
                            "\xEC\x82\xAC\xEA\xB3\xBC\xEC\x82\xAC" }; /* 사과 x4 + 사: 18 columns */
    struct api_labels l = { names, 4, "k" };
    char buf[API_TEXT_LABEL];
    api_text_label(buf, &l, 0); /* "a<U+000A>b<U+001B>[31m" is 22 columns: cut before an escape */
    ck_assert_str_eq(buf, "a<U+000A>b\xE2\x80\xA6");
    api_text_label(buf, &l, 1);
    ck_assert_str_eq(buf, "a-very-long-lab\xE2\x80\xA6");
    ck_assert_uint_eq(api_text_width(buf), API_TEXT_MAX_LABEL);
    api_text_label(buf, &l, 2); /* a NULL name falls back to prefix + index */
    ck_assert_str_eq(buf, "k2");
    api_text_label(buf, &l, 7); /* past the names too */
    ck_assert_str_eq(buf, "k7");
    api_text_label(buf, &l, 3); /* a wide character is never split: 14 columns + … */
    ck_assert_uint_le(api_text_width(buf), API_TEXT_MAX_LABEL);
    ck_assert_ptr_nonnull(strstr(buf, "\xE2\x80\xA6"));
}
END_TEST

/*
 * Labels with control and format characters, and valid ones that must stay as sent:
 * the label as text shows it (16 columns at most, an escape never cut in half) and
 * the same label as an SVG text carries it, XML-escaped.
 */
static const struct {
    const char *name, *label, *text, *svg;
} visible_cases[] = {
    { "RLO", "\xE2\x80\xAE" "abc", "<U+202E>abc", "&lt;U+202E&gt;abc" },
    { "RLM", "a\xE2\x80\x8F", "a<U+200F>", "a&lt;U+200F&gt;" },
    { "LRE..PDF", "\xE2\x80\xAA\xE2\x80\xAC", "<U+202A><U+202C>",
      "&lt;U+202A&gt;&lt;U+202C&gt;" },
    { "isolates", "\xE2\x81\xA8\xE2\x81\xA9", "<U+2068><U+2069>",
      "&lt;U+2068&gt;&lt;U+2069&gt;" },
    { "isolate cut", "\xE2\x81\xA6" "x" "\xE2\x81\xA9", "<U+2066>x\xE2\x80\xA6",
      "&lt;U+2066&gt;x\xE2\x80\xA6" },
    { "ALM", "\xD8\x9C", "<U+061C>", "&lt;U+061C&gt;" },
    { "LRM", "\xE2\x80\x8E", "<U+200E>", "&lt;U+200E&gt;" },
    { "ZWSP ZWJ", "\xE2\x80\x8B\xE2\x80\x8D", "<U+200B><U+200D>",
      "&lt;U+200B&gt;&lt;U+200D&gt;" },
    { "word joiner", "\xE2\x81\xA0", "<U+2060>", "&lt;U+2060&gt;" },
    { "BOM", "\xEF\xBB\xBF" "k", "<U+FEFF>k", "&lt;U+FEFF&gt;k" },
    { "soft hyphen", "co\xC2\xAD" "op", "co<U+00AD>op", "co&lt;U+00AD&gt;op" },
    { "line separator", "a\xE2\x80\xA8" "b", "a<U+2028>b", "a&lt;U+2028&gt;b" },
    { "tag", "\xF3\xA0\x81\x81", "<U+E0041>", "&lt;U+E0041&gt;" },
    { "C0", "\t\n", "<U+0009><U+000A>", "&lt;U+0009&gt;&lt;U+000A&gt;" },
    { "DEL", "x\x7F", "x<U+007F>", "x&lt;U+007F&gt;" },
    { "C1", "\xC2\x85\xC2\x9B", "<U+0085><U+009B>", "&lt;U+0085&gt;&lt;U+009B&gt;" },
    /* 사람 <RLO> 과일: 4 + 8 + 4 columns, exactly the limit, so nothing is cut. */
    { "Hangul and RLO", "\xEC\x82\xAC\xEB\x9E\x8C\xE2\x80\xAE\xEA\xB3\xBC\xEC\x9D\xBC",
      "\xEC\x82\xAC\xEB\x9E\x8C<U+202E>\xEA\xB3\xBC\xEC\x9D\xBC",
      "\xEC\x82\xAC\xEB\x9E\x8C&lt;U+202E&gt;\xEA\xB3\xBC\xEC\x9D\xBC" },
    /* 사람 <RLI> 과일 x: 17 columns, cut to 15 + "…" before the wide 일. */
    { "Hangul cut", "\xEC\x82\xAC\xEB\x9E\x8C\xE2\x81\xA7\xEA\xB3\xBC\xEC\x9D\xBCx",
      "\xEC\x82\xAC\xEB\x9E\x8C<U+2067>\xEA\xB3\xBC\xE2\x80\xA6",
      "\xEC\x82\xAC\xEB\x9E\x8C&lt;U+2067&gt;\xEA\xB3\xBC\xE2\x80\xA6" },
    /* An escape that does not fit is left out whole, never cut to "<U+2". */
    { "escape at the cut", "abcdefghij\xE2\x80\xAEz", "abcdefghij\xE2\x80\xA6",
      "abcdefghij\xE2\x80\xA6" },
    { "bytes not UTF-8", "\xFF" "a\xC0\xAF\xED\xA0\x80", "?a?????", "?a?????" },
    /* Valid labels stay as sent. */
    { "Korean", "\xEC\x82\xAC\xEB\x9E\x8C", "\xEC\x82\xAC\xEB\x9E\x8C",
      "\xEC\x82\xAC\xEB\x9E\x8C" },                                             /* 사람 */
    { "Korean 2", "\xEA\xB3\xBC\xEC\x9D\xBC", "\xEA\xB3\xBC\xEC\x9D\xBC",
      "\xEA\xB3\xBC\xEC\x9D\xBC" },                                             /* 과일 */
    { "combining", "e\xCC\x81t\xC3\xA9", "e\xCC\x81t\xC3\xA9", "e\xCC\x81t\xC3\xA9" },
    { "Hebrew", "\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D", "\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D",
      "\xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D" },                                     /* שלום */
    { "replacement char", "\xEF\xBF\xBD", "\xEF\xBF\xBD", "\xEF\xBF\xBD" },
    { "ASCII", "Q1 & <k>", "Q1 & <k>", "Q1 &amp; &lt;k&gt;" },
};
#define N_VISIBLE (sizeof visible_cases / sizeof visible_cases[0])

static const char *visible_names[N_VISIBLE];

static void fill_visible_names(void)
{
    for (size_t i = 0; i < N_VISIBLE; i++)
        visible_names[i] = visible_cases[i].label;
}

START_TEST(test_labels_show_controls_visibly)
{
    fill_visible_names();
    struct api_labels l = { visible_names, N_VISIBLE, "q" };
    char buf[API_TEXT_LABEL];
    for (size_t i = 0; i < N_VISIBLE; i++) {
        api_text_label(buf, &l, i);
        ck_assert_msg(strcmp(buf, visible_cases[i].text) == 0, "%s: [%s], not [%s]",
                      visible_cases[i].name, buf, visible_cases[i].text);
        ck_assert_uint_le(api_text_width(buf), API_TEXT_MAX_LABEL);
        /* No byte of a bidi or format control is left. */
        ck_assert_ptr_null(strstr(buf, "\xE2\x80\xAE"));
        ck_assert_ptr_null(strstr(buf, "\xE2\x80\x8F"));
    }
    /* The width of a label is the width it is shown with: an escape counts its characters. */
    ck_assert_uint_eq(api_text_width("a\xE2\x80\xAE"), 9);
    ck_assert_uint_eq(api_text_width("\xF3\xA0\x81\x81"), 9);
    ck_assert_uint_eq(api_text_width("\xEC\x82\xAC\xE2\x80\x8F"), 10);
}
END_TEST

/* Every line of s has the same display width (the matrix is aligned). */
static void assert_aligned(const char *s, size_t want_lines)
{
    char line[1024];
    size_t width = 0, lines = 0;
    for (const char *p = s; *p != '\0';) {
        const char *nl = strchr(p, '\n');
        ck_assert_ptr_nonnull(nl);
        size_t n = (size_t)(nl - p);
        ck_assert_uint_lt(n, sizeof line);
        memcpy(line, p, n);
        line[n] = '\0';
        size_t w = api_text_width(line);
        if (lines == 0)
            width = w;
        ck_assert_msg(w == width, "line %zu is %zu columns, not %zu: [%s]", lines, w, width, line);
        lines++;
        p = nl + 1;
    }
    ck_assert_uint_eq(lines, want_lines);
}

START_TEST(test_matrix_aligned_with_wide_labels)
{
    const double w[] = { 0.4573, 0.1682, 0.3744, 0.1588, 0.5876, 0.2536, 0.3333, 0.3333, 0.3333 };
    const double sums[] = { 1, 1, 1 };
    const char *queries[] = { "Q1", "Q2", "Q3" };
    const char *keys[] = { "\xEC\x82\xAC\xEA\xB3\xBC", "\xEC\x82\xAC\xEB\x9E\x8C",
                           "\xEA\xB3\xBC\xEC\x9D\xBC\xEC\x9D\xBC\xEC\x9D\xBC" }; /* 과일일일 */
    struct api_text_matrix m = {
        .data = w, .rows = 3, .cols = 3, .stride = 3,
        .row_labels = { queries, 3, "q" }, .col_labels = { keys, 3, "k" },
        .extra = sums, .extra_label = "sum", .decimals = 4,
    };
    struct api_buf b;
    api_buf_init(&b);
    api_text_matrix(&b, &m);
    char *s = take(&b);
    ck_assert_str_eq(s, "      \xEC\x82\xAC\xEA\xB3\xBC    \xEC\x82\xAC\xEB\x9E\x8C  "
                        "\xEA\xB3\xBC\xEC\x9D\xBC\xEC\x9D\xBC\xEC\x9D\xBC |    sum\n"
                        "Q1  0.4573  0.1682    0.3744 | 1.0000\n"
                        "Q2  0.1588  0.5876    0.2536 | 1.0000\n"
                        "Q3  0.3333  0.3333    0.3333 | 1.0000\n");
    assert_aligned(s, 4);
    free(s);
}
END_TEST

START_TEST(test_wide_matrix_elided_like_numpy)
{
    enum { R = 4, C = 512 };
    double *d = malloc(sizeof(double) * R * C);
    ck_assert_ptr_nonnull(d);
    for (size_t i = 0; i < R * C; i++)
        d[i] = (double)(i % C) / 7.0;
    struct api_text_matrix m = {
        .data = d, .rows = R, .cols = C, .stride = C,
        .row_labels = { NULL, 0, "q" }, .col_labels = { NULL, 0, "k" }, .decimals = 4,
        .max_width = 100,
    };
    struct api_buf b;
    api_buf_init(&b);
    api_text_matrix(&b, &m);
    char *s = take(&b);
    assert_aligned(s, R + 1);
    ck_assert_uint_le(strchr(s, '\n') - s, 100);
    /* Three columns each side of the gap, in every line. */
    ck_assert_ptr_nonnull(strstr(s, "k0      k1      k2  ..."));
    ck_assert_ptr_nonnull(strstr(s, "...     k509     k510     k511\n"));
    ck_assert_uint_eq(count(s, "..."), R + 1);
    ck_assert_ptr_nonnull(strstr(s, "q3  0.0000  0.1429  0.2857  ...  72.7143  72.8571  73.0000\n"));
    free(s);

    /* A tall one keeps its first and last three rows. */
    struct api_text_matrix tall = {
        .data = d, .rows = C, .cols = 1, .stride = 1,
        .row_labels = { NULL, 0, "q" }, .col_labels = { NULL, 0, "k" }, .decimals = 2,
    };
    api_buf_init(&b);
    api_text_matrix(&b, &tall);
    s = take(&b);
    ck_assert_str_eq(s, "         k0\n"
                        "q0     0.00\n"
                        "q1     0.14\n"
                        "q2     0.29\n"
                        "...\n"
                        "q509  72.71\n"
                        "q510  72.86\n"
                        "q511  73.00\n");
    free(s);
    free(d);
}
END_TEST

START_TEST(test_table_pads_by_display_width)
{
    const char *header[] = { "op", "result", "meaning" };
    const char *cells[] = { "X @ W_Q", "(10, 64)", "\xEC\xBF\xBC\xEB\xA6\xAC",   /* 쿼리 */
                            "softmax", "(10, 10)", "rows sum to 1" };
    struct api_text_table t = { header, cells, 2, 3, "lrl", NULL };
    struct api_buf b;
    api_buf_init(&b);
    api_text_table(&b, &t);
    char *s = take(&b);
    ck_assert_str_eq(s, "op         result  meaning\n"
                        "X @ W_Q  (10, 64)  \xEC\xBF\xBC\xEB\xA6\xAC\n"
                        "softmax  (10, 10)  rows sum to 1\n");
    free(s);
}
END_TEST

/* The text page of the seed 000 example, byte for byte. */
static const char SEED000_TEXT[] =
    "attention  q (2, 4)  k (2, 4)  v (2, 2)  mask none  d_k 4  scale 0.5\n"
    "\n"
    "step 1  scores = Q @ K^T  (2, 4) @ (4, 2) -> (2, 2)\n"
    "          k0      k1\n"
    "  q0  2.0000  2.0000\n"
    "  q1  0.0000  2.0000\n"
    "\n"
    "step 2  scaled = scores * scale  -> (2, 2)\n"
    "\n"
    "step 3  masked = scaled + bias, -inf where mask is 0  -> (2, 2)\n"
    "\n"
    "step 4  weights = softmax(masked, axis=-1)  -> (2, 2)\n"
    "          k0      k1 |    sum\n"
    "  q0  0.5000  0.5000 | 1.0000\n"
    "  q1  0.2689  0.7311 | 1.0000\n"
    "\n"
    "step 5  output = weights @ V  (2, 2) @ (2, 2) -> (2, 2)\n"
    "           0       1\n"
    "  q0  5.0000  5.0000\n"
    "  q1  2.6894  7.3106\n"
    "\n"
    "warning: query q0 ties keys k0 and k1 for the largest weight: no key wins, and argmax "
    "names only the lowest index\n";

START_TEST(test_attention_text_page)
{
    struct api_response res = call("POST", "/v1/attention", "text/plain",
                                   "{" SEED000 ",\"include\":[\"scores\",\"weights\",\"output\"]}",
                                   NULL);
    ck_assert_int_eq(res.status, 200);
    ck_assert_str_eq(res.content_type, "text/plain; charset=utf-8");
    ck_assert_str_eq(res.body, SEED000_TEXT);
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_attention_text_vector_round_mask)
{
    /* One query as a vector: shapes drop the leading 1; round 2 gives 2 decimals. */
    struct api_response res = call("POST", "/v1/attention", NULL,
        "{\"q\":[1,0],\"k\":[[1,0],[0,1],[0.8,0.2]],\"v\":[[10,0],[0,20],[8,4]],\"scale\":1,"
        "\"round\":2,\"include\":[\"weights\",\"summary\"]}", "text");
    ck_assert_int_eq(res.status, 200);
    ck_assert_ptr_nonnull(strstr(res.body, "q (2,)  k (3, 2)  v (3, 2)  mask none  d_k 2  scale 1\n"));
    ck_assert_ptr_nonnull(strstr(res.body, "(2,) @ (2, 3) -> (3,)\n"));
    ck_assert_ptr_nonnull(strstr(res.body, "       k0    k1    k2 |  sum\n"
                                           "  q  0.46  0.17  0.37 | 1.00\n"));
    ck_assert_ptr_nonnull(strstr(res.body, "  query  argmax  max_weight  entropy\n"
                                           "  q      k0            0.46     1.03\n"));
    api_response_deinit(&res);

    /* Masked cells print as -inf; a fully masked row gets its warning, by label. */
    res = call("POST", "/v1/attention", NULL,
               "{\"q\":[[1,0],[0,1]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":[[1,0],[0,0]],"
               "\"labels\":{\"queries\":[\"first\",\"second\"]},\"include\":[\"masked\"]}", "text");
    ck_assert_int_eq(res.status, 200);
    ck_assert_ptr_nonnull(strstr(res.body, "mask (2, 2)"));
    ck_assert_ptr_nonnull(strstr(res.body, "  first   0.7071  -inf\n"
                                           "  second    -inf  -inf\n"));
    ck_assert_ptr_nonnull(strstr(res.body, "warning: query second may attend to no key"));
    api_response_deinit(&res);

    /* A bias and a key-padding mask, named with their shapes in the header line. */
    res = call("POST", "/v1/attention", NULL,
               "{\"q\":[1,0],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"bias\":[0.5,-0.5],"
               "\"mask\":[1,1],\"scale\":1,\"include\":[\"masked\"]}", "text");
    ck_assert_int_eq(res.status, 200);
    ck_assert_ptr_nonnull(strstr(res.body, "v (2, 1)  mask (2,)  bias (2,)  d_k 2  scale 1\n"));
    ck_assert_ptr_nonnull(strstr(res.body, "  q  1.5000  -0.5000\n"));
    api_response_deinit(&res);
}
END_TEST

/* ---- Svg ---- */

START_TEST(test_blues_colormap)
{
    static const struct { double v; const char *hex; } cases[] = {
        { 0, "#f7fbff" }, { -3, "#f7fbff" }, { NAN, "#f7fbff" }, { 1, "#08306b" },
        { 7, "#08306b" }, { 0.5, "#6aaed6" }, { 0.25, "#c6dbef" }, { 0.75, "#2070b4" },
    };
    char buf[8];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        api_svg_blues(buf, cases[i].v);
        ck_assert_msg(strcmp(buf, cases[i].hex) == 0, "Blues(%g) = %s, not %s", cases[i].v, buf,
                      cases[i].hex);
    }
    ck_assert_str_eq(api_svg_text_colour(0.1), "#262626");
    ck_assert_str_eq(api_svg_text_colour(0.46), "#262626");
    ck_assert_str_eq(api_svg_text_colour(0.6), "#ffffff");
    ck_assert_str_eq(api_svg_text_colour(1), "#ffffff");
}
END_TEST

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s != NULL && fread(s, 1, (size_t)n, f) == (size_t)n) {
        s[n] = '\0';
        *len = (size_t)n;
    } else {
        free(s);
        s = NULL;
    }
    fclose(f);
    return s;
}

START_TEST(test_seed002_heatmap_reference)
{
    struct api_response res = call("POST", "/v1/attention", "image/svg+xml", SEED002_HEATMAP, NULL);
    ck_assert_int_eq(res.status, 200);
    ck_assert_str_eq(res.content_type, "image/svg+xml");
    size_t len = 0;
    char *want = read_file(SEED002_REFERENCE, &len);
    if (want == NULL || len != res.body_len || memcmp(want, res.body, len) != 0) {
        FILE *f = fopen("build/seed002_heatmap.actual.svg", "wb");
        if (f != NULL) {
            fwrite(res.body, 1, res.body_len, f);
            fclose(f);
        }
        ck_abort_msg("the heatmap differs from %s (or it is missing: run from the repository "
                     "root); this build's is in build/seed002_heatmap.actual.svg",
                     SEED002_REFERENCE);
    }
    /* What the lecture's figure shows: nine annotated cells, both label sets, a colour bar. */
    ck_assert_ptr_nonnull(strstr(res.body, ">0.46</text>"));
    ck_assert_ptr_nonnull(strstr(res.body, ">0.55</text>"));
    ck_assert_ptr_nonnull(strstr(res.body, ">\xEC\x82\xAC\xEA\xB3\xBC</text>"));
    ck_assert_ptr_nonnull(strstr(res.body, ">Q3</text>"));
    ck_assert_ptr_nonnull(strstr(res.body, "url(#attnd-blues)"));
    ck_assert_ptr_nonnull(strstr(res.body, ">1.0</text>"));
    ck_assert_uint_eq(count(res.body, "dominant-baseline=\"central\" font-size=\"12\""), 9);
    free(want);
    api_response_deinit(&res);
}
END_TEST

/* The bytes the tooltips take in svg: each cell's "<g><title>…</title>\n" and its
 * "</g>\n", and each axis label's "<title>…</title>" (the document's own title aside). */
static size_t tooltip_bytes(const char *svg)
{
    size_t n = 0;
    const char *first = strstr(svg, "<title>");
    for (const char *p = strstr(first + 1, "<title>"); p != NULL; p = strstr(p + 1, "<title>")) {
        const char *end = strstr(p, "</title>") + strlen("</title>");
        bool cell = p - svg >= 3 && strncmp(p - 3, "<g>", 3) == 0;
        n += (size_t)(end - p) + (cell ? strlen("<g>") + strlen("\n") + strlen("</g>\n") : 0);
    }
    return n;
}

/* The number after "<title>" + prefix in svg, read back as a double; fails when absent. */
static double tip_number(const char *svg, const char *prefix)
{
    char want[256];
    snprintf(want, sizeof want, "<title>%s", prefix);
    const char *p = strstr(svg, want);
    ck_assert_msg(p != NULL, "no tooltip %s", want);
    return strtod(p + strlen(want), NULL);
}

START_TEST(test_svg_cells_carry_tooltips)
{
    /* Seed 002's heatmap: each of the 9 cells names its query and key and its exact
     * weight, softmax of the note's unscaled scores ([1, 0, 0.8] for Q1). */
    struct api_response res = call("POST", "/v1/attention", NULL, SEED002_HEATMAP, "svg");
    ck_assert_int_eq(res.status, 200);
    ck_assert_uint_eq(count(res.body, "<g><title>"), 9);
    double e1 = exp(1.0), e08 = exp(0.8), sum = e1 + 1 + e08;
    double w = tip_number(res.body, "Q1 \xE2\x86\x92 \xEC\x82\xAC\xEA\xB3\xBC: ");
    ck_assert_msg(fabs(w - e1 / sum) <= 1e-15, "Q1 -> apple: %.17g", w);
    w = tip_number(res.body, "Q1 \xE2\x86\x92 \xEC\x82\xAC\xEB\x9E\x8C: ");
    ck_assert_msg(fabs(w - 1 / sum) <= 1e-15, "Q1 -> person: %.17g", w);
    w = tip_number(res.body, "Q1 \xE2\x86\x92 \xEA\xB3\xBC\xEC\x9D\xBC: ");
    ck_assert_msg(fabs(w - e08 / sum) <= 1e-15, "Q1 -> fruit: %.17g", w);
    /* Q3 = [0.5, 0.5] scores 0.5 against every key: a third each, to the last bit. */
    ck_assert_ptr_nonnull(strstr(res.body, "<title>Q3 \xE2\x86\x92 \xEA\xB3\xBC\xEC\x9D\xBC: "
                                           "0.3333333333333333</title>"));
    api_response_deinit(&res);

    /* round: the tooltip's value rounded like every other number of the answer. */
    char body[512];
    snprintf(body, sizeof body, "%.*s,\"round\":3}", (int)strlen(SEED002_HEATMAP) - 1,
             SEED002_HEATMAP);
    res = call("POST", "/v1/attention", NULL, body, "svg");
    ck_assert_int_eq(res.status, 200);
    ck_assert_ptr_nonnull(strstr(res.body, "<title>Q1 \xE2\x86\x92 \xEC\x82\xAC\xEA\xB3\xBC: "
                                           "0.457</title>"));
    api_response_deinit(&res);

    /* A masked cell, a fully masked row, a cut label and its full text. */
    res = call("POST", "/v1/attention", NULL,
        "{\"q\":[[1,0],[0,1]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":[[1,0],[0,0]],"
        "\"labels\":{\"queries\":[\"a very long query label indeed\",\"b\"],"
        "\"keys\":[\"x<y\",\"k\"]}}", "svg");
    ck_assert_int_eq(res.status, 200);
    ck_assert_ptr_nonnull(strstr(res.body, "<g><title>a very long query label indeed \xE2\x86\x92 "
                                           "x&lt;y: 1</title>"));
    ck_assert_ptr_nonnull(strstr(res.body, "<title>a very long query label indeed \xE2\x86\x92 "
                                           "k: masked</title>"));
    ck_assert_ptr_nonnull(strstr(res.body, "<title>b: every key masked</title>"));
    /* The axis shows the label cut to 16 columns; its tooltip keeps the whole. */
    ck_assert_ptr_nonnull(strstr(res.body, "<title>a very long query label indeed</title>"
                                           "a very long que\xE2\x80\xA6</text>"));
    ck_assert_ptr_null(strstr(res.body, "<title>b</title>")); /* an uncut label has none */
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_svg_tooltip_labels_bounded_and_counted)
{
    /* A label of 100 columns is kept to API_SVG_TIP_LABEL in a tooltip, with "…". */
    char label[101];
    memset(label, 'z', 100);
    label[100] = '\0';
    const char *names[] = { label };
    const char *keys[] = { "k&0", "\xEC\x82\xAC\xEA\xB3\xBC" };
    double data[2] = { 0.25, 0.75 };
    struct api_svg_heatmap h = {
        .data = data, .rows = 1, .cols = 2, .stride = 2,
        .row_labels = { names, 1, "q" }, .col_labels = { keys, 2, "k" },
    };
    struct api_buf b;
    api_buf_init(&b);
    api_svg_heatmap_document(&b, &h, "weights", NULL);
    char *svg = take(&b);
    char want[160];
    snprintf(want, sizeof want, "<title>%.*s\xE2\x80\xA6 \xE2\x86\x92 k&amp;0: 0.25</title>",
             API_SVG_TIP_LABEL - 1, label);
    ck_assert_msg(strstr(svg, want) != NULL, "no %s", want);
    ck_assert_ptr_nonnull(strstr(svg, "\xEC\x82\xAC\xEA\xB3\xBC: 0.75</title>"));
    /* What admission counts for them covers what they take. */
    size_t bound = api_svg_tips_bytes(&h.row_labels, 1, &h.col_labels, 2);
    size_t used = tooltip_bytes(svg);
    ck_assert_msg(used > 0 && used <= bound, "tooltips take %zu bytes, counted %zu", used, bound);
    free(svg);
}
END_TEST

START_TEST(test_svg_escapes_every_text)
{
    struct api_response res = call("POST", "/v1/attention", NULL,
        "{\"q\":[[1,0]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],"
        "\"labels\":{\"queries\":[\"<script>alert('x')</script>\"],"
        "\"keys\":[\"a&b\",\"\\\"q\\\"\\u0001\"]}}", "svg");
    ck_assert_int_eq(res.status, 200);
    ck_assert_ptr_null(strstr(res.body, "<script"));
    ck_assert_ptr_nonnull(strstr(res.body, "&lt;script&gt;alert(&#39;\xE2\x80\xA6"));
    ck_assert_ptr_nonnull(strstr(res.body, ">a&amp;b</text>"));
    ck_assert_ptr_nonnull(strstr(res.body, ">&quot;q&quot;&lt;U+0001&gt;</text>"));
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_svg_labels_show_controls_visibly)
{
    fill_visible_names();
    double data[N_VISIBLE];
    for (size_t i = 0; i < N_VISIBLE; i++)
        data[i] = 1.0;
    /* One key, a query per case: 27 rows leave 17-pixel cells, so every label is drawn. */
    const char *key[] = { "\xE2\x80\x8F" "k" };
    struct api_svg_heatmap h = {
        .data = data, .rows = N_VISIBLE, .cols = 1, .stride = 1,
        .row_labels = { visible_names, N_VISIBLE, "q" }, .col_labels = { key, 1, "k" },
        .title = "head \xE2\x80\xAE" "0",
    };
    struct api_buf b;
    api_buf_init(&b);
    api_svg_heatmap_document(&b, &h, "weights", NULL);
    char *svg = take(&b);
    char want[256];
    for (size_t i = 0; i < N_VISIBLE; i++) {
        snprintf(want, sizeof want, ">%s</text>", visible_cases[i].svg);
        ck_assert_msg(strstr(svg, want) != NULL, "%s: no %s", visible_cases[i].name, want);
    }
    ck_assert_ptr_nonnull(strstr(svg, ">&lt;U+200F&gt;k</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">head &lt;U+202E&gt;0</text>"));
    ck_assert_ptr_null(strstr(svg, "\xE2\x80\xAE"));
    ck_assert_ptr_null(strstr(svg, "\xE2\x80\x8F"));
    ck_assert_ptr_null(strstr(svg, "<U+"));   /* every escape is itself escaped */
    free(svg);
}
END_TEST

START_TEST(test_text_escapes_keep_columns_aligned)
{
    fill_visible_names();
    double data[N_VISIBLE * 2];
    for (size_t i = 0; i < N_VISIBLE * 2; i++)
        data[i] = 0.5;
    const char *keys[] = { "\xE2\x80\xAE" "k0", "\xEA\xB3\xBC\xE2\x80\x8F" }; /* <RLO>k0, 과<RLM> */
    struct api_text_matrix m = {
        .data = data, .rows = N_VISIBLE, .cols = 2, .stride = 2,
        .row_labels = { visible_names, N_VISIBLE, "q" }, .col_labels = { keys, 2, "k" },
        .decimals = 4, .indent = "  ",
    };
    struct api_buf b;
    api_buf_init(&b);
    api_text_matrix(&b, &m);
    char *s = take(&b);
    ck_assert_ptr_null(strstr(s, "\xE2\x80\xAE"));
    ck_assert_ptr_null(strstr(s, "\xE2\x80\x8F"));
    /*
     * The label column is 16 wide ("<U+202A><U+202C>"), each key column 10 (its
     * label); 27 rows elide to the first and last three around "...".
     */
    ck_assert_str_eq(s, "                    <U+202E>k0  \xEA\xB3\xBC<U+200F>\n"
                        "  <U+202E>abc           0.5000      0.5000\n"
                        "  a<U+200F>             0.5000      0.5000\n"
                        "  <U+202A><U+202C>      0.5000      0.5000\n"
                        "  ...\n"
                        "  \xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D                  0.5000      0.5000\n"
                        "  \xEF\xBF\xBD                     0.5000      0.5000\n"
                        "  Q1 & <k>              0.5000      0.5000\n");
    free(s);
}
END_TEST

/* A JSON body of an n x n problem (identity-ish q and k, one value column). */
static char *square_problem(size_t n, const char *extra)
{
    struct api_buf b;
    api_buf_init(&b);
    const char *names[] = { "q", "k" };
    api_buf_puts(&b, "{");
    for (int m = 0; m < 2; m++) {
        api_buf_printf(&b, "\"%s\":[", names[m]);
        for (size_t i = 0; i < n; i++)
            api_buf_printf(&b, "%s[%zu,%d]", i ? "," : "", i % 5, m);
        api_buf_puts(&b, "],");
    }
    api_buf_puts(&b, "\"v\":[");
    for (size_t i = 0; i < n; i++)
        api_buf_printf(&b, "%s[%zu]", i ? "," : "", i);
    api_buf_printf(&b, "]%s}", extra);
    return take(&b);
}

START_TEST(test_svg_big_matrix_drops_annotations)
{
    char *body = square_problem(40, "");
    struct api_response res = call("POST", "/v1/attention", NULL, body, "svg");
    ck_assert_int_eq(res.status, 200);
    ck_assert_uint_eq(count(res.body, "<rect x="), 40 * 40 + 1 + 1); /* cells, frame, bar */
    ck_assert_uint_eq(count(res.body, "</text>"), 2 + 6 + 2 + 20 + 20); /* thinned labels */
    ck_assert_ptr_null(strstr(res.body, "font-size=\"10\""));
    ck_assert_ptr_nonnull(strstr(res.body, ">k38</text>"));
    ck_assert_ptr_null(strstr(res.body, ">k39</text>"));
    api_response_deinit(&res);
    free(body);

    /* Small enough: every cell annotated. */
    body = square_problem(12, "");
    res = call("POST", "/v1/attention", NULL, body, "svg");
    ck_assert_int_eq(res.status, 200);
    ck_assert_uint_eq(count(res.body, "font-size=\"10\""), 144);
    api_response_deinit(&res);
    free(body);
}
END_TEST

START_TEST(test_svg_masked_rows_hatched)
{
    struct api_response res = call("POST", "/v1/attention", NULL,
        "{\"q\":[[1,0],[0,1],[1,1]],\"k\":[[1,0],[0,1],[1,1]],\"v\":[[1],[2],[3]],"
        "\"mask\":[[1,0,0],[0,0,0],[1,1,1]]}", "svg");
    ck_assert_int_eq(res.status, 200);
    ck_assert_uint_eq(count(res.body, "fill=\"url(#attnd-hatch)\""), 3); /* 2 cells and 1 row */
    ck_assert_ptr_nonnull(strstr(res.body, ">every key masked</text>"));
    ck_assert_ptr_nonnull(strstr(res.body, "a hatched row attends to no key"));
    ck_assert_ptr_null(strstr(res.body, ">nan<"));
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_svg_panels_for_heads)
{
    /* Two heads and their mean, two panels a row: what a multi-head picture needs. */
    const double h0[] = { 0.9, 0.1, 0.2, 0.8 }, h1[] = { 0.5, 0.5, 0, 1 };
    const double mean[] = { 0.7, 0.3, 0.1, 0.9 };
    const double masked1[] = { 1, 1, -INFINITY, 1 };
    struct api_svg_heatmap panels[3] = {
        { .data = h0, .rows = 2, .cols = 2, .stride = 2, .title = "head 0",
          .row_labels = { NULL, 0, "q" }, .col_labels = { NULL, 0, "k" } },
        { .data = h1, .rows = 2, .cols = 2, .stride = 2, .title = "head 1",
          .blocked = masked1, .blocked_stride = 2,
          .row_labels = { NULL, 0, "q" }, .col_labels = { NULL, 0, "k" } },
        { .data = mean, .rows = 2, .cols = 2, .stride = 2, .title = "mean <of heads>",
          .row_labels = { NULL, 0, "q" }, .col_labels = { NULL, 0, "k" } },
    };
    struct api_buf b;
    api_buf_init(&b);
    api_svg_panels_document(&b, panels, 3, 2, "Multi-head weights", NULL);
    char *s = take(&b);
    ck_assert_uint_eq(count(s, "<g>\n"), 4); /* three panels and the colour bar */
    ck_assert_uint_eq(count(s, "fill=\"url(#attnd-blues)\""), 1);
    ck_assert_ptr_nonnull(strstr(s, ">head 0</text>"));
    ck_assert_ptr_nonnull(strstr(s, ">head 1</text>"));
    ck_assert_ptr_nonnull(strstr(s, ">mean &lt;of heads&gt;</text>"));
    ck_assert_uint_eq(count(s, "fill=\"url(#attnd-hatch)\""), 1);
    ck_assert_ptr_nonnull(strstr(s, "hatched: masked cells"));
    ck_assert_ptr_nonnull(strstr(s, ">0.90</text>"));
    ck_assert_ptr_nonnull(strstr(s, "</svg>\n"));
    /* The mean's panel starts a second row, below the first. */
    const char *mean_title = strstr(s, ">mean &lt;of heads&gt;</text>");
    const char *y = mean_title;
    while (y > s && strncmp(y, " y=\"", 4) != 0)
        y--;
    ck_assert_int_gt(atoi(y + 4), 150);
    free(s);
}
END_TEST

/* ---- Negotiation ---- */

START_TEST(test_negotiation)
{
    static const struct { const char *accept, *format, *type; int status; } cases[] = {
        { NULL, NULL, "application/json", 200 },
        { "*/*", NULL, "application/json", 200 },
        { "text/plain", NULL, "text/plain; charset=utf-8", 200 },
        { "text/*", NULL, "text/plain; charset=utf-8", 200 },
        { "image/svg+xml", NULL, "image/svg+xml", 200 },
        { "text/plain;q=0.5, image/svg+xml", NULL, "image/svg+xml", 200 },
        { "image/svg+xml; q=0.2, application/json", NULL, "application/json", 200 },
        { "image/png, text/plain;q=0.1", NULL, "text/plain; charset=utf-8", 200 },
        { "image/svg+xml", "text", "text/plain; charset=utf-8", 200 },
        { "application/json", "svg", "image/svg+xml", 200 },
        { "image/png", "json", "application/json", 200 },
        { "image/png", NULL, "application/problem+json", 406 },
        { "text/plain;q=0", NULL, "application/problem+json", 406 },
        { NULL, "png", "application/problem+json", 422 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct api_response res = call("POST", "/v1/attention", cases[i].accept, "{" SEED000 "}",
                                       cases[i].format);
        ck_assert_msg(res.status == cases[i].status, "case %zu: %d", i, res.status);
        ck_assert_msg(strcmp(res.content_type, cases[i].type) == 0, "case %zu: %s", i,
                      res.content_type);
        api_response_deinit(&res);
    }
    /* 406 names what the endpoint makes. */
    struct api_response res = call("POST", "/v1/attention", "image/png", "{" SEED000 "}", NULL);
    ck_assert_ptr_nonnull(strstr(res.body, "application/json, text/plain or image/svg+xml"));
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_problems_stay_json)
{
    const char *formats[] = { "text", "svg" };
    for (size_t i = 0; i < 2; i++) {
        struct api_response res = call("POST", "/v1/attention", NULL,
                                       "{\"q\":[[1,0,1,0]],\"k\":[[1,1],[0,1],[1,1],[0,1]],"
                                       "\"v\":[[1],[2]]}", formats[i]);
        ck_assert_int_eq(res.status, 422);
        ck_assert_str_eq(res.content_type, "application/problem+json");
        ck_assert_ptr_nonnull(strstr(res.body, "\"pointer\":\"/k\""));
        api_response_deinit(&res);
        res = call("POST", "/v1/attention", NULL, "{", formats[i]);
        ck_assert_int_eq(res.status, 400);
        ck_assert_str_eq(res.content_type, "application/problem+json");
        api_response_deinit(&res);
    }
    /* Other endpoints make no text or SVG. */
    const char *json_only[][2] = { { "GET", "/healthz" }, { "GET", "/version" } };
    for (size_t i = 0; i < 2; i++) {
        struct api_response res = call(json_only[i][0], json_only[i][1], NULL, NULL, "svg");
        ck_assert_int_eq(res.status, 406);
        api_response_deinit(&res);
        res = call(json_only[i][0], json_only[i][1], "image/svg+xml", NULL, NULL);
        ck_assert_int_eq(res.status, 406);
        api_response_deinit(&res);
    }
}
END_TEST

START_TEST(test_playground_route)
{
    struct api_response res = call("GET", "/nowhere", NULL, NULL, NULL);
    ck_assert_int_eq(res.status, 404);
    ck_assert_ptr_nonnull(strstr(res.body, "GET / (the playground)"));
    api_response_deinit(&res);
    res = call("POST", "/", NULL, "{}", NULL);
    ck_assert_int_eq(res.status, 405);
    ck_assert_str_eq(res.headers[0].name, "Allow");
    ck_assert_str_eq(res.headers[0].value, "GET, HEAD, OPTIONS");
    api_response_deinit(&res);
    ck_assert_str_eq(api_route_template(api_route_of("/")), "/");
    ck_assert_uint_eq(api_route_of("/nowhere"), api_route_count());
    ck_assert_ptr_null(api_route_template(api_route_count()));
}
END_TEST

/* A server's file is refused where it would shadow a route or could never match. */
START_TEST(test_file_routes_refused)
{
    ck_assert(!api_route_add_file("/", NULL));
    ck_assert(!api_route_add_file("/v1/attention", NULL));
    ck_assert(!api_route_add_file("/problems/x.js", NULL));
    ck_assert(!api_route_add_file("/v2/models/x", NULL));
    ck_assert(!api_route_add_file("/a/{b}", NULL));
    ck_assert(!api_route_add_file("a.js", NULL));
    char names[API_ROUTES_MAX][16];
    size_t added = 0;
    while (added < API_ROUTES_MAX) {
        snprintf(names[added], sizeof names[added], "/f%zu.js", added);
        if (!api_route_add_file(names[added], NULL))
            break;
        added++;
    }
    ck_assert_uint_eq(api_route_count(), API_ROUTES_MAX);
    ck_assert_str_eq(api_route_template(api_route_of("/f0.js")), "/f0.js");
}
END_TEST

START_TEST(test_buffer)
{
    struct api_buf b;
    api_buf_init(&b);
    char *s = take(&b); /* empty is a string, not a failure */
    ck_assert_str_eq(s, "");
    free(s);
    api_buf_init(&b);
    for (int i = 0; i < 1000; i++)
        api_buf_printf(&b, "%04d,", i);
    api_buf_fill(&b, '-', 3);
    api_buf_xml(&b, "<a href=\"x\">&'\x01\t</a>");
    s = take(&b);
    ck_assert_uint_eq(strlen(s), 5000 + 3 + strlen("&lt;a href=&quot;x&quot;&gt;&amp;&#39;?\t&lt;/a&gt;"));
    ck_assert_ptr_nonnull(strstr(s, "0999,---&lt;a href=&quot;x&quot;&gt;&amp;&#39;?\t&lt;/a&gt;"));
    free(s);
    api_buf_deinit(&b); /* twice is harmless */
}
END_TEST

/* The tile grid: a glyph a tile, a tall grid elided to its ends, a wide line kept within
 * the budget around " ... ", and never more bytes than api_text_tiles_bytes counts. */
START_TEST(test_text_tiles_elided_and_counted)
{
    static const size_t sizes[][2] = { { 1, 1 }, { 3, 4 }, { 20, 90 }, { 21, 95 }, { 64, 300 } };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t rows = sizes[s][0], cols = sizes[s][1];
        unsigned char *tiles = malloc(rows * cols);
        ck_assert_ptr_nonnull(tiles);
        for (size_t i = 0; i < rows * cols; i++)
            tiles[i] = (unsigned char)(i % 3);
        struct api_buf b;
        api_buf_init(&b);
        struct api_text_tiles t = {
            .tiles = tiles, .rows = rows, .cols = cols, .row_labels = { NULL, rows * 128, "q" },
            .row_step = 128, .glyphs = { "\xC2\xB7", "\xE2\x96\x92", "\xE2\x96\x88" },
            .indent = "  ",
        };
        api_text_tiles(&b, &t);
        ck_assert(!b.failed);
        ck_assert_uint_le(b.len, api_text_tiles_bytes(rows, cols));
        size_t lines = 0;
        for (char *line = b.data, *end; (end = strchr(line, '\n')) != NULL; line = end + 1) {
            *end = '\0';
            ck_assert_uint_le(api_text_width(line), API_TEXT_WIDTH);
            lines++;
        }
        ck_assert_uint_eq(lines, rows > API_TEXT_MAX_ROWS ? 2 * API_TEXT_EDGE + 1 : rows);
        ck_assert_int_eq(strstr(b.data, " ... ") != NULL, cols + 8 > API_TEXT_WIDTH);
        if (rows == 3)
            ck_assert_str_eq(b.data, "  q0    \xC2\xB7\xE2\x96\x92\xE2\x96\x88\xC2\xB7");
        api_buf_deinit(&b);
        free(tiles);
    }
}
END_TEST

static Suite *render_suite(void)
{
    Suite *s = suite_create("render");
    TCase *text = tcase_create("Text");
    tcase_add_test(text, test_buffer);
    tcase_add_test(text, test_display_width);
    tcase_add_test(text, test_text_tiles_elided_and_counted);
    tcase_add_test(text, test_numbers);
    tcase_add_test(text, test_labels_sanitized_and_cut);
    tcase_add_test(text, test_labels_show_controls_visibly);
    tcase_add_test(text, test_text_escapes_keep_columns_aligned);
    tcase_add_test(text, test_matrix_aligned_with_wide_labels);
    tcase_add_test(text, test_wide_matrix_elided_like_numpy);
    tcase_add_test(text, test_table_pads_by_display_width);
    tcase_add_test(text, test_attention_text_page);
    tcase_add_test(text, test_attention_text_vector_round_mask);
    suite_add_tcase(s, text);
    TCase *svg = tcase_create("Svg");
    tcase_add_test(svg, test_blues_colormap);
    tcase_add_test(svg, test_seed002_heatmap_reference);
    tcase_add_test(svg, test_svg_escapes_every_text);
    tcase_add_test(svg, test_svg_labels_show_controls_visibly);
    tcase_add_test(svg, test_svg_big_matrix_drops_annotations);
    tcase_add_test(svg, test_svg_masked_rows_hatched);
    tcase_add_test(svg, test_svg_panels_for_heads);
    tcase_add_test(svg, test_svg_cells_carry_tooltips);
    tcase_add_test(svg, test_svg_tooltip_labels_bounded_and_counted);
    suite_add_tcase(s, svg);
    TCase *neg = tcase_create("Negotiation");
    tcase_add_test(neg, test_negotiation);
    tcase_add_test(neg, test_problems_stay_json);
    tcase_add_test(neg, test_playground_route);
    tcase_add_test(neg, test_file_routes_refused);
    suite_add_tcase(s, neg);
    return s;
}

int main(void)
{
    api_global_init();
    /* "/" routed as the server routes it (server/www.c), before any fork. */
    if (!api_route_add_file("/", "the playground"))
        return 1;
    return suite_run(render_suite());
}
