/*
 * api/endpoints/attention/backward.c — /v1/attention's `backward` (see attention.h):
 * reading {"grad_output": dO} or {"seed": s}, running core's attn_backward on the forward
 * pass that kept every step, and the gradients' parts of the answer (shapes, steps,
 * matrices). DESIGN.md, "Backward: the gradients, step by step".
 */
#include "api/endpoints/attention/attention.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/i18n/lang.h"
#include "api/json/matrix_write.h"
#include "api/render/text.h"
#include "api/request/backward.h"
#include "api/request/fields.h"
#include "api/request/matrix.h"
#include "api/request/random.h"

/* The backward pass's parts, in the order the steps run, with their ops. */
static const struct {
    int part;
    const char *name, *op;
} grad_steps[] = {
    { API_PART_GRAD_OUTPUT, "grad_output", "dO = dL/d(output), as sent or from the seed" },
    { API_PART_GRAD_V, "grad_v", "weights^T @ dO" },
    { API_PART_GRAD_WEIGHTS, "grad_weights", "dP = dO @ V^T" },
    { API_PART_DELTA, "delta", "D = sum(dO * output, axis=-1)" },
    { API_PART_GRAD_MASKED, "grad_masked", "dS = weights * (dP - D), 0 where blocked" },
    { API_PART_GRAD_SCALED, "grad_scaled", "dS, through softcap: dS * (1 - tanh^2(scaled / c))" },
    { API_PART_GRAD_SCORES, "grad_scores", "grad_scaled * scale" },
    { API_PART_GRAD_Q_ROPE, "grad_q_rope", "grad_scores @ K_rope" },
    { API_PART_GRAD_K_ROPE, "grad_k_rope", "grad_scores^T @ Q_rope" },
    { API_PART_GRAD_Q, "grad_q", "grad_scores @ K" },
    { API_PART_GRAD_K, "grad_k", "grad_scores^T @ Q" },
    { API_PART_GRAD_SINK_LOGIT, "grad_sink_logit", "-sum(sink_weight * D)" },
    { API_PART_GRAD_BIAS, "grad_bias", "dS" },
};
enum { GRAD_STEPS = sizeof grad_steps / sizeof grad_steps[0] };

/* Whether the request makes step `part` at all (its variant on, a bias given). */
static bool grad_step_runs(const struct api_attention_req *r, int part)
{
    switch (part) {
    case API_PART_GRAD_Q_ROPE:
    case API_PART_GRAD_K_ROPE:
        return r->variants.has_rope;
    case API_PART_GRAD_SINK_LOGIT:
        return r->variants.sink;
    case API_PART_GRAD_BIAS:
        return r->grid.bias.data != NULL;
    default:
        return true;
    }
}

static bool shown(const struct api_attention_req *r, int part)
{
    return r->backward.on && grad_step_runs(r, part) && (r->include & (1ul << part));
}

/* include names a gradient this request does not make: 422 at /include/i. */
static bool check_include(const json_t *include, const char *prefix,
                          const struct api_attention_req *r, struct api_error *err)
{
    static const char *const made_by[] = { "rope", "rope", "sink_logit", "bias" };
    static const int needs[] = { API_PART_GRAD_Q_ROPE, API_PART_GRAD_K_ROPE,
                                 API_PART_GRAD_SINK_LOGIT, API_PART_GRAD_BIAS };
    for (size_t i = 0; json_is_array(include) && i < json_array_size(include); i++) {
        const char *name = json_string_value(json_array_get(include, i));
        for (size_t s = 0; name != NULL && s < GRAD_STEPS; s++) {
            if (strcmp(name, grad_steps[s].name) != 0)
                continue;
            size_t which = 0;
            while (which < 4 && needs[which] != grad_steps[s].part)
                which++;
            if (r->backward.on && (which == 4 || grad_step_runs(r, grad_steps[s].part)))
                break;
            api_error_set(err, API_INVALID_VALUE, "include names %s, a step this request does "
                          "not make", name);
            api_error_at(err, "%s/include/%zu", prefix, i);
            if (!r->backward.on)
                api_error_hint(err, "%s is a step of the backward pass: send backward "
                               "{\"seed\": 0} or {\"grad_output\": dO}, or leave %s out", name,
                               name);
            else
                api_error_hint(err, "%s needs \"%s\": send it, or leave %s out of include", name,
                               made_by[which], name);
            return false;
        }
    }
    return true;
}

