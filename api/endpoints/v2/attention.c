/*
 * api/endpoints/v2/attention.c — the V2 model `attention`: inputs Q (n_q, d_k) or
 * (d_k), K (n_k, d_k), V (n_k, d_v), MASK and BIAS (n_q, n_k), each optionally with a
 * leading batch size B, become one struct api_attention_req per problem, run by
 * api_attention_run as POST /v1/attention runs them. GRAD_OUTPUT (the output's shape) adds
 * /v1's `backward`: the gradients' steps are outputs too (GRAD_Q, GRAD_K, GRAD_V, ...).
 *
 * The problem itself (its inputs, parameters and views) is read as v2/problem.h reads
 * it for the verify model too; here are the outputs and the runs.
 */
#include "api/endpoints/v2/attention.h"

#include "api/endpoints/v2/grid.h"
#include "api/endpoints/v2/variants.h"
#include "api/endpoints/attention/variants.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http/admission.h"

enum { IN_Q, IN_K, IN_V, IN_MASK, IN_BIAS, IN_LENGTHS,
       IN_GRAD_OUTPUT = IN_LENGTHS + API_V2_N_LENGTHS_INPUTS, IN_COUNT };
static const char *const input_names[IN_COUNT] = { "Q", "K", "V", "MASK", "BIAS",
                                                   API_V2_LENGTHS_INPUTS, "GRAD_OUTPUT" };

/* The outputs, and the step (enum api_attention_part) each one is; the variants' steps
 * after the five. BLOCK_MAP is no step of a trace: it comes from the rules alone. The
 * backward pass's steps come last, in the order they run. */
static const char *const output_names[] = { "SCORES", "SCALED", "MASKED", "WEIGHTS", "OUTPUT",
                                            "Q_ROPE", "K_ROPE", "SOFTCAPPED", "DROPOUT_KEEP",
                                            "DROPPED", "LSE", "ROW_SUM", "ROW_MAX",
                                            "BLOCK_MAP", "GRAD_OUTPUT", "GRAD_V",
                                            "GRAD_WEIGHTS", "DELTA", "GRAD_MASKED",
                                            "GRAD_SCALED", "GRAD_SCORES", "GRAD_Q_ROPE",
                                            "GRAD_K_ROPE", "GRAD_Q", "GRAD_K",
                                            "GRAD_SINK_LOGIT", "GRAD_BIAS" };
static const int part_of[] = { API_PART_SCORES, API_PART_SCALED, API_PART_MASKED,
                               API_PART_WEIGHTS, API_PART_OUTPUT, API_PART_Q_ROPE,
                               API_PART_K_ROPE, API_PART_SOFTCAPPED, API_PART_DROPOUT_KEEP,
                               API_PART_DROPPED, API_PART_LSE, API_PART_ROW_SUM,
                               API_PART_ROW_MAX, API_PART_BLOCK_MAP, API_PART_GRAD_OUTPUT,
                               API_PART_GRAD_V, API_PART_GRAD_WEIGHTS, API_PART_DELTA,
                               API_PART_GRAD_MASKED, API_PART_GRAD_SCALED,
                               API_PART_GRAD_SCORES, API_PART_GRAD_Q_ROPE,
                               API_PART_GRAD_K_ROPE, API_PART_GRAD_Q, API_PART_GRAD_K,
                               API_PART_GRAD_SINK_LOGIT, API_PART_GRAD_BIAS };
/* Indices in output_names: BLOCK_MAP, and what a request with GRAD_OUTPUT gets when it asks
 * for no output. */
enum { OUT_WEIGHTS = 3, OUT_OUTPUT = 4, OUT_BLOCK_MAP = 13, OUT_GRAD_OUTPUT = 14,
       OUT_GRAD_V = 15, OUT_GRAD_Q = 23, OUT_GRAD_K = 24 };

/* The row statistics: one number a query, (n_q) or (B, n_q), from the trace's summary. */
static bool is_row_stat(int part)
{
    return part == API_PART_LSE || part == API_PART_ROW_SUM || part == API_PART_ROW_MAX;
}
#define N_OUTPUTS (sizeof output_names / sizeof output_names[0])
_Static_assert(N_OUTPUTS == sizeof part_of / sizeof part_of[0], "a step for every output");
_Static_assert(N_OUTPUTS == OUT_GRAD_OUTPUT + API_PART_COUNT - API_PART_GRAD_OUTPUT,
               "the backward pass's steps are the last outputs, every one of them");

