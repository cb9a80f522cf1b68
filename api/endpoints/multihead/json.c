/*
 * api/endpoints/multihead/json.c — a /v1/multihead answer as JSON: sizes, shapes, the
 * eleven steps with operands, the included inputs and steps (per-head arrays lead
 * with the head), the per-head summary and warnings.
 */
#include "api/endpoints/multihead/multihead.h"

#include <stdio.h>
#include <stdlib.h>

#include "api/endpoints/answer.h"
#include "api/endpoints/block_map.h"
#include "api/endpoints/attention/variants.h"
#include "api/i18n/lang.h"
#include "api/json/matrix_write.h"
#include "api/request/rows.h"

/* [h][rows][cols]: one matrix per head, picked from the head traces. */
static void write_per_head(struct jw *w, const struct attn_mh_trace *t, size_t offset)
{
    jw_array_begin(w);
    for (size_t i = 0; i < t->heads; i++)
        api_write_matrix(w, (const struct attn_matrix *)((const char *)&t->head[i] + offset));
    jw_array_end(w);
}

/* Whether every head's masked scores are its scaled ones, bit for bit. */
static bool masked_is_scaled(const struct attn_mh_trace *t)
{
    for (size_t i = 0; i < t->heads; i++)
        if (!api_matrix_same_bits(&t->head[i].masked, &t->head[i].scaled))
            return false;
    return true;
}

static void write_shape3(struct jw *w, size_t a, size_t b, size_t c)
{
    jw_array_begin(w);
    jw_int(w, (long long)a);
    jw_int(w, (long long)b);
    jw_int(w, (long long)c);
    jw_array_end(w);
}

static void shape_member(struct jw *w, const char *key, size_t rows, size_t cols)
{
    jw_key(w, key);
    api_write_shape(w, rows, cols, false);
}

static void write_shapes(struct jw *w, const struct api_multihead_req *r,
                         const struct attn_mh_trace *t)
{
    size_t kv_cols = r->kv_heads * r->d_k;
    JW_KEY(w, "shapes");
    jw_object_begin(w);
    if (r->cross) { /* the inputs as sent; the steps for the answer's rows (`rows`) */
        shape_member(w, "x_q", r->x_q.rows, r->d_model);
        shape_member(w, "x_kv", t->n_k, r->d_model);
    } else {
        shape_member(w, "x", r->x_q.rows, r->d_model);
    }
    for (int i = 0; i < 4; i++) {
        static const char *const names[] = { "w_q", "w_k", "w_v", "w_o" };
        shape_member(w, names[i], r->w[i].rows, r->w[i].cols);
    }
    shape_member(w, "q", t->n_q, r->d_model);
    shape_member(w, "k", t->n_k, kv_cols);
    shape_member(w, "v", t->n_k, kv_cols);
    api_grid_write_shapes(w, &r->grid);
    JW_KEY(w, "weights");
    write_shape3(w, r->heads, t->n_q, t->n_k);
    JW_KEY(w, "head_outputs");
    write_shape3(w, r->heads, t->n_q, r->d_k);
    shape_member(w, "concat", t->n_q, r->d_model);
    shape_member(w, "output", t->n_q, r->d_model);
    if (r->include & (1ul << API_MH_ROW_SUM))
        shape_member(w, "row_sum", r->heads, t->n_q);
    if (r->include & (1ul << API_MH_LSE))
        shape_member(w, "lse", r->heads, t->n_q);
    if (r->include & (1ul << API_MH_VISIBLE))
        shape_member(w, "visible", t->n_q, t->n_k);
    if (r->include & (1ul << API_MH_BLOCK_MAP))
        shape_member(w, "block_map",
                     api_block_map_tiles(r->x_q.rows, 1, r->variants.masks.block_q, 1),
                     api_block_map_tiles(1, t->n_k, 1, r->variants.masks.block_k));
    api_multihead_backward_shapes(w, r, t->n_q, t->n_k);
    jw_object_end(w);
}

/* One step: name, op, operand shapes (2-D, or [h, rows, cols] when per_head), result. */
struct mh_step {
    const char *name;
    const char *op;
    size_t operands[2][2];
    size_t n_operands;
    size_t shape[3]; /* shape[0] == 0: a 2-D result shape[1] x shape[2] */
};

