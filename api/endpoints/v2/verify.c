/*
 * api/endpoints/v2/verify.c — the V2 model `verify`: the problem (Q, K, V, MASK, BIAS, the
 * lengths, GRAD_OUTPUT and the attention parameters, read as the attention model reads
 * them: v2/problem.h) and a kernel's answer to each problem of the batch (OUTPUT, LSE,
 * GRAD_Q, GRAD_K, GRAD_V in FP16, BF16, FP32 or FP64, NaN and the infinities kept),
 * judged as POST /v1/verify judges the same problem sent alone (verify/run.c): gold is
 * the problem in float64, naive the same with precision {format, accumulate float32}
 * (gold itself for float64), by the rule flash, flex or allclose.
 *
 * The problems run one at a time: both passes, the judgement, then what the answer keeps
 * of them (its verdict, its report, gold when asked), so one problem's traces are alive
 * at once. Outputs: VERDICT (BOOL) and REPORT (BYTES: /v1/verify's JSON answer, byte for
 * byte) one a problem, and on request GOLD, GOLD_LSE, GOLD_GRAD_Q, GOLD_GRAD_K and
 * GOLD_GRAD_V, gold of each tensor the candidate sends, in its shape.
 */
#include "api/endpoints/v2/verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/endpoints/v2/variants.h"
#include "api/http/admission.h"
#include "api/json/numfmt.h"
#include "api/json/write.h"

enum { IN_Q, IN_K, IN_V, IN_MASK, IN_BIAS, IN_LENGTHS,
       IN_GRAD_OUTPUT = IN_LENGTHS + API_V2_N_LENGTHS_INPUTS, IN_OUTPUT, IN_COUNT =
       IN_OUTPUT + API_VERIFY_TENSORS };
static const char *const input_names[IN_COUNT] = { "Q", "K", "V", "MASK", "BIAS",
                                                   API_V2_LENGTHS_INPUTS, "GRAD_OUTPUT",
                                                   "OUTPUT", "LSE", "GRAD_Q", "GRAD_K",
                                                   "GRAD_V" };

/* The outputs: the verdict and report of each problem, then gold of each candidate tensor
 * in enum api_verify_tensor's order. */
enum { OUT_VERDICT, OUT_REPORT, OUT_GOLD, N_OUTPUTS = OUT_GOLD + API_VERIFY_TENSORS };
static const char *const output_names[N_OUTPUTS] = { "VERDICT", "REPORT", "GOLD", "GOLD_LSE",
                                                     "GOLD_GRAD_Q", "GOLD_GRAD_K",
                                                     "GOLD_GRAD_V" };

/* What a candidate tensor may be sent as. */
#define CANDIDATE_TYPES ((1u << API_V2_FP16) | (1u << API_V2_BF16) | (1u << API_V2_FP32) | \
                         (1u << API_V2_FP64))

/* A report as /v1/verify writes it: its keys and words, and 64 numbers a tensor at most
 * (the worst cells' and the check's). */
#define REPORT_BYTES (API_ANSWER_FIXED_BYTES + 64 * API_VERIFY_TENSORS * API_ANSWER_BYTES_PER_NUMBER)

/* Slack for the request's parsed header, the answer's and the outputs' lists (as the
 * attention model counts it). */
#define HEADER_BYTES ((size_t)48 * 1024)

/* ---- parse ---- */

static bool check_candidate_types(const struct api_v2_infer *r, struct api_error *err)
{
    for (size_t i = 0; i < API_VERIFY_TENSORS; i++) {
        const struct api_v2_tensor *t = api_v2_input(r, input_names[IN_OUTPUT + i]);
        if (t == NULL || (CANDIDATE_TYPES & (1u << t->dtype)))
            continue;
        api_error_set(err, API_INVALID_VALUE, "inputs[%zu] (%s) is %s; a kernel's answer is "
                      "read as FP16, BF16, FP32 or FP64", t->index, t->name,
                      api_v2_dtype_name(t->dtype));
        api_error_at(err, "/inputs/%zu/datatype", t->index);
        api_error_hint(err, "send the tensor as the kernel wrote it: its datatype is also the "
                       "format it is judged in unless parameters.format names another");
        return false;
    }
    return true;
}

