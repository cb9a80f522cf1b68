/*
 * api/endpoints/v2/multihead.c — the V2 model `multihead`: X (n, d_model), or X_Q
 * (n_q, d_model) with X_KV (n_k, d_model), each optionally with a leading batch size
 * B; W_Q, W_O (d_model, d_model), W_K, W_V (d_model, kv_heads·d_k) (transposed with
 * weight_layout "out_in"), optional B_Q … B_O, MASK and BIAS (n_q, n_k); parameters
 * heads (required), kv_heads, weight_layout, scale, causal, mask_semantics. Each
 * problem becomes one struct api_multihead_req run by api_multihead_run, as POST
 * /v1/multihead runs it; weights and biases are shared by the batch.
 *
 * The request's matrices are views into the inputs read here (this state owns them),
 * so api_multihead_req_deinit is never called on it.
 */
#include "api/endpoints/v2/multihead.h"

#include "api/endpoints/v2/grid.h"
#include "api/endpoints/v2/variants.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http/admission.h"

enum { IN_X, IN_X_Q, IN_X_KV, IN_W_Q, IN_W_K, IN_W_V, IN_W_O, IN_B_Q, IN_B_K, IN_B_V, IN_B_O,
       IN_MASK, IN_BIAS, IN_LENGTHS, IN_GRAD_OUTPUT = IN_LENGTHS + API_V2_N_LENGTHS_INPUTS,
       IN_COUNT };
static const char *const input_names[IN_COUNT] = {
    "X", "X_Q", "X_KV", "W_Q", "W_K", "W_V", "W_O", "B_Q", "B_K", "B_V", "B_O", "MASK", "BIAS",
    API_V2_LENGTHS_INPUTS, "GRAD_OUTPUT",
};

enum { OUT_OUTPUT, OUT_WEIGHTS, OUT_WEIGHTS_MEAN, OUT_Q, OUT_K, OUT_V, OUT_SCORES, OUT_SCALED,
       OUT_MASKED, OUT_HEAD_OUTPUTS, OUT_CONCAT, OUT_LSE, OUT_ROW_SUM, OUT_ROW_MAX,
       OUT_BLOCK_MAP, OUT_GRAD_OUTPUT, OUT_GRAD_W_O, OUT_GRAD_B_O, OUT_GRAD_WEIGHTS, OUT_DELTA,
       OUT_GRAD_MASKED, OUT_GRAD_Q, OUT_GRAD_K, OUT_GRAD_V, OUT_GRAD_W_Q, OUT_GRAD_W_K,
       OUT_GRAD_W_V, OUT_GRAD_B_Q, OUT_GRAD_B_K, OUT_GRAD_B_V, OUT_GRAD_X, OUT_GRAD_X_Q,
       OUT_GRAD_X_KV, OUT_GRAD_SINK_LOGIT, OUT_GRAD_BIAS, OUT_COUNT };
static const char *const output_names[OUT_COUNT] = {
    "OUTPUT", "WEIGHTS", "WEIGHTS_MEAN", "Q", "K", "V", "SCORES", "SCALED", "MASKED",
    "HEAD_OUTPUTS", "CONCAT", "LSE", "ROW_SUM", "ROW_MAX", "BLOCK_MAP",
    /* the backward pass, with GRAD_OUTPUT: /v1's step names in upper case */
    "GRAD_OUTPUT", "GRAD_W_O", "GRAD_B_O", "GRAD_WEIGHTS", "DELTA", "GRAD_MASKED", "GRAD_Q",
    "GRAD_K", "GRAD_V", "GRAD_W_Q", "GRAD_W_K", "GRAD_W_V", "GRAD_B_Q", "GRAD_B_K", "GRAD_B_V",
    "GRAD_X", "GRAD_X_Q", "GRAD_X_KV", "GRAD_SINK_LOGIT", "GRAD_BIAS",
};
/* What each output is among /v1's include parts (ROW_MAX has none: it is a row
 * statistic like ROW_SUM, in the summary every head has; BLOCK_MAP none either: it
 * comes from the rules alone, and asks the trace for nothing). */
static const enum api_mh_part part_of[OUT_COUNT] = {
    API_MH_OUTPUT, API_MH_WEIGHTS, API_MH_WEIGHTS_MEAN, API_MH_Q, API_MH_K, API_MH_V,
    API_MH_SCORES, API_MH_SCALED, API_MH_MASKED, API_MH_HEAD_OUTPUTS, API_MH_CONCAT,
    API_MH_LSE, API_MH_ROW_SUM, API_MH_ROW_SUM, API_MH_PART_COUNT,
    API_MH_GRAD_OUTPUT, API_MH_GRAD_W_O, API_MH_GRAD_B_O, API_MH_GRAD_WEIGHTS, API_MH_DELTA,
    API_MH_GRAD_MASKED, API_MH_GRAD_Q, API_MH_GRAD_K, API_MH_GRAD_V, API_MH_GRAD_W_Q,
    API_MH_GRAD_W_K, API_MH_GRAD_W_V, API_MH_GRAD_B_Q, API_MH_GRAD_B_K, API_MH_GRAD_B_V,
    API_MH_GRAD_X, API_MH_GRAD_X_Q, API_MH_GRAD_X_KV, API_MH_GRAD_SINK_LOGIT, API_MH_GRAD_BIAS,
};