/* The row statistics, when asked for, after every other step: (h, n_q) each. */
static void write_row_stat_steps(struct jw *w, const struct api_multihead_req *r, size_t n_q,
                                 size_t n_k, int *number)
{
    static const struct { int part; const char *name, *op; } stats[] = {
        { API_MH_ROW_SUM, "row_sum", "sum of e^(masked_i - row_max_i) along each row" },
        { API_MH_LSE, "lse", "row_max_i + ln(row_sum_i)" },
        { API_MH_VISIBLE, "visible", "1 where every rule lets query i see key j, else 0" },
        { API_MH_BLOCK_MAP, "block_map", "each tile of visible: 2 full, 1 partial, 0 empty" },
    };
    for (size_t s = 0; s < sizeof stats / sizeof stats[0]; s++) {
        if (!(r->include & (1ul << stats[s].part)))
            continue;
        jw_object_begin(w);
        JW_KEY(w, "step");
        jw_int(w, (*number)++);
        JW_KEY(w, "name");
        jw_string(w, stats[s].name);
        JW_KEY(w, "op");
        jw_string(w, stats[s].op);
        JW_KEY(w, "shape");
        if (stats[s].part == API_MH_VISIBLE)
            api_write_shape(w, n_q, n_k, false);
        else if (stats[s].part == API_MH_BLOCK_MAP)
            api_write_shape(w, api_block_map_tiles(r->x_q.rows, 1, r->variants.masks.block_q, 1),
                            api_block_map_tiles(1, n_k, 1, r->variants.masks.block_k), false);
        else
            api_write_shape(w, r->heads, n_q, false);
        jw_object_end(w);
    }
}

static void write_steps(struct jw *w, const struct api_multihead_req *r,
                        const struct attn_mh_trace *t)
{
    size_t n_q = t->n_q, n_k = t->n_k, d = r->d_model, h = r->heads, d_k = r->d_k;
    size_t kv_cols = r->kv_heads * d_k;
    bool tr = r->transposed;
    const struct mh_step steps[] = {
        { "q", tr ? "X_q @ W_Q^T + b_q" : "X_q @ W_Q + b_q", { { n_q, d }, { d, d } }, 2,
          { 0, n_q, d } },
        { "k", tr ? "X_kv @ W_K^T + b_k" : "X_kv @ W_K + b_k",
          { { n_k, d }, { d, kv_cols } }, 2, { 0, n_k, kv_cols } },
        { "v", tr ? "X_kv @ W_V^T + b_v" : "X_kv @ W_V + b_v",
          { { n_k, d }, { d, kv_cols } }, 2, { 0, n_k, kv_cols } },
        { "split", API_TR("head i takes columns [i*d_k, (i+1)*d_k) of Q; K and V columns of kv "
                          "head floor(i*kv_heads/heads)"), { { n_q, d } }, 1, { h, n_q, d_k } },
        { "scores", "Q_i @ K_i^T", { { n_q, d_k }, { d_k, n_k } }, 2, { h, n_q, n_k } },
        { "scaled", "scores * scale", { { 0 } }, 0, { h, n_q, n_k } },
        { "masked", r->grid.block_semantics ? API_TR("scaled + bias, -inf where mask is 1")
                                            : API_TR("scaled + bias, -inf where mask is 0"),
          { { 0 } }, 0, { h, n_q, n_k } },
        { "weights", "softmax(masked, axis=-1)", { { 0 } }, 0, { h, n_q, n_k } },
        { "head_outputs", "weights_i @ V_i", { { n_q, n_k }, { n_k, d_k } }, 2, { h, n_q, d_k } },
        { "concat", "concat(head_outputs, axis=-1)", { { 0 } }, 0, { 0, n_q, d } },
        { "output", tr ? "concat @ W_O^T + b_o" : "concat @ W_O + b_o",
          { { n_q, d }, { d, d } }, 2, { 0, n_q, d } },
    };
    /* The variants' steps stand among these, numbered in order (core/variants.h). */
    struct api_variant_ops vops;
    api_variant_ops_of(&r->variants, r->grid.block_semantics, &vops);
    int number = 1;
    JW_KEY(w, "steps");
    jw_array_begin(w);
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        const struct mh_step *st = &steps[s];
        const char *op = st->op;
        if (r->variants.any && s == 4) /* scores: the rotated q and k */
            number += api_multihead_write_variant_steps(w, r, 0, number, n_q, n_k);
        if (r->variants.any && s == 6) { /* masked, after softcapped */
            number += api_multihead_write_variant_steps(w, r, 1, number, n_q, n_k);
            op = vops.masked;
        }
        if (r->variants.any && s == 7)
            op = vops.weights;
        if (r->variants.any && s == 8) { /* head_outputs, after the dropout steps */
            number += api_multihead_write_variant_steps(w, r, 2, number, n_q, n_k);
            op = r->variants.dropout ? "dropped_i @ V_i" : op;
        }
        if (r->variants.has_rope && s == 4)
            op = "Q_rope_i @ K_rope_i^T";
        jw_object_begin(w);
        JW_KEY(w, "step");
        jw_int(w, number++);
        JW_KEY(w, "name");
        jw_string(w, st->name);
        JW_KEY(w, "op");
        jw_string(w, op);
        if (st->n_operands > 0) {
            JW_KEY(w, "operands");
            jw_array_begin(w);
            for (size_t o = 0; o < st->n_operands; o++)
                api_write_shape(w, st->operands[o][0], st->operands[o][1], false);
            jw_array_end(w);
        }
        JW_KEY(w, "shape");
        if (st->shape[0] != 0)
            write_shape3(w, st->shape[0], st->shape[1], st->shape[2]);
        else
            api_write_shape(w, st->shape[1], st->shape[2], false);
        jw_object_end(w);
    }
    write_row_stat_steps(w, r, n_q, n_k, &number);
    api_multihead_backward_steps(w, r, n_q, n_k, &number); /* after every forward step */
    jw_array_end(w);
}

