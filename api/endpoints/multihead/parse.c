/*
 * api/endpoints/multihead/parse.c — validating a POST /v1/multihead request and sizing the
 * inputs it leaves to `random` (filled later, by api_multihead_fill_random in the run step).
 *
 * Order of checks: the document, unknown fields, the scalars (heads, kv_heads,
 * weight_layout, random), the inputs x / x_q / x_kv and the sizes they fix, the
 * divisibility of d_model and heads, the limits (before anything sized by the
 * request is allocated), the options shared with /v1/attention, the request limit,
 * then the weights and biases. A weight sent in the other layout gets a hint that says
 * so. Nothing `random` makes is filled here: the parse runs on a server worker before
 * admission, and a body of a few dozen bytes can ask for 16.8 M numbers.
 */
#include "api/endpoints/multihead/multihead.h"
#include "api/endpoints/block_map.h"
#include "api/endpoints/teach/ties.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/endpoints/multihead/page.h"
#include "api/http/admission.h"
#include "api/i18n/lang.h"
#include "api/request/fields.h"
#include "api/request/matrix.h"
#include "api/request/random.h"

static const struct api_field mh_fields[] = {
    { "x", "the input of self-attention, (n, d_model)" },
    { "x_q", "the queries' input of cross-attention, (n_q, d_model)" },
    { "x_kv", "the keys' and values' input of cross-attention, (n_k, d_model)" },
    { "heads", "the number of heads h, dividing d_model" },
    { "kv_heads", "key/value heads, dividing heads (grouped-query attention)" },
    { "w_q", "the query projection, (d_model, d_model)" },
    { "w_k", "the key projection, (d_model, kv_heads*d_k)" },
    { "w_v", "the value projection, (d_model, kv_heads*d_k)" },
    { "w_o", "the output projection, (d_model, d_model)" },
    { "b_q", "the query bias, (d_model)" },
    { "b_k", "the key bias, (kv_heads*d_k)" },
    { "b_v", "the value bias, (kv_heads*d_k)" },
    { "b_o", "the output bias, (d_model)" },
    { "weight_layout", "\"in_out\" (Q = X W) or \"out_in\" (PyTorch, Q = X W^T)" },
    { "random", "{\"seed\", \"n\", \"d_model\", \"n_kv\"}: fills the inputs not given" },
    { "mask", "which keys each query may attend to: (n_q, n_k), (n_k), \"causal\" or \"causal_top_left\"" },
    { "mask_semantics", "\"keep\" (1 = may attend) or \"block\" (1 = blocked)" },
    { "bias", "added to the scaled scores in every head, (n_q, n_k)" },
    { "scale", "the factor on Q K^T, default 1/sqrt(d_k)" },
    { "include", "which inputs and steps to return" },
    { "labels", "names for the queries and keys" },
    { "round", "decimals to round every number to" },
    { "explain", "one query row of one head worked out by hand: {\"row\": i, \"head\": h}" },
    { "heatmap", "the SVG's {\"vmin\", \"vmax\", \"title\"}" },
    { "rows", "the query rows to answer, [i, ...]: the whole problem's masks, those rows' results" },
    { "precision", "{\"format\": \"float16\" | \"bfloat16\" | \"float32\", \"accumulate\": \"float32\" | \"same\"}: computed as a kernel in that format" },
    { "backward", "the gradients step by step: {\"grad_output\": dO} or {\"seed\": s}" },
    { "decode", "{\"prefill\": p}: tokens 0 … p−1 in one pass, then each later token alone against a KV cache" },
    API_VARIANT_FIELDS,
};

static const struct api_field random_fields[] = {
    { "seed", "an integer from 0 to 2^63-1" },
    { "n", "rows of x (or x_q)" },
    { "d_model", "the model width" },
    { "n_kv", "rows of x_kv: asks for cross-attention" },
};

static const char *const mh_part_names[API_MH_PART_COUNT] = {
    "x", "w_q", "w_k", "w_v", "w_o", "q", "k", "v", "scores", "scaled", "masked", "weights",
    "head_outputs", "concat", "output", "weights_mean", "summary",
    "q_rope", "k_rope", "softcapped", "dropout_keep", "dropped", "row_sum", "lse", "visible",
    "block_map", "grad_output", "grad_w_o", "grad_b_o", "grad_weights", "delta", "grad_masked",
    "grad_q", "grad_k", "grad_v", "grad_w_q", "grad_w_k", "grad_w_v", "grad_b_q", "grad_b_k",
    "grad_b_v", "grad_x", "grad_x_q", "grad_x_kv", "grad_sink_logit", "grad_bias",
};