static bool read_inputs(struct api_v2_verify *m, const struct api_v2_infer *r,
                        struct api_error *err)
{
    static const unsigned bits[IN_COUNT] = { API_V2_NUMBERS, API_V2_NUMBERS, API_V2_NUMBERS,
                                             API_V2_FLAGS, API_V2_NUMBERS, API_V2_INTEGERS,
                                             API_V2_INTEGERS, API_V2_INTEGERS, API_V2_NUMBERS,
                                             CANDIDATE_TYPES, CANDIDATE_TYPES, CANDIDATE_TYPES,
                                             CANDIDATE_TYPES, CANDIDATE_TYPES };
    static const bool required[IN_COUNT] = { true, true, true, false, false, false, false,
                                             false, false, true, false, false, false, false };
    if (!check_candidate_types(r, err) ||
        !api_v2_check_inputs(r, "verify", input_names, bits, required, IN_COUNT, err))
        return false;
    api_v2_problem_find(&m->p, r);
    for (int t = 0; t < API_VERIFY_TENSORS; t++) {
        struct api_v2_input *in = &m->candidate[t];
        api_v2_input_find(r, input_names[IN_OUTPUT + t], false, in);
        /* NaN and the infinities are what is judged; lse's null is a masked row's -inf */
        in->cells = t == API_VERIFY_LSE ? API_CELLS_LSE_WORDS : API_CELLS_NAN_WORDS;
    }
    return true;
}

/* Each candidate tensor in the shape the problem gives it, the batch first; gradients
 * only beside GRAD_OUTPUT. */
static bool check_candidates(const struct api_v2_verify *m, struct api_error *err)
{
    static const char *const legend[API_VERIFY_TENSORS] = {
        "(n_q, d_v)", "(n_q)", "(n_q, d_k)", "(n_k, d_k)", "(n_k, d_v)",
    };
    for (int t = 0; t < API_VERIFY_TENSORS; t++) {
        const struct api_v2_tensor *c = m->candidate[t].t;
        if (c == NULL)
            continue;
        if (t >= API_VERIFY_GRAD_Q && m->p.d_out.t == NULL) {
            api_error_set(err, API_INVALID_VALUE, "%s is a gradient, but the request has no "
                          "GRAD_OUTPUT", c->name);
            api_error_at(err, "/inputs/%zu/name", c->index);
            api_error_hint(err, "send GRAD_OUTPUT, the dO the kernel's backward took");
            return false;
        }
        size_t dims[2], want[3];
        int rank = api_verify_shape(&m->p.req, (enum api_verify_tensor)t, dims);
        size_t n = api_v2_problem_shape(&m->p, rank == 1 ? 0 : dims[0], rank == 1 ? dims[0]
                                                                                  : dims[1], want);
        if (api_v2_shape_is(c, want, n))
            continue;
        char got[96], made[96];
        api_v2_shape_text(got, sizeof got, c->shape, c->rank);
        api_v2_shape_text(made, sizeof made, want, n);
        api_error_set(err, API_SHAPE_MISMATCH, "%s has shape %s but Q, K and V make it %s",
                      c->name, got, made);
        api_error_at(err, "/inputs/%zu/shape", c->index);
        api_error_hint(err, "%s is %s for each problem, the batch size first when Q has one",
                       c->name, legend[t]);
        return false;
    }
    return true;
}