static void write_inputs(struct jw *w, const struct api_multihead_req *r)
{
    static const char *const names[] = { "w_q", "w_k", "w_v", "w_o" };
    if (r->include & (1ul << API_MH_X)) {
        jw_key(w, r->cross ? "x_q" : "x");
        api_write_matrix(w, &r->x_q);
        if (r->cross) {
            JW_KEY(w, "x_kv");
            api_write_matrix(w, &r->x_kv);
        }
    }
    for (int i = 0; i < 4; i++) {
        if (!(r->include & (1ul << (API_MH_W_Q + i))))
            continue;
        jw_key(w, names[i]);
        api_write_matrix(w, &r->w[i]);
    }
}

static void write_steps_data(struct jw *w, const struct api_multihead_req *r,
                             const struct attn_mh_trace *t)
{
    static const struct { int part; const char *key; size_t offset; } per_head[] = {
        { API_MH_SCORES, "scores", offsetof(struct attn_trace, scores) },
        { API_MH_SCALED, "scaled", offsetof(struct attn_trace, scaled) },
        { API_MH_MASKED, "masked", offsetof(struct attn_trace, masked) },
        { API_MH_WEIGHTS, "weights", offsetof(struct attn_trace, weights) },
        { API_MH_HEAD_OUTPUTS, "head_outputs", offsetof(struct attn_trace, output) },
    };
    const struct { int part; const char *key; const struct attn_matrix *m; } whole[] = {
        { API_MH_Q, "q", &t->q }, { API_MH_K, "k", &t->k }, { API_MH_V, "v", &t->v },
    };
    const struct { int part; const char *key; const struct attn_matrix *m; } after[] = {
        { API_MH_CONCAT, "concat", &t->concat }, { API_MH_OUTPUT, "output", &t->output },
        { API_MH_WEIGHTS_MEAN, "weights_mean", &t->weights_mean },
    };
    for (size_t i = 0; i < 3; i++) {
        if (r->include & (1ul << whole[i].part)) {
            jw_key(w, whole[i].key);
            api_write_matrix(w, whole[i].m);
        }
    }
    size_t scaled_from = 0, scaled_to = 0; /* where scaled's text is, once written */
    for (size_t i = 0; i < sizeof per_head / sizeof per_head[0]; i++) {
        if (!(r->include & (1ul << per_head[i].part)))
            continue;
        jw_key(w, per_head[i].key); /* masked: blocked cells are -inf, written as null */
        if (per_head[i].part == API_MH_MASKED && scaled_to > 0 && masked_is_scaled(t)) {
            jw_repeat(w, scaled_from, scaled_to); /* nothing masked: the same text */
            continue;
        }
        size_t from = jw_offset(w);
        write_per_head(w, t, per_head[i].offset);
        if (per_head[i].part == API_MH_SCALED) {
            scaled_from = from;
            scaled_to = jw_offset(w);
        }
    }
    for (size_t i = 0; i < 3; i++) {
        if (r->include & (1ul << after[i].part)) {
            jw_key(w, after[i].key);
            api_write_matrix(w, after[i].m);
        }
    }
}