static const char *const layout_names[] = { "in_out", "out_in" };
static const char *const weight_names[4] = { "w_q", "w_k", "w_v", "w_o" };
static const char *const bias_names[4] = { "b_q", "b_k", "b_v", "b_o" };

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* What `random` asked for; 0 means absent for the sizes. */
struct random_in {
    bool given;
    uint64_t seed;
    long long n, d_model, n_kv;
};

static bool read_size(const json_t *obj, const char *prefix, const char *name, long long *out,
                      struct api_error *err)
{
    const json_t *node = api_member(obj, name);
    if (node == NULL)
        return true;
    char ptr[160];
    API_FIELD_POINTER(ptr, prefix, name);
    return api_read_int_range(node, ptr, name, 1, 1ll << 31, out, err);
}

static bool read_random(const json_t *doc, const char *prefix, struct random_in *r,
                        struct api_error *err)
{
    const json_t *node = api_member(doc, "random");
    memset(r, 0, sizeof *r);
    if (node == NULL)
        return true;
    char ptr[128];
    API_FIELD_POINTER(ptr, prefix, "random");
    if (!api_random_check_object(node, ptr, "{\"seed\": 0, \"n\": 10, \"d_model\": 512}",
                                 random_fields, N_OF(random_fields), err))
        return false;
    if (!api_random_read_seed(node, ptr, &r->seed, err))
        return false;
    r->given = true;
    return read_size(node, ptr, "n", &r->n, err) &&
           read_size(node, ptr, "d_model", &r->d_model, err) &&
           read_size(node, ptr, "n_kv", &r->n_kv, err);
}

/* "1, 2, 4 or 8": the divisors of n (at most 12 of them), for hints. */
static void divisors(size_t n, char *out, size_t size)
{
    size_t found[12], count = 0;
    for (size_t d = 1; d <= n && count < 12; d++)
        if (n % d == 0)
            found[count++] = d;
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < count && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%zu",
                                 i == 0 ? "" : (i + 1 == count ? API_TR(" or ") : ", "), found[i]);
}

/* Reads a matrix field that must not be a vector. */
static bool read_input(const json_t *doc, const char *prefix, const char *name, const char *shape,
                       const struct api_limits *limits, struct attn_matrix *out,
                       struct api_error *err)
{
    struct api_matrix_spec spec = { name, shape, false, false };
    bool is_vector;
    char ptr[128];
    API_FIELD_POINTER(ptr, prefix, name);
    return api_read_matrix(api_member(doc, name), ptr, &spec, limits->max_cells, out,
                           &is_vector, err);
}

/*
 * Marks m (rows, cols) as one `random` fills: its shape now, its numbers in the run
 * step (api_multihead_fill_random), so that a request refused by a later field or by
 * admission has filled nothing, and a large one is filled once, where it runs.
 */
static void plan_random(struct attn_matrix *m, bool *filled, size_t rows, size_t cols)
{
    *m = attn_matrix_view(NULL, rows, cols);
    *filled = true;
}

static bool missing(struct api_error *err, const char *prefix, const char *name,
                    const char *what)
{
    api_error_set(err, API_MISSING_FIELD, "%s is required: %s", name, what);
    api_error_at(err, "%s/%s", prefix, name);
    api_error_hint(err, "or add \"random\": {\"seed\": 0, ...} to fill every input not given");
    return false;
}

/* The inputs: x (self) or x_q with x_kv (cross), given or from `random`. */
static bool read_inputs(const json_t *doc, const char *prefix, const struct api_limits *limits,
                        const struct random_in *rnd, struct api_multihead_req *r,
                        struct api_error *err)
{
    bool has_x = api_member(doc, "x") != NULL;
    bool has_xq = api_member(doc, "x_q") != NULL, has_xkv = api_member(doc, "x_kv") != NULL;
    if (has_x && (has_xq || has_xkv)) {
        api_error_set(err, API_INVALID_VALUE, "x is the input of self-attention; x_q and x_kv "
                      "are those of cross-attention: send x alone, or x_q with x_kv");
        api_error_at(err, "%s/%s", prefix, has_xq ? "x_q" : "x_kv");
        return false;
    }
    r->cross = has_xq || has_xkv || (!has_x && rnd->n_kv > 0);
    const char *q_name = r->cross ? "x_q" : "x";
    if (r->cross ? has_xq : has_x) {
        if (!read_input(doc, prefix, q_name, "(n_q, d_model)", limits, &r->x_q, err))
            return false;
    } else if (!rnd->given) {
        return missing(err, prefix, q_name, r->cross ? "the queries' input, (n_q, d_model)"
                       : "the input of self-attention, (n, d_model)");
    }
    if (has_xkv && !read_input(doc, prefix, "x_kv", "(n_k, d_model)", limits, &r->x_kv, err))
        return false;
    if (r->cross && !has_xkv && !rnd->given)
        return missing(err, prefix, "x_kv", "the keys' and values' input, (n_k, d_model)");
    return true;
}

