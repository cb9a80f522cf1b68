/*
 * api/endpoints/multihead/backward.c — /v1/multihead's `backward` (see multihead.h):
 * reading {"grad_output": dO} or {"seed": s}, running core's attn_mh_backward on the
 * forward pass, and the gradients' parts of the answer: back through the output
 * projection, each head's steps (leading with the head), the projections' gradients in
 * the layout the weights were sent in. DESIGN.md, "Backward: the gradients, step by step".
 */
#include "api/endpoints/multihead/multihead.h"

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

/* The gradients a multi-head answer can hold, in the order the backward pass makes them. */
static const struct {
    int part;
    const char *name, *op;
} grad_steps[] = {
    { API_MH_GRAD_OUTPUT, "grad_output", "dO = dL/d(output), as sent or from the seed" },
    { API_MH_GRAD_W_O, "grad_w_o", "concat^T @ dO" },
    { API_MH_GRAD_B_O, "grad_b_o", "sum(dO, axis=0)" },
    { API_MH_GRAD_WEIGHTS, "grad_weights", "dP_i = dO_i @ V_i^T, dO_i head i's columns of dO @ W_O^T" },
    { API_MH_DELTA, "delta", "D_i = sum(dO_i * out_i, axis=-1)" },
    { API_MH_GRAD_MASKED, "grad_masked", "dS_i = weights_i * (dP_i - D_i), 0 where blocked" },
    { API_MH_GRAD_Q, "grad_q", "the heads' grad_q side by side" },
    { API_MH_GRAD_K, "grad_k", "each kv head: the sum of its query heads' grad_k" },
    { API_MH_GRAD_V, "grad_v", "each kv head: the sum of its query heads' grad_v" },
    { API_MH_GRAD_W_Q, "grad_w_q", "X_q^T @ grad_q" },
    { API_MH_GRAD_W_K, "grad_w_k", "X_kv^T @ grad_k" },
    { API_MH_GRAD_W_V, "grad_w_v", "X_kv^T @ grad_v" },
    { API_MH_GRAD_B_Q, "grad_b_q", "sum(grad_q, axis=0)" },
    { API_MH_GRAD_B_K, "grad_b_k", "sum(grad_k, axis=0)" },
    { API_MH_GRAD_B_V, "grad_b_v", "sum(grad_v, axis=0)" },
    { API_MH_GRAD_X, "grad_x", "grad_q @ W_Q^T + grad_k @ W_K^T + grad_v @ W_V^T" },
    { API_MH_GRAD_X_Q, "grad_x_q", "grad_q @ W_Q^T" },
    { API_MH_GRAD_X_KV, "grad_x_kv", "grad_k @ W_K^T + grad_v @ W_V^T" },
    { API_MH_GRAD_SINK_LOGIT, "grad_sink_logit", "-sum(sink_weight_i * D_i), each head" },
    { API_MH_GRAD_BIAS, "grad_bias", "the heads' dS summed" },
};
enum { GRAD_STEPS = sizeof grad_steps / sizeof grad_steps[0] };

/* Whether the request makes gradient `part`: its bias sent, its variant on, self or cross. */
bool api_multihead_grad_runs(const struct api_multihead_req *r, int part)
{
    switch (part) {
    case API_MH_GRAD_B_Q: return r->b[0] != NULL;
    case API_MH_GRAD_B_K: return r->b[1] != NULL;
    case API_MH_GRAD_B_V: return r->b[2] != NULL;
    case API_MH_GRAD_B_O: return r->b[3] != NULL;
    case API_MH_GRAD_X: return !r->cross;
    case API_MH_GRAD_X_Q:
    case API_MH_GRAD_X_KV: return r->cross;
    case API_MH_GRAD_SINK_LOGIT: return r->variants.sink;
    case API_MH_GRAD_BIAS: return r->grid.bias.data != NULL;
    default: return true;
    }
}

static bool shown(const struct api_multihead_req *r, int part)
{
    return r->backward.on && api_multihead_grad_runs(r, part) && (r->include & (1ul << part));
}