/* backward.grad_output: dO of the output's shape (a vector (d_v) for a vector q). */
static bool read_grad_output(const json_t *node, const char *ptr, const struct api_limits *limits,
                             struct api_attention_req *r, struct api_error *err)
{
    static const struct api_matrix_spec spec = { "backward.grad_output", "(n_q, d_v)", true,
                                                 false };
    struct api_backward *b = &r->backward;
    if (!api_read_matrix(node, ptr, &spec, limits->max_cells, &b->d_out, &b->d_out_vector, err))
        return false;
    size_t n_q = r->q.rows, d_v = r->v.cols;
    bool fits = b->d_out.cols == d_v &&
                (b->d_out.rows == n_q || (b->d_out_vector && n_q == 1)) &&
                (!b->d_out_vector || r->q_is_vector || n_q == 1);
    if (fits)
        return true;
    api_error_set(err, API_SHAPE_MISMATCH, "backward.grad_output is (%zu, %zu) but must be the "
                  "output's shape (n_q, d_v) = (%zu, %zu)", b->d_out.rows, b->d_out.cols, n_q,
                  d_v);
    api_error_at(err, "%s", ptr);
    api_error_hint(err, "dO is dL/d(output): one row per query, one number per column of v");
    api_matrix_free(&b->d_out);
    return false;
}

/* {"grad_output": dO} or {"seed": s}: exactly one (request/backward.h). */
static bool read_source(const json_t *node, const char *ptr, const struct api_limits *limits,
                        struct api_attention_req *r, struct api_error *err)
{
    const json_t *d_out;
    if (!api_read_backward_source(node, ptr, &d_out, &r->backward.seed, err))
        return false;
    r->backward.on = true;
    if (d_out != NULL) {
        char at[200];
        API_FIELD_POINTER(at, ptr, "grad_output");
        return read_grad_output(d_out, at, limits, r, err);
    }
    r->backward.seeded = true;
    r->backward.d_out = (struct attn_matrix){ NULL, r->q.rows, r->v.cols, r->v.cols };
    return true;
}

/* What backward cannot be asked beside: rows (every row's gradient needs every row). */
static bool check_company(const char *ptr, const struct api_attention_req *r,
                          struct api_error *err)
{
    if (r->rows != NULL) {
        api_error_set(err, API_INVALID_VALUE, "backward needs every query row, but rows asks "
                      "for some");
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "grad_k and grad_v sum over every query: drop rows (and pick the "
                         "rows you want from the answer), or drop backward");
        return false;
    }
    return true;
}

bool api_attention_read_backward(const json_t *doc, const char *prefix,
                                 const struct api_limits *limits, struct api_attention_req *r,
                                 struct api_error *err)
{
    char ptr[128];
    const json_t *node = api_member(doc, "backward");
    API_FIELD_POINTER(ptr, prefix, "backward");
    if (node != NULL && (!read_source(node, ptr, limits, r, err) || !check_company(ptr, r, err)))
        return false;
    if (!check_include(api_member(doc, "include"), prefix, r, err))
        return false;
    if (r->backward.on && (r->backward.run = calloc(1, sizeof *r->backward.run)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "backward");
        return false;
    }
    return true;
}

void api_attention_backward_deinit(struct api_backward *b)
{
    api_matrix_free(&b->d_out);
    if (b->run != NULL) {
        attn_grads_free(&b->run->grads);
        attn_stream_grads_free(&b->run->streamed);
        attn_vtrace_free(&b->run->exact);
        free(b->run->seeded);
        free(b->run);
    }
    memset(b, 0, sizeof *b);
}

/* ---- the run ---- */

