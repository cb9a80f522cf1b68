/*
 * api/endpoints/attention/parse.c — validating a POST /v1/attention request.
 *
 * Order of checks, so the first problem reported is the most useful one:
 * the document's type, unknown fields (a typo would otherwise surface as a
 * missing field), required fields, each matrix, the shapes between them, then
 * the optional fields. The seeds' pitfalls (k transposed, v rows != k rows, a
 * transposed mask) get hints.
 */
#include "api/endpoints/attention/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/http/admission.h"
#include "api/i18n/lang.h"
#include "api/request/fields.h"
#include "api/request/matrix.h"

const struct api_field api_attention_fields[] = {
    { "q", "the queries, (n_q, d_k) or one query (d_k)" },
    { "k", "the keys, (n_k, d_k)" },
    { "v", "the values, (n_k, d_v)" },
    { "mask", "which keys each query may attend to: (n_q, n_k), (n_k), \"causal\" or \"causal_top_left\"" },
    { "mask_semantics", "\"keep\" (1 = may attend) or \"block\" (1 = blocked)" },
    { "bias", "added to the scaled scores, (n_q, n_k)" },
    { "scale", "the factor on Q @ K^T, default 1/sqrt(d_k)" },
    { "include", "which steps to return" },
    { "labels", "names for the queries and keys" },
    { "round", "decimals to round every number to" },
    { "explain", "one query row worked out by hand: {\"row\": i}" },
    { "pitfall", "a learner's mistake to compute beside the answer" },
    { "name", "a name for the problem, e.g. a batch's experiment" },
    { "heatmap", "the SVG's {\"vmin\", \"vmax\", \"title\"}" },
    { "random", "{\"seed\", \"n_q\", \"n_k\", \"d_k\", \"d_v\"}: makes q, k and v" },
    { "rows", "the query rows to answer, [i, ...]: the whole problem's masks, those rows' results" },
    { "precision", "{\"format\": \"float16\" | \"bfloat16\" | \"float32\", \"accumulate\": \"float32\" | \"same\"}: computed as a kernel in that format" },
    { "backward", "the gradients step by step: {\"grad_output\": dO} or {\"seed\": s}" },
    API_VARIANT_FIELDS,
};
const size_t api_attention_n_fields = sizeof api_attention_fields / sizeof api_attention_fields[0];

static const char *const part_names[API_PART_COUNT] = {
    "scores", "scaled", "masked", "weights", "output", "summary", "row_max", "shifted", "exp",
    "row_sum", "lse", "visible", "block_map",
    "q_rope", "k_rope", "softcapped", "dropout_keep", "dropped",
    "grad_output", "grad_v", "grad_weights", "delta", "grad_masked", "grad_scaled",
    "grad_scores", "grad_q_rope", "grad_k_rope", "grad_q", "grad_k", "grad_sink_logit",
    "grad_bias",
};

static bool read_required(const json_t *doc, const char *prefix, const char *name,
                          const struct api_matrix_spec *spec, const struct api_limits *limits,
                          struct attn_matrix *out, bool *is_vector, struct api_error *err)
{
    char ptr[128];
    API_FIELD_POINTER(ptr, prefix, name);
    const json_t *node = api_member(doc, name);
    if (node == NULL) {
        api_error_set(err, API_MISSING_FIELD, "%s is required: %s %s", name,
                      strcmp(name, "q") == 0 ? API_TR("the queries,") :
                      strcmp(name, "k") == 0 ? API_TR("the keys,") : API_TR("the values,"),
                      spec->shape);
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "attention needs q, k and v: softmax(q @ k^T * scale) @ v");
        return false;
    }
    return api_read_matrix(node, ptr, spec, limits->max_cells, out, is_vector, err);
}

/* q, k and v: sent, or sized by `random` (attention/random.c) and filled once admitted. */
static bool read_qkv(const json_t *doc, const char *prefix, const struct api_limits *limits,
                     struct api_attention_req *r, struct api_error *err)
{
    static const struct api_matrix_spec q_spec = { "q", "(n_q, d_k)", true, false };
    static const struct api_matrix_spec k_spec = { "k", "(n_k, d_k)", false, false };
    static const struct api_matrix_spec v_spec = { "v", "(n_k, d_v)", false, false };
    bool random, k_vec, v_vec;
    if (!api_attention_read_random(doc, prefix, limits, r, &random, err))
        return false;
    return random ||
           (read_required(doc, prefix, "q", &q_spec, limits, &r->q, &r->q_is_vector, err) &&
            read_required(doc, prefix, "k", &k_spec, limits, &r->k, &k_vec, err) &&
            read_required(doc, prefix, "v", &v_spec, limits, &r->v, &v_vec, err));
}