/* include names a gradient this request does not make: 422 at /include/i. */
static bool check_include(const json_t *include, const char *prefix,
                          const struct api_multihead_req *r, struct api_error *err)
{
    for (size_t i = 0; json_is_array(include) && i < json_array_size(include); i++) {
        const char *name = json_string_value(json_array_get(include, i));
        for (size_t s = 0; name != NULL && s < GRAD_STEPS; s++) {
            if (strcmp(name, grad_steps[s].name) != 0 ||
                (r->backward.on && api_multihead_grad_runs(r, grad_steps[s].part)))
                continue;
            api_error_set(err, API_INVALID_VALUE, "include names %s, a step this request does "
                          "not make", name);
            api_error_at(err, "%s/include/%zu", prefix, i);
            if (!r->backward.on)
                api_error_hint(err, "%s is a step of the backward pass: send backward "
                               "{\"seed\": 0} or {\"grad_output\": dO}, or leave %s out", name,
                               name);
            else
                api_error_hint(err, "%s is not made here (no such bias, variant, or this "
                               "kind of attention): leave it out of include", name);
            return false;
        }
    }
    return true;
}

/* {"grad_output": dO} of the output's shape, or {"seed": s} (request/backward.h). */
static bool read_source(const json_t *node, const char *ptr, const struct api_limits *limits,
                        struct api_multihead_req *r, struct api_error *err)
{
    static const struct api_matrix_spec spec = { "backward.grad_output", "(n_q, d_model)", false,
                                                 false };
    struct api_mh_backward *b = &r->backward;
    const json_t *d_out;
    if (!api_read_backward_source(node, ptr, &d_out, &b->seed, err))
        return false;
    b->on = true;
    b->seeded = d_out == NULL;
    if (b->seeded)
        return true;
    char at[200];
    bool vec;
    API_FIELD_POINTER(at, ptr, "grad_output");
    if (!api_read_matrix(d_out, at, &spec, limits->max_cells, &b->d_out, &vec, err))
        return false;
    if (b->d_out.rows == r->x_q.rows && b->d_out.cols == r->d_model)
        return true;
    api_error_set(err, API_SHAPE_MISMATCH, "backward.grad_output is (%zu, %zu) but must be the "
                  "output's shape (n_q, d_model) = (%zu, %zu)", b->d_out.rows, b->d_out.cols,
                  r->x_q.rows, r->d_model);
    api_error_at(err, "%s", at);
    api_error_hint(err, "dO is dL/d(output): one row per query, d_model numbers a row");
    api_matrix_free(&b->d_out);
    return false;
}

bool api_multihead_read_backward(const json_t *doc, const char *prefix,
                                 const struct api_limits *limits, struct api_multihead_req *r,
                                 bool include_sent, struct api_error *err)
{
    char ptr[128];
    const json_t *node = api_member(doc, "backward");
    API_FIELD_POINTER(ptr, prefix, "backward");
    if (node != NULL && !read_source(node, ptr, limits, r, err))
        return false;
    if (node != NULL && r->rows != NULL) {
        api_error_set(err, API_INVALID_VALUE, "backward needs every query row, but rows asks "
                      "for some");
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "grad_k and grad_v sum over every query: drop rows (and pick the "
                         "rows you want from the answer), or drop backward");
        return false;
    }
    if (!r->backward.on)
        return true;
    for (size_t s = 0; !include_sent && s < GRAD_STEPS; s++) /* every step by default */
        r->include |= 1ul << grad_steps[s].part;
    if ((r->backward.run = calloc(1, sizeof *r->backward.run)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "backward");
        return false;
    }
    return true;
}

bool api_multihead_check_backward_include(const json_t *doc, const char *prefix,
                                          const struct api_multihead_req *r,
                                          struct api_error *err)
{
    return check_include(api_member(doc, "include"), prefix, r, err);
}

/* The float64 forward a low run kept for its report, freed (a no-op when none). */
static void free_exact(struct api_mh_backward_run *run)
{
    for (size_t h = 0; run->exact_vsteps != NULL && h < run->exact.heads; h++)
        attn_vtrace_free(&run->exact_vsteps[h]);
    free(run->exact_vsteps);
    run->exact_vsteps = NULL;
    attn_mh_trace_free(&run->exact);
}

void api_multihead_backward_deinit(struct api_mh_backward *b)
{
    api_matrix_free(&b->d_out);
    if (b->run != NULL) {
        attn_mh_grads_free(&b->run->grads);
        free_exact(b->run);
        free(b->run->seeded);
        free(b->run);
    }
    memset(b, 0, sizeof *b);
}

/* ---- the run ---- */

/*
 * The low format's gradients by the rules (core/precision.h), and, for the report, the
 * float64 backward of the float64 forward the run kept (run->exact, freed here) against
 * them. float64's own overflow is the request's problem, as without precision.
 */