/* dO as core reads it: sent, or made from the seed now (the run step, once admitted). */
static bool d_out_of(const struct api_attention_req *r, struct attn_matrix *out,
                     struct api_error *err)
{
    const struct api_backward *b = &r->backward;
    if (!b->seeded) {
        *out = b->d_out;
        return true;
    }
    size_t cells = r->q.rows * r->v.cols; /* within --max-cells: the output's */
    if ((b->run->seeded = malloc(cells * sizeof(double))) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "backward");
        return false;
    }
    api_random_fill(b->run->seeded, cells, b->seed, API_STREAM_GRAD_OUTPUT, 1.0);
    *out = attn_matrix_view(b->run->seeded, r->q.rows, r->v.cols);
    return true;
}

/*
 * The low format's gradients by the rules (core/precision.h), and, for the report, the
 * float64 backward of the float64 forward the run kept (run->exact, freed here) against
 * them. float64's own overflow is the request's problem, as without precision.
 */
static bool run_low_backward(const struct api_attention_req *r, const struct attn_problem *p,
                             const struct attn_variants *v, const struct attn_vtrace *fwd,
                             const struct attn_matrix *d_out, struct api_error *err)
{
    struct api_backward_run *run = r->backward.run;
    enum attn_status st = attn_backward_precision(&run->grads, p, v, fwd, d_out,
                                                  &r->precision.rules);
    if (st != ATTN_OK || r->report == NULL)
        return st == ATTN_OK || api_backward_failed(st, err);
    struct attn_grads exact;
    st = attn_grads_alloc(&exact, r->q.rows, r->k.rows, r->q.cols, r->v.cols);
    if (st == ATTN_OK)
        st = attn_backward(&exact, p, v, &run->exact, d_out);
    if (st == ATTN_OK)
        api_precision_report_backward(r->report, &r->precision.rules, d_out, &run->grads,
                                      &exact, v);
    attn_grads_free(&exact);
    attn_vtrace_free(&run->exact);
    return st == ATTN_OK || api_backward_failed(st, err);
}

bool api_attention_run_backward(const struct api_attention_req *r, const struct attn_trace *t,
                                struct api_error *err)
{
    struct api_backward_run *run = r->backward.run;
    struct attn_matrix d_out;
    if (!d_out_of(r, &d_out, err))
        return false;
    if (attn_grads_alloc(&run->grads, r->q.rows, r->k.rows, r->q.cols, r->v.cols) != ATTN_OK)
        return api_attention_no_memory(r, err);
    struct attn_problem p = api_attention_problem(r);
    struct attn_variants v = api_variants_for_head(&r->variants, 0);
    struct attn_vtrace fwd = { 0 }; /* the forward's steps: the trace's and the variants' */
    if (r->vsteps != NULL)
        fwd = *r->vsteps;
    fwd.base = *t;
    if (r->precision.on)
        return run_low_backward(r, &p, &v, &fwd, &d_out, err);
    enum attn_status st = attn_backward(&run->grads, &p, &v, &fwd, &d_out);
    return st == ATTN_OK || api_backward_failed(st, err);
}

bool api_attention_backward_streams(const struct api_attention_req *r)
{
    const unsigned long made = (1ul << API_PART_GRAD_OUTPUT) | (1ul << API_PART_GRAD_V) |
                               (1ul << API_PART_DELTA) | (1ul << API_PART_GRAD_Q) |
                               (1ul << API_PART_GRAD_K) | (1ul << API_PART_GRAD_SINK_LOGIT);
    unsigned long grads = 0;
    for (size_t s = 0; s < GRAD_STEPS; s++)
        grads |= 1ul << grad_steps[s].part;
    return (r->include & grads & ~made) == 0;
}