/* k must have d_k columns: the pitfall is passing K^T, (d_k, n_k). */
static bool check_k(const struct api_attention_req *r, const char *prefix, struct api_error *err)
{
    if (r->k.cols == r->q.cols)
        return true;
    api_error_set(err, API_SHAPE_MISMATCH, "q has %zu columns but k has %zu: Q @ K^T needs both "
                  "to have d_k columns", r->q.cols, r->k.cols);
    api_error_at(err, "%s/k", prefix);
    if (r->k.rows == r->q.cols)
        api_error_hint(err, "k looks transposed: pass k as (n_k, d_k), one row per key; attnd "
                       "computes the transpose itself");
    else
        api_error_hint(err, "each key needs as many numbers as each query (d_k = %zu)", r->q.cols);
    return false;
}

/* v needs one row per key; a transposed v has n_k columns instead. */
static bool check_v(const struct api_attention_req *r, const char *prefix, struct api_error *err)
{
    if (r->v.rows == r->k.rows)
        return true;
    api_error_set(err, API_SHAPE_MISMATCH, "k has %zu rows (keys) but v has %zu: weights @ V "
                  "needs one row of v per key", r->k.rows, r->v.rows);
    api_error_at(err, "%s/v", prefix);
    if (r->v.cols == r->k.rows)
        api_error_hint(err, "v looks transposed: pass v as (n_k, d_v), one row per key");
    else
        api_error_hint(err, "v needs one row per key: give it %zu rows, in the order of k's rows",
                       r->k.rows);
    return false;
}