/* The backward pass's steps, which only a request with GRAD_OUTPUT makes (attention.h
 * numbers them last). */
static bool is_grad(int part)
{
    return part >= API_PART_GRAD_OUTPUT;
}

/* The steps of one number per key row, whatever Q's shape. */
static bool is_per_key(int part)
{
    return part == API_PART_K_ROPE || part == API_PART_GRAD_V || part == API_PART_GRAD_K_ROPE ||
           part == API_PART_GRAD_K;
}

/* An output's columns: d_v, d_k or a number a key. */
static size_t cols_for(const struct api_attention_req *req, int part)
{
    switch (part) {
    case API_PART_OUTPUT:
    case API_PART_GRAD_OUTPUT:
    case API_PART_GRAD_V: return req->v.cols;
    case API_PART_Q_ROPE:
    case API_PART_K_ROPE:
    case API_PART_GRAD_Q_ROPE:
    case API_PART_GRAD_K_ROPE:
    case API_PART_GRAD_Q:
    case API_PART_GRAD_K: return req->q.cols;
    default: return req->k.rows;
    }
}

/* An output's (rows, cols) for one problem, of which rank_of sends the last ones. */
static void output_dims(const struct api_attention_req *req, int part, size_t dims[2])
{
    size_t n_q = req->q.rows;
    if (part == API_PART_BLOCK_MAP) {
        api_v2_block_map_dims(&req->grid, &req->variants, dims);
        return;
    }
    if (is_row_stat(part) || part == API_PART_DELTA) { /* sent as (n_q): see rank_of */
        dims[0] = 1;
        dims[1] = n_q;
        return;
    }
    if (part == API_PART_GRAD_SINK_LOGIT) { /* one number a problem */
        dims[0] = dims[1] = 1;
        return;
    }
    dims[0] = is_per_key(part) ? req->k.rows : n_q;
    dims[1] = cols_for(req, part);
}

/* Rank 1 (dims[1] alone) for a vector q's steps and for the row statistics; rank 0 for
 * /v1's scalars: the sink logit's gradient, and a vector q's delta. */
static size_t rank_of(const struct api_attention_req *req, int part)
{
    if (part == API_PART_BLOCK_MAP) /* tiles of rows and columns, a vector Q's too */
        return 2;
    if (part == API_PART_GRAD_SINK_LOGIT)
        return 0;
    if (part == API_PART_DELTA)
        return req->q_is_vector ? 0 : 1;
    return (req->q_is_vector && !is_per_key(part)) || is_row_stat(part) ? 1 : 2;
}

/* Whether the variant whose step `part` is was asked for (the five always run), and for
 * the gradients' steps the variant or input they are taken for. */
static bool output_runs(const struct api_v2_attention *m, int part)
{
    const struct api_variants *v = &m->p.req.variants;
    switch (part) {
    case API_PART_Q_ROPE:
    case API_PART_K_ROPE:
    case API_PART_GRAD_Q_ROPE:
    case API_PART_GRAD_K_ROPE: return v->has_rope;
    case API_PART_SOFTCAPPED: return v->softcap > 0;
    case API_PART_DROPOUT_KEEP:
    case API_PART_DROPPED: return v->dropout;
    case API_PART_GRAD_SINK_LOGIT: return v->sink;
    case API_PART_GRAD_BIAS: return m->p.bias.t != NULL;
    default: return true;
    }
}

static bool read_inputs(struct api_v2_attention *m, const struct api_v2_infer *r,
                        struct api_error *err)
{
    static const unsigned bits[IN_COUNT] = { API_V2_NUMBERS, API_V2_NUMBERS, API_V2_NUMBERS,
                                             API_V2_FLAGS, API_V2_NUMBERS, API_V2_INTEGERS,
                                             API_V2_INTEGERS, API_V2_INTEGERS, API_V2_NUMBERS };
    static const bool required[IN_COUNT] = { true, true, true, false, false, false, false,
                                             false, false };
    if (!api_v2_check_inputs(r, "attention", input_names, bits, required, IN_COUNT, err))
        return false;
    api_v2_problem_find(&m->p, r);
    return true;
}