/* visible and block_map, the same in every head: from the rules, whichever path ran. */
static void write_visibility(struct jw *w, const struct api_multihead_req *r,
                             const struct attn_mh_trace *t)
{
    const struct attn_problem p = { .mask = api_grid_mask(&r->grid) };
    const struct attn_variants v = api_variants_for_head(&r->variants, 0);
    const struct api_visibility vis = { &p, &v, r->x_q.rows, t->n_k, r->rows, t->n_q };
    if (r->include & (1ul << API_MH_VISIBLE)) {
        JW_KEY(w, "visible");
        api_write_visible(w, &vis, &r->shown, false);
    }
    if (r->include & (1ul << API_MH_BLOCK_MAP)) {
        JW_KEY(w, "block_map");
        api_write_block_map(w, &r->shown);
    }
}

bool api_multihead_prepare_shown(struct api_multihead_req *r, struct api_error *err)
{
    size_t n_k = r->cross ? r->x_kv.rows : r->x_q.rows;
    const struct attn_problem p = { .mask = api_grid_mask(&r->grid) };
    const struct attn_variants v = api_variants_for_head(&r->variants, 0);
    const struct api_visibility vis = { &p, &v, r->x_q.rows, n_k, r->rows,
                                        api_multihead_answer_rows(r) };
    return api_shown_prepare(&r->shown, &vis, r->include & (1ul << API_MH_VISIBLE),
                             r->include & (1ul << API_MH_BLOCK_MAP), r->variants.masks.block_q,
                             r->variants.masks.block_k, err);
}

/* Each head's row_sum and lse, (h, n_q): from its summary, no matrix needed. */
static void write_row_stats(struct jw *w, const struct api_multihead_req *r,
                            const struct attn_mh_trace *t)
{
    static const struct { int part; const char *key; } stats[] = {
        { API_MH_ROW_SUM, "row_sum" }, { API_MH_LSE, "lse" },
    };
    for (size_t s = 0; s < sizeof stats / sizeof stats[0]; s++) {
        if (!(r->include & (1ul << stats[s].part)))
            continue;
        jw_key(w, stats[s].key); /* lse: −inf (a fully masked row) is written null */
        jw_array_begin(w);
        for (size_t h = 0; h < t->heads; h++) {
            const struct attn_summary *sum = &t->head[h].summary;
            jw_double_array(w, stats[s].part == API_MH_LSE ? sum->lse : sum->row_sum, t->n_q);
        }
        jw_array_end(w);
    }
}

static void write_random(struct jw *w, const struct api_multihead_req *r)
{
    static const char *const names[API_IN_COUNT] = { "x_q", "x_kv", "w_q", "w_k", "w_v", "w_o" };
    if (!r->has_random)
        return;
    JW_KEY(w, "random");
    jw_object_begin(w);
    JW_KEY(w, "seed");
    jw_int(w, (long long)r->seed);
    JW_KEY(w, "filled");
    jw_array_begin(w);
    for (int i = 0; i < API_IN_COUNT; i++)
        if (r->filled[i])
            jw_string(w, i == API_IN_X_Q && !r->cross ? "x" : names[i]);
    jw_array_end(w);
    jw_object_end(w);
}