static bool read_options(const json_t *doc, const char *prefix, struct api_attention_req *r,
                         struct api_error *err)
{
    char ptr[128];
    const json_t *node;
    r->scale = 1.0 / sqrt((double)r->q.cols);
    if ((node = api_member(doc, "scale")) != NULL) {
        API_FIELD_POINTER(ptr, prefix, "scale");
        if (!api_read_positive(node, ptr, "scale", &r->scale, err))
            return false;
    }
    r->include = API_PART_DEFAULT;
    if ((node = api_member(doc, "include")) != NULL) {
        API_FIELD_POINTER(ptr, prefix, "include");
        if (!api_read_name_set(node, ptr, "include", part_names, API_PART_COUNT, &r->include, err))
            return false;
    }
    const struct api_variant_sizes sizes = { 1, r->q.rows, r->k.rows, r->q.cols, r->q_is_vector };
    if (!api_variants_read(doc, prefix, &sizes, &r->variants, err))
        return false;
    api_variants_set_top_left(&r->variants, r->grid.top_left);
    API_FIELD_POINTER(ptr, prefix, "include");
    if (!api_variants_check_include(&r->variants, api_member(doc, "include"), ptr, err))
        return false;
    if (r->variants.any && (r->vsteps = calloc(1, sizeof *r->vsteps)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for the variants' steps");
        return false;
    }
    return true;
}

static bool read_grid(const json_t *doc, const char *prefix, const struct api_limits *limits,
                      struct api_attention_req *r, struct api_error *err)
{
    r->grid.n_q = r->q.rows;
    r->grid.n_k = r->k.rows;
    r->grid.q_is_vector = r->q_is_vector;
    return api_grid_read(doc, prefix, limits, &r->grid, err);
}

static bool read_explain(const json_t *doc, const char *prefix, struct api_attention_req *r,
                         struct api_error *err)
{
    const struct api_explain_sizes n = { r->q.rows, r->k.rows, r->q.cols, r->v.cols, 0 };
    const json_t *name = api_member(doc, "name");
    if (name != NULL && !json_is_string(name)) {
        api_error_set(err, API_INVALID_VALUE, "name is %s; it must be a string",
                      api_json_kind(name));
        api_error_at(err, "%s/name", prefix);
        api_error_hint(err, "name the problem, e.g. \"name\": \"Q1 bigger\"");
        return false;
    }
    r->name = json_string_value(name); /* borrowed: the document outlives the request */
    return api_explain_read(doc, prefix, &n, &r->explain, err) &&
           api_pitfall_read(doc, prefix, &r->pitfall, err) &&
           api_heatmap_read(doc, prefix, &r->heatmap, err);
}

/*
 * `precision`, last of the options: every step, variant, pitfall and explain's row runs
 * in the format. `rows` keeps the rows of the whole problem's answer; the report is the
 * whole problem's.
 */
static bool read_precision(const json_t *doc, const char *prefix, struct api_attention_req *r,
                           struct api_error *err)
{
    if (!api_precision_read(doc, prefix, &r->precision, err))
        return false;
    return !r->precision.on || (r->report = api_precision_report_new(err)) != NULL;
}

/* The (n_q, n_k) steps' cells, or SIZE_MAX when they overflow. */
static size_t score_cells(const struct api_attention_req *r)
{
    int overflow = 0;
    size_t cells = attn_cells(r->q.rows, r->k.rows, &overflow);
    return overflow ? SIZE_MAX : cells;
}

bool api_attention_cells_fit(const struct api_attention_req *r, const struct api_limits *limits)
{
    return score_cells(r) <= limits->max_cells;
}

bool api_attention_refuse_cells(const struct api_attention_req *r, const char *prefix,
                                const struct api_limits *limits, bool in_batch,
                                struct api_error *err)
{
    const char *field = r->q.rows >= r->k.rows ? "/q" : "/k";
    size_t cells = score_cells(r);
    api_error_set(err, API_LIMIT_EXCEEDED, "%s would make a %s of %zu cells (%zu x %zu); this "
                  "server computes at most %zu cells in one matrix", field + 1,
                  API_TR("score matrix"), cells, r->q.rows, r->k.rows, limits->max_cells);
    api_error_at(err, "%s%s", prefix, api_attention_random_field(r, field));
    if (in_batch) /* a batch builds every item's steps */
        api_error_hint(err, "send fewer queries or keys, or send this problem alone to "
                       "/v1/attention asking for the output and the row statistics only "
                       "(output, row_max, row_sum, lse), which need no such matrix");
    else
        api_error_hint(err, "send fewer queries or keys, or ask as JSON for the output and the "
                       "row statistics only (output, row_max, row_sum, lse), which need no such "
                       "matrix");
    return false;
}

/*
 * The output is built whatever is asked; the (n_q, n_k) steps only when the answer needs
 * them (api_attention_streams): a request over --max-cells that needs none is streamed,
 * and --max-work bounds its arithmetic.
 */
static bool check_limits(const struct api_attention_req *r, const char *prefix,
                         const struct api_limits *limits, struct api_error *err)
{
    int overflow = 0;
    size_t output = attn_cells(r->q.rows, r->v.cols, &overflow);
    if (overflow || output > limits->max_cells) {
        api_error_set(err, API_LIMIT_EXCEEDED, "%s would make a %s of %zu cells (%zu x %zu); "
                      "this server computes at most %zu cells in one matrix", "q",
                      API_TR("output"), output, r->q.rows, r->v.cols, limits->max_cells);
        api_error_at(err, "%s/q", prefix);
        api_error_hint(err, "send fewer queries or keys, or split the work with a batch");
        return false;
    }
    char ptr[128];
    API_FIELD_POINTER(ptr, prefix, r->q.rows >= r->k.rows ? "q" : "k");
    return api_within_work_limit(limits, api_work_of(r->q.rows, r->k.rows, r->q.cols, r->v.cols),
                                 ptr, err);
}

/* Last: whether the (n_q, n_k) steps fit --max-cells, or the answer can do without them;
 * and the block map's tiles, a matrix of their own. */
static bool check_cells(struct api_attention_req *r, const char *prefix,
                        const struct api_limits *limits, struct api_error *err)
{
    if ((r->include & (1ul << API_PART_BLOCK_MAP)) &&
        !api_check_block_map(&r->variants.masks, r->q.rows, r->k.rows, prefix, limits, err))
        return false;
    bool over = score_cells(r) > limits->max_cells, streams = api_attention_streams(r);
    if (over && !streams)
        return api_attention_refuse_cells(r, prefix, limits, false, err);
    /* Documents and chunks hide most keys: the streamed pass skips the key blocks they
     * hide and keeps no step, where the full pass of the rules keeps every step. */
    r->streamed = over || (streams && api_masks_hide(&r->variants.masks));
    return api_attention_check_rows(r, prefix, limits, err);
}

bool api_attention_parse(const json_t *doc, const char *prefix, const struct api_limits *limits,
                         struct api_attention_req *r, struct api_error *err)
{
    memset(r, 0, sizeof *r);
    if (!json_is_object(doc)) {
        api_error_set(err, API_INVALID_VALUE, "the body is %s; it must be a JSON object such as "
                      "{\"q\": [[1, 0]], \"k\": [[1, 0]], \"v\": [[1]]}", api_json_kind(doc));
        api_error_at(err, "%s", prefix);
        return false;
    }
    if (!api_check_fields(doc, prefix, api_attention_fields, api_attention_n_fields, err))
        return false;
    bool ok = read_qkv(doc, prefix, limits, r, err) && check_k(r, prefix, err) && check_v(r, prefix, err) &&
              check_limits(r, prefix, limits, err) && read_grid(doc, prefix, limits, r, err) &&
              read_options(doc, prefix, r, err) && read_explain(doc, prefix, r, err) &&
              api_attention_read_rows(doc, prefix, r, err) &&
              read_precision(doc, prefix, r, err) &&
              api_attention_read_backward(doc, prefix, limits, r, err) &&
              check_cells(r, prefix, limits, err);
    if (!ok)
        api_attention_req_deinit(r);
    return ok;
}

void api_attention_req_deinit(struct api_attention_req *r)
{
    api_matrix_free(&r->q);
    api_matrix_free(&r->k);
    api_matrix_free(&r->v);
    api_grid_deinit(&r->grid);
    api_variants_deinit(&r->variants);
    free(r->rows);
    attn_vtrace_free(r->vsteps);
    free(r->vsteps);
    free(r->report);
    api_shown_release(&r->shown);
    api_attention_backward_deinit(&r->backward);
    memset(r, 0, sizeof *r);
}