/* d_model, n_q, n_k from the inputs given and from random; they must agree. */
static bool resolve_sizes(const char *prefix, const struct random_in *rnd,
                          struct api_multihead_req *r, size_t *n_q, size_t *n_k,
                          struct api_error *err)
{
    size_t d_model = r->x_q.data ? r->x_q.cols : r->x_kv.data ? r->x_kv.cols : 0;
    if (r->x_q.data && r->x_kv.data && r->x_kv.cols != r->x_q.cols) {
        api_error_set(err, API_SHAPE_MISMATCH, "x_q has %zu columns but x_kv has %zu: both are "
                      "(rows, d_model)", r->x_q.cols, r->x_kv.cols);
        api_error_at(err, "%s/x_kv", prefix);
        api_error_hint(err, "queries and keys come from inputs of the same width d_model");
        return false;
    }
    struct { long long given; size_t from_input; const char *name; size_t *out; } sizes[] = {
        { rnd->d_model, d_model, "d_model", &r->d_model },
        { rnd->n, r->x_q.data ? r->x_q.rows : 0, "n", n_q },
        { rnd->n_kv, r->x_kv.data ? r->x_kv.rows : 0, "n_kv", n_k },
    };
    for (size_t i = 0; i < N_OF(sizes); i++) {
        *sizes[i].out = sizes[i].from_input ? sizes[i].from_input : (size_t)sizes[i].given;
        if (sizes[i].given != 0 && sizes[i].from_input != 0 &&
            (size_t)sizes[i].given != sizes[i].from_input) {
            api_error_set(err, API_SHAPE_MISMATCH, "random.%s is %lld but the input given has "
                          "%zu", sizes[i].name, sizes[i].given, sizes[i].from_input);
            api_error_at(err, "%s/random/%s", prefix, sizes[i].name);
            api_error_hint(err, "leave random.%s out: it only sizes the inputs random fills",
                           sizes[i].name);
            return false;
        }
        if (*sizes[i].out == 0 && (i < 2 || r->cross)) {
            api_error_set(err, API_MISSING_FIELD, "random.%s is required to fill the inputs "
                          "not given", sizes[i].name);
            api_error_at(err, "%s/random/%s", prefix, sizes[i].name);
            return false;
        }
    }
    if (!r->cross)
        *n_k = *n_q;
    return true;
}

/* random.n_kv asks for cross-attention; with x given that request cannot be met. */
static bool check_random_mode(const char *prefix, const struct random_in *rnd,
                              const struct api_multihead_req *r, struct api_error *err)
{
    if (r->cross || rnd->n_kv == 0)
        return true;
    api_error_set(err, API_INVALID_VALUE, "random.n_kv asks for cross-attention, but x is the "
                  "input of self-attention");
    api_error_at(err, "%s/random/n_kv", prefix);
    api_error_hint(err, "drop n_kv, or send x_q (and x_kv) instead of x");
    return false;
}

static bool read_heads(const json_t *doc, const char *prefix, struct api_multihead_req *r,
                       struct api_error *err)
{
    char ptr[128], hint[160];
    long long heads, kv_heads;
    const json_t *node = api_member(doc, "heads");
    API_FIELD_POINTER(ptr, prefix, "heads");
    if (node == NULL) {
        api_error_set(err, API_MISSING_FIELD, "heads is required: the number of heads h, "
                      "dividing d_model");
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "heads 1 is single-head attention with projections");
        return false;
    }
    if (!api_read_int_range(node, ptr, "heads", 1, 1ll << 31, &heads, err))
        return false;
    kv_heads = heads;
    node = api_member(doc, "kv_heads");
    if (node != NULL) {
        API_FIELD_POINTER(ptr, prefix, "kv_heads");
        if (!api_read_int_range(node, ptr, "kv_heads", 1, 1ll << 31, &kv_heads, err))
            return false;
    }
    r->heads = (size_t)heads;
    r->kv_heads = (size_t)kv_heads;
    if (r->heads % r->kv_heads != 0) {
        divisors(r->heads, hint, sizeof hint);
        api_error_set(err, API_INVALID_VALUE, "kv_heads %zu does not divide heads %zu: each kv "
                      "head serves heads/kv_heads query heads", r->kv_heads, r->heads);
        api_error_at(err, "%s/kv_heads", prefix);
        api_error_hint(err, "with heads = %zu, kv_heads can be %s (1 is multi-query attention)",
                       r->heads, hint);
        return false;
    }
    return true;
}

