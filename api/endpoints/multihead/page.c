/*
 * api/endpoints/multihead/page.c — /v1/multihead as text/plain and image/svg+xml, and the
 * /v1/shapes table as text/plain, from the generic pieces of render/text.h and
 * render/svg.h.
 *
 * The text page follows the eleven steps: a header with the sizes, each step with
 * its op and operand shapes, its matrices when included (per-head steps one block
 * per head, labelled with its kv head), then the summary per head, with backward its
 * steps (multihead/backward.c), and warnings.
 * The SVG draws one heatmap panel per head and one for the mean.
 */
#include "api/endpoints/multihead/page.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/endpoints/answer.h"
#include "api/endpoints/attention/page.h"
#include "api/endpoints/attention/variants.h"
#include "api/endpoints/multihead/variants.h"
#include "api/i18n/lang.h"
#include "api/json/numfmt.h"
#include "api/render/svg.h"
#include "api/render/text.h"
#include "api/request/fields.h"

struct mh_labels {
    struct api_labels queries, keys, none; /* queries: the answer's rows */
    struct api_labels sent;                /* x's rows, as sent */
    const char **q_names, **k_names;
    const char **picked_names; /* `rows`: the listed queries' labels, in picked */
    char *picked;
};

/*
 * Fails b when labels were sent but no memory could hold them: never the wrong names.
 * With `rows`, the answer's row i is labelled as query rows[i] is.
 */
static void mh_labels_init(struct mh_labels *a, const struct api_multihead_req *r,
                           const struct attn_mh_trace *t, struct api_buf *b)
{
    size_t n_q = r->x_q.rows;
    a->q_names = api_label_names(r->grid.labels, "queries", n_q);
    a->k_names = api_label_names(r->grid.labels, "keys", t->n_k);
    a->queries = (struct api_labels){ a->q_names, n_q, "q" };
    a->sent = a->queries;
    a->keys = (struct api_labels){ a->k_names, t->n_k, "k" };
    a->none = (struct api_labels){ NULL, 0, "" };
    a->picked_names = NULL;
    a->picked = NULL;
    if ((a->q_names == NULL && api_member(r->grid.labels, "queries") != NULL) ||
        (a->k_names == NULL && api_member(r->grid.labels, "keys") != NULL)) {
        b->failed = true;
        return;
    }
    if (r->rows != NULL && !api_labels_pick(&a->sent, r->rows, r->n_rows, &a->queries,
                                            &a->picked_names, &a->picked))
        b->failed = true;
}

static void mh_labels_free(struct mh_labels *a)
{
    free(a->picked);
    free(a->picked_names);
    free(a->q_names);
    free(a->k_names);
}

static int mh_decimals(const struct api_multihead_req *r)
{
    return r->grid.round >= 0 ? r->grid.round : 4;
}

static void print_matrix(struct api_buf *b, const struct attn_matrix *m,
                         const struct api_labels *rows, const struct api_labels *cols,
                         const double *extra, int decimals)
{
    struct api_text_matrix tm = {
        .data = m->data, .rows = m->rows, .cols = m->cols, .stride = m->stride,
        .row_labels = *rows, .col_labels = *cols,
        .extra = extra, .extra_label = API_TR("sum"),
        .decimals = decimals, .indent = "  ",
    };
    api_text_matrix(b, &tm);
}

static void step_line(struct api_buf *b, int number, const char *name, const char *op,
                      const char *operands, const char *result)
{
    api_buf_printf(b, API_TR("\nstep %d  %s = %s  %s%s-> %s\n"), number, name, op,
                   operands ? operands : "", operands ? " " : "", result);
}

/* "(2, 8) @ (8, 8)" into buf. */
static void operands2(char *buf, size_t len, size_t a, size_t b, size_t c, size_t d)
{
    char l[API_TEXT_SHAPE], r[API_TEXT_SHAPE];
    api_text_shape(l, a, b, false);
    api_text_shape(r, c, d, false);
    snprintf(buf, len, "%s @ %s", l, r);
}