bool api_attention_stream_backward(const struct api_attention_req *r,
                                   const struct attn_stream *fwd, struct api_error *err)
{
    struct api_backward_run *run = r->backward.run;
    struct attn_matrix d_out;
    if (!d_out_of(r, &d_out, err))
        return false;
    if (attn_stream_grads_alloc(&run->streamed, r->q.rows, r->k.rows, r->q.cols, r->v.cols) !=
        ATTN_OK)
        return api_attention_no_memory(r, err);
    struct attn_problem p = api_attention_problem(r);
    struct attn_variants v = api_variants_for_head(&r->variants, 0);
    enum attn_status st = attn_backward_stream(&run->streamed, &p, &v, &fwd->output,
                                               fwd->summary.lse, &d_out);
    return st == ATTN_OK || api_backward_failed(st, err);
}

size_t api_attention_backward_bytes(const struct api_attention_req *r)
{
    if (!r->backward.on)
        return 0;
    size_t scratch = attn_backward_stream_scratch(r->q.rows, r->k.rows, r->q.cols,
                                                  r->variants.has_rope);
    size_t grads = r->streamed ? attn_stream_grads_bytes(r->q.rows, r->k.rows, r->q.cols,
                                                         r->v.cols)
                               : attn_grads_bytes(r->q.rows, r->k.rows, r->q.cols, r->v.cols);
    if (r->streamed)
        grads = scratch == 0 || grads == 0 || grads > SIZE_MAX - scratch ? 0 : grads + scratch;
    size_t d_out = r->q.rows * r->v.cols * sizeof(double); /* within --max-cells */
    return grads == 0 || grads > SIZE_MAX - d_out ? SIZE_MAX : grads + d_out;
}

/* The numbers step `part` writes. */
static size_t step_numbers(const struct api_attention_req *r, int part)
{
    size_t n_q = r->q.rows, n_k = r->k.rows, d_k = r->q.cols, d_v = r->v.cols;
    switch (part) {
    case API_PART_GRAD_OUTPUT: return n_q * d_v;
    case API_PART_GRAD_V: return n_k * d_v;
    case API_PART_DELTA: return n_q;
    case API_PART_GRAD_Q_ROPE: case API_PART_GRAD_Q: return n_q * d_k;
    case API_PART_GRAD_K_ROPE: case API_PART_GRAD_K: return n_k * d_k;
    case API_PART_GRAD_SINK_LOGIT: return 1;
    default: return n_q * n_k; /* each within --max-cells: no wrap */
    }
}

size_t api_attention_backward_numbers(const struct api_attention_req *r)
{
    size_t numbers = 0;
    for (size_t s = 0; s < GRAD_STEPS; s++)
        if (shown(r, grad_steps[s].part))
            numbers += step_numbers(r, grad_steps[s].part);
    return numbers;
}

/* ---- the answer ---- */

/* The shape of step `part`; a vector q drops the leading 1 of its query rows. */
static void write_step_shape(struct jw *w, const struct api_attention_req *r, int part)
{
    size_t n_q = r->q.rows, n_k = r->k.rows, d_k = r->q.cols, d_v = r->v.cols;
    bool vec = r->q_is_vector;
    jw_array_begin(w);
    switch (part) {
    case API_PART_GRAD_V: jw_int(w, (long long)n_k), jw_int(w, (long long)d_v); break;
    case API_PART_GRAD_K_ROPE:
    case API_PART_GRAD_K: jw_int(w, (long long)n_k), jw_int(w, (long long)d_k); break;
    case API_PART_GRAD_SINK_LOGIT: break;
    default:
        if (!vec)
            jw_int(w, (long long)n_q);
        if (part != API_PART_DELTA)
            jw_int(w, (long long)(part == API_PART_GRAD_OUTPUT ? d_v
                                  : part == API_PART_GRAD_Q_ROPE || part == API_PART_GRAD_Q
                                      ? d_k
                                      : n_k));
    }
    jw_array_end(w);
}

void api_attention_backward_shapes(struct jw *w, const struct api_attention_req *r)
{
    for (size_t s = 0; s < GRAD_STEPS; s++) {
        if (!shown(r, grad_steps[s].part))
            continue;
        jw_key(w, grad_steps[s].name);
        write_step_shape(w, r, grad_steps[s].part);
    }
}