/* parameters.format: the candidate's format, OUTPUT's datatype unless named. */
static bool read_format(struct api_v2_verify *m, const struct api_v2_infer *r,
                        struct api_error *err)
{
    static const enum attn_format formats[] = { ATTN_FLOAT16, ATTN_BFLOAT16, ATTN_FLOAT32,
                                                ATTN_FLOAT64 };
    switch (m->candidate[API_VERIFY_OUTPUT].t->dtype) {
    case API_V2_FP16: m->format = ATTN_FLOAT16; break;
    case API_V2_BF16: m->format = ATTN_BFLOAT16; break;
    case API_V2_FP32: m->format = ATTN_FLOAT32; break;
    default: m->format = ATTN_FLOAT64; break;
    }
    const char *s = NULL;
    if (!api_v2_param_string(r->parameters, "format", &s, err))
        return false;
    for (size_t i = 0; s != NULL && i < sizeof formats / sizeof formats[0]; i++)
        if (strcmp(s, attn_format_name(formats[i])) == 0) {
            m->format = formats[i];
            return true;
        }
    if (s == NULL)
        return true;
    api_error_set(err, API_INVALID_VALUE, "parameters.format is %.32s; it must be float16, "
                  "bfloat16, float32 or float64", s);
    api_error_at(err, "/parameters/format");
    api_error_hint(err, "left out, it is OUTPUT's datatype: FP16 is float16, BF16 bfloat16, "
                   "FP32 float32 and FP64 float64");
    return false;
}

/* A rule's own number: a finite number above (or, for a tolerance, at least) 0, and only
 * with the rule it belongs to. */
static bool read_rule_number(const json_t *params, const char *name, enum attn_rule_kind kind,
                             enum attn_rule_kind rule, double *out, struct api_error *err)
{
    bool given;
    if (!api_v2_param_number(params, name, out, &given, err))
        return false;
    if (!given)
        return true;
    if (rule != kind) {
        api_error_set(err, API_INVALID_VALUE, "parameters.%s belongs to the %s rule", name,
                      kind == ATTN_RULE_FLEX ? "flex" : "allclose");
        api_error_at(err, "/parameters/%s", name);
        api_error_hint(err, "send parameters.rule \"%s\" with it, or leave %s out",
                       kind == ATTN_RULE_FLEX ? "flex" : "allclose", name);
        return false;
    }
    bool tolerance = kind == ATTN_RULE_CLOSE;
    if (*out > 0 || (tolerance && *out == 0))
        return true;
    api_error_set(err, API_INVALID_VALUE, "parameters.%s must be a number of at least 0", name);
    if (!tolerance)
        api_error_set(err, API_INVALID_VALUE, "parameters.%s must be a number above 0", name);
    api_error_at(err, "/parameters/%s", name);
    return false;
}

/* parameters.rule ("flash" unless given), and rtol, atol or fudge with their rule. */
static bool read_rule(struct api_v2_verify *m, const struct api_v2_infer *r,
                      struct api_error *err)
{
    static const char *const names[] = { "flash", "flex", "allclose" };
    const char *s = "flash";
    if (!api_v2_param_string(r->parameters, "rule", &s, err))
        return false;
    size_t k = 0;
    while (k < 3 && strcmp(s, names[k]) != 0)
        k++;
    if (k == 3) {
        api_error_set(err, API_INVALID_VALUE, "parameters.rule is %.32s; it must be flash, flex "
                      "or allclose", s);
        api_error_at(err, "/parameters/rule");
        api_error_hint(err, "\"flash\" allows twice a naive kernel's largest error, \"flex\" "
                       "its mean error times fudge, \"allclose\" is torch.allclose with rtol "
                       "and atol");
        return false;
    }
    m->rule = (struct attn_rule){ (enum attn_rule_kind)k, 1.1, 1e-5, 1e-8 };
    return read_rule_number(r->parameters, "rtol", ATTN_RULE_CLOSE, m->rule.kind,
                            &m->rule.rtol, err) &&
           read_rule_number(r->parameters, "atol", ATTN_RULE_CLOSE, m->rule.kind,
                            &m->rule.atol, err) &&
           read_rule_number(r->parameters, "fudge", ATTN_RULE_FLEX, m->rule.kind,
                            &m->rule.fudge, err);
}