/* One step computed per head: a block per head when it is included. */
static void per_head_blocks(struct api_buf *b, const struct api_multihead_req *r,
                            const struct attn_mh_trace *t, int part, const struct mh_labels *a)
{
    if (!(r->include & (1ul << part)))
        return;
    for (size_t h = 0; h < t->heads; h++) {
        const struct attn_trace *ht = &t->head[h];
        api_buf_printf(b, API_TR("  head %zu (kv head %zu)\n"), h,
                       attn_mh_kv_head(h, t->heads, t->kv_heads));
        switch (part) {
        case API_MH_SCORES: print_matrix(b, &ht->scores, &a->queries, &a->keys, NULL,
                                         mh_decimals(r)); break;
        case API_MH_SCALED: print_matrix(b, &ht->scaled, &a->queries, &a->keys, NULL,
                                         mh_decimals(r)); break;
        case API_MH_MASKED: print_matrix(b, &ht->masked, &a->queries, &a->keys, NULL,
                                         mh_decimals(r)); break;
        case API_MH_WEIGHTS: print_matrix(b, &ht->weights, &a->queries, &a->keys,
                                          ht->summary.row_sums, mh_decimals(r)); break;
        default: print_matrix(b, &ht->output, &a->queries, &a->none, NULL, mh_decimals(r));
        }
    }
}

static void whole_block(struct api_buf *b, const struct api_multihead_req *r, int part,
                        const struct attn_matrix *m, const struct api_labels *rows,
                        const struct api_labels *cols)
{
    if (r->include & (1ul << part))
        print_matrix(b, m, rows, cols, NULL, mh_decimals(r));
}

static void summary_lines(struct api_buf *b, const struct attn_mh_trace *t,
                          const struct mh_labels *a, int decimals)
{
    api_buf_puts(b, API_TR("\nsummary (argmax key, max weight, per head)\n"));
    for (size_t i = 0; i < t->n_q; i++) {
        char label[API_TEXT_LABEL];
        api_text_label(label, &a->queries, i);
        api_buf_printf(b, "  %s:", label);
        for (size_t h = 0; h < t->heads; h++) {
            const struct attn_summary *s = &t->head[h].summary;
            char key[API_TEXT_LABEL], weight[API_TEXT_NUMBER];
            api_text_winner(key, &t->head[h], i, &a->keys); /* a tie names no winner */
            api_text_number(weight, s->max_weight[i], decimals);
            api_buf_printf(b, "  h%zu %s %s", h, key, weight);
        }
        api_buf_puts(b, "\n");
    }
}

static size_t sat_mul(size_t a, size_t b)
{
    return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}

size_t api_multihead_text_bytes(const struct api_multihead_req *r, size_t n_q, size_t n_k)
{
    /* The inputs and projections (x, the weights, q, k, v, concat, output, the mean),
       then each head's steps, softmax parts and variants: at most this many matrices. */
    enum { SHARED = 16, PER_HEAD = 16, GRAD_SHARED = 20, GRAD_PER_HEAD = 3 };
    size_t rows = n_q > n_k ? n_q : n_k, cols = n_k;
    rows = rows > r->d_model ? rows : r->d_model;
    cols = cols > r->d_model ? cols : r->d_model;
    /* with backward, its steps (multihead/backward.c): W_O's, the blocks, the heads' */
    size_t shared = r->backward.on ? SHARED + GRAD_SHARED : SHARED;
    size_t per_head = r->backward.on ? PER_HEAD + GRAD_PER_HEAD : PER_HEAD;
    size_t matrices = r->heads > (SIZE_MAX - shared) / per_head ? SIZE_MAX
                                                                : shared + per_head * r->heads;
    /* Each query: its summary line's label, then a summary item and warnings a head. */
    size_t query_rows = sat_mul(n_q, r->heads + 1);
    size_t bytes = api_text_page_bytes(matrices, rows, cols, query_rows);
    const struct api_explain_sizes sizes = { n_q, n_k, r->d_k, r->d_k, r->heads };
    size_t explain = sat_mul(api_explain_numbers(&r->explain, &sizes),
                             API_TEXT_LABEL + API_TEXT_NUMBER + 4);
    return bytes > SIZE_MAX - explain ? SIZE_MAX : bytes + explain;
}