/* The backward pass's outputs, which only a request with GRAD_OUTPUT makes. */
static bool is_grad(int which)
{
    return which >= OUT_GRAD_OUTPUT;
}

/* A head's row statistic `which` (OUT_LSE, OUT_ROW_SUM, OUT_ROW_MAX): n_q doubles. */
static const double *head_stat(const struct attn_trace *h, int which)
{
    return which == OUT_LSE ? h->summary.lse : which == OUT_ROW_SUM ? h->summary.row_sum
                                                                    : h->summary.row_max;
}

static bool is_row_stat(int which)
{
    return which == OUT_LSE || which == OUT_ROW_SUM || which == OUT_ROW_MAX;
}

static bool read_inputs(struct api_v2_multihead *m, const struct api_v2_infer *r,
                        struct api_error *err)
{
    unsigned bits[IN_COUNT];
    bool required[IN_COUNT] = { false };
    for (int i = 0; i < IN_COUNT; i++)
        bits[i] = i == IN_MASK ? API_V2_FLAGS
                  : i >= IN_LENGTHS && i < IN_GRAD_OUTPUT ? API_V2_INTEGERS : API_V2_NUMBERS;
    for (int i = IN_W_Q; i <= IN_W_O; i++)
        required[i] = true;
    if (!api_v2_check_inputs(r, "multihead", input_names, bits, required, IN_COUNT, err))
        return false;
    bool self = api_v2_input(r, "X") != NULL;
    bool cross = api_v2_input(r, "X_Q") != NULL || api_v2_input(r, "X_KV") != NULL;
    if (self == cross || (cross && (!api_v2_input(r, "X_Q") || !api_v2_input(r, "X_KV")))) {
        api_error_set(err, self ? API_INVALID_VALUE : API_MISSING_FIELD, "the multihead model "
                      "takes X (self-attention) or X_Q with X_KV (cross-attention)%s",
                      self ? ", not both" : "");
        api_error_at(err, "/inputs");
        return false;
    }
    m->req.cross = cross;
    api_v2_input_find(r, cross ? "X_Q" : "X", false, &m->x_q);
    if (cross)
        api_v2_input_find(r, "X_KV", false, &m->x_kv);
    for (int i = 0; i < 4; i++) {
        api_v2_input_find(r, input_names[IN_W_Q + i], false, &m->w[i]);
        api_v2_input_find(r, input_names[IN_B_Q + i], false, &m->b[i]);
    }
    api_v2_input_find(r, "MASK", true, &m->mask);
    api_v2_input_find(r, "BIAS", false, &m->bias);
    api_v2_input_find(r, "GRAD_OUTPUT", false, &m->d_out);
    return true;
}

static bool read_heads(struct api_v2_multihead *m, const struct api_v2_infer *r,
                       struct api_error *err)
{
    static const char *const known[] = { "heads", "kv_heads", "weight_layout", "scale",
                                         "causal", "mask_semantics", "precision", "accumulate",
                                         API_V2_VARIANT_PARAMS };
    if (!api_v2_check_params(r->parameters, known, 8 + API_V2_N_VARIANT_PARAMS, err))
        return false;
    double heads = 0, kv = 0;
    bool has_heads, has_kv;
    if (!api_v2_param_number(r->parameters, "heads", &heads, &has_heads, err) ||
        !api_v2_param_number(r->parameters, "kv_heads", &kv, &has_kv, err))
        return false;
    size_t d_model = m->x_q.t->shape[m->x_q.t->rank - 1];
    if (!has_heads || heads < 1 || heads != floor(heads) || heads > (double)d_model ||
        d_model % (size_t)heads != 0) {
        api_error_set(err, has_heads ? API_INVALID_VALUE : API_MISSING_FIELD, "parameters.heads "
                      "must be a whole number of heads dividing d_model = %zu", d_model);
        api_error_at(err, "/parameters/heads");
        return false;
    }
    if (!has_kv)
        kv = heads;
    if (kv < 1 || kv != floor(kv) || kv > heads || (size_t)heads % (size_t)kv != 0) {
        api_error_set(err, API_INVALID_VALUE, "parameters.kv_heads must divide heads = %zu",
                      (size_t)heads);
        api_error_at(err, "/parameters/kv_heads");
        return false;
    }
    const char *layout = "in_out";
    if (!api_v2_param_string(r->parameters, "weight_layout", &layout, err))
        return false;
    if (strcmp(layout, "in_out") != 0 && strcmp(layout, "out_in") != 0) {
        api_error_set(err, API_INVALID_VALUE, "parameters.weight_layout is \"in_out\" (Q = X W) "
                      "or \"out_in\" (PyTorch's, Q = X W^T)");
        api_error_at(err, "/parameters/weight_layout");
        return false;
    }
    struct api_multihead_req *req = &m->req;
    req->transposed = layout[0] == 'o';
    req->d_model = d_model;
    req->heads = (size_t)heads;
    req->kv_heads = (size_t)kv;
    req->d_k = d_model / req->heads;
    return true;
}

