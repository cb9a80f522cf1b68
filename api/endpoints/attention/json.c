/*
 * api/endpoints/attention/json.c — a /v1/attention answer as JSON: shapes, the five
 * steps with their operands, every included matrix, the summary and the warnings, as
 * the contract's example shows.
 *
 * A vector q (one query, seed 002's case) is answered with vectors: the leading 1
 * of every shape is dropped, as numpy prints (3,) rather than (1, 3).
 */
#include "api/endpoints/attention/attention.h"
#include "api/request/rows.h"

#include <stdio.h>

#include "api/endpoints/answer.h"
#include "api/endpoints/attention/variants.h"
#include "api/endpoints/block_map.h"
#include "api/json/matrix_write.h"

static void write_matrix(struct jw *w, const struct attn_matrix *m, bool as_vector)
{
    if (as_vector)
        jw_double_array(w, m->data, m->cols);
    else
        api_write_matrix(w, m);
}

struct operand {
    size_t rows, cols; /* cols 0: one number a row, (rows) */
    bool as_vector;
};

/* (rows, cols), or (rows) for one number a row; a vector q drops the rows. */
static void write_operand_shape(struct jw *w, const struct operand *o)
{
    if (o->cols > 0) {
        api_write_shape(w, o->rows, o->cols, o->as_vector);
        return;
    }
    jw_array_begin(w);
    if (!o->as_vector)
        jw_int(w, (long long)o->rows);
    jw_array_end(w);
}

static void write_shapes(struct jw *w, const struct api_attention_req *r)
{
    bool vec = r->q_is_vector;
    JW_KEY(w, "shapes");
    jw_object_begin(w);
    JW_KEY(w, "q");
    api_write_shape(w, r->q.rows, r->q.cols, vec);
    JW_KEY(w, "k");
    api_write_shape(w, r->k.rows, r->k.cols, false);
    JW_KEY(w, "v");
    api_write_shape(w, r->v.rows, r->v.cols, false);
    api_grid_write_shapes(w, &r->grid);
    size_t n_q = api_attention_answer_rows(r); /* `rows`: the answer's rows */
    JW_KEY(w, "weights");
    api_write_shape(w, n_q, r->k.rows, vec);
    JW_KEY(w, "output");
    api_write_shape(w, n_q, r->v.cols, vec);
    const struct operand per_query = { n_q, 0, vec };
    if (r->include & (1ul << API_PART_ROW_SUM)) {
        JW_KEY(w, "row_sum");
        write_operand_shape(w, &per_query);
    }
    if (r->include & (1ul << API_PART_LSE)) {
        JW_KEY(w, "lse");
        write_operand_shape(w, &per_query);
    }
    if (r->include & (1ul << API_PART_VISIBLE)) {
        JW_KEY(w, "visible");
        api_write_shape(w, n_q, r->k.rows, vec);
    }
    if (r->include & (1ul << API_PART_BLOCK_MAP)) {
        const struct api_masks *m = &r->variants.masks;
        JW_KEY(w, "block_map");
        api_write_shape(w, r->q.rows / m->block_q + (r->q.rows % m->block_q != 0),
                        r->k.rows / m->block_k + (r->k.rows % m->block_k != 0), false);
    }
    api_attention_backward_shapes(w, r);
    jw_object_end(w);
}

static void write_step(struct jw *w, int number, const char *name, const char *op,
                       const struct operand *operands, size_t n_operands,
                       const struct operand *shape)
{
    jw_object_begin(w);
    JW_KEY(w, "step");
    jw_int(w, number);
    JW_KEY(w, "name");
    jw_string(w, name);
    JW_KEY(w, "op");
    jw_string(w, op);
    if (n_operands > 0) {
        JW_KEY(w, "operands");
        jw_array_begin(w);
        for (size_t i = 0; i < n_operands; i++)
            api_write_shape(w, operands[i].rows, operands[i].cols, operands[i].as_vector);
        jw_array_end(w);
    }
    JW_KEY(w, "shape");
    write_operand_shape(w, shape);
    jw_object_end(w);
}

/* The variants' steps at `stage`, each with its shape. */
static void write_variant_steps(struct jw *w, const struct api_attention_req *r,
                                enum api_variant_stage stage, int *n)
{
    struct api_variant_step steps[2];
    size_t count = api_variant_steps_at(&r->variants, stage, steps);
    for (size_t s = 0; s < count; s++) {
        char c = steps[s].operand;
        const struct operand shape = { c == 'k' ? r->k.rows : api_attention_answer_rows(r),
                                       c == 'g' ? r->k.rows : r->q.cols,
                                       r->q_is_vector && c != 'k' };
        write_step(w, (*n)++, steps[s].name, steps[s].op, NULL, 0, &shape);
    }
}