static bool run_low_backward(const struct api_multihead_req *r, const struct attn_mh_problem *p,
                             const struct attn_variants *variants, const struct attn_mh_trace *t,
                             const struct attn_matrix *d_out, struct api_error *err)
{
    struct api_mh_backward_run *run = r->backward.run;
    enum attn_status st = attn_mh_backward_precision(&run->grads, p, variants, r->vsteps, t,
                                                     d_out, &r->precision.rules);
    if (st == ATTN_OK && r->report != NULL) {
        struct attn_mh_grads exact;
        st = attn_mh_grads_alloc(&exact, t->n_q, t->n_k, r->d_model, r->heads, r->kv_heads);
        if (st == ATTN_OK)
            st = attn_mh_backward(&exact, p, variants, run->exact_vsteps, &run->exact, d_out);
        if (st == ATTN_OK)
            api_precision_mh_report_backward(r->report, &r->precision.rules, d_out, p,
                                             r->variants.sink, &run->grads, &exact);
        attn_mh_grads_free(&exact);
    }
    free_exact(run);
    return st == ATTN_OK || api_backward_failed(st, err);
}

bool api_multihead_run_backward(const struct api_multihead_req *r,
                                const struct attn_mh_problem *p,
                                const struct attn_variants *variants,
                                const struct attn_mh_trace *t, struct api_error *err)
{
    struct api_mh_backward_run *run = r->backward.run;
    size_t n_q = r->x_q.rows, n_k = r->cross ? r->x_kv.rows : n_q;
    struct attn_matrix d_out = r->backward.d_out;
    if (r->backward.seeded) {
        size_t cells = n_q * r->d_model; /* the output's: within --max-cells */
        if ((run->seeded = malloc(cells * sizeof(double))) == NULL) {
            api_error_set(err, API_UNAVAILABLE, "no memory for %s", "backward");
            return false;
        }
        api_random_fill(run->seeded, cells, r->backward.seed, API_STREAM_GRAD_OUTPUT, 1.0);
        d_out = attn_matrix_view(run->seeded, n_q, r->d_model);
    }
    if (attn_mh_grads_alloc(&run->grads, n_q, n_k, r->d_model, r->heads, r->kv_heads) != ATTN_OK) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "backward");
        return false;
    }
    if (r->precision.on)
        return run_low_backward(r, p, variants, t, &d_out, err);
    enum attn_status st = attn_mh_backward(&run->grads, p, variants, r->vsteps, t, &d_out);
    return st == ATTN_OK || api_backward_failed(st, err);
}

size_t api_multihead_backward_bytes(const struct api_multihead_req *r, size_t n_q, size_t n_k)
{
    if (!r->backward.on)
        return 0;
    size_t grads = attn_mh_grads_bytes(n_q, n_k, r->d_model, r->heads, r->kv_heads);
    size_t d_out = n_q * r->d_model * sizeof(double); /* within --max-cells */
    return grads == 0 || grads > SIZE_MAX - d_out ? SIZE_MAX : grads + d_out;
}

struct api_mh_grad_shape api_multihead_grad_shape(const struct api_multihead_req *r, size_t n_q, size_t n_k,
                                  int part)
{
    size_t d = r->d_model, kvd = r->kv_heads * r->d_k, h = r->heads;
    bool tr = r->transposed;
    switch (part) {
    case API_MH_GRAD_WEIGHTS:
    case API_MH_GRAD_MASKED: return (struct api_mh_grad_shape){ { h, n_q, n_k }, 3 };
    case API_MH_DELTA: return (struct api_mh_grad_shape){ { h, n_q }, 2 };
    case API_MH_GRAD_K:
    case API_MH_GRAD_V: return (struct api_mh_grad_shape){ { n_k, kvd }, 2 };
    case API_MH_GRAD_X_KV: return (struct api_mh_grad_shape){ { n_k, d }, 2 };
    case API_MH_GRAD_W_Q:
    case API_MH_GRAD_W_O: return (struct api_mh_grad_shape){ { d, d }, 2 };
    case API_MH_GRAD_W_K:
    case API_MH_GRAD_W_V: return (struct api_mh_grad_shape){ { tr ? kvd : d, tr ? d : kvd }, 2 };
    case API_MH_GRAD_B_K:
    case API_MH_GRAD_B_V: return (struct api_mh_grad_shape){ { kvd }, 1 };
    case API_MH_GRAD_B_Q:
    case API_MH_GRAD_B_O: return (struct api_mh_grad_shape){ { d }, 1 };
    case API_MH_GRAD_SINK_LOGIT: return (struct api_mh_grad_shape){ { h }, 1 };
    case API_MH_GRAD_BIAS: return (struct api_mh_grad_shape){ { n_q, n_k }, 2 };
    default: return (struct api_mh_grad_shape){ { n_q, d }, 2 }; /* dO, grad_q, grad_x, grad_x_q */
    }
}

