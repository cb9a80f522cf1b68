/*
 * api/attention_write.c — running a validated /v1/attention request and writing
 * its response: shapes, the five steps with their operands, every included
 * matrix, the summary and the warnings, as the contract's example shows.
 *
 * A vector q (one query, seed 002's case) is answered with vectors: the leading 1
 * of every shape is dropped, as numpy prints (3,) rather than (1, 3).
 */
#include "api/attention.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/admit.h"
#include "api/fields.h"
#include "api/matrix_write.h"
#include "api/spare_threads.h"

/* The steps the answer shows: pages show every step, JSON what include lists. Steps
 * not shown share memory with the next (attn_trace_alloc_keep). */
static unsigned steps_read(const struct api_attention_req *r)
{
    static const enum attn_step step_of[] = {
        [API_PART_SCORES] = ATTN_STEP_SCORES, [API_PART_SCALED] = ATTN_STEP_SCALED,
        [API_PART_MASKED] = ATTN_STEP_MASKED,
    };
    if (r->for_page)
        return ATTN_KEEP_ALL;
    unsigned keep = ATTN_KEEP(ATTN_STEP_WEIGHTS) | ATTN_KEEP(ATTN_STEP_OUTPUT);
    for (int p = API_PART_SCORES; p <= API_PART_MASKED; p++)
        if (r->include & (1ul << p))
            keep |= ATTN_KEEP(step_of[p]);
    return keep;
}

size_t api_attention_working_set(const struct api_attention_req *r, size_t body_len)
{
    size_t n_q = r->q.rows, n_k = r->k.rows, d_v = r->v.cols; /* each <= --max-cells */
    size_t qk = n_q * n_k, numbers = 0;
    for (int p = API_PART_SCORES; p <= API_PART_WEIGHTS; p++)
        if (r->for_page || (r->include & (1ul << p)))
            numbers += qk;
    if (r->for_page || (r->include & (1ul << API_PART_OUTPUT)))
        numbers += n_q * d_v;
    if (r->for_page || (r->include & (1ul << API_PART_SUMMARY)))
        numbers += 5 * n_q; /* row_sums, max_weight, entropy, argmax, fully_masked */
    return api_working_set(attn_trace_bytes_keep(n_q, n_k, d_v, steps_read(r)), numbers,
                           body_len);
}

const char *api_attention_limit_field(const struct api_attention_req *r)
{
    if (r->k.rows >= r->v.cols)
        return r->q.rows >= r->k.rows ? "/q" : "/k";
    return "/v";
}

static atomic_ulong threaded_runs;

unsigned long api_attention_threaded_runs(void)
{
    return atomic_load(&threaded_runs);
}

bool api_attention_run(const struct api_attention_req *r, const char *prefix,
                       struct attn_trace *trace, struct api_error *err)
{
    if (attn_trace_alloc_keep(trace, r->q.rows, r->k.rows, r->v.cols, steps_read(r)) != ATTN_OK) {
        api_error_set(err, API_UNAVAILABLE, "no memory for a %zu x %zu attention", r->q.rows,
                      r->k.rows);
        return false;
    }
    struct attn_problem p = {
        .q = &r->q, .k = &r->k, .v = &r->v,
        .bias = api_grid_bias(&r->grid),
        .mask = api_grid_mask(&r->grid),
        .scale = r->scale,
        .skip_summary = !r->for_page && !(r->include & (1ul << API_PART_SUMMARY)),
    };
    /* An idle server lends its other workers to a large problem: the same bits. */
    unsigned threads = api_spare_threads_for(r->q.rows * r->k.rows);
    enum attn_status st = attn_forward_threads(trace, &p, threads);
    if (threads > 1)
        atomic_fetch_add(&threaded_runs, 1);
    if (st == ATTN_OK)
        return true;

    if (st == ATTN_EOVERFLOW) {
        const struct attn_fault *f = &trace->fault;
        const char *step = attn_step_name(f->step);
        api_error_set(err, API_NUMERIC_OVERFLOW, "step %d (%s) produced a non-finite number at "
                      "cell [%zu, %zu]", (int)f->step, step, f->row, f->col);
        err->step = step;
        err->cell[0] = (long long)f->row;
        err->cell[1] = (long long)f->col;
        err->has_cell = true;
        /* Point at the input that the overflowing cell came from. */
        switch (f->step) {
        case ATTN_STEP_SCORES:
            if (r->q_is_vector)
                api_error_at(err, "%s/q", prefix);
            else
                api_error_at(err, "%s/q/%zu", prefix, f->row);
            api_error_hint(err, "q row %zu . k row %zu is beyond the largest double (~1.8e308): "
                           "scale q and k down", f->row, f->col);
            break;
        case ATTN_STEP_SCALED:
            api_error_at(err, "%s/scale", prefix);
            api_error_hint(err, "scores * scale overflows: use a smaller scale");
            break;
        case ATTN_STEP_MASKED:
            api_error_at(err, "%s/bias", prefix);
            api_error_hint(err, "scaled + bias overflows: use smaller bias values");
            break;
        default:
            api_error_at(err, "%s/v", prefix);
            api_error_hint(err, "the weighted sum of v's rows overflows: scale v down");
        }
    } else {
        api_error_set(err, st == ATTN_ENOMEM ? API_UNAVAILABLE : API_INTERNAL,
                      "the computation failed: %s", attn_status_str(st));
    }
    attn_trace_free(trace);
    return false;
}