static bool read_options(struct api_v2_verify *m, const struct api_v2_infer *r,
                         struct api_error *err)
{
    static const char *const known[] = { "scale", "causal", "mask_semantics", "format", "rule",
                                         "rtol", "atol", "fudge", API_V2_VARIANT_PARAMS };
    if (!api_v2_check_params(r->parameters, known, 8 + API_V2_N_VARIANT_PARAMS, err) ||
        !api_v2_problem_read_options(&m->p, r, err) || !read_format(m, r, err) ||
        !read_rule(m, r, err))
        return false;
    if (m->p.req.variants.any && (m->naive_vsteps = calloc(1, sizeof *m->naive_vsteps)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for the variants' steps");
        return false;
    }
    /* gold answers what the candidate holds, as /v1/verify asks /v1/attention */
    static const int parts[API_VERIFY_TENSORS] = { API_PART_OUTPUT, API_PART_LSE,
                                                   API_PART_GRAD_Q, API_PART_GRAD_K,
                                                   API_PART_GRAD_V };
    m->p.req.include = 0;
    for (int t = 0; t < API_VERIFY_TENSORS; t++)
        if (m->candidate[t].t != NULL)
            m->p.req.include |= 1ul << parts[t];
    return true;
}

/* The naive pass's request: the problem in the format, with its own variants' steps and
 * backward run. */
static struct api_attention_req naive_req(const struct api_v2_verify *m)
{
    struct api_attention_req n = m->p.req;
    n.precision.on = true;
    n.precision.rules = (struct attn_precision){ m->format, ATTN_FLOAT32 };
    n.vsteps = m->naive_vsteps;
    n.backward.run = m->naive_run;
    n.streamed = false;
    return n;
}

/* GRAD_OUTPUT runs the backward in both passes: gold's in float64, naive's by the
 * precision rules (naive is gold for float64). */
static bool read_backward(struct api_v2_verify *m, struct api_error *err)
{
    struct api_attention_req *req = &m->p.req;
    if (m->p.d_out.t == NULL)
        return true;
    req->backward.on = true;
    if ((req->backward.run = calloc(1, sizeof *req->backward.run)) == NULL ||
        (m->format != ATTN_FLOAT64 &&
         (m->naive_run = calloc(1, sizeof *m->naive_run)) == NULL)) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "backward");
        return false;
    }
    return true;
}

static bool pick_outputs(struct api_v2_verify *m, const struct api_v2_infer *r,
                         struct api_error *err)
{
    static const size_t dflt[] = { OUT_VERDICT, OUT_REPORT };
    if (!api_v2_pick_outputs(r, output_names, N_OUTPUTS, dflt, 2, API_V2_FP64, &m->out, err))
        return false;
    for (size_t i = 0; i < m->out.n; i++) {
        size_t o = m->out.index[i];
        if (o < OUT_GOLD) {
            if (m->out.dtype_asked[i]) {
                api_error_set(err, API_INVALID_VALUE, "output %s is sent as %s only",
                              output_names[o], o == OUT_VERDICT ? "BOOL" : "BYTES");
                api_error_at(err, "/outputs/%zu/parameters/datatype", i);
                api_error_hint(err, "leave parameters.datatype out for VERDICT and REPORT");
                return false;
            }
            m->out.dtype[i] = o == OUT_VERDICT ? API_V2_BOOL : API_V2_BYTES;
        } else if (m->candidate[o - OUT_GOLD].t == NULL) {
            api_error_set(err, API_INVALID_VALUE, "output %s is gold of the candidate's %s, "
                          "which the request does not send", output_names[o],
                          input_names[IN_OUTPUT + o - OUT_GOLD]);
            api_error_at(err, "/outputs/%zu/name", i);
            api_error_hint(err, "send %s, or leave %s out", input_names[IN_OUTPUT + o - OUT_GOLD],
                           output_names[o]);
            return false;
        }
    }
    return true;
}