static void write_steps(struct jw *w, const struct api_attention_req *r)
{
    size_t n_q = api_attention_answer_rows(r), n_k = r->k.rows, d_k = r->q.cols, d_v = r->v.cols;
    bool vec = r->q_is_vector;
    const struct operand qk[2] = { { n_q, d_k, vec }, { d_k, n_k, false } };
    const struct operand wv[2] = { { n_q, n_k, vec }, { n_k, d_v, false } };
    const struct operand grid = { n_q, n_k, vec }, out = { n_q, d_v, vec };

    /* The variants' steps stand among the five, numbered in order (core/variants.h). */
    struct api_variant_ops ops;
    api_variant_ops_of(&r->variants, r->grid.block_semantics, &ops);
    int n = 1;
    JW_KEY(w, "steps");
    jw_array_begin(w);
    write_variant_steps(w, r, API_STAGE_BEFORE_SCORES, &n);
    write_step(w, n++, "scores", ops.scores, qk, 2, &grid);
    write_step(w, n++, "scaled", "scores * scale", NULL, 0, &grid);
    write_variant_steps(w, r, API_STAGE_AFTER_SCALED, &n);
    write_step(w, n++, "masked", ops.masked, NULL, 0, &grid);
    write_step(w, n++, "weights", ops.weights, NULL, 0, &grid);
    write_variant_steps(w, r, API_STAGE_AFTER_WEIGHTS, &n);
    write_step(w, n++, "output", ops.output, wv, 2, &out);
    /* The row statistics, when asked for, after the five: the five keep their numbers. */
    const struct operand per_query = { n_q, 0, vec };
    if (r->include & (1ul << API_PART_ROW_SUM))
        write_step(w, n++, "row_sum", "sum of e^(masked - row_max) along each row", NULL, 0,
                   &per_query);
    if (r->include & (1ul << API_PART_LSE))
        write_step(w, n++, "lse", "row_max + ln(row_sum)", NULL, 0, &per_query);
    if (r->include & (1ul << API_PART_VISIBLE))
        write_step(w, n++, "visible", "1 where every rule lets query i see key j, else 0",
                   NULL, 0, &grid);
    if (r->include & (1ul << API_PART_BLOCK_MAP)) {
        const struct api_masks *m = &r->variants.masks;
        const struct operand tiles = { api_block_map_tiles(r->q.rows, 1, m->block_q, 1),
                                       api_block_map_tiles(1, n_k, 1, m->block_k), false };
        write_step(w, n++, "block_map", "each tile of visible: 2 full, 1 partial, 0 empty",
                   NULL, 0, &tiles);
    }
    api_attention_backward_steps(w, r, &n); /* the backward pass, after every forward step */
    jw_array_end(w);
}

struct api_explain_row api_attention_explain_row(const struct api_attention_req *r,
                                                 const struct attn_trace *t)
{
    size_t i = r->explain.row, at = api_rows_place(r->rows, r->n_rows, i);
    struct api_explain_row x = {
        .row = i, .at = at, .query = r->q.data + i * r->q.stride, .keys = r->k, .values = r->v,
        .trace = t, .scale = r->scale, .vector = r->q_is_vector,
        .precision = r->precision.on ? &r->precision.rules : NULL,
    };
    if (r->backward.on && r->backward.run != NULL && r->backward.run->grads.block != NULL) {
        const struct api_backward *bw = &r->backward; /* the row's dS, worked by hand */
        x.grads = &bw->run->grads;
        x.grad_output = (bw->seeded ? bw->run->seeded : bw->d_out.data) + i * r->v.cols;
    }
    if (!r->variants.any)
        return x;
    x.variants = api_variants_for_head(&r->variants, 0);
    x.vsteps = r->vsteps;
    if (r->variants.has_rope) { /* the row is worked on the rotated q and k */
        x.query_before_rope = x.query;
        x.keys_before_rope = r->k;
        x.query = r->vsteps->q_rope.data + at * r->vsteps->q_rope.stride;
        x.keys = r->vsteps->k_rope;
    }
    return x;
}

void api_attention_pitfall(struct api_pitfall_result *out, const struct api_attention_req *r,
                           const struct attn_trace *t)
{
    struct api_pitfall_inputs in = {
        .which = r->pitfall, .q = &r->q, .k = &r->k, .v = &r->v,
        .bias = api_grid_bias(&r->grid), .mask = api_grid_mask(&r->grid), .scale = r->scale,
        .right = t, .precision = r->precision.on ? &r->precision.rules : NULL,
    };
    struct attn_variants v = api_variants_for_head(&r->variants, 0);
    if (r->variants.any) /* the same variants; with rope, on the rotated rows */
        in.variants = &v;
    if (r->variants.has_rope) {
        in.q = &r->vsteps->q_rope;
        in.k = &r->vsteps->k_rope;
    }
    api_pitfall_compute(out, &in);
}