/* Step s's operation as this request runs it (RoPE, dropout and softcap change three). */
static const char *step_op(const struct api_attention_req *r, size_t s)
{
    int part = grad_steps[s].part;
    if (part == API_PART_GRAD_Q && r->variants.has_rope)
        return "grad_q_rope turned back by RoPE's angles";
    if (part == API_PART_GRAD_K && r->variants.has_rope)
        return "grad_k_rope turned back by RoPE's angles";
    if (part == API_PART_GRAD_V && r->variants.dropout)
        return "dropped^T @ dO";
    if (part == API_PART_GRAD_WEIGHTS && r->variants.dropout)
        return "dP = dO @ V^T * keep / (1 - p)";
    if (part == API_PART_GRAD_SCALED && r->variants.softcap == 0)
        return "dS (no softcap)";
    return grad_steps[s].op;
}

void api_attention_backward_steps(struct jw *w, const struct api_attention_req *r, int *number)
{
    for (size_t s = 0; s < GRAD_STEPS; s++) {
        int part = grad_steps[s].part;
        if (!shown(r, part))
            continue;
        const char *op = step_op(r, s);
        jw_object_begin(w);
        JW_KEY(w, "step");
        jw_int(w, (*number)++);
        JW_KEY(w, "name");
        jw_string(w, grad_steps[s].name);
        JW_KEY(w, "op");
        jw_string(w, op);
        JW_KEY(w, "shape");
        write_step_shape(w, r, part);
        jw_object_end(w);
    }
}

/* Step `part`'s numbers: a matrix, its one row as a vector for a vector q, or a number. */
static void write_step(struct jw *w, const struct api_attention_req *r, int part,
                       const struct attn_matrix *d_out)
{
    const struct attn_grads *g = &r->backward.run->grads;
    const struct attn_stream_grads *sg = &r->backward.run->streamed;
    if (sg->block != NULL) { /* streamed: the inputs' gradients, D and the sink's only */
        switch (part) {
        case API_PART_GRAD_V: api_write_matrix(w, &sg->grad_v); return;
        case API_PART_GRAD_K: api_write_matrix(w, &sg->grad_k); return;
        case API_PART_GRAD_SINK_LOGIT: jw_double(w, sg->grad_sink_logit); return;
        case API_PART_DELTA:
            r->q_is_vector ? jw_double(w, sg->delta[0]) : jw_double_array(w, sg->delta, sg->n_q);
            return;
        case API_PART_GRAD_Q:
            if (r->q_is_vector)
                jw_double_array(w, sg->grad_q.data, sg->grad_q.cols);
            else
                api_write_matrix(w, &sg->grad_q);
            return;
        default: break; /* grad_output: dO itself, below */
        }
    }
    const struct attn_matrix *per_query[] = {
        [API_PART_GRAD_OUTPUT] = d_out, [API_PART_GRAD_WEIGHTS] = &g->grad_weights,
        [API_PART_GRAD_MASKED] = &g->grad_masked, [API_PART_GRAD_SCALED] = &g->grad_scaled,
        [API_PART_GRAD_SCORES] = &g->grad_scores, [API_PART_GRAD_Q_ROPE] = &g->grad_q_rope,
        [API_PART_GRAD_Q] = &g->grad_q, [API_PART_GRAD_BIAS] = &g->grad_masked,
    };
    switch (part) {
    case API_PART_GRAD_V: api_write_matrix(w, &g->grad_v); return;
    case API_PART_GRAD_K_ROPE: api_write_matrix(w, &g->grad_k_rope); return;
    case API_PART_GRAD_K: api_write_matrix(w, &g->grad_k); return;
    case API_PART_GRAD_SINK_LOGIT: jw_double(w, g->grad_sink_logit); return;
    case API_PART_DELTA:
        if (r->q_is_vector)
            jw_double(w, g->delta[0]);
        else
            jw_double_array(w, g->delta, g->n_q);
        return;
    default:
        if (r->q_is_vector)
            jw_double_array(w, per_query[part]->data, per_query[part]->cols);
        else
            api_write_matrix(w, per_query[part]);
    }
}

