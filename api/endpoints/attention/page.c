/*
 * api/endpoints/attention/page.c — /v1/attention's text and SVG pages (see attention/page.h).
 */
#include "api/endpoints/attention/page.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/endpoints/answer.h"
#include "api/endpoints/attention/variants.h"
#include "api/endpoints/block_map.h"
#include "api/http/admission.h"
#include "api/i18n/lang.h"
#include "api/json/matrix_write.h"
#include "api/json/numfmt.h"
#include "api/render/svg.h"
#include "api/request/body.h"
#include "api/request/fields.h"

const char **api_label_names(const json_t *labels, const char *which, size_t n)
{
    const json_t *list = labels != NULL ? json_object_get(labels, which) : NULL;
    if (!json_is_array(list) || json_array_size(list) != n || n == 0)
        return NULL;
    const char **names = malloc(n * sizeof *names);
    if (names == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        names[i] = json_string_value(json_array_get(list, i)); /* NULL falls back to q<i> */
    return names;
}

/* The query and key labels of a request; free both arrays with labels_free. */
struct axis_labels {
    struct api_labels queries, keys;
    struct api_labels every_query; /* the problem's queries, `rows` aside: the block map's */
    const char **q_names, **k_names;
    const char **every_q_names;    /* with `rows`, the names q_names held before the pick */
    char *picked; /* `rows`: the listed queries' labels, API_TEXT_LABEL bytes each */
};

/* With `rows`, the answer's row i is labelled as query rows[i] is: its name or q<index>. */
static void pick_query_labels(struct axis_labels *a, const struct api_attention_req *r,
                              struct api_buf *b)
{
    const char **names;
    if (!api_labels_pick(&a->queries, r->rows, r->n_rows, &a->queries, &names, &a->picked)) {
        b->failed = true;
        return;
    }
    a->every_q_names = a->q_names; /* still named by every_query */
    a->q_names = names;
}

/* Fails b when labels were sent but no memory could hold them: never the wrong names. */
static void labels_init(struct axis_labels *a, const struct api_attention_req *r,
                        struct api_buf *b)
{
    static const char *const lone_query[] = { "q" };
    a->q_names = api_label_names(r->grid.labels, "queries", r->q.rows);
    a->k_names = api_label_names(r->grid.labels, "keys", r->k.rows);
    a->queries = (struct api_labels){ a->q_names, r->q.rows, "q" };
    if (a->q_names == NULL && r->q_is_vector)
        a->queries.names = lone_query; /* one query sent as a vector is just "q" */
    a->keys = (struct api_labels){ a->k_names, r->k.rows, "k" };
    a->picked = NULL;
    a->every_q_names = NULL;
    a->every_query = a->queries;
    if ((a->q_names == NULL && api_member(r->grid.labels, "queries") != NULL) ||
        (a->k_names == NULL && api_member(r->grid.labels, "keys") != NULL))
        b->failed = true;
    else if (r->rows != NULL)
        pick_query_labels(a, r, b);
}

static void labels_free(struct axis_labels *a)
{
    free(a->picked);
    free(a->every_q_names);
    free(a->q_names);
    free(a->k_names);
}

/* The scale as JSON would print it: shortest, or rounded like every other number. */
static void scale_text(char *buf, const struct api_attention_req *r)
{
    double s = r->grid.round >= 0 ? api_round_decimals(r->scale, r->grid.round) : r->scale;
    api_format_double(s, buf);
}

static void mask_text(char *buf, size_t len, const struct api_attention_req *r)
{
    char shape[API_TEXT_SHAPE];
    switch (r->grid.mask_kind) {
    case ATTN_MASK_CAUSAL:
        snprintf(buf, len, "causal");
        break;
    case ATTN_MASK_CELLS:
        api_text_shape(shape, r->grid.mask_rows, r->k.rows, r->grid.mask_is_vector);
        snprintf(buf, len, "%s%s", shape, r->grid.block_semantics ? API_TR(" (1 = blocked)") : "");
        break;
    default:
        snprintf(buf, len, "%s", API_TR("none"));
    }
}

/* "step 1  scores = Q @ K^T  (2, 4) @ (4, 2) -> (2, 2)" */
static void step_line(struct api_buf *b, int number, const char *name, const char *op,
                      const char *left, const char *right, const char *result)
{
    api_buf_printf(b, API_TR("\nstep %d  %s = %s  "), number, name, op);
    if (left != NULL)
        api_buf_printf(b, "%s @ %s ", left, right);
    api_buf_printf(b, "-> %s\n", result);
}

static void summary_table(struct api_buf *b, const struct attn_trace *t,
                          const struct axis_labels *a, int decimals)
{
    const char *const header[] = { API_TR("query"), "argmax", "max_weight", "entropy" };
    size_t n = t->n_q;
    /* Four strings a row, each in its own small slot of one block. */
    enum { SLOT = API_TEXT_LABEL > API_TEXT_NUMBER ? API_TEXT_LABEL : API_TEXT_NUMBER };
    char *text = malloc(n * 4 * SLOT);
    const char **cells = malloc(n * 4 * sizeof *cells);
    if (text == NULL || cells == NULL) {
        b->failed = true; /* the page cannot be complete: say so with a 503 */
        free(text);
        free(cells);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char *row = text + i * 4 * SLOT;
        api_text_label(row, &a->queries, i);
        api_text_winner(row + SLOT, t, i, &a->keys); /* a tie names no winner */
        api_text_number(row + 2 * SLOT, t->summary.max_weight[i], decimals);
        api_text_number(row + 3 * SLOT, t->summary.entropy[i], decimals);
        for (size_t c = 0; c < 4; c++)
            cells[i * 4 + c] = row + c * SLOT;
    }
    api_buf_puts(b, API_TR("\nsummary\n"));
    struct api_text_table tab = { header, cells, n, 4, "llrr", "  " };
    api_text_table(b, &tab);
    free(text);
    free(cells);
}

static size_t max3(size_t a, size_t b, size_t c)
{
    size_t m = a > b ? a : b;
    return m > c ? m : c;
}

/* The rules' visibility, as the JSON's write_visibility reads it: every head alike. */
struct visibility_of {
    struct attn_problem p;
    struct attn_variants v;
    struct api_visibility vis;
};

static void visibility_init(struct visibility_of *o, const struct api_attention_req *r)
{
    o->p = (struct attn_problem){ .mask = api_grid_mask(&r->grid) };
    o->v = api_variants_for_head(&r->variants, 0);
    o->vis = (struct api_visibility){ &o->p, &o->v, r->q.rows, r->k.rows, r->rows,
                                      api_attention_answer_rows(r) };
}

/* visible and block_map, when included, after the softmax's parts as the JSON has them. */
static void visibility_text(struct api_buf *b, const struct api_attention_req *r,
                            const struct axis_labels *a, int decimals)
{
    if (!(r->include & ((1ul << API_PART_VISIBLE) | (1ul << API_PART_BLOCK_MAP))))
        return;
    struct visibility_of o;
    visibility_init(&o, r);
    if (r->include & (1ul << API_PART_VISIBLE))
        api_text_visible(b, &o.vis, &a->queries, &a->keys);
    if (r->include & (1ul << API_PART_BLOCK_MAP))
        api_text_block_map(b, &o.vis, r->variants.masks.block_q, r->variants.masks.block_k,
                           decimals, &a->every_query);
}

size_t api_attention_text_bytes(const struct api_attention_req *r)
{
    /* The five steps, the softmax's parts, the variants' steps and a pitfall's wrong
       steps: at most this many matrices, each at most (max rows, max columns). */
    enum { MATRICES = 24 + 13 }; /* and the backward pass's steps */
    size_t n_q = r->q.rows, n_k = r->k.rows, d_k = r->q.cols, d_v = r->v.cols;
    if (api_attention_answer_rows(r) > n_q) /* `rows` may repeat a row */
        n_q = api_attention_answer_rows(r);
    size_t bytes = api_text_page_bytes(MATRICES, max3(n_q, n_k, 1), max3(n_k, d_k, d_v), n_q);
    /* A worked-out row: a line a key and a term, each term a number or a label. */
    const struct api_explain_sizes sizes = { n_q, n_k, d_k, d_v, 0 };
    size_t terms = api_explain_numbers(&r->explain, &sizes);
    size_t term = API_TEXT_LABEL + API_TEXT_NUMBER + 4;
    size_t explain = terms > SIZE_MAX / term ? SIZE_MAX : terms * term;
    bytes = bytes > SIZE_MAX - explain ? SIZE_MAX : bytes + explain;
    /* visible's matrix and the block map's grid, beside the steps (block_map.h) */
    const struct api_masks *m = &r->variants.masks;
    size_t vis = api_text_visibility_bytes(r->include & (1ul << API_PART_VISIBLE),
                                           r->include & (1ul << API_PART_BLOCK_MAP), n_q,
                                           r->q.rows, n_k, m->block_q, m->block_k);
    return bytes > SIZE_MAX - vis ? SIZE_MAX : bytes + vis;
}

void api_attention_text(struct api_buf *b, const struct api_attention_req *r,
                        const struct attn_trace *t)
{
    size_t n_q = api_attention_answer_rows(r), n_k = r->k.rows, d_k = r->q.cols, d_v = r->v.cols;
    bool vec = r->q_is_vector;
    int decimals = r->grid.round >= 0 ? r->grid.round : 4;
    struct axis_labels a;
    labels_init(&a, r, b);

    char sq[API_TEXT_SHAPE], sk[API_TEXT_SHAPE], sv[API_TEXT_SHAPE], skt[API_TEXT_SHAPE];
    char sgrid[API_TEXT_SHAPE], sout[API_TEXT_SHAPE], scale[API_NUMBER_MAX], mask[80];
    api_text_shape(sq, r->q.rows, d_k, vec); /* q as sent; `rows` picks the answer's rows */
    api_text_shape(sk, n_k, d_k, false);
    api_text_shape(skt, d_k, n_k, false);
    api_text_shape(sv, n_k, d_v, false);
    api_text_shape(sgrid, n_q, n_k, vec);
    api_text_shape(sout, n_q, d_v, vec);
    scale_text(scale, r);
    mask_text(mask, sizeof mask, r);

    char bias[API_TEXT_SHAPE + 8] = "";
    if (r->grid.bias.data != NULL) {
        char sb[API_TEXT_SHAPE];
        api_text_shape(sb, r->grid.bias.rows, r->grid.bias.cols, vec);
        snprintf(bias, sizeof bias, "  bias %s", sb);
    }
    api_buf_printf(b, "attention  q %s  k %s  v %s  mask %s%s  d_k %zu  scale %s\n", sq, sk,
                   sv, mask, bias, d_k, scale);
    if (r->precision.on)
        api_precision_text_header(b, &r->precision);

    static const char *const names[] = { "scores", "scaled", "masked", "weights", "output" };
    const struct attn_matrix *mats[] = { &t->scores, &t->scaled, &t->masked, &t->weights,
                                         &t->output };
    struct api_variant_ops vops; /* the same words as without variants when none is asked */
    api_variant_ops_of(&r->variants, r->grid.block_semantics, &vops);
    const char *ops[] = { vops.scores, "scores * scale", vops.masked, vops.weights, vops.output };
    static const enum api_variant_stage before[] = { API_STAGE_BEFORE_SCORES, API_STAGE_COUNT,
                                                     API_STAGE_AFTER_SCALED, API_STAGE_COUNT,
                                                     API_STAGE_AFTER_WEIGHTS };
    int number = 1;
    for (int s = 0; s < 5; s++) {
        const char *left = s == 0 ? sq : s == 4 ? sgrid : NULL;
        const char *right = s == 0 ? skt : sv;
        if (before[s] != API_STAGE_COUNT)
            api_attention_text_variant_steps(b, r, before[s], &number, decimals, &a.queries,
                                             &a.keys);
        step_line(b, number++, names[s], ops[s], left, right, s == 4 ? sout : sgrid);
        if (!(r->include & (1ul << s))) {
            if (r->precision.on) /* the error line says what the matrix would have */
                api_precision_text_step(b, &r->precision, r->report, names[s]);
            continue;
        }
        const struct attn_matrix *m = mats[s];
        struct api_text_matrix tm = {
            .data = m->data, .rows = m->rows, .cols = m->cols, .stride = m->stride,
            .row_labels = a.queries,
            .col_labels = s == 4 ? (struct api_labels){ NULL, 0, "" } : a.keys,
            .extra = s == 3 ? t->summary.row_sums : NULL,
            .extra_label = API_TR("sum"),
            .decimals = decimals,
            .indent = "  ",
        };
        api_text_matrix(b, &tm);
        if (r->precision.on)
            api_precision_text_step(b, &r->precision, r->report, names[s]);
    }
    api_text_softmax_parts(b, t, API_SOFTMAX_PARTS(r->include), decimals, &a.queries, &a.keys,
                           r->precision.on ? &r->precision.rules : NULL);
    api_text_row_stats(b, &t->summary, t->n_q, API_ROW_STATS(r->include), decimals, &a.queries);
    visibility_text(b, r, &a, decimals);
    api_attention_text_backward(b, r, decimals, &a.queries, &a.keys);
    if (r->include & (1ul << API_PART_SUMMARY))
        summary_table(b, t, &a, decimals);
    if (r->explain.on) {
        const struct api_explain_row x = api_attention_explain_row(r, t);
        api_explain_text(b, &x, decimals, &a.queries, &a.keys);
    }
    if (r->pitfall != API_PITFALL_NONE) {
        struct api_pitfall_result p;
        api_attention_pitfall(&p, r, t);
        api_pitfall_text(b, &p, decimals, &a.queries, &a.keys);
        api_pitfall_result_free(&p);
    }
    const struct api_row_causes causes = { &r->grid, r->variants.window, r->variants.sink, t, 1,
                                           r->rows, NULL, NULL,
                                           api_masks_hide(&r->variants.masks) };
    api_text_masked_warnings(b, t->summary.fully_masked, n_q, &a.queries, API_ZEROED_OUTPUT,
                             &causes);
    const struct api_tie_source ties = { t, 1, n_q, vec, false, r->rows };
    api_text_tie_warnings(b, &ties, &a.queries, &a.keys);
    if (r->precision.on)
        api_precision_text_warning(b, &r->precision, r->report);
    labels_free(&a);
}

void api_weights_range(const struct attn_matrix *w, const struct attn_matrix *masked,
                       const unsigned char *empty_rows, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t i = 0; i < w->rows; i++) {
        if (empty_rows != NULL && empty_rows[i])
            continue; /* hatched, not drawn */
        for (size_t j = 0; j < w->cols; j++) {
            double m = attn_at(masked, i, j), x = attn_at(w, i, j);
            if ((isinf(m) && m < 0) || !isfinite(x)) /* masked, or drawn red (precision) */
                continue;
            *lo = x < *lo ? x : *lo;
            *hi = x > *hi ? x : *hi;
        }
    }
    if (*lo > *hi) /* nothing drawn */
        *lo = 0, *hi = 1;
}