struct api_explain_row api_multihead_explain_row(const struct api_multihead_req *r,
                                                 const struct attn_mh_trace *t)
{
    size_t i = r->explain.row, h = r->explain.head, d_k = t->d_k;
    size_t at = api_rows_place(r->rows, r->n_rows, i); /* q is the answer's rows */
    size_t g = attn_mh_kv_head(h, t->heads, t->kv_heads);
    /* The head's slices: columns [h·d_k, (h+1)·d_k) of Q, its kv head's of K and V. */
    const struct attn_matrix keys = { t->k.data + g * d_k, t->n_k, d_k, t->k.stride };
    const struct attn_matrix values = { t->v.data + g * d_k, t->n_k, d_k, t->v.stride };
    struct api_explain_row x = {
        .row = i, .at = at, .has_head = true, .head = h,
        .query = t->q.data + at * t->q.stride + h * d_k, .keys = keys, .values = values,
        .trace = &t->head[h], .scale = r->scale,
        .precision = r->precision.on ? &r->precision.rules : NULL,
    };
    if (!r->variants.any)
        return x;
    /* The head's slopes, sink logit and steps; k_rope is its kv head's keys turned. */
    const struct attn_vtrace *vt = &r->vsteps[h];
    x.variants = api_variants_for_head(&r->variants, h);
    x.vsteps = vt;
    if (r->variants.has_rope) {
        x.query_before_rope = x.query;
        x.keys_before_rope = keys;
        x.query = vt->q_rope.data + at * vt->q_rope.stride;
        x.keys = vt->k_rope;
    }
    return x;
}

void api_multihead_write(struct jw *w, const struct api_multihead_req *r,
                         const struct attn_mh_trace *t)
{
    jw_object_begin(w);
    JW_KEY(w, "d_model");
    jw_int(w, (long long)r->d_model);
    JW_KEY(w, "heads");
    jw_int(w, (long long)r->heads);
    JW_KEY(w, "kv_heads");
    jw_int(w, (long long)r->kv_heads);
    JW_KEY(w, "d_k");
    jw_int(w, (long long)r->d_k);
    JW_KEY(w, "scale");
    jw_double(w, r->scale);
    JW_KEY(w, "mask_semantics");
    jw_string(w, r->grid.block_semantics ? "block" : "keep");
    JW_KEY(w, "weight_layout");
    jw_string(w, r->transposed ? "out_in" : "in_out");
    write_random(w, r);
    api_grid_write_labels(w, &r->grid);
    write_shapes(w, r, t);
    write_steps(w, r, t);
    write_inputs(w, r);
    write_steps_data(w, r, t);
    const struct api_tie_source ties = { t->head, t->heads, t->n_q, false, true, r->rows };
    /* A streamed answer holds no weights to find ties in (its summary is never asked) */
    const struct api_tie_source *tied = t->head[0].weights.data != NULL ? &ties : NULL;
    api_multihead_write_variants(w, r);
    write_row_stats(w, r, t);
    write_visibility(w, r, t);
    api_multihead_write_backward(w, r);
    if (r->include & (1ul << API_MH_SUMMARY)) {
        const double **sink = r->variants.sink ? malloc(t->heads * sizeof *sink) : NULL;
        for (size_t h = 0; sink != NULL && h < t->heads; h++)
            sink[h] = r->vsteps[h].sink_weight;
        if (r->variants.sink && sink == NULL)
            w->failed = true; /* the answer cannot be complete: a 503 */
        struct api_summaries sums = { &t->head[0].summary, sizeof t->head[0], t->heads, t->n_q,
                                      API_SUMMARY_HEADS, &ties, sink };
        api_write_summary(w, &sums);
        free(sink);
    }
    if (r->explain.on) {
        const struct api_explain_row x = api_multihead_explain_row(r, t);
        api_explain_write(w, &x);
    }
    if (r->precision.on)
        api_precision_write(w, &r->precision, r->report);
    const struct api_row_causes causes = { &r->grid, r->variants.window, r->variants.sink, t->head,
                                           t->heads, r->rows,
                                           r->precision.on ? &r->precision : NULL, r->report,
                                           api_masks_hide(&r->variants.masks) };
    api_write_masked_warnings(w, t->head[0].summary.fully_masked, t->n_q,
                              API_ZEROED_HEAD_OUTPUTS, tied, &causes);
    api_multihead_write_decode(w, r);
    jw_object_end(w);
}