/* X (or X_Q, X_KV): the batch and the rows. */
static bool check_x(struct api_v2_multihead *m, const struct api_limits *limits,
                    struct api_error *err)
{
    size_t batch = 0;
    if (!api_v2_batch_of(m->x_q.t, 2, false, &batch, err) ||
        (m->req.cross && !api_v2_batch_of(m->x_kv.t, 2, false, &batch, err)))
        return false;
    if (m->req.cross && (m->x_q.t->rank != m->x_kv.t->rank)) {
        api_error_set(err, API_SHAPE_MISMATCH, "X_Q and X_KV both lead with a batch size, or "
                      "neither does");
        api_error_at(err, "/inputs/%zu/shape", m->x_kv.t->index);
        return false;
    }
    m->batch = batch;
    const struct api_v2_tensor *q = m->x_q.t, *kv = m->req.cross ? m->x_kv.t : q;
    size_t n_q = q->shape[q->rank - 2], n_k = kv->shape[kv->rank - 2];
    if (kv->shape[kv->rank - 1] != q->shape[q->rank - 1]) {
        api_error_set(err, API_SHAPE_MISMATCH, "X_KV has %zu columns but X_Q has %zu: both are "
                      "d_model wide", kv->shape[kv->rank - 1], q->shape[q->rank - 1]);
        api_error_at(err, "/inputs/%zu/shape/%zu", kv->index, kv->rank - 1);
        return false;
    }
    /* --max-cells waits for the outputs (check_cells): a streamed answer builds no
       (n_q, n_k) matrix. Each head's products are n_q·n_k·(d_k + d_v), d_k = d_v = d_model / heads. */
    size_t d_model = q->shape[q->rank - 1];
    if (!api_v2_within_work(n_q >= n_k ? q : kv, batch,
                            api_work_of(n_q, n_k, d_model, d_model), limits, err))
        return false;
    /* Views whose cells come once the request is admitted (api_v2_multihead_run). */
    m->req.x_q = attn_matrix_view(NULL, n_q, q->shape[q->rank - 1]);
    if (m->req.cross)
        m->req.x_kv = attn_matrix_view(NULL, n_k, kv->shape[kv->rank - 1]);
    return true;
}

/* W_* and B_*: their shapes from d_model, heads and kv_heads. */
static bool check_weights(struct api_v2_multihead *m, struct api_error *err)
{
    struct api_multihead_req *req = &m->req;
    size_t kv_cols = req->kv_heads * req->d_k;
    for (int i = 0; i < 4; i++) {
        const struct api_v2_tensor *t = m->w[i].t;
        size_t out = i == 1 || i == 2 ? kv_cols : req->d_model;
        size_t rows = req->transposed ? out : req->d_model;
        size_t cols = req->transposed ? req->d_model : out;
        if (t->rank != 2 || t->shape[0] != rows || t->shape[1] != cols) {
            api_error_set(err, API_SHAPE_MISMATCH, "%s must be (%zu, %zu): d_model = %zu, heads "
                          "= %zu, kv_heads = %zu, weight_layout %s", t->name, rows, cols,
                          req->d_model, req->heads, req->kv_heads,
                          req->transposed ? "out_in" : "in_out");
            api_error_at(err, "/inputs/%zu/shape", t->index);
            return false;
        }
        req->w[i] = attn_matrix_view(NULL, rows, cols);
        const struct api_v2_tensor *b = m->b[i].t;
        if (b == NULL)
            continue;
        if (b->rank != 1 || b->shape[0] != out) {
            api_error_set(err, API_SHAPE_MISMATCH, "%s must be a vector of %zu", b->name, out);
            api_error_at(err, "/inputs/%zu/shape", b->index);
            return false;
        }
    }
    return true;
}

/*
 * Outputs that need no head's (n_q, n_k) steps are computed streamed (core's
 * attn_mh_forward_stream) whatever the sizes, as the model `attention` computes its own;
 * any other request builds them, within --max-cells a head.
 */
static bool check_cells(struct api_v2_multihead *m, const struct api_limits *limits,
                        struct api_error *err)
{
    struct api_multihead_req *req = &m->req;
    req->streamed = api_multihead_streams(req, API_FORMAT_JSON);
    int overflow = 0;
    size_t n_q = req->grid.n_q, n_k = req->grid.n_k;
    if (req->streamed || (attn_cells(n_q, n_k, &overflow) <= limits->max_cells && !overflow))
        return true;
    api_error_set(err, API_LIMIT_EXCEEDED, "%zu queries and %zu keys make a score matrix "
                  "of more than %zu cells", n_q, n_k, limits->max_cells);
    api_error_at(err, "/inputs/%zu/shape", m->x_q.t->index);
    api_error_hint(err, "send fewer queries or keys, or ask only for outputs that need no "
                   "such matrix (OUTPUT, Q, K, V, HEAD_OUTPUTS, CONCAT, LSE, ROW_SUM, ROW_MAX), "
                   "without dropout");
    return false;
}