static void write_shape(struct jw *w, const struct api_mh_grad_shape *s)
{
    jw_array_begin(w);
    for (size_t i = 0; i < s->rank; i++)
        jw_int(w, (long long)s->dims[i]);
    jw_array_end(w);
}

size_t api_multihead_backward_numbers(const struct api_multihead_req *r, size_t n_q, size_t n_k)
{
    size_t numbers = 0;
    for (size_t s = 0; s < GRAD_STEPS; s++) {
        if (!shown(r, grad_steps[s].part))
            continue;
        struct api_mh_grad_shape g = api_multihead_grad_shape(r, n_q, n_k, grad_steps[s].part);
        size_t cells = 1;
        for (size_t i = 0; i < g.rank; i++)
            cells = g.dims[i] != 0 && cells > SIZE_MAX / g.dims[i] ? SIZE_MAX : cells * g.dims[i];
        numbers = numbers > SIZE_MAX - cells ? SIZE_MAX : numbers + cells;
    }
    return numbers;
}

void api_multihead_backward_shapes(struct jw *w, const struct api_multihead_req *r, size_t n_q,
                                   size_t n_k)
{
    for (size_t s = 0; s < GRAD_STEPS; s++) {
        if (!shown(r, grad_steps[s].part))
            continue;
        struct api_mh_grad_shape g = api_multihead_grad_shape(r, n_q, n_k, grad_steps[s].part);
        jw_key(w, grad_steps[s].name);
        write_shape(w, &g);
    }
}

void api_multihead_backward_steps(struct jw *w, const struct api_multihead_req *r, size_t n_q,
                                  size_t n_k, int *number)
{
    for (size_t s = 0; s < GRAD_STEPS; s++) {
        if (!shown(r, grad_steps[s].part))
            continue;
        struct api_mh_grad_shape g = api_multihead_grad_shape(r, n_q, n_k, grad_steps[s].part);
        jw_object_begin(w);
        JW_KEY(w, "step");
        jw_int(w, (*number)++);
        JW_KEY(w, "name");
        jw_string(w, grad_steps[s].name);
        JW_KEY(w, "op");
        jw_string(w, grad_steps[s].op);
        JW_KEY(w, "shape");
        write_shape(w, &g);
        jw_object_end(w);
    }
}

bool api_multihead_grad_per_head(int part)
{
    return part == API_MH_GRAD_WEIGHTS || part == API_MH_GRAD_MASKED || part == API_MH_DELTA;
}

const double *api_multihead_grad_head(const struct api_multihead_req *r, size_t h, int part)
{
    const struct attn_grads *g = &r->backward.run->grads.head[h];
    return part == API_MH_DELTA ? g->delta
           : part == API_MH_GRAD_WEIGHTS ? g->grad_weights.data : g->grad_masked.data;
}

const double *api_multihead_grad_cells(const struct api_multihead_req *r, int part)
{
    const struct attn_mh_grads *g = &r->backward.run->grads;
    switch (part) {
    case API_MH_GRAD_OUTPUT:
        return r->backward.seeded ? r->backward.run->seeded : r->backward.d_out.data;
    case API_MH_GRAD_W_O: return g->grad_w_o.data;
    case API_MH_GRAD_Q: return g->grad_q.data;
    case API_MH_GRAD_K: return g->grad_k.data;
    case API_MH_GRAD_V: return g->grad_v.data;
    case API_MH_GRAD_W_Q: return g->grad_w_q.data;
    case API_MH_GRAD_W_K: return g->grad_w_k.data;
    case API_MH_GRAD_W_V: return g->grad_w_v.data;
    case API_MH_GRAD_X: case API_MH_GRAD_X_Q: return g->grad_x_q.data;
    case API_MH_GRAD_X_KV: return g->grad_x_kv.data;
    case API_MH_GRAD_BIAS: return g->grad_bias.data;
    case API_MH_GRAD_B_Q: return g->grad_b_q;
    case API_MH_GRAD_B_O: return g->grad_b_o;
    case API_MH_GRAD_B_K: return g->grad_b_k;
    case API_MH_GRAD_B_V: return g->grad_b_v;
    default: return g->grad_sink_logit;
    }
}