static bool check_divides(const char *prefix, struct api_multihead_req *r, struct api_error *err)
{
    if (r->d_model % r->heads == 0 && r->heads <= r->d_model) {
        r->d_k = r->d_model / r->heads;
        return true;
    }
    char hint[160];
    divisors(r->d_model, hint, sizeof hint);
    api_error_set(err, API_SHAPE_MISMATCH, "d_model %zu is not divisible by heads %zu: each head "
                  "takes d_model/heads columns", r->d_model, r->heads);
    api_error_at(err, "%s/heads", prefix);
    api_error_hint(err, "with d_model = %zu, heads can be %s", r->d_model, hint);
    return false;
}

/* One limit: cells of a matrix the request asks for, named by the field that drives it. */
static bool within(size_t a, size_t b, const struct api_limits *limits, const char *prefix,
                   const char *field, const char *what, struct api_error *err)
{
    int overflow = 0;
    size_t cells = attn_cells(a, b, &overflow);
    if (!overflow && cells <= limits->max_cells)
        return true;
    api_error_set(err, API_LIMIT_EXCEEDED, "%s would have %zu x %zu cells; this server computes "
                  "at most %zu cells in one matrix", what, a, b, limits->max_cells);
    api_error_at(err, "%s/%s", prefix, field);
    return false;
}

static size_t add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t mul_sat(size_t a, size_t b)
{
    int overflow = 0;
    size_t c = attn_cells(a, b, &overflow);
    return overflow ? SIZE_MAX : c;
}

/*
 * The numbers the answer writes: those of each included part (every part for pages);
 * the per-query parts for the answer's rows (`rows`), the inputs as sent.
 */
static size_t answer_numbers(const struct api_multihead_req *r, size_t n_q_sent, size_t n_k,
                             bool every_part)
{
    size_t kv_cols = r->kv_heads * r->d_k, n_q = api_multihead_answer_rows(r);
    size_t x = add_sat(mul_sat(n_q_sent, r->d_model), r->cross ? mul_sat(n_k, r->d_model) : 0);
    size_t w_qo = mul_sat(r->d_model, r->d_model), w_kv = mul_sat(r->d_model, kv_cols);
    size_t q = mul_sat(n_q, r->d_model), kv = mul_sat(n_k, kv_cols);
    size_t maps = mul_sat(mul_sat(n_q, n_k), r->heads);
    const size_t part[API_MH_PART_COUNT] = {
        [API_MH_X] = x, [API_MH_W_Q] = w_qo, [API_MH_W_K] = w_kv, [API_MH_W_V] = w_kv,
        [API_MH_W_O] = w_qo, [API_MH_Q] = q, [API_MH_K] = kv, [API_MH_V] = kv,
        [API_MH_SCORES] = maps, [API_MH_SCALED] = maps, [API_MH_MASKED] = maps,
        [API_MH_WEIGHTS] = maps, [API_MH_HEAD_OUTPUTS] = q, [API_MH_CONCAT] = q,
        [API_MH_OUTPUT] = q, [API_MH_WEIGHTS_MEAN] = mul_sat(n_q, n_k),
        [API_MH_SUMMARY] = mul_sat(mul_sat(5, r->heads), n_q),
        [API_MH_ROW_SUM] = mul_sat(r->heads, n_q), [API_MH_LSE] = mul_sat(r->heads, n_q),
        [API_MH_VISIBLE] = mul_sat(n_q, n_k),
        [API_MH_BLOCK_MAP] = api_block_map_tiles(r->x_q.rows, n_k, r->variants.masks.block_q,
                                                 r->variants.masks.block_k),
    };
    size_t numbers = 0;
    for (int p = 0; p < API_MH_PART_COUNT; p++)
        if (every_part || (r->include & (1ul << p)))
            numbers = add_sat(numbers, part[p]);
    return numbers;
}

/* A low backward beside its low gradients (api_multihead_backward_bytes'): core's copies
 * in the format (attn_mh_backward_precision_bytes), and for the report the float64
 * gradients and the float64 forward's variant steps, kept for them; in doubles. */
static size_t precision_backward_cells(const struct api_multihead_req *r, size_t n_q, size_t n_k)
{
    size_t low = attn_mh_backward_precision_bytes(n_q, n_k, r->d_model, r->heads, r->kv_heads,
                                                  &r->precision.rules);
    size_t exact = attn_mh_grads_bytes(n_q, n_k, r->d_model, r->heads, r->kv_heads);
    if (low == 0 || exact == 0)
        return SIZE_MAX;
    size_t cells = add_sat(low / sizeof(double) + 1, exact / sizeof(double) + 1);
    if (r->variants.any) /* as the low pass's: rotated q and k, three (n_q, n_k) a head */
        cells = add_sat(cells, mul_sat(r->heads, add_sat(mul_sat(3 * n_q, n_k),
                                                         mul_sat(n_q + n_k + 1, r->d_k))));
    return cells;
}