/* GRAD_OUTPUT, when sent, is dO: exactly OUTPUT's shape, (B,) n_q, d_model. */
static bool check_grad_output(const struct api_v2_multihead *m, struct api_error *err)
{
    const struct api_v2_tensor *t = m->d_out.t, *x = m->x_q.t;
    if (t == NULL)
        return true;
    bool fits = t->rank == x->rank;
    for (size_t d = 0; fits && d < t->rank; d++)
        fits = t->shape[d] == x->shape[d];
    if (fits)
        return true;
    api_error_set(err, API_SHAPE_MISMATCH, "GRAD_OUTPUT must have OUTPUT's shape, which is %s's "
                  "(the batch, n_q, d_model)", x->name);
    api_error_at(err, "/inputs/%zu/shape", t->index);
    api_error_hint(err, "GRAD_OUTPUT is dL/dOUTPUT: one row per query, d_model numbers a row, "
                   "the batch size first when %s has one", x->name);
    return false;
}

/* GRAD_OUTPUT runs /v1's multi-head backward (with precision, the low format's: no
 * report, so no float64 pass beside it). */
static bool read_backward(struct api_v2_multihead *m, struct api_error *err)
{
    if (m->d_out.t == NULL)
        return true;
    m->req.backward.on = true;
    if ((m->req.backward.run = calloc(1, sizeof *m->req.backward.run)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "backward");
        return false;
    }
    return true;
}

/* Output i can be made: a gradient only with GRAD_OUTPUT, and only one the request makes. */
static bool check_output(const struct api_v2_multihead *m, size_t i, struct api_error *err)
{
    int which = (int)m->out.index[i];
    const char *name = output_names[which];
    if (!is_grad(which))
        return true;
    if (m->d_out.t == NULL) {
        return api_v2_grad_without_input(name, i, err);
    }
    /* the inputs' numbers come once admitted: whether each was sent is in m */
    static const int bias_grads[] = { OUT_GRAD_B_Q, OUT_GRAD_B_K, OUT_GRAD_B_V, OUT_GRAD_B_O };
    bool runs = which == OUT_GRAD_BIAS ? m->bias.t != NULL
                                       : api_multihead_grad_runs(&m->req, part_of[which]);
    for (int b = 0; b < 4; b++)
        if (which == bias_grads[b])
            runs = m->b[b].t != NULL;
    if (runs)
        return true;
    api_error_set(err, API_INVALID_VALUE, "output %s is the gradient of an input or variant "
                  "this request does not have", name);
    api_error_at(err, "/outputs/%zu/name", i);
    api_error_hint(err, "GRAD_B_Q ... GRAD_B_O need the inputs B_Q ... B_O, GRAD_X needs X "
                   "(GRAD_X_Q and GRAD_X_KV need X_Q and X_KV), GRAD_SINK_LOGIT sink_logit, "
                   "GRAD_BIAS an input BIAS");
    return false;
}