/* With precision, the step's error against float64 under its matrices. */
static void error_line(struct api_buf *b, const struct api_multihead_req *r, const char *step)
{
    if (r->precision.on)
        api_precision_text_step(b, &r->precision, r->report, step);
}

void api_multihead_text(struct api_buf *b, const struct api_multihead_req *r,
                        const struct attn_mh_trace *t)
{
    size_t n_q = t->n_q, n_k = t->n_k, d = r->d_model, h = r->heads, d_k = r->d_k;
    size_t kv_cols = r->kv_heads * d_k;
    struct mh_labels a;
    mh_labels_init(&a, r, t, b);
    char scale[API_NUMBER_MAX], ops[128], grid[API_TEXT_SHAPE + 8], head_out[64];
    api_format_double(r->grid.round >= 0 ? api_round_decimals(r->scale, r->grid.round)
                                         : r->scale, scale);
    /* the problem's n_q; with `rows`, the answer's rows are counted after it */
    api_buf_printf(b, "multi-head %s-attention  n_q %zu  n_k %zu  d_model %zu  heads %zu  "
                      "kv_heads %zu  d_k %zu  scale %s  weights %s",
                   r->cross ? "cross" : "self", r->x_q.rows, n_k, d, h, r->kv_heads, d_k, scale,
                   r->transposed ? "out_in" : "in_out");
    if (r->rows != NULL)
        api_buf_printf(b, "  rows %zu", r->n_rows);
    api_buf_puts(b, "\n");
    if (r->precision.on)
        api_precision_text_header(b, &r->precision);
    if (r->include & (1ul << API_MH_X)) {
        api_buf_puts(b, r->cross ? "\nx_q\n" : "\nx\n");
        print_matrix(b, &r->x_q, &a.sent, &a.none, NULL, mh_decimals(r));
        if (r->cross) {
            api_buf_puts(b, "\nx_kv\n");
            print_matrix(b, &r->x_kv, &a.keys, &a.none, NULL, mh_decimals(r));
        }
    }
    int n = 1; /* the variants' steps stand among the eleven, numbered in order */
    struct api_variant_ops vops;
    api_variant_ops_of(&r->variants, r->grid.block_semantics, &vops);
    operands2(ops, sizeof ops, n_q, d, d, d);
    api_text_shape(grid, n_q, d, false);
    step_line(b, n++, "q", r->transposed ? "X_q @ W_Q^T + b_q" : "X_q @ W_Q + b_q", ops, grid);
    whole_block(b, r, API_MH_Q, &t->q, &a.queries, &a.none);
    error_line(b, r, "q");
    operands2(ops, sizeof ops, n_k, d, d, kv_cols);
    api_text_shape(grid, n_k, kv_cols, false);
    step_line(b, n++, "k", r->transposed ? "X_kv @ W_K^T + b_k" : "X_kv @ W_K + b_k", ops, grid);
    whole_block(b, r, API_MH_K, &t->k, &a.keys, &a.none);
    error_line(b, r, "k");
    step_line(b, n++, "v", r->transposed ? "X_kv @ W_V^T + b_v" : "X_kv @ W_V + b_v", ops, grid);
    whole_block(b, r, API_MH_V, &t->v, &a.keys, &a.none);
    error_line(b, r, "v");
    snprintf(head_out, sizeof head_out, "(%zu, %zu, %zu)", h, n_q, d_k);
    step_line(b, n++, "split", API_TR("head i takes columns [i*d_k, (i+1)*d_k)"), NULL, head_out);

    char per_head[64];
    snprintf(per_head, sizeof per_head, "(%zu, %zu, %zu)", h, n_q, n_k);
    operands2(ops, sizeof ops, n_q, d_k, d_k, n_k);
    api_multihead_text_variant_steps(b, r, 0, &n, &a.queries, &a.keys);
    step_line(b, n++, "scores", r->variants.has_rope ? "Q_rope_i @ K_rope_i^T" : "Q_i @ K_i^T",
              ops, per_head);
    per_head_blocks(b, r, t, API_MH_SCORES, &a);
    error_line(b, r, "scores");
    step_line(b, n++, "scaled", "scores * scale", NULL, per_head);
    per_head_blocks(b, r, t, API_MH_SCALED, &a);
    error_line(b, r, "scaled");
    api_multihead_text_variant_steps(b, r, 1, &n, &a.queries, &a.keys);
    step_line(b, n++, "masked", vops.masked, NULL, per_head);
    per_head_blocks(b, r, t, API_MH_MASKED, &a);
    error_line(b, r, "masked");
    step_line(b, n++, "weights", vops.weights, NULL, per_head);
    per_head_blocks(b, r, t, API_MH_WEIGHTS, &a);
    error_line(b, r, "weights");
    api_multihead_text_variant_steps(b, r, 2, &n, &a.queries, &a.keys);
    operands2(ops, sizeof ops, n_q, n_k, n_k, d_k);
    step_line(b, n++, "head_outputs", r->variants.dropout ? "dropped_i @ V_i" : "weights_i @ V_i",
              ops, head_out);
    per_head_blocks(b, r, t, API_MH_HEAD_OUTPUTS, &a);
    error_line(b, r, "head_outputs");
    api_text_shape(grid, n_q, d, false);
    step_line(b, n++, "concat", "concat(head_outputs, axis=-1)", NULL, grid);
    whole_block(b, r, API_MH_CONCAT, &t->concat, &a.queries, &a.none);
    operands2(ops, sizeof ops, n_q, d, d, d);
    step_line(b, n++, "output", r->transposed ? "concat @ W_O^T + b_o" : "concat @ W_O + b_o",
              ops, grid);
    whole_block(b, r, API_MH_OUTPUT, &t->output, &a.queries, &a.none);
    error_line(b, r, "output");
    if (r->include & (1ul << API_MH_WEIGHTS_MEAN)) {
        api_buf_puts(b, API_TR("\nweights_mean (the average over heads)\n"));
        print_matrix(b, &t->weights_mean, &a.queries, &a.keys, NULL, mh_decimals(r));
    }
    if (r->include & (1ul << API_MH_SUMMARY))
        summary_lines(b, t, &a, mh_decimals(r));
    unsigned stats = (unsigned)((r->include >> API_MH_ROW_SUM) & 3u);
    for (size_t head = 0; stats != 0 && head < h; head++) {
        api_buf_printf(b, "\nhead %zu", head);
        api_text_row_stats(b, &t->head[head].summary, n_q, stats, mh_decimals(r), &a.queries);
    }
    if (r->explain.on) {
        const struct api_explain_row x = api_multihead_explain_row(r, t);
        api_explain_text(b, &x, mh_decimals(r), &a.queries, &a.keys);
    }
    api_multihead_text_backward(b, r, mh_decimals(r), &a.queries, &a.keys);
    const struct api_row_causes causes = { &r->grid, r->variants.window, r->variants.sink, t->head,
                                           t->heads, r->rows, NULL, NULL,
                                           api_masks_hide(&r->variants.masks) };
    api_text_masked_warnings(b, t->head[0].summary.fully_masked, n_q, &a.queries,
                             API_ZEROED_HEAD_OUTPUTS, &causes);
    const struct api_tie_source ties = { t->head, t->heads, n_q, false, true, r->rows };
    api_text_tie_warnings(b, &ties, &a.queries, &a.keys);
    if (r->precision.on)
        api_precision_text_warning(b, &r->precision, r->report);
    api_multihead_text_decode(b, r);
    mh_labels_free(&a);
}