size_t api_multihead_working_set(const struct api_multihead_req *r, size_t n_q, size_t n_k,
                                 enum api_format format, size_t body_len)
{
    size_t kv_cols = r->kv_heads * r->d_k;
    size_t inputs = add_sat(mul_sat(n_q, r->d_model), r->cross ? mul_sat(n_k, r->d_model) : 0);
    inputs = add_sat(inputs, mul_sat(2 * r->d_model, add_sat(r->d_model, kv_cols)));
    if (r->streamed) /* the stream's answer and one head's scratch; no (n_q, n_k) step */
        return api_working_set(add_sat(mul_sat(inputs, sizeof(double)),
                                       api_multihead_stream_bytes(r, n_q, n_k)),
                               answer_numbers(r, n_q, n_k, false), body_len);
    size_t trace = attn_mh_trace_cells(n_q, n_k, r->d_model, r->heads, r->kv_heads);
    size_t cells = add_sat(inputs, trace == 0 ? SIZE_MAX : trace);
    size_t grads = api_multihead_backward_bytes(r, n_q, n_k); /* the gradients and dO */
    cells = add_sat(cells, grads / sizeof(double) + (grads % sizeof(double) != 0));
    if (r->variants.any) /* at most rotated q and k, and three (n_q, n_k) steps a head */
        cells = add_sat(cells, mul_sat(r->heads, add_sat(mul_sat(3 * n_q, n_k),
                                                         mul_sat(n_q + n_k + 1, r->d_k))));
    if (r->precision.on) /* the float64 trace beside it, and core's copies in the format
                            (one head's, or one projection's, at a time) */
        cells = add_sat(add_sat(cells, trace == 0 ? SIZE_MAX : trace),
                        add_sat(mul_sat(3, mul_sat(n_q, n_k)),
                                mul_sat(2, add_sat(mul_sat(n_q + n_k, r->d_model),
                                                   mul_sat(r->d_model, r->d_model)))));
    if (r->precision.on && r->backward.on) /* float64's gradients and variant steps, kept */
        cells = add_sat(cells, precision_backward_cells(r, n_q, n_k)); /* for the report */
    /* decode: its cache, every token's rows and weights, beside the full pass it is
       compared with */
    cells = add_sat(cells, api_multihead_decode_cells(r, n_q));
    size_t n_rows = api_multihead_answer_rows(r);
    if (r->rows != NULL) { /* the listed rows' copy beside the whole trace, and its variants */
        size_t picked = attn_mh_trace_cells(n_rows, n_k, r->d_model, r->heads, r->kv_heads);
        cells = add_sat(cells, picked == 0 ? SIZE_MAX : picked);
        if (r->variants.any)
            cells = add_sat(cells, mul_sat(r->heads, add_sat(mul_sat(3 * n_rows, n_k),
                                                             mul_sat(n_rows + n_k + 1, r->d_k))));
    }
    if (format == API_FORMAT_TEXT) /* the page as laid out: its matrices elided */
        return add_sat(api_working_set(mul_sat(cells, sizeof(double)), 0, body_len),
                       add_sat(api_multihead_text_bytes(r, n_rows > n_q ? n_rows : n_q, n_k),
                               api_multihead_decode_text_bytes(r, n_q)));
    /* The heatmap's panels: an upper bound of their cells and tooltips' numbers. */
    bool every_part = format == API_FORMAT_SVG;
    const struct api_explain_sizes sizes = { n_q, n_k, r->d_k, r->d_k, r->heads };
    size_t numbers = add_sat(answer_numbers(r, n_q, n_k, every_part),
                             api_explain_numbers(&r->explain, &sizes));
    numbers = add_sat(numbers, api_multihead_backward_numbers(r, n_q, n_k));
    if (r->precision.on) /* the report: six numbers an entry at the most */
        numbers = add_sat(numbers, 6 * API_PRECISION_ENTRIES);
    numbers = add_sat(numbers, api_tie_numbers(r->heads, n_rows, n_k)); /* warnings: always */
    numbers = add_sat(numbers, api_multihead_decode_numbers(r, n_q));
    return api_working_set(mul_sat(cells, sizeof(double)), numbers, body_len);
}

/* The fields that fix n_q, n_k and d_model: inputs given, or random's sizes. */
static bool given(const struct api_multihead_req *r, enum api_mh_input in)
{
    const struct attn_matrix *m = in == API_IN_X_Q ? &r->x_q : &r->x_kv;
    return m->data != NULL && !r->filled[in];
}