/* parameters precision and accumulate: the problems computed in a low format, as /v1's
 * `precision` computes them, variants included. */
static bool read_precision(struct api_v2_attention *m, const struct api_v2_infer *r,
                           struct api_error *err)
{
    /* V2 answers tensors and no report: no report, so no float64 pass beside the low one */
    return api_precision_read_v2(r->parameters, &m->p.req.precision, err);
}

/* Output i can be made: its variant asked for, and a gradient only with GRAD_OUTPUT. */
static bool check_output(const struct api_v2_attention *m, size_t i, struct api_error *err)
{
    const char *name = output_names[m->out.index[i]];
    int part = part_of[m->out.index[i]];
    if (is_grad(part) && m->p.d_out.t == NULL)
        return api_v2_grad_without_input(name, i, err);
    if (output_runs(m, part))
        return true;
    api_error_set(err, API_INVALID_VALUE, "output %s is a step of a variant this request does "
                  "not ask for", name);
    api_error_at(err, "/outputs/%zu/name", i);
    if (is_grad(part))
        api_error_hint(err, "GRAD_Q_ROPE and GRAD_K_ROPE need a rope_* parameter, "
                       "GRAD_SINK_LOGIT sink_logit, GRAD_BIAS an input BIAS");
    else
        api_error_hint(err, "Q_ROPE and K_ROPE need a rope_* parameter, SOFTCAPPED "
                       "softcap, DROPOUT_KEEP and DROPPED dropout_p");
    return false;
}

/* GRAD_OUTPUT runs /v1's backward (with precision, the low format's: no report, so no
 * float64 pass beside it). */
static bool read_backward(struct api_v2_attention *m, struct api_error *err)
{
    if (m->p.d_out.t == NULL)
        return true;
    m->p.req.backward.on = true;
    if ((m->p.req.backward.run = calloc(1, sizeof *m->p.req.backward.run)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "backward");
        return false;
    }
    return true;
}

static bool read_options(struct api_v2_attention *m, const struct api_v2_infer *r,
                         const struct api_limits *limits, struct api_error *err)
{
    static const char *const known[] = { "scale", "causal", "mask_semantics", "precision",
                                         "accumulate", API_V2_VARIANT_PARAMS };
    if (!api_v2_check_params(r->parameters, known, 5 + API_V2_N_VARIANT_PARAMS, err) ||
        !api_v2_problem_read_options(&m->p, r, err) || !read_precision(m, r, err))
        return false;
    /* None asked: the weights and the output, and with GRAD_OUTPUT the gradients a
       training step takes from attention. */
    static const size_t dflt[] = { OUT_WEIGHTS, OUT_OUTPUT, OUT_GRAD_Q, OUT_GRAD_K,
                                   OUT_GRAD_V };
    if (!api_v2_pick_outputs(r, output_names, N_OUTPUTS, dflt, m->p.d_out.t != NULL ? 5 : 2,
                             api_v2_default_dtype(m->p.q.t->dtype), &m->out, err) ||
        !api_v2_block_map_check(&m->out, OUT_BLOCK_MAP, r->parameters, &m->p.req.grid,
                                &m->p.req.variants, limits, err) ||
        !read_backward(m, err))
        return false;
    /* Weights and output are always computed; the earlier steps only when asked. */
    m->p.req.include = 0;
    for (size_t i = 0; i < m->out.n; i++) {
        if (!check_output(m, i, err))
            return false;
        m->p.req.include |= 1ul << part_of[m->out.index[i]];
    }
    /* V2's backward runs on the whole pass (every step kept): never streamed here */
    m->streamed = !m->p.req.backward.on && api_attention_streams(&m->p.req);
    return true;
}