void api_attention_write_backward(struct jw *w, const struct api_attention_req *r)
{
    if (!r->backward.on)
        return;
    const struct api_backward *b = &r->backward;
    struct attn_matrix d_out = b->seeded ? attn_matrix_view(b->run->seeded, r->q.rows, r->v.cols)
                                         : b->d_out;
    for (size_t s = 0; s < GRAD_STEPS; s++) {
        if (!shown(r, grad_steps[s].part))
            continue;
        jw_key(w, grad_steps[s].name);
        write_step(w, r, grad_steps[s].part, &d_out);
    }
}

/* ---- the text page ---- */

/* Step `part`'s matrix as the page prints it (delta as one column). */
static struct attn_matrix text_matrix(const struct api_attention_req *r, int part,
                                      const struct attn_matrix *d_out)
{
    const struct attn_grads *g = &r->backward.run->grads;
    switch (part) {
    case API_PART_GRAD_OUTPUT: return *d_out;
    case API_PART_GRAD_V: return g->grad_v;
    case API_PART_GRAD_WEIGHTS: return g->grad_weights;
    case API_PART_DELTA: return attn_matrix_view(g->delta, g->n_q, 1);
    case API_PART_GRAD_SCALED: return g->grad_scaled;
    case API_PART_GRAD_SCORES: return g->grad_scores;
    case API_PART_GRAD_Q_ROPE: return g->grad_q_rope;
    case API_PART_GRAD_K_ROPE: return g->grad_k_rope;
    case API_PART_GRAD_Q: return g->grad_q;
    case API_PART_GRAD_K: return g->grad_k;
    default: return g->grad_masked; /* grad_masked, grad_bias */
    }
}

/* With precision, the step's error against float64 under it, as the forward's steps have
 * (nothing for grad_output and grad_bias, which the report does not list). */
static void text_error(struct api_buf *b, const struct api_attention_req *r, const char *step)
{
    if (r->precision.on && r->report != NULL)
        api_precision_text_step(b, &r->precision, r->report, step);
}

void api_attention_text_backward(struct api_buf *b, const struct api_attention_req *r,
                                 int decimals, const struct api_labels *queries,
                                 const struct api_labels *keys)
{
    if (!r->backward.on)
        return;
    const struct api_backward *bw = &r->backward;
    struct attn_matrix d_out = bw->seeded ? attn_matrix_view(bw->run->seeded, r->q.rows, r->v.cols)
                                          : bw->d_out;
    const struct api_labels none = { NULL, 0, "" };
    int number = 1;
    for (size_t s = 0; s < GRAD_STEPS; s++) {
        int part = grad_steps[s].part;
        if (!(r->backward.on && grad_step_runs(r, part)))
            continue;
        api_buf_printf(b, API_TR("\nbackward step %d  %s = %s\n"), number++, grad_steps[s].name,
                       step_op(r, s));
        if (!shown(r, part)) {
            text_error(b, r, grad_steps[s].name);
            continue;
        }
        if (part == API_PART_GRAD_SINK_LOGIT) {
            char num[API_TEXT_NUMBER];
            api_text_number(num, r->backward.run->grads.grad_sink_logit, decimals);
            api_buf_printf(b, "  %s\n", num);
            text_error(b, r, grad_steps[s].name);
            continue;
        }
        bool by_key = part == API_PART_GRAD_V || part == API_PART_GRAD_K ||
                      part == API_PART_GRAD_K_ROPE;
        bool grid = part == API_PART_GRAD_WEIGHTS || part == API_PART_GRAD_MASKED ||
                    part == API_PART_GRAD_SCALED || part == API_PART_GRAD_SCORES ||
                    part == API_PART_GRAD_BIAS;
        struct attn_matrix m = text_matrix(r, part, &d_out);
        struct api_text_matrix tm = {
            .data = m.data, .rows = m.rows, .cols = m.cols, .stride = m.stride,
            .row_labels = by_key ? *keys : *queries, .col_labels = grid ? *keys : none,
            .decimals = decimals, .indent = "  ",
        };
        api_text_matrix(b, &tm);
        text_error(b, r, grad_steps[s].name);
    }
}