static const char *n_field_of(const struct api_multihead_req *r)
{
    return given(r, API_IN_X_Q) ? (r->cross ? "x_q" : "x") : "random/n";
}

static const char *kv_field_of(const struct api_multihead_req *r)
{
    return r->cross ? (given(r, API_IN_X_KV) ? "x_kv" : "random/n_kv") : n_field_of(r);
}

static const char *d_field_of(const struct api_multihead_req *r)
{
    if (given(r, API_IN_X_Q) || given(r, API_IN_X_KV))
        return given(r, API_IN_X_Q) ? n_field_of(r) : "x_kv";
    return "random/d_model";
}

void api_multihead_limit_pointer(const struct api_multihead_req *r, const char *prefix,
                                 size_t n_q, size_t n_k, char *out, size_t cap)
{
    /* The rows drive the per-head maps and the projections; d_model the weights. */
    size_t maps = mul_sat(mul_sat(n_q, n_k), r->heads);
    size_t rows = mul_sat(add_sat(n_q, n_k), r->d_model);
    size_t weights = mul_sat(r->d_model, r->d_model);
    const char *field = r->cross && n_k > n_q ? kv_field_of(r) : n_field_of(r);
    if (weights > maps && weights > rows)
        field = d_field_of(r);
    snprintf(out, cap, "%s/%s", prefix, field);
}

/*
 * The request limit on what the answer in `format` asks for, without the body and
 * the pages' extras (the handler adds them), checked before random fills any input.
 */
static bool check_request_limit(const char *prefix, const struct api_multihead_req *r,
                                size_t n_q, size_t n_k, enum api_format format,
                                const struct api_limits *limits, struct api_error *err)
{
    char ptr[160];
    api_multihead_limit_pointer(r, prefix, n_q, n_k, ptr, sizeof ptr);
    return api_within_request_limit(limits, api_multihead_working_set(r, n_q, n_k, format, 0),
                                    ptr, err);
}

/* Every matrix the request's numbers size, checked before any of them is allocated. */
static bool check_limits(const char *prefix, const struct api_multihead_req *r, size_t n_q,
                         size_t n_k, const struct api_limits *limits, struct api_error *err)
{
    const char *n_field = n_field_of(r);
    const char *kv_field = kv_field_of(r);
    const char *d_field = d_field_of(r);
    char work_ptr[160];
    /* Each head's two products are n_q·n_k·(d_k + d_v) with d_k = d_v = d_model / heads. */
    size_t work = api_work_of(n_q, n_k, r->d_model, r->d_model);
    API_FIELD_POINTER(work_ptr, prefix, n_q >= n_k ? n_field : kv_field);
    /* The per-head (n_q, n_k) steps come last (api_multihead_check_maps): a request
     * whose answer needs none of them is streamed instead. */
    return within(n_q, r->d_model, limits, prefix, n_field, "x_q and Q", err) &&
           within(n_k, r->d_model, limits, prefix, kv_field, "x_kv, K and V", err) &&
           within(r->d_model, r->d_model, limits, prefix, d_field, "w_q and w_o", err) &&
           api_within_work_limit(limits, work, work_ptr, err);
}

/* A weight: given in the request's layout, or filled from random. */
static bool read_weight(const json_t *doc, const char *prefix, int which, size_t out_cols,
                        const struct random_in *rnd, const struct api_limits *limits,
                        struct api_multihead_req *r, struct api_error *err)
{
    const char *name = weight_names[which];
    size_t rows = r->transposed ? out_cols : r->d_model;
    size_t cols = r->transposed ? r->d_model : out_cols;
    if (api_member(doc, name) == NULL) {
        if (!rnd->given)
            return missing(err, prefix, name, "a projection weight");
        plan_random(&r->w[which], &r->filled[API_IN_W_Q + which], rows, cols);
        return true;
    }
    char shape[64];
    snprintf(shape, sizeof shape, "(%zu, %zu)", rows, cols);
    if (!read_input(doc, prefix, name, shape, limits, &r->w[which], err))
        return false;
    if (r->w[which].rows == rows && r->w[which].cols == cols)
        return true;
    api_error_set(err, API_SHAPE_MISMATCH, "%s is (%zu, %zu) but must be %s with weight_layout "
                  "\"%s\"", name, r->w[which].rows, r->w[which].cols, shape,
                  layout_names[r->transposed]);
    api_error_at(err, "%s/%s", prefix, name);
    if (r->w[which].rows == cols && r->w[which].cols == rows)
        api_error_hint(err, "%s is (%zu, %zu): set weight_layout to \"%s\"%s", name,
                       r->w[which].rows, r->w[which].cols, layout_names[!r->transposed],
                       r->transposed ? " for (in, out) weights" : " for PyTorch's layout");
    else
        api_error_hint(err, "d_model = %zu, heads = %zu, kv_heads = %zu, so d_k = %zu and %s "
                       "has %zu output columns", r->d_model, r->heads, r->kv_heads, r->d_k, name,
                       out_cols);
    api_matrix_free(&r->w[which]);
    return false;
}