/* --max-cells for the (n_q, n_k) steps, which only a request that is not streamed builds. */
static bool check_scores(const struct api_v2_attention *m, const struct api_limits *limits,
                         struct api_error *err)
{
    const struct api_attention_req *r = &m->p.req;
    int overflow = 0;
    size_t scores = attn_cells(r->q.rows, r->k.rows, &overflow);
    if (m->streamed || (!overflow && scores <= limits->max_cells))
        return true;
    const struct api_v2_tensor *t = r->q.rows >= r->k.rows ? m->p.q.t : m->p.k.t;
    api_error_set(err, API_LIMIT_EXCEEDED, "%s would make a matrix of more than %zu cells "
                  "(%zu x %zu scores, %zu x %zu output)", t->name, limits->max_cells,
                  r->q.rows, r->k.rows, r->q.rows, r->v.cols);
    api_error_at(err, "/inputs/%zu/shape", t->index);
    api_error_hint(err, "ask for OUTPUT, LSE, ROW_SUM and ROW_MAX only: they are computed "
                   "without the score matrix");
    return false;
}

/* Slack for what does not grow with the tensors: the request's JSON header parsed (an
   arena of 16 KiB chunks and up), the answer's header, the outputs' lists and the core's
   scratch (tests/unit/check_v2_memory.c holds the estimate to what is allocated). */
#define HEADER_BYTES ((size_t)48 * 1024)

size_t api_v2_attention_working_set(const void *state, size_t body_len, bool pieces)
{
    const struct api_v2_attention *m = state;
    size_t problems = m->p.batch > 0 ? m->p.batch : 1;
    /* outputs copied out of each trace (a streamed answer holds every output) */
    bool copied = m->p.batch > 0 || (m->p.req.variants.any && !m->streamed) || m->p.req.backward.on;
    size_t inputs = api_v2_problem_input_bytes(&m->p);
    /* One trace at a time; a batch's outputs copied out of each, the answer sent from
       the trace (one problem) or from those copies. */
    size_t trace = m->streamed          ? api_attention_stream_bytes(&m->p.req)
                   : m->p.req.variants.any ? api_attention_variants_bytes(&m->p.req)
                                         : api_attention_trace_bytes(&m->p.req);
    /* and the gradients of one problem beside its trace (a low backward's copies too; the
       trace's bytes count them already when precision runs no variant) */
    trace = api_v2_add(trace, api_attention_backward_bytes(&m->p.req));
    const struct api_attention_req *r = &m->p.req;
    if (r->precision.on && r->backward.on && r->variants.any)
        trace = api_v2_add(trace, attn_backward_precision_bytes(r->q.rows, r->k.rows, r->q.cols,
                                                                r->v.cols, &r->precision.rules));
    size_t bytes = api_v2_add(api_v2_add(body_len, inputs), trace);
    size_t cells[API_V2_MAX_TENSORS];
    for (size_t i = 0; i < m->out.n; i++) {
        size_t dims[2];
        output_dims(&m->p.req, part_of[m->out.index[i]], dims);
        cells[i] = api_v2_mul(problems, dims[0] * dims[1]);
    }
    pieces = api_v2_in_pieces(api_v2_binary_bytes(&m->out, cells), pieces);
    for (size_t i = 0; i < m->out.n; i++) {
        bool tiles = part_of[m->out.index[i]] == API_PART_BLOCK_MAP;
        if (copied || tiles) /* the block map's numbers are always its own */
            bytes = api_v2_add(bytes, api_v2_mul(cells[i], sizeof(double)));
        if (tiles) /* and core's tiles of one problem, a byte each, while it is filled */
            bytes = api_v2_add(bytes, cells[i] / problems);
        bytes = api_v2_add(bytes, api_v2_answer_bytes(cells[i], m->out.binary[i],
                                                      m->out.dtype[i], pieces));
    }
    return api_v2_add(bytes, HEADER_BYTES);
}

const char *api_v2_attention_limit_field(const void *state)
{
    const struct api_v2_attention *m = state;
    return m->limit_pointer;
}