/* visible and block_map, when asked for: from the rules, whichever path ran. */
static void write_visibility(struct jw *w, const struct api_attention_req *r)
{
    const struct attn_problem p = { .mask = api_grid_mask(&r->grid) };
    const struct attn_variants v = api_variants_for_head(&r->variants, 0);
    const struct api_visibility vis = { &p, &v, r->q.rows, r->k.rows, r->rows,
                                        api_attention_answer_rows(r) };
    if (r->include & (1ul << API_PART_VISIBLE)) {
        JW_KEY(w, "visible");
        api_write_visible(w, &vis, &r->shown, r->q_is_vector);
    }
    if (r->include & (1ul << API_PART_BLOCK_MAP)) {
        JW_KEY(w, "block_map");
        api_write_block_map(w, &r->shown);
    }
}

bool api_attention_prepare_shown(struct api_attention_req *r, struct api_error *err)
{
    const struct attn_problem p = { .mask = api_grid_mask(&r->grid) };
    const struct attn_variants v = api_variants_for_head(&r->variants, 0);
    const struct api_visibility vis = { &p, &v, r->q.rows, r->k.rows, r->rows,
                                        api_attention_answer_rows(r) };
    return api_shown_prepare(&r->shown, &vis, r->include & (1ul << API_PART_VISIBLE),
                             r->include & (1ul << API_PART_BLOCK_MAP), r->variants.masks.block_q,
                             r->variants.masks.block_k, err);
}

void api_attention_write(struct jw *w, const struct api_attention_req *r,
                         const struct attn_trace *t)
{
    static const char *const part_keys[] = { "scores", "scaled", "masked", "weights", "output" };
    const struct attn_matrix *parts[] = { &t->scores, &t->scaled, &t->masked, &t->weights,
                                          &t->output };
    bool vec = r->q_is_vector;

    jw_object_begin(w);
    JW_KEY(w, "d_k");
    jw_int(w, (long long)r->q.cols);
    JW_KEY(w, "scale");
    jw_double(w, r->scale);
    JW_KEY(w, "mask_semantics");
    jw_string(w, r->grid.block_semantics ? "block" : "keep");
    api_grid_write_labels(w, &r->grid);
    write_shapes(w, r);
    write_steps(w, r);
    size_t scaled_from = 0, scaled_to = 0; /* where scaled's text is, once written */
    for (int p = API_PART_SCORES; p <= API_PART_OUTPUT; p++) {
        if (!(r->include & (1ul << p)))
            continue;
        jw_key(w, part_keys[p]); /* masked: blocked cells are -inf, written as null */
        if (p == API_PART_MASKED && scaled_to > 0 && api_matrix_same_bits(&t->masked, &t->scaled)) {
            jw_repeat(w, scaled_from, scaled_to); /* nothing masked or biased: same text */
            continue;
        }
        size_t from = jw_offset(w);
        write_matrix(w, parts[p], vec);
        if (p == API_PART_SCALED) {
            scaled_from = from;
            scaled_to = jw_offset(w);
        }
    }
    const struct api_tie_source ties = { t, 1, t->n_q, vec, false, r->rows };
    /* A streamed answer holds no weights to find ties in (its summary is never asked) */
    const struct api_tie_source *tied = t->weights.data != NULL ? &ties : NULL;
    api_write_softmax_parts(w, t, API_SOFTMAX_PARTS(r->include), vec,
                            r->precision.on ? &r->precision.rules : NULL);
    api_write_row_stats(w, &t->summary, t->n_q, API_ROW_STATS(r->include), vec);
    api_attention_write_variant_steps(w, r);
    write_visibility(w, r);
    api_attention_write_backward(w, r);
    if (r->include & (1ul << API_PART_SUMMARY)) {
        struct api_summaries sums = { &t->summary, 0, 1, t->n_q,
                                      vec ? API_SUMMARY_VECTOR : API_SUMMARY_ROWS, &ties,
                                      r->variants.sink
                                          ? (const double *const *)&r->vsteps->sink_weight
                                          : NULL };
        api_write_summary(w, &sums);
    }
    if (r->explain.on) {
        const struct api_explain_row x = api_attention_explain_row(r, t);
        api_explain_write(w, &x);
    }
    if (r->pitfall != API_PITFALL_NONE) {
        struct api_pitfall_result p;
        api_attention_pitfall(&p, r, t);
        api_pitfall_write(w, &p, vec);
        api_pitfall_result_free(&p);
    }
    if (r->precision.on)
        api_precision_write(w, &r->precision, r->report);
    const struct api_row_causes causes = { &r->grid, r->variants.window, r->variants.sink, t, 1,
                                           r->rows, r->precision.on ? &r->precision : NULL,
                                           r->report,
                                           api_masks_hide(&r->variants.masks) };
    api_write_masked_warnings(w, t->summary.fully_masked, t->n_q, API_ZEROED_OUTPUT, tied, &causes);
    jw_object_end(w);
}