void api_attention_svg(struct api_buf *b, const struct api_attention_req *r,
                       const struct attn_trace *t)
{
    struct axis_labels a;
    labels_init(&a, r, b);
    char scale[API_NUMBER_MAX], subtitle[400 + 2 * API_TEXT_LABEL], tie[2 * API_TEXT_LABEL];
    char variants[224], red[96];
    scale_text(scale, r);
    api_precision_svg_note(red, sizeof red, &r->precision, &t->weights);
    api_text_tie_rows(tie, sizeof tie, t, t->n_q, &a.queries); /* a tie names no winner */
    api_variants_describe(&r->variants, variants, sizeof variants);
    int used = snprintf(subtitle, sizeof subtitle,
                        API_TR("softmax(Q @ K^T * scale) with scale %s; %zu x %zu"),
                        scale, t->n_q, r->k.rows);
    if (used > 0 && (size_t)used < sizeof subtitle)
        used += snprintf(subtitle + used, sizeof subtitle - (size_t)used, "%s", variants);
    if (tie[0] != '\0' && used > 0 && (size_t)used < sizeof subtitle)
        used += snprintf(subtitle + used, sizeof subtitle - (size_t)used, "; %s", tie);
    if (red[0] != '\0' && used > 0 && (size_t)used < sizeof subtitle)
        snprintf(subtitle + used, sizeof subtitle - (size_t)used, "%s", red);
    struct api_svg_heatmap h = {
        .data = t->weights.data, .rows = t->weights.rows, .cols = t->weights.cols,
        .stride = t->weights.stride,
        .blocked = t->masked.data, .blocked_stride = t->masked.stride,
        .empty_rows = t->summary.fully_masked,
        .row_labels = a.queries, .col_labels = a.keys,
        .title = NULL,
        .tip_rounded = r->grid.round >= 0, .tip_round = r->grid.round,
    };
    double lo, hi;
    api_weights_range(&t->weights, &t->masked, t->summary.fully_masked, &lo, &hi);
    api_heatmap_bounds(&r->heatmap, lo, hi, &h.vmin, &h.vmax);
    api_svg_words(&h);
    /* include "block_map": its tiles over the cells they group, unless `rows` picked the
     * heatmap's rows (they would then not be the tiles' rows) */
    struct api_page_tiles tiles = { 0 };
    if ((r->include & (1ul << API_PART_BLOCK_MAP)) && r->rows == NULL) {
        struct visibility_of o;
        visibility_init(&o, r);
        if (api_page_tiles_init(&tiles, &o.vis, r->variants.masks.block_q,
                                r->variants.masks.block_k))
            h.tiles = &tiles.svg;
        else
            b->failed = true; /* admitted with the page: a 503, never a picture without them */
    }
    api_svg_heatmap_document(b, &h, r->heatmap.title != NULL ? r->heatmap.title
                                                             : API_TR("Attention weights"), subtitle);
    api_page_tiles_free(&tiles);
    labels_free(&a);
}

size_t api_attention_svg_tiles_bytes(const struct api_attention_req *r)
{
    const struct api_masks *m = &r->variants.masks;
    if (!(r->include & (1ul << API_PART_BLOCK_MAP)) || r->rows != NULL)
        return 0;
    return api_svg_tiles_bytes(api_block_map_tiles(r->q.rows, r->k.rows, m->block_q, m->block_k));
}

size_t api_page_tips_bytes(const json_t *labels, size_t n_q, size_t n_k)
{
    const char **q_names = api_label_names(labels, "queries", n_q);
    const char **k_names = api_label_names(labels, "keys", n_k);
    struct api_labels queries = { q_names, n_q, "q" }, keys = { k_names, n_k, "k" };
    size_t bytes = api_svg_tips_bytes(&queries, n_q, &keys, n_k);
    free(q_names);
    free(k_names);
    return bytes;
}