/* A block of numbers shaped dims (rank 1 or 2), as JSON. */
static void write_block(struct jw *w, const double *cells, size_t rank, const size_t *dims)
{
    if (rank == 1) {
        jw_double_array(w, cells, dims[0]);
        return;
    }
    struct attn_matrix m = attn_matrix_view((double *)cells, dims[0], dims[1]);
    api_write_matrix(w, &m);
}

void api_multihead_write_backward(struct jw *w, const struct api_multihead_req *r)
{
    if (!r->backward.on)
        return;
    const struct attn_mh_grads *g = &r->backward.run->grads;
    for (size_t s = 0; s < GRAD_STEPS; s++) {
        int part = grad_steps[s].part;
        if (!shown(r, part))
            continue;
        jw_key(w, grad_steps[s].name);
        struct api_mh_grad_shape shape = api_multihead_grad_shape(r, g->n_q, g->n_k, part);
        if (!api_multihead_grad_per_head(part)) {
            write_block(w, api_multihead_grad_cells(r, part), shape.rank, shape.dims);
            continue;
        }
        jw_array_begin(w); /* a head's block drops the leading h */
        for (size_t h = 0; h < g->heads; h++)
            write_block(w, api_multihead_grad_head(r, h, part), shape.rank - 1, shape.dims + 1);
        jw_array_end(w);
    }
}

/* ---- the text page ---- */

/* One block of numbers (a vector as one row), rows labelled by what they stand for. */
static void text_block(struct api_buf *b, const double *cells, const struct api_mh_grad_shape *s,
                       const struct api_labels *rows, const struct api_labels *cols, int decimals)
{
    size_t n_rows = s->rank == 1 ? 1 : s->dims[0], n_cols = s->dims[s->rank - 1];
    const struct api_labels none = { NULL, 0, "" };
    struct api_text_matrix tm = {
        .data = cells, .rows = n_rows, .cols = n_cols, .stride = n_cols,
        .row_labels = s->rank == 1 ? none : *rows, .col_labels = *cols,
        .decimals = decimals, .indent = "  ",
    };
    api_text_matrix(b, &tm);
}

void api_multihead_text_backward(struct api_buf *b, const struct api_multihead_req *r,
                                 int decimals, const struct api_labels *queries,
                                 const struct api_labels *keys)
{
    if (!r->backward.on)
        return;
    const struct attn_mh_grads *g = &r->backward.run->grads;
    const struct api_labels none = { NULL, 0, "" };
    int number = 1;
    for (size_t s = 0; s < GRAD_STEPS; s++) {
        int part = grad_steps[s].part;
        if (!api_multihead_grad_runs(r, part))
            continue;
        api_buf_printf(b, API_TR("\nbackward step %d  %s = %s\n"), number++, grad_steps[s].name,
                       grad_steps[s].op);
        struct api_mh_grad_shape shape = api_multihead_grad_shape(r, g->n_q, g->n_k, part);
        bool by_key = part == API_MH_GRAD_K || part == API_MH_GRAD_V || part == API_MH_GRAD_X_KV;
        bool grid = part == API_MH_GRAD_WEIGHTS || part == API_MH_GRAD_MASKED ||
                    part == API_MH_GRAD_BIAS;
        bool by_query = part == API_MH_GRAD_OUTPUT || part == API_MH_GRAD_Q ||
                        part == API_MH_GRAD_X || part == API_MH_GRAD_X_Q || grid;
        const struct api_labels *rows = by_key ? keys : by_query ? queries : &none;
        if (shown(r, part) && api_multihead_grad_per_head(part)) {
            struct api_mh_grad_shape one = { { shape.dims[1], shape.rank == 3 ? shape.dims[2] : 1 },
                                             2 };
            for (size_t h = 0; h < g->heads; h++) {
                api_buf_printf(b, API_TR("  head %zu (kv head %zu)\n"), h,
                               attn_mh_kv_head(h, g->heads, g->kv_heads));
                text_block(b, api_multihead_grad_head(r, h, part), &one, queries,
                           grid ? keys : &none, decimals);
            }
        } else if (shown(r, part)) {
            text_block(b, api_multihead_grad_cells(r, part), &shape, rows, grid ? keys : &none,
                       decimals);
        }
        if (r->precision.on && r->report != NULL) /* its error against float64 under it */
            api_precision_text_step(b, &r->precision, r->report, grad_steps[s].name);
    }
}