static void write_matrix(struct jw *w, const struct attn_matrix *m, bool as_vector)
{
    if (as_vector)
        jw_double_array(w, m->data, m->cols);
    else
        api_write_matrix(w, m);
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
    JW_KEY(w, "weights");
    api_write_shape(w, r->q.rows, r->k.rows, vec);
    JW_KEY(w, "output");
    api_write_shape(w, r->q.rows, r->v.cols, vec);
    jw_object_end(w);
}

struct operand {
    size_t rows, cols;
    bool as_vector;
};

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
    api_write_shape(w, shape->rows, shape->cols, shape->as_vector);
    jw_object_end(w);
}

static void write_steps(struct jw *w, const struct api_attention_req *r)
{
    size_t n_q = r->q.rows, n_k = r->k.rows, d_k = r->q.cols, d_v = r->v.cols;
    bool vec = r->q_is_vector;
    const struct operand qk[2] = { { n_q, d_k, vec }, { d_k, n_k, false } };
    const struct operand wv[2] = { { n_q, n_k, vec }, { n_k, d_v, false } };
    const struct operand grid = { n_q, n_k, vec }, out = { n_q, d_v, vec };

    JW_KEY(w, "steps");
    jw_array_begin(w);
    write_step(w, 1, "scores", "Q @ K^T", qk, 2, &grid);
    write_step(w, 2, "scaled", "scores * scale", NULL, 0, &grid);
    write_step(w, 3, "masked", r->grid.block_semantics ? "scaled + bias, -inf where mask is 1"
                                                  : "scaled + bias, -inf where mask is 0",
               NULL, 0, &grid);
    write_step(w, 4, "weights", "softmax(masked, axis=-1)", NULL, 0, &grid);
    write_step(w, 5, "output", "weights @ V", wv, 2, &out);
    jw_array_end(w);
}

/* One per-row summary value: a list for a matrix q, a scalar for a vector q. */
static void write_row_values(struct jw *w, const double *xs, size_t n, bool as_vector)
{
    if (as_vector)
        jw_double(w, xs[0]);
    else
        jw_double_array(w, xs, n);
}

static void write_argmax_value(struct jw *w, size_t index)
{
    if (index == ATTN_NO_INDEX)
        jw_null(w);
    else
        jw_int(w, (long long)index);
}

static void write_summary(struct jw *w, const struct attn_trace *t, bool vec)
{
    const struct attn_summary *s = &t->summary;
    JW_KEY(w, "summary");
    jw_object_begin(w);
    JW_KEY(w, "row_sums");
    write_row_values(w, s->row_sums, t->n_q, vec);
    JW_KEY(w, "argmax");
    if (vec) {
        write_argmax_value(w, s->argmax[0]);
    } else {
        jw_array_begin(w);
        for (size_t i = 0; i < t->n_q; i++)
            write_argmax_value(w, s->argmax[i]);
        jw_array_end(w);
    }
    JW_KEY(w, "max_weight");
    write_row_values(w, s->max_weight, t->n_q, vec);
    JW_KEY(w, "entropy");
    write_row_values(w, s->entropy, t->n_q, vec);
    JW_KEY(w, "fully_masked_rows");
    jw_array_begin(w);
    for (size_t i = 0; i < t->n_q; i++)
        if (s->fully_masked[i])
            jw_int(w, (long long)i);
    jw_array_end(w);
    jw_object_end(w);
}

static void write_warnings(struct jw *w, const struct attn_trace *t)
{
    JW_KEY(w, "warnings");
    jw_array_begin(w);
    for (size_t i = 0; i < t->n_q; i++) {
        if (!t->summary.fully_masked[i])
            continue;
        char message[160];
        snprintf(message, sizeof message, "query %zu may attend to no key (its mask row blocks "
                 "every key): its weights and output are 0", i);
        jw_object_begin(w);
        JW_KEY(w, "code");
        jw_string(w, "row_fully_masked");
        JW_KEY(w, "row");
        jw_int(w, (long long)i);
        JW_KEY(w, "message");
        jw_string(w, message);
        jw_object_end(w);
    }
    jw_array_end(w);
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
    if (r->include & (1ul << API_PART_SUMMARY))
        write_summary(w, t, vec);
    write_warnings(w, t);
    jw_object_end(w);
}