/*
 * --max-cells for the (n_q, n_k) steps, decided as /v1/verify decides it: the naive pass
 * of a low format builds them, and gold does unless it can stream (then it streams when
 * they are over the limit, or when documents or a chunk hide most keys).
 */
static bool check_scores(struct api_v2_verify *m, const struct api_limits *limits,
                         struct api_error *err)
{
    struct api_attention_req *req = &m->p.req;
    int overflow = 0;
    size_t scores = attn_cells(req->q.rows, req->k.rows, &overflow);
    bool over = overflow || scores > limits->max_cells, streams = api_attention_streams(req);
    req->streamed = over || (streams && api_masks_hide(&req->variants.masks));
    if (!over || (streams && m->format == ATTN_FLOAT64))
        return true;
    const struct api_v2_tensor *t = req->q.rows >= req->k.rows ? m->p.q.t : m->p.k.t;
    api_error_set(err, API_LIMIT_EXCEEDED, "%s would make a matrix of more than %zu cells "
                  "(%zu x %zu scores, %zu x %zu output)", t->name, limits->max_cells,
                  req->q.rows, req->k.rows, req->q.rows, req->v.cols);
    api_error_at(err, "/inputs/%zu/shape", t->index);
    api_error_hint(err, "send fewer queries or keys: the naive reference in a low format "
                   "builds the score matrix (format float64 streams OUTPUT, LSE and the "
                   "gradients without it)");
    return false;
}

static bool parse(void *state, const struct api_v2_infer *r, const struct api_limits *limits,
                  struct api_error *err)
{
    struct api_v2_verify *m = state;
    memset(m, 0, sizeof *m);
    m->p.header = r;
    if (!(read_inputs(m, r, err) && api_v2_problem_check_qkv(&m->p, limits, err) &&
          api_v2_problem_check_grad_output(&m->p, err) && check_candidates(m, err) &&
          api_v2_problem_read_grid(&m->p, r, err) && read_options(m, r, err) &&
          read_backward(m, err) && pick_outputs(m, r, err) && check_scores(m, limits, err)))
        return false;
    api_v2_problem_limit_pointer(&m->p, m->limit_pointer, sizeof m->limit_pointer);
    return true;
}

/* ---- admission ---- */

static size_t problems_of(const struct api_v2_verify *m)
{
    return m->p.batch > 0 ? m->p.batch : 1;
}

/* What one pass holds: its trace (every step of a low format's, or the stream) and its
 * gradients. */
static size_t pass_bytes(const struct api_attention_req *r)
{
    size_t trace = r->streamed                           ? api_attention_stream_bytes(r)
                   : r->variants.any && !r->precision.on ? api_attention_variants_bytes(r)
                                                         : api_attention_trace_bytes(r);
    return api_v2_add(trace, api_attention_backward_bytes(r));
}