static bool read_rest(struct api_v2_multihead *m, const struct api_v2_infer *r,
                      const struct api_limits *limits, struct api_error *err)
{
    struct api_multihead_req *req = &m->req;
    req->grid.n_q = req->x_q.rows;
    req->grid.n_k = req->cross ? req->x_kv.rows : req->x_q.rows;
    if (!api_v2_read_grid(&req->grid, &m->mask, &m->bias, m->batch, r->parameters, err))
        return false;
    req->scale = 1.0 / sqrt((double)req->d_k);
    if (!api_v2_param_number(r->parameters, "scale", &req->scale, NULL, err))
        return false;
    const struct api_variant_sizes sizes = { req->heads, req->grid.n_q, req->grid.n_k, req->d_k,
                                             false };
    if (!api_v2_read_variants(r, &sizes, &req->variants, err) ||
        !api_precision_read_v2(r->parameters, &req->precision, err))
        return false;
    api_variants_set_top_left(&req->variants, req->grid.top_left);
    if (req->variants.any && (req->vsteps = calloc(req->heads, sizeof *req->vsteps)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for the variants' steps");
        return false;
    }
    if (!(req->scale > 0)) {
        api_error_set(err, API_INVALID_VALUE, "parameters.scale must be a number > 0");
        api_error_at(err, "/parameters/scale");
        return false;
    }
    /* None asked: the weights and the output, and with GRAD_OUTPUT the gradients a
       training step takes from the layer: its inputs' and its weights'. */
    static const size_t dflt[] = { OUT_WEIGHTS, OUT_OUTPUT, OUT_GRAD_X, OUT_GRAD_W_Q,
                                   OUT_GRAD_W_K, OUT_GRAD_W_V, OUT_GRAD_W_O };
    static const size_t dflt_cross[] = { OUT_WEIGHTS, OUT_OUTPUT, OUT_GRAD_X_Q, OUT_GRAD_X_KV,
                                         OUT_GRAD_W_Q, OUT_GRAD_W_K, OUT_GRAD_W_V,
                                         OUT_GRAD_W_O };
    bool grads = m->d_out.t != NULL;
    if (!api_v2_pick_outputs(r, output_names, OUT_COUNT, req->cross ? dflt_cross : dflt,
                             !grads ? 2 : req->cross ? 8 : 7,
                             api_v2_default_dtype(m->x_q.t->dtype), &m->out, err) ||
        !api_v2_block_map_check(&m->out, OUT_BLOCK_MAP, r->parameters, &req->grid,
                                &req->variants, limits, err) ||
        !read_backward(m, err))
        return false;
    req->include = 0;
    for (size_t i = 0; i < m->out.n; i++) {
        if (!check_output(m, i, err))
            return false;
        if (m->out.index[i] != OUT_BLOCK_MAP)
            req->include |= 1ul << part_of[m->out.index[i]];
    }
    if (!check_cells(m, limits, err))
        return false;
    /* The least this request can hold (its answer sent as pieces); admission counts
       the body and how the answer is sent besides. */
    if ((!req->streamed && attn_mh_trace_cells(req->grid.n_q, req->grid.n_k, req->d_model,
                                               req->heads, req->kv_heads) == 0) ||
        !api_within_request_limit(limits, api_v2_multihead_working_set(m, 0, true), "", err)) {
        api_error_set(err, API_LIMIT_EXCEEDED, "the %zu heads of %zu x %zu need more memory "
                      "than one request may use", req->heads, req->grid.n_q, req->grid.n_k);
        api_error_at(err, "/inputs/%zu/shape", m->x_q.t->index);
        return false;
    }
    snprintf(m->limit_pointer, sizeof m->limit_pointer, "/inputs/%zu/shape", m->x_q.t->index);
    return true;
}

bool api_v2_multihead_parse(void *state, const struct api_v2_infer *r,
                            const struct api_limits *limits, struct api_error *err)
{
    struct api_v2_multihead *m = state;
    memset(m, 0, sizeof *m);
    m->header = r;
    return read_inputs(m, r, err) && read_heads(m, r, err) && check_x(m, limits, err) &&
           check_weights(m, err) && check_grad_output(m, err) && read_rest(m, r, limits, err);
}

static size_t out_shape(const struct api_v2_multihead *m, int which, size_t *shape);

/* Slack for what does not grow with the tensors: the request's JSON header parsed (an
   arena of 16 KiB chunks and up), the answer's header, the outputs' lists and the core's
   scratch (tests/unit/check_v2_memory.c holds the estimate to what is allocated). */
#define HEADER_BYTES ((size_t)48 * 1024)

size_t api_v2_multihead_working_set(const void *state, size_t body_len, bool pieces)
{
    const struct api_v2_multihead *m = state;
    const struct api_multihead_req *req = &m->req;
    size_t problems = m->batch > 0 ? m->batch : 1;
    size_t inputs = api_v2_input_bytes(&m->x_q) + api_v2_input_bytes(&m->x_kv) +
                    api_v2_input_bytes(&m->mask) + api_v2_input_bytes(&m->bias) +
                    api_v2_input_bytes(&m->d_out);
    for (int i = 0; i < 4; i++)
        inputs = api_v2_add(api_v2_add(inputs, api_v2_input_bytes(&m->w[i])),
                            api_v2_input_bytes(&m->b[i]));
    size_t cells = attn_mh_trace_cells(req->grid.n_q, req->grid.n_k, req->d_model, req->heads,
                                       req->kv_heads);
    /* One trace at a time (its doubles and each head's record), or one streamed answer
       and its scratch; a batch's outputs copied out of each, the answer sent from the
       trace (one problem) or the copies. */
    size_t trace = api_v2_add(req->streamed
                                  ? api_multihead_stream_bytes(req, req->grid.n_q, req->grid.n_k)
                                  : api_v2_mul(cells == 0 ? SIZE_MAX : cells, sizeof(double)),
                              api_v2_mul(req->heads, sizeof(struct attn_trace)));
    size_t bytes = api_v2_add(api_v2_add(body_len, inputs), trace);
    bytes = api_v2_add(bytes, api_multihead_backward_bytes(req, req->grid.n_q, req->grid.n_k));
    if (req->precision.on && req->backward.on) /* a low backward's copies in the format */
        bytes = api_v2_add(bytes, attn_mh_backward_precision_bytes(req->grid.n_q, req->grid.n_k,
                                                                   req->d_model, req->heads,
                                                                   req->kv_heads,
                                                                   &req->precision.rules));
    size_t cells_of[API_V2_MAX_TENSORS];
    for (size_t i = 0; i < m->out.n; i++) {
        size_t shape[3], n = problems, rank = out_shape(m, (int)m->out.index[i], shape);
        for (size_t d = 0; d < rank; d++)
            n = api_v2_mul(n, shape[d]);
        cells_of[i] = n;
    }
    pieces = api_v2_in_pieces(api_v2_binary_bytes(&m->out, cells_of), pieces);
    for (size_t i = 0; i < m->out.n; i++) {
        bool tiles = m->out.index[i] == OUT_BLOCK_MAP;
        if (m->batch > 0 || tiles) /* the block map's numbers are always its own */
            bytes = api_v2_add(bytes, api_v2_mul(cells_of[i], sizeof(double)));
        if (tiles) /* and core's tiles of one problem, a byte each, while it is filled */
            bytes = api_v2_add(bytes, cells_of[i] / problems);
        bytes = api_v2_add(bytes, api_v2_answer_bytes(cells_of[i], m->out.binary[i],
                                                      m->out.dtype[i], pieces));
    }
    return api_v2_add(bytes, HEADER_BYTES);
}

const char *api_v2_multihead_limit_field(const void *state)
{
    const struct api_v2_multihead *m = state;
    return m->limit_pointer;
}

/* The sizes of one problem's output `which`. */
static size_t out_shape(const struct api_v2_multihead *m, int which, size_t *shape)
{
    const struct api_multihead_req *r = &m->req;
    size_t n_q = r->grid.n_q, n_k = r->grid.n_k, kv_cols = r->kv_heads * r->d_k;
    if (is_grad(which)) {
        struct api_mh_grad_shape g = api_multihead_grad_shape(r, n_q, n_k, part_of[which]);
        memcpy(shape, g.dims, g.rank * sizeof *shape);
        return g.rank;
    }
    switch (which) {
    case OUT_WEIGHTS: case OUT_SCORES: case OUT_SCALED: case OUT_MASKED:
        shape[0] = r->heads, shape[1] = n_q, shape[2] = n_k;
        return 3;
    case OUT_HEAD_OUTPUTS:
        shape[0] = r->heads, shape[1] = n_q, shape[2] = r->d_k;
        return 3;
    case OUT_LSE: case OUT_ROW_SUM: case OUT_ROW_MAX:
        shape[0] = r->heads, shape[1] = n_q;
        return 2;
    case OUT_BLOCK_MAP: /* the same for every head: the rules hide keys alike in each */
        api_v2_block_map_dims(&r->grid, &r->variants, shape);
        return 2;
    case OUT_WEIGHTS_MEAN:
        shape[0] = n_q, shape[1] = n_k;
        return 2;
    case OUT_K: case OUT_V:
        shape[0] = n_k, shape[1] = kv_cols;
        return 2;
    default: /* OUTPUT, Q, CONCAT */
        shape[0] = n_q, shape[1] = r->d_model;
        return 2;
    }
}

/* Copies m (rows × cols, strided) to dst, row-major; returns the end. */
static double *copy_matrix(double *dst, const struct attn_matrix *src)
{
    for (size_t i = 0; i < src->rows; i++)
        memcpy(dst + i * src->cols, src->data + i * src->stride, src->cols * sizeof *dst);
    return dst + src->rows * src->cols;
}

static const struct attn_matrix *head_step(const struct attn_trace *h, int which)
{
    switch (which) {
    case OUT_SCORES: return &h->scores;
    case OUT_SCALED: return &h->scaled;
    case OUT_MASKED: return &h->masked;
    case OUT_WEIGHTS: return &h->weights;
    default: return &h->output;
    }
}

/* Copies a gradient's numbers (a block, or a block a head) to dst. */
static void copy_grad(double *dst, const struct api_multihead_req *r, int which)
{
    struct api_mh_grad_shape g = api_multihead_grad_shape(r, r->grid.n_q, r->grid.n_k,
                                                          part_of[which]);
    size_t cells = 1;
    for (size_t d = 0; d < g.rank; d++)
        cells *= g.dims[d];
    if (!api_multihead_grad_per_head(part_of[which])) {
        memcpy(dst, api_multihead_grad_cells(r, part_of[which]), cells * sizeof *dst);
        return;
    }
    size_t each = cells / r->heads;
    for (size_t h = 0; h < r->heads; h++)
        memcpy(dst + h * each, api_multihead_grad_head(r, h, part_of[which]), each * sizeof *dst);
}

static void copy_output(double *dst, const struct attn_mh_trace *t, int which)
{
    switch (which) {
    case OUT_OUTPUT: copy_matrix(dst, &t->output); return;
    case OUT_WEIGHTS_MEAN: copy_matrix(dst, &t->weights_mean); return;
    case OUT_Q: copy_matrix(dst, &t->q); return;
    case OUT_K: copy_matrix(dst, &t->k); return;
    case OUT_V: copy_matrix(dst, &t->v); return;
    case OUT_CONCAT: copy_matrix(dst, &t->concat); return;
    case OUT_LSE: case OUT_ROW_SUM: case OUT_ROW_MAX:
        for (size_t h = 0; h < t->heads; h++, dst += t->n_q)
            memcpy(dst, head_stat(&t->head[h], which), t->n_q * sizeof *dst);
        return;
    default:
        for (size_t h = 0; h < t->heads; h++)
            dst = copy_matrix(dst, head_step(&t->head[h], which));
    }
}

static void trace_free(void *trace)
{
    attn_mh_trace_free(trace);
    free(trace);
}

/* Where output `which` lies in t (or, a gradient, in r's): one matrix, or one per head
 * (parts[h]). */
static size_t point_parts(const double **parts, const struct attn_mh_trace *t,
                          const struct api_multihead_req *r, int which)
{
    if (is_grad(which) && !api_multihead_grad_per_head(part_of[which])) {
        parts[0] = api_multihead_grad_cells(r, part_of[which]);
        return 1;
    }
    for (size_t h = 0; is_grad(which) && h < r->heads; h++)
        parts[h] = api_multihead_grad_head(r, h, part_of[which]);
    if (is_grad(which))
        return r->heads;
    switch (which) {
    case OUT_OUTPUT: parts[0] = t->output.data; return 1;
    case OUT_WEIGHTS_MEAN: parts[0] = t->weights_mean.data; return 1;
    case OUT_Q: parts[0] = t->q.data; return 1;
    case OUT_K: parts[0] = t->k.data; return 1;
    case OUT_V: parts[0] = t->v.data; return 1;
    case OUT_CONCAT: parts[0] = t->concat.data; return 1;
    default:
        for (size_t h = 0; h < t->heads; h++)
            parts[h] = is_row_stat(which) ? head_stat(&t->head[h], which)
                                          : head_step(&t->head[h], which)->data;
        return t->heads;
    }
}

/* The number of parts output `which` lies in (point_parts). */
static size_t parts_of(const struct api_multihead_req *r, int which)
{
    if (is_grad(which))
        return api_multihead_grad_per_head(part_of[which]) ? r->heads : 1;
    switch (which) {
    case OUT_SCORES: case OUT_SCALED: case OUT_MASKED: case OUT_WEIGHTS: case OUT_HEAD_OUTPUTS:
    case OUT_LSE: case OUT_ROW_SUM: case OUT_ROW_MAX:
        return r->heads;
    default:
        return 1;
    }
}

/* A streamed answer, and a trace that lends it to the outputs (no (n_q, n_k) step). */
struct streamed {
    struct attn_mh_stream stream;
    struct attn_mh_trace view;
    struct attn_trace heads[]; /* the view's, one a head */
};

static void streamed_free(void *owner)
{
    struct streamed *s = owner;
    attn_mh_stream_free(&s->stream);
    free(s);
}

/* Runs the problem req points at, whole or streamed, into *owner (free with *owner_free);
 * *trace is what its outputs are read from. */
static bool run_problem(struct api_multihead_req *req, void **owner, void (**owner_free)(void *),
                        const struct attn_mh_trace **trace, struct api_error *err)
{
    if (!req->streamed) {
        struct attn_mh_trace *t = malloc(sizeof *t);
        if (t == NULL) {
            api_error_set(err, API_UNAVAILABLE, "no memory for a trace");
            return false;
        }
        if (!api_multihead_run(req, "", t, err)) {
            attn_mh_trace_free(t); /* the backward can fail after the forward's trace */
            free(t);
            return false;
        }
        *owner = t, *owner_free = trace_free, *trace = t;
        return true;
    }
    struct streamed *s = calloc(1, sizeof *s + req->heads * sizeof s->heads[0]);
    if (s == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for a trace");
        return false;
    }
    if (!api_multihead_stream(req, "", &s->stream, err)) {
        free(s);
        return false;
    }
    api_multihead_stream_view(&s->stream, s->heads, &s->view);
    *owner = s, *owner_free = streamed_free, *trace = &s->view;
    return true;
}

/*
 * BLOCK_MAP's tiles of problem b (the grid points at it), from the rules alone, into its
 * own numbers; after the last problem, its sparsity.
 */
static bool fill_block_maps(const struct api_v2_multihead *m, struct api_v2_outs *o, size_t b,
                            struct api_error *err)
{
    size_t problems = m->batch > 0 ? m->batch : 1;
    for (size_t i = 0; i < o->n; i++) {
        if (m->out.index[i] != OUT_BLOCK_MAP)
            continue;
        struct api_v2_out *out = &o->out[i];
        if (!api_v2_block_map_fill(&m->req.grid, &m->req.variants,
                                   out->data + b * (out->count / problems), err))
            return false;
        if (b + 1 == problems)
            api_v2_block_map_done(out);
    }
    return true;
}

/*
 * One problem: its outputs borrow the trace's matrices (each contiguous), and o takes
 * the trace over, so that the answer's tensors are sent from where they were computed.
 */
static bool run_one(struct api_v2_multihead *m, struct api_v2_outs *o, struct api_error *err)
{
    struct api_multihead_req *req = &m->req;
    req->x_q.data = m->x_q.data;
    if (req->cross)
        req->x_kv.data = m->x_kv.data;
    req->backward.d_out = attn_matrix_view(m->d_out.data, req->x_q.rows, req->d_model);
    api_v2_grid_point(&req->grid, &m->mask, &m->bias, m->allow, 0);
    const struct attn_mh_trace *trace;
    if (!run_problem(req, &o->owner, &o->owner_free, &trace, err))
        return false;
    o->owner_bytes = req->streamed
        ? api_multihead_stream_bytes(req, req->grid.n_q, req->grid.n_k)
        : api_v2_mul(attn_mh_trace_cells(req->grid.n_q, req->grid.n_k, req->d_model,
                                         req->heads, req->kv_heads), sizeof(double));
    for (size_t i = 0; i < m->out.n; i++) {
        int which = (int)m->out.index[i];
        size_t shape[3], rank = out_shape(m, which, shape);
        struct api_v2_out *out = &o->out[o->n++];
        api_v2_out_sent_as(out, output_names[which], &m->out, i);
        bool own = which == OUT_BLOCK_MAP; /* the tiles lie in no trace */
        if (!(own ? api_v2_out_alloc(out, 0, rank, shape)
                  : api_v2_out_borrow(out, rank, shape, parts_of(req, which)))) {
            api_error_set(err, API_UNAVAILABLE, "no memory for output %s", out->name);
            return false;
        }
        if (!own)
            point_parts(out->parts, trace, req, which);
    }
    return fill_block_maps(m, o, 0, err);
}

bool api_v2_multihead_load(void *state, struct api_error *err)
{
    struct api_v2_multihead *m = state;
    struct api_multihead_req *req = &m->req;
    bool ok = api_v2_input_load(&m->x_q, err) && api_v2_input_load(&m->x_kv, err) &&
              api_v2_input_load(&m->d_out, err);
    for (int i = 0; ok && i < 4; i++) {
        ok = api_v2_input_load(&m->w[i], err) && api_v2_input_load(&m->b[i], err);
        req->w[i].data = m->w[i].data;
        req->b[i] = m->b[i].data;
    }
    return ok && api_v2_grid_load(&req->grid, &m->mask, &m->bias, &m->allow, err);
}

bool api_v2_multihead_run(void *state, struct api_v2_outs *o, struct api_error *err)
{
    struct api_v2_multihead *m = state;
    static const char *const v1_fields[] = { "x", "x_q", "x_kv", "w_q", "w_k", "w_v", "w_o",
                                             "bias", "scale" };
    static const char *const v2_inputs[] = { "X", "X_Q", "X_KV", "W_Q", "W_K", "W_V", "W_O",
                                             "BIAS", "" };
    struct api_multihead_req *req = &m->req;
    if (m->batch == 0) {
        if (run_one(m, o, err))
            return true;
        api_v2_repoint(err, m->header, v1_fields, v2_inputs, 9);
        return false;
    }
    /* A batch: each problem's trace in turn, its outputs copied into the answer's. */
    size_t each[OUT_COUNT];
    for (size_t i = 0; i < m->out.n; i++) {
        size_t shape[3];
        size_t rank = out_shape(m, (int)m->out.index[i], shape);
        struct api_v2_out *out = &o->out[o->n];
        api_v2_out_sent_as(out, output_names[m->out.index[i]], &m->out, i);
        if (!api_v2_out_alloc(out, m->batch, rank, shape)) {
            api_error_set(err, API_UNAVAILABLE, "no memory for output %s", out->name);
            return false;
        }
        each[i] = out->count / (m->batch > 0 ? m->batch : 1);
        o->n++;
    }
    size_t problems = m->batch > 0 ? m->batch : 1;
    for (size_t b = 0; b < problems; b++) {
        req->x_q.data = m->x_q.data + b * req->x_q.rows * req->d_model;
        if (m->d_out.data != NULL)
            req->backward.d_out = attn_matrix_view(m->d_out.data + b * req->x_q.rows * req->d_model,
                                                   req->x_q.rows, req->d_model);
        if (req->cross)
            req->x_kv.data = m->x_kv.data + b * req->x_kv.rows * req->d_model;
        api_v2_grid_point(&req->grid, &m->mask, &m->bias, m->allow, b);
        /* dropout draws over (B, h, n_q, n_k): problem b after b problems' cells */
        req->variants.dropout_offset =
            (unsigned long long)b * req->heads * req->grid.n_q * req->grid.n_k;
        void *owner;
        void (*owner_free)(void *);
        const struct attn_mh_trace *trace;
        if (!run_problem(req, &owner, &owner_free, &trace, err)) {
            api_v2_repoint(err, m->header, v1_fields, v2_inputs, 9);
            return false;
        }
        for (size_t i = 0; i < o->n; i++) {
            int which = (int)m->out.index[i];
            if (is_grad(which))
                copy_grad(o->out[i].data + b * each[i], req, which);
            else if (which != OUT_BLOCK_MAP)
                copy_output(o->out[i].data + b * each[i], trace, which);
        }
        owner_free(owner);
        if (req->backward.on) /* the next problem's gradients are allocated afresh */
            attn_mh_grads_free(&req->backward.run->grads);
        if (!fill_block_maps(m, o, b, err))
            return false;
    }
    return true;
}

void api_v2_multihead_deinit(void *state)
{
    struct api_v2_multihead *m = state;
    api_v2_input_free(&m->x_q);
    api_v2_input_free(&m->x_kv);
    for (int i = 0; i < 4; i++) {
        api_v2_input_free(&m->w[i]);
        api_v2_input_free(&m->b[i]);
    }
    api_v2_input_free(&m->mask);
    api_v2_input_free(&m->bias);
    api_v2_input_free(&m->d_out);
    if (m->req.backward.run != NULL) /* its dO is a view of GRAD_OUTPUT: not freed here */
        attn_mh_grads_free(&m->req.backward.run->grads);
    free(m->req.backward.run);
    m->req.backward = (struct api_mh_backward){ 0 };
    free(m->allow);
    m->allow = NULL;
    for (size_t h = 0; m->req.vsteps != NULL && h < m->req.heads; h++)
        attn_vtrace_free(&m->req.vsteps[h]);
    free(m->req.vsteps);
    m->req.vsteps = NULL;
    free(m->req.report);
    m->req.report = NULL;
    api_variants_deinit(&m->req.variants);
}

static size_t queries_input(const void *state)
{
    const struct api_v2_multihead *m = state;
    return m->x_q.t->index;
}

static size_t problems(const void *state)
{
    const struct api_v2_multihead *m = state;
    return m->batch > 0 ? m->batch : 1;
}

const struct api_v2_model_ops api_v2_multihead_ops = {
    .parse = api_v2_multihead_parse,
    .working_set = api_v2_multihead_working_set,
    .limit_field = api_v2_multihead_limit_field,
    .load = api_v2_multihead_load,
    .run = api_v2_multihead_run,
    .problems = problems,
    .deinit = api_v2_multihead_deinit,
    .queries_input = queries_input,
    .queries = "X (or X_Q)",
};