void api_multihead_svg(struct api_buf *b, const struct api_multihead_req *r,
                       const struct attn_mh_trace *t)
{
    size_t n = t->heads + 1; /* a panel per head, then the mean */
    struct api_svg_heatmap *panels = calloc(n, sizeof *panels);
    char (*titles)[48 + API_TEXT_LABEL] = calloc(n, sizeof *titles);
    if (panels == NULL || titles == NULL) {
        free(panels);
        free(titles);
        b->failed = true;
        return;
    }
    struct mh_labels a;
    mh_labels_init(&a, r, t, b);
    for (size_t i = 0; i < n; i++) {
        bool mean = i == t->heads;
        const struct attn_matrix *w = mean ? &t->weights_mean : &t->head[i].weights;
        if (mean)
            snprintf(titles[i], sizeof titles[i], API_TR("mean of %zu heads"), t->heads);
        else
            snprintf(titles[i], sizeof titles[i], API_TR("head %zu"), i);
        if (!mean) { /* a tie names no winner: the panel's title says where */
            char tie[API_TEXT_LABEL];
            api_text_tie_rows(tie, sizeof tie, &t->head[i], t->n_q, &a.queries);
            if (tie[0] != '\0')
                snprintf(titles[i] + strlen(titles[i]), sizeof titles[i] - strlen(titles[i]),
                         " (%s)", tie);
        }
        panels[i] = (struct api_svg_heatmap){
            .data = w->data, .rows = w->rows, .cols = w->cols, .stride = w->stride,
            /* The mask is shared, so head 0's masked cells mark the mean's too. */
            .blocked = t->head[0].masked.data, .blocked_stride = t->head[0].masked.stride,
            .empty_rows = t->head[0].summary.fully_masked,
            .row_labels = a.queries, .col_labels = a.keys,
            .title = titles[i],
            .tip_rounded = r->grid.round >= 0, .tip_round = r->grid.round,
        };
        api_svg_words(&panels[i]);
    }
    /* One scale for every panel, "auto" over all of them, so the panels compare. */
    double lo = INFINITY, hi = -INFINITY, vmin, vmax;
    for (size_t i = 0; i < n; i++) {
        double l, h2;
        api_weights_range(i == t->heads ? &t->weights_mean : &t->head[i].weights,
                          &t->head[0].masked, t->head[0].summary.fully_masked, &l, &h2);
        lo = l < lo ? l : lo;
        hi = h2 > hi ? h2 : hi;
    }
    api_heatmap_bounds(&r->heatmap, lo, hi, &vmin, &vmax);
    for (size_t i = 0; i < n; i++) {
        panels[i].vmin = vmin;
        panels[i].vmax = vmax;
    }
    char subtitle[400], variants[224];
    api_variants_describe(&r->variants, variants, sizeof variants);
    int used = snprintf(subtitle, sizeof subtitle,
                        API_TR("%s-attention, d_model %zu, %zu heads (%zu kv), %zu x %zu"),
                        r->cross ? "cross" : "self", r->d_model, t->heads, t->kv_heads, t->n_q,
                        t->n_k);
    if (used > 0 && (size_t)used < sizeof subtitle)
        snprintf(subtitle + used, sizeof subtitle - (size_t)used, "%s", variants);
    api_svg_panels_document(b, panels, n, 0, r->heatmap.title != NULL ? r->heatmap.title
                                                 : API_TR("Multi-head attention weights"), subtitle);
    mh_labels_free(&a);
    free(panels);
    free(titles);
}