static bool read_bias_vector(const json_t *doc, const char *prefix, int which, size_t len,
                             const struct api_limits *limits, struct api_multihead_req *r,
                             struct api_error *err)
{
    const char *name = bias_names[which];
    const json_t *node = api_member(doc, name);
    if (node == NULL)
        return true;
    char ptr[128], shape[32];
    API_FIELD_POINTER(ptr, prefix, name);
    snprintf(shape, sizeof shape, "(%zu)", len);
    struct api_matrix_spec spec = { name, shape, true, false };
    struct attn_matrix m;
    bool is_vector;
    if (!api_read_matrix(node, ptr, &spec, limits->max_cells, &m, &is_vector, err))
        return false;
    if (m.rows == 1 && m.cols == len) {
        r->b[which] = m.data; /* the request now owns it */
        return true;
    }
    api_error_set(err, API_SHAPE_MISMATCH, "%s has %zu x %zu numbers but must be a vector of "
                  "%zu", name, m.rows, m.cols, len);
    api_error_at(err, "%s", ptr);
    api_error_hint(err, "a bias has one number per output column of its projection");
    api_matrix_free(&m);
    return false;
}

/* Sized as soon as the sizes are known: what follows reads the inputs' rows (`rows`, the
 * streamed route's answer), whoever fills them. */
static bool plan_x_random(size_t n_q, size_t n_k, struct api_multihead_req *r)
{
    if (r->x_q.data == NULL)
        plan_random(&r->x_q, &r->filled[API_IN_X_Q], n_q, r->d_model);
    if (r->cross && r->x_kv.data == NULL)
        plan_random(&r->x_kv, &r->filled[API_IN_X_KV], n_k, r->d_model);
    return true;
}

static bool read_projections(const json_t *doc, const char *prefix, const struct random_in *rnd,
                             const struct api_limits *limits, struct api_multihead_req *r,
                             struct api_error *err)
{
    size_t kv_cols = r->kv_heads * r->d_k;
    const size_t outs[4] = { r->d_model, kv_cols, kv_cols, r->d_model };
    for (int i = 0; i < 4; i++)
        if (!read_weight(doc, prefix, i, outs[i], rnd, limits, r, err))
            return false;
    for (int i = 0; i < 4; i++)
        if (!read_bias_vector(doc, prefix, i, outs[i], limits, r, err))
            return false;
    return true;
}