bool api_v2_attention_parse(void *state, const struct api_v2_infer *r,
                            const struct api_limits *limits, struct api_error *err)
{
    struct api_v2_attention *m = state;
    memset(m, 0, sizeof *m);
    m->p.header = r;
    if (!(read_inputs(m, r, err) && api_v2_problem_check_qkv(&m->p, limits, err) &&
          api_v2_problem_check_grad_output(&m->p, err) &&
          api_v2_problem_read_grid(&m->p, r, err) && read_options(m, r, limits, err) &&
          check_scores(m, limits, err)))
        return false;
    api_v2_problem_limit_pointer(&m->p, m->limit_pointer, sizeof m->limit_pointer);
    return true;
}

/* Copies m (rows × cols, strided) into dst, row-major. */
static void copy_matrix(double *dst, const struct attn_matrix *src)
{
    for (size_t i = 0; i < src->rows; i++)
        memcpy(dst + i * src->cols, src->data + i * src->stride, src->cols * sizeof *dst);
}

/* The matrix a gradient's output is (GRAD_BIAS is dS, GRAD_MASKED). */
static struct attn_matrix grad_of(const struct api_attention_req *req, int part)
{
    struct attn_grads *g = &req->backward.run->grads;
    switch (part) {
    case API_PART_GRAD_OUTPUT: return req->backward.d_out;
    case API_PART_GRAD_V: return g->grad_v;
    case API_PART_GRAD_WEIGHTS: return g->grad_weights;
    case API_PART_DELTA: return attn_matrix_view(g->delta, 1, g->n_q);
    case API_PART_GRAD_SCALED: return g->grad_scaled;
    case API_PART_GRAD_SCORES: return g->grad_scores;
    case API_PART_GRAD_Q_ROPE: return g->grad_q_rope;
    case API_PART_GRAD_K_ROPE: return g->grad_k_rope;
    case API_PART_GRAD_Q: return g->grad_q;
    case API_PART_GRAD_K: return g->grad_k;
    case API_PART_GRAD_SINK_LOGIT: return attn_matrix_view(&g->grad_sink_logit, 1, 1);
    default: return g->grad_masked; /* GRAD_MASKED, GRAD_BIAS */
    }
}

/* The matrix an output is: a step, a row statistic as one row of n_q, or a gradient. */
static struct attn_matrix step_of(const struct api_attention_req *req,
                                  const struct attn_trace *t, const struct attn_vtrace *vsteps,
                                  int part)
{
    if (is_grad(part))
        return grad_of(req, part);
    switch (part) {
    case API_PART_Q_ROPE:
    case API_PART_K_ROPE:
    case API_PART_SOFTCAPPED:
    case API_PART_DROPOUT_KEEP:
    case API_PART_DROPPED: return *api_variant_step_matrix(vsteps, part);
    case API_PART_SCORES: return t->scores;
    case API_PART_SCALED: return t->scaled;
    case API_PART_MASKED: return t->masked;
    case API_PART_WEIGHTS: return t->weights;
    case API_PART_LSE: return attn_matrix_view(t->summary.lse, 1, t->n_q);
    case API_PART_ROW_SUM: return attn_matrix_view(t->summary.row_sum, 1, t->n_q);
    case API_PART_ROW_MAX: return attn_matrix_view(t->summary.row_max, 1, t->n_q);
    default: return t->output;
    }
}

/*
 * One output a requested name, in the request's order, named, shaped and typed as it is
 * sent: with data NULL each holds its own numbers for m->p.batch problems (filled by
 * copying), otherwise output i borrows data[i] (contiguous: rows × cols, one problem),
 * which o's owner holds.
 */
static bool open_outputs(const struct api_v2_attention *m, struct api_v2_outs *o,
                         const double *const *data, struct api_error *err)
{
    for (size_t i = 0; i < m->out.n; i++) {
        int part = part_of[m->out.index[i]];
        size_t shape[2], rank = rank_of(&m->p.req, part);
        output_dims(&m->p.req, part, shape);
        struct api_v2_out *out = &o->out[o->n];
        api_v2_out_sent_as(out, output_names[m->out.index[i]], &m->out, i);
        bool own = data == NULL || part == API_PART_BLOCK_MAP; /* the tiles lie in no trace */
        bool made = own ? api_v2_out_alloc(out, m->p.batch, rank, shape + 2 - rank)
                        : api_v2_out_borrow(out, rank, shape + 2 - rank, 1);
        if (!made) {
            api_error_set(err, API_UNAVAILABLE, "no memory for output %s", out->name);
            return false;
        }
        if (!own)
            out->parts[0] = data[i];
        o->n++;
    }
    return true;
}