static size_t working_set(const void *state, size_t body_len, bool pieces)
{
    const struct api_v2_verify *m = state;
    size_t problems = problems_of(m), inputs = api_v2_problem_input_bytes(&m->p), cells = 0;
    for (int t = 0; t < API_VERIFY_TENSORS; t++) {
        inputs = api_v2_add(inputs, api_v2_input_bytes(&m->candidate[t]));
        if (m->candidate[t].t != NULL)
            cells += m->candidate[t].t->count / problems;
    }
    /* one problem's passes at a time, with the judgement's scratch and its report being
       written */
    struct api_attention_req naive = naive_req(m);
    size_t bytes = pass_bytes(&m->p.req);
    if (m->format != ATTN_FLOAT64)
        bytes = api_v2_add(bytes, pass_bytes(&naive));
    bytes = api_v2_add(bytes, api_v2_mul(cells, sizeof(double)));
    bytes = api_v2_add(api_v2_add(bytes, body_len), api_v2_add(inputs, 2 * REPORT_BYTES));
    size_t out_cells[API_V2_MAX_TENSORS];
    for (size_t i = 0; i < m->out.n; i++) {
        size_t o = m->out.index[i];
        out_cells[i] = o < OUT_GOLD ? problems
                                    : m->candidate[o - OUT_GOLD].t->count; /* the candidate's */
    }
    pieces = api_v2_in_pieces(api_v2_binary_bytes(&m->out, out_cells), pieces);
    for (size_t i = 0; i < m->out.n; i++) {
        if (m->out.index[i] == OUT_REPORT) { /* kept, then sent escaped or with lengths */
            size_t kept = api_v2_mul(problems, REPORT_BYTES + sizeof(size_t));
            bytes = api_v2_add(bytes, api_v2_mul(kept, m->out.binary[i] ? 2 : 3));
            continue;
        }
        bytes = api_v2_add(bytes, api_v2_mul(out_cells[i], sizeof(double)));
        bytes = api_v2_add(bytes, api_v2_answer_bytes(out_cells[i], m->out.binary[i],
                                                      m->out.dtype[i], pieces));
    }
    return api_v2_add(bytes, HEADER_BYTES);
}

static const char *limit_field(const void *state)
{
    const struct api_v2_verify *m = state;
    return m->limit_pointer;
}

/* ---- run ---- */

/* The outputs asked for, each with room for every problem. */
static bool open_outputs(const struct api_v2_verify *m, struct api_v2_outs *o,
                         struct api_error *err)
{
    for (size_t i = 0; i < m->out.n; i++) {
        size_t which = m->out.index[i];
        struct api_v2_out *out = &o->out[o->n];
        api_v2_out_sent_as(out, output_names[which], &m->out, i);
        const size_t one = 1;
        size_t dims[2];
        bool made;
        if (which == OUT_REPORT) {
            made = api_v2_out_alloc_bytes(out, m->p.batch);
        } else if (which == OUT_VERDICT) {
            made = api_v2_out_alloc(out, m->p.batch, m->p.batch > 0 ? 0 : 1, &one);
        } else {
            int rank = api_verify_shape(&m->p.req, (enum api_verify_tensor)(which - OUT_GOLD),
                                        dims);
            made = api_v2_out_alloc(out, m->p.batch, (size_t)rank, dims);
        }
        o->n++; /* even half made: api_v2_outs_deinit frees what it holds */
        if (!made) {
            api_error_set(err, API_UNAVAILABLE, "no memory for output %s", out->name);
            return false;
        }
    }
    return true;
}

/* Problem b's verdict, report and gold into the outputs. */
static bool keep(const struct api_v2_verify *m, const struct api_verify_verdict *v, size_t b,
                 struct api_v2_outs *o, struct api_error *err)
{
    for (size_t i = 0; i < o->n; i++) {
        struct api_v2_out *out = &o->out[i];
        size_t which = m->out.index[i];
        if (which == OUT_VERDICT) {
            out->data[b] = v->pass;
        } else if (which == OUT_REPORT) {
            struct jw w;
            size_t len;
            jw_init(&w, -1);
            api_verify_write(&w, v);
            char *text = jw_take(&w, &len);
            bool kept = text != NULL && api_v2_out_append_bytes(out, b, text, len);
            free(text);
            if (!kept) {
                api_error_set(err, API_UNAVAILABLE, "no memory for output %s", out->name);
                return false;
            }
        } else {
            size_t n;
            const double *gold = api_verify_cells(v->gold, (enum api_verify_tensor)(which -
                                                                                     OUT_GOLD), &n);
            memcpy(out->data + b * n, gold, n * sizeof *gold);
        }
    }
    return true;
}