static bool read_options(const json_t *doc, const char *prefix, const struct api_limits *limits,
                         size_t n_q, size_t n_k, struct api_multihead_req *r,
                         struct api_error *err)
{
    char ptr[128];
    const json_t *node;
    r->grid.n_q = n_q;
    r->grid.n_k = n_k;
    if (!api_grid_read(doc, prefix, limits, &r->grid, err))
        return false;
    r->scale = 1.0 / sqrt((double)r->d_k);
    if ((node = api_member(doc, "scale")) != NULL) {
        API_FIELD_POINTER(ptr, prefix, "scale");
        if (!api_read_positive(node, ptr, "scale", &r->scale, err))
            return false;
    }
    /* Every step by default; the inputs (x and the weights) only when asked for. */
    r->include = API_MH_DEFAULT;
    if ((node = api_member(doc, "include")) != NULL) {
        API_FIELD_POINTER(ptr, prefix, "include");
        if (!api_read_name_set(node, ptr, "include", mh_part_names, API_MH_PART_COUNT,
                               &r->include, err))
            return false;
    }
    const struct api_variant_sizes sizes = { r->heads, n_q, n_k, r->d_k, false };
    if (!api_variants_read(doc, prefix, &sizes, &r->variants, err))
        return false;
    api_variants_set_top_left(&r->variants, r->grid.top_left);
    if ((r->include & (1ul << API_MH_BLOCK_MAP)) &&
        !api_check_block_map(&r->variants.masks, n_q, n_k, prefix, limits, err))
        return false;
    API_FIELD_POINTER(ptr, prefix, "include");
    if (!api_variants_check_include(&r->variants, api_member(doc, "include"), ptr, err))
        return false;
    if (r->variants.any && (r->vsteps = calloc(r->heads, sizeof *r->vsteps)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for the variants' steps");
        return false;
    }
    return true;
}

/*
 * `precision`, after the options and explain: the projections and every head in the low
 * format (every variant and explain's row too); `rows` keeps the rows of the whole
 * problem's answer, whose report it is.
 */
static bool read_precision(const json_t *doc, const char *prefix, struct api_multihead_req *r,
                           struct api_error *err)
{
    if (!api_precision_read(doc, prefix, &r->precision, err))
        return false;
    return !r->precision.on || (r->report = api_precision_report_new(err)) != NULL;
}

static bool read_explain(const json_t *doc, const char *prefix, size_t n_q, size_t n_k,
                         struct api_multihead_req *r, struct api_error *err)
{
    const struct api_explain_sizes n = { n_q, n_k, r->d_k, r->d_k, r->heads };
    return api_explain_read(doc, prefix, &n, &r->explain, err) &&
           api_heatmap_read(doc, prefix, &r->heatmap, err) && read_precision(doc, prefix, r, err);
}

static bool read_scalars(const json_t *doc, const char *prefix, struct random_in *rnd,
                         struct api_multihead_req *r, struct api_error *err)
{
    const json_t *layout = api_member(doc, "weight_layout");
    if (layout != NULL) {
        char ptr[128];
        size_t which;
        API_FIELD_POINTER(ptr, prefix, "weight_layout");
        if (!api_read_choice(layout, ptr, "weight_layout", layout_names, 2, &which, err))
            return false;
        r->transposed = which == 1;
    }
    if (!read_heads(doc, prefix, r, err) || !read_random(doc, prefix, rnd, err))
        return false;
    r->has_random = rnd->given;
    r->seed = rnd->seed;
    return true;
}

/* bertviz draws the weights alone: the parts its answer (and the trace) must hold. */
static bool answer_parts(enum api_format format, struct api_multihead_req *r)
{
    if (format == API_FORMAT_BERTVIZ)
        r->include = 1ul << API_MH_WEIGHTS;
    return true;
}

bool api_multihead_parse(const json_t *doc, const char *prefix, const struct api_limits *limits,
                         enum api_format format, struct api_multihead_req *r,
                         struct api_error *err)
{
    struct random_in rnd;
    size_t n_q = 0, n_k = 0;
    memset(r, 0, sizeof *r);
    if (!json_is_object(doc)) {
        api_error_set(err, API_INVALID_VALUE, "the body is %s; it must be a JSON object such as "
                      "{\"heads\": 2, \"random\": {\"seed\": 0, \"n\": 4, \"d_model\": 8}}",
                      api_json_kind(doc));
        api_error_at(err, "%s", prefix);
        return false;
    }
    bool ok = api_check_fields(doc, prefix, mh_fields, N_OF(mh_fields), err) &&
              read_scalars(doc, prefix, &rnd, r, err) &&
              read_inputs(doc, prefix, limits, &rnd, r, err) &&
              check_random_mode(prefix, &rnd, r, err) &&
              resolve_sizes(prefix, &rnd, r, &n_q, &n_k, err) &&
              check_divides(prefix, r, err) && check_limits(prefix, r, n_q, n_k, limits, err) &&
              plan_x_random(n_q, n_k, r) &&
              read_options(doc, prefix, limits, n_q, n_k, r, err) &&
              read_explain(doc, prefix, n_q, n_k, r, err) &&
              api_multihead_read_rows(doc, prefix, format, r, n_q, err) &&
              api_multihead_read_backward(doc, prefix, limits, r,
                                          api_member(doc, "include") != NULL, err) &&
              api_multihead_read_decode(doc, prefix, format, r, n_q, err) &&
              answer_parts(format, r) &&
              api_multihead_check_maps(r, prefix, n_q, n_k, format, limits, err) &&
              check_request_limit(prefix, r, n_q, n_k, format, limits, err) &&
              read_projections(doc, prefix, &rnd, limits, r, err) &&
              api_multihead_check_backward_include(doc, prefix, r, err);
    if (!ok)
        api_multihead_req_deinit(r);
    return ok;
}

void api_multihead_req_deinit(struct api_multihead_req *r)
{
    api_matrix_free(&r->x_q);
    api_matrix_free(&r->x_kv);
    for (int i = 0; i < 4; i++) {
        api_matrix_free(&r->w[i]);
        free(r->b[i]);
    }
    api_grid_deinit(&r->grid);
    free(r->rows);
    for (size_t h = 0; r->vsteps != NULL && h < r->heads; h++)
        attn_vtrace_free(&r->vsteps[h]);
    free(r->vsteps);
    free(r->report);
    api_variants_deinit(&r->variants);
    api_shown_release(&r->shown);
    api_multihead_backward_deinit(&r->backward);
    api_multihead_decode_free(r);
    memset(r, 0, sizeof *r);
}