/*
 * BLOCK_MAP's tiles of problem b (the grid points at it), from the rules alone, into its
 * own numbers; after the last problem, its sparsity.
 */
static bool fill_block_maps(const struct api_v2_attention *m, struct api_v2_outs *o, size_t b,
                            struct api_error *err)
{
    size_t problems = m->p.batch > 0 ? m->p.batch : 1;
    for (size_t i = 0; i < o->n; i++) {
        if (part_of[m->out.index[i]] != API_PART_BLOCK_MAP)
            continue;
        struct api_v2_out *out = &o->out[i];
        if (!api_v2_block_map_fill(&m->p.req.grid, &m->p.req.variants,
                                   out->data + b * (out->count / problems), err))
            return false;
        if (b + 1 == problems)
            api_v2_block_map_done(out);
    }
    return true;
}

static void trace_free(void *trace)
{
    attn_trace_free(trace);
    free(trace);
}

/*
 * One problem: its outputs borrow the trace's steps, and o takes the trace over, so
 * that the answer's tensors are sent from where they were computed (v2/common.h).
 */
static bool run_one(struct api_v2_attention *m, struct api_v2_outs *o, struct api_error *err)
{
    struct attn_trace *trace = malloc(sizeof *trace);
    if (trace == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for a trace");
        return false;
    }
    api_v2_problem_point(&m->p, 0);
    if (!api_attention_run(&m->p.req, "", trace, err)) {
        free(trace);
        return false;
    }
    o->owner = trace;
    o->owner_free = trace_free;
    o->owner_bytes = api_attention_trace_bytes(&m->p.req);
    const double *data[API_V2_MAX_TENSORS];
    for (size_t i = 0; i < m->out.n; i++)
        data[i] = step_of(&m->p.req, trace, NULL, part_of[m->out.index[i]]).data;
    return open_outputs(m, o, data, err) && fill_block_maps(m, o, 0, err);
}

/* A streamed answer's output `part` as one matrix: the output, or a row statistic. */
static struct attn_matrix stream_part(const struct attn_stream *s, int part)
{
    switch (part) {
    case API_PART_LSE: return attn_matrix_view(s->summary.lse, 1, s->n_rows);
    case API_PART_ROW_SUM: return attn_matrix_view(s->summary.row_sum, 1, s->n_rows);
    case API_PART_ROW_MAX: return attn_matrix_view(s->summary.row_max, 1, s->n_rows);
    default: return s->output;
    }
}

static void stream_free(void *stream)
{
    attn_stream_free(stream);
    free(stream);
}

/* One streamed problem: its outputs borrow the answer's block, which o takes over. */
static bool stream_one(struct api_v2_attention *m, struct api_v2_outs *o, struct api_error *err)
{
    struct attn_stream *s = malloc(sizeof *s);
    if (s == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for a trace");
        return false;
    }
    api_v2_problem_point(&m->p, 0);
    if (!api_attention_stream(&m->p.req, "", s, err)) {
        free(s);
        return false;
    }
    o->owner = s;
    o->owner_free = stream_free;
    o->owner_bytes = api_attention_stream_bytes(&m->p.req);
    const double *data[API_V2_MAX_TENSORS];
    for (size_t i = 0; i < m->out.n; i++)
        data[i] = stream_part(s, part_of[m->out.index[i]]).data;
    return open_outputs(m, o, data, err) && fill_block_maps(m, o, 0, err);
}

/* Every problem of a batch streamed in turn, its outputs copied into the answer's. */
static bool stream_each(struct api_v2_attention *m, struct api_v2_outs *o, struct api_error *err)
{
    if (!open_outputs(m, o, NULL, err))
        return false;
    for (size_t b = 0; b < m->p.batch; b++) {
        api_v2_problem_point(&m->p, b);
        struct attn_stream s;
        if (!api_attention_stream(&m->p.req, "", &s, err))
            return false;
        for (size_t i = 0; i < o->n; i++) {
            if (part_of[m->out.index[i]] == API_PART_BLOCK_MAP)
                continue;
            const struct attn_matrix part = stream_part(&s, part_of[m->out.index[i]]);
            copy_matrix(o->out[i].data + b * part.rows * part.cols, &part);
        }
        attn_stream_free(&s);
        if (!fill_block_maps(m, o, b, err))
            return false;
    }
    return true;
}