/* What a pass made, freed: its trace or stream and its gradients. */
static void pass_free(struct api_verify_pass *p)
{
    attn_trace_free(&p->trace);
    attn_stream_free(&p->stream);
    if (p->req.backward.run != NULL) {
        attn_grads_free(&p->req.backward.run->grads);
        attn_stream_grads_free(&p->req.backward.run->streamed);
    }
}

/* Problem b: its passes, its judgement, what the answer keeps. */
static bool run_problem(struct api_v2_verify *m, size_t b, struct api_v2_outs *o,
                        struct api_error *err)
{
    struct api_attention_req *req = &m->p.req;
    api_v2_problem_point(&m->p, b);
    /* dropout draws over (B, n_q, n_k): problem b after b problems' cells */
    req->variants.dropout_offset = (unsigned long long)b * req->q.rows * req->k.rows;
    bool naive_on = m->format != ATTN_FLOAT64;
    struct api_verify_pass gold = { .req = *req }, naive = { .req = naive_req(m) };
    struct api_verify_verdict v = { .gold = &gold, .naive = naive_on ? &naive : &gold,
                                    .format = m->format, .rule = m->rule };
    for (int t = 0; t < API_VERIFY_TENSORS; t++) {
        if (m->candidate[t].t == NULL)
            continue;
        size_t dims[2];
        int rank = api_verify_shape(req, (enum api_verify_tensor)t, dims);
        size_t rows = rank == 1 ? 1 : dims[0], cols = rank == 1 ? dims[0] : dims[1];
        v.candidate[t] = attn_matrix_view(m->candidate[t].data + b * rows * cols, rows, cols);
    }
    bool ok = api_verify_run_pass(&gold, err) && (!naive_on || api_verify_run_pass(&naive, err)) &&
              api_verify_judge(&v, err) && keep(m, &v, b, o, err);
    pass_free(&gold);
    pass_free(&naive);
    return ok;
}

static size_t problems(const void *state)
{
    return problems_of(state);
}

/* The inputs' numbers: the problem's and the candidate's (statistics' compute_input). */
static bool load(void *state, struct api_error *err)
{
    struct api_v2_verify *m = state;
    if (!api_v2_problem_load(&m->p, err))
        return false;
    for (int t = 0; t < API_VERIFY_TENSORS; t++)
        if (!api_v2_input_load(&m->candidate[t], err))
            return false;
    return true;
}

static bool run(void *state, struct api_v2_outs *o, struct api_error *err)
{
    struct api_v2_verify *m = state;
    static const char *const v1_fields[] = { "q", "k", "v", "bias", "scale", "backward" };
    static const char *const v2_inputs[] = { "Q", "K", "V", "BIAS", "", "GRAD_OUTPUT" };
    if (!open_outputs(m, o, err))
        return false;
    for (size_t b = 0; b < problems_of(m); b++)
        if (!run_problem(m, b, o, err)) {
            api_v2_repoint(err, m->p.header, v1_fields, v2_inputs, 6);
            return false;
        }
    return true;
}

static void deinit(void *state)
{
    struct api_v2_verify *m = state;
    api_v2_problem_deinit(&m->p);
    for (int t = 0; t < API_VERIFY_TENSORS; t++)
        api_v2_input_free(&m->candidate[t]);
    attn_vtrace_free(m->naive_vsteps);
    free(m->naive_vsteps);
    m->naive_vsteps = NULL;
    struct api_backward naive = { .run = m->naive_run };
    api_attention_backward_deinit(&naive);
    m->naive_run = NULL;
}

static size_t queries_input(const void *state)
{
    const struct api_v2_verify *m = state;
    return m->p.q.t->index;
}

const struct api_v2_model_ops api_v2_verify_ops = {
    .parse = parse,
    .working_set = working_set,
    .limit_field = limit_field,
    .load = load,
    .run = run,
    .problems = problems,
    .deinit = deinit,
    .queries_input = queries_input,
    .queries = "Q",
};