/* Problem b's outputs copied out of its trace and gradients into the answer's. */
static void copy_problem(const struct api_v2_attention *m, struct api_v2_outs *o, size_t b,
                         const struct attn_trace *trace)
{
    for (size_t i = 0; i < o->n; i++) {
        int part = part_of[m->out.index[i]];
        if (part == API_PART_BLOCK_MAP)
            continue;
        const struct attn_matrix s = step_of(&m->p.req, trace, m->p.req.vsteps, part);
        copy_matrix(o->out[i].data + b * s.rows * s.cols, &s);
    }
}

/* Each problem's trace in turn (a batch, or one with variants or the backward pass), its
 * outputs copied into the answer's; err as /v1 points it. */
static bool run_each(struct api_v2_attention *m, struct api_v2_outs *o, struct api_error *err)
{
    if (!open_outputs(m, o, NULL, err))
        return false;
    size_t problems = m->p.batch > 0 ? m->p.batch : 1;
    for (size_t b = 0; b < problems; b++) {
        api_v2_problem_point(&m->p, b);
        /* dropout draws over (B, n_q, n_k): problem b after b problems' cells */
        m->p.req.variants.dropout_offset = (unsigned long long)b * m->p.req.q.rows * m->p.req.k.rows;
        struct attn_trace trace = { 0 };
        if (!api_attention_run(&m->p.req, "", &trace, err)) {
            attn_trace_free(&trace); /* a backward that failed leaves the forward's */
            return false;
        }
        copy_problem(m, o, b, &trace);
        attn_trace_free(&trace);
        if (m->p.req.backward.on) /* the next problem's are its own */
            attn_grads_free(&m->p.req.backward.run->grads);
        if (!fill_block_maps(m, o, b, err))
            return false;
    }
    return true;
}

bool api_v2_attention_load(void *state, struct api_error *err)
{
    struct api_v2_attention *m = state;
    return api_v2_problem_load(&m->p, err);
}

bool api_v2_attention_run(void *state, struct api_v2_outs *o, struct api_error *err)
{
    struct api_v2_attention *m = state;
    static const char *const v1_fields[] = { "q", "k", "v", "bias", "scale", "backward" };
    static const char *const v2_inputs[] = { "Q", "K", "V", "BIAS", "", "GRAD_OUTPUT" };
    bool ok;
    if (m->streamed) /* no (n_q, n_k) matrix: the output and row statistics only */
        ok = m->p.batch == 0 ? stream_one(m, o, err) : stream_each(m, o, err);
    /* One problem without variants is sent from its trace; the variants' steps live in
       req.vsteps and the gradients in req.backward, which the request owns, so with
       either the outputs are copied as a batch's are. */
    else if (m->p.batch == 0 && !m->p.req.variants.any && !m->p.req.backward.on)
        ok = run_one(m, o, err);
    else
        ok = run_each(m, o, err);
    if (!ok)
        api_v2_repoint(err, m->p.header, v1_fields, v2_inputs, 6);
    return ok;
}

void api_v2_attention_deinit(void *state)
{
    struct api_v2_attention *m = state;
    api_v2_problem_deinit(&m->p);
}

static size_t queries_input(const void *state)
{
    const struct api_v2_attention *m = state;
    return m->p.q.t->index;
}

static size_t problems(const void *state)
{
    const struct api_v2_attention *m = state;
    return m->p.batch > 0 ? m->p.batch : 1;
}

const struct api_v2_model_ops api_v2_attention_ops = {
    .parse = api_v2_attention_parse,
    .working_set = api_v2_attention_working_set,
    .limit_field = api_v2_attention_limit_field,
    .load = api_v2_attention_load,
    .run = api_v2_attention_run,
    .problems = problems,
    .deinit = api_v2_attention_deinit,
    .queries_input = queries_input,
    .queries = "Q",
};
