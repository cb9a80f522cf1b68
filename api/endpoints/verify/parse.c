/*
 * api/endpoints/verify/parse.c — validating a POST /v1/verify request.
 *
 * Order of checks: the document's type, unknown fields (the problem's and the
 * verdict's names together), the fields verify computes for itself (precision, rows,
 * explain, pitfall), format, rule, include, the candidate's names, the problem (as
 * /v1/attention reads it, asked for what the candidate holds), the candidate's
 * tensors against the problem's shapes, and last the same problem in the format.
 */
#include "api/endpoints/verify/verify.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/i18n/lang.h"
#include "api/request/fields.h"
#include "api/request/matrix.h"

static const struct api_field verify_fields[] = {
    { "format", "the candidate's format: \"float16\", \"bfloat16\", \"float32\" or \"float64\"" },
    { "candidate", "the kernel's answer: {\"output\", \"lse\"?, \"grad_q\"?, \"grad_k\"?, \"grad_v\"?}" },
    { "rule", "\"flash\" (default), \"flex\", or {\"rtol\", \"atol\"}" },
    { "fudge", "the flex rule's factor on the naive reference's mean error, default 1.1" },
};

/* What verify's include may name (the problem's steps are not verify's answer). */
static const char *const include_names[] = { "gold" };

static const char *const tensor_names[API_VERIFY_TENSORS] = {
    "output", "lse", "grad_q", "grad_k", "grad_v",
};

const char *api_verify_tensor_name(enum api_verify_tensor t)
{
    return (unsigned)t < API_VERIFY_TENSORS ? tensor_names[t] : "";
}

/* Every field a verify request may hold: the problem's and the verdict's. */
static bool check_fields(const json_t *doc, struct api_error *err)
{
    struct api_field all[96];
    size_t n = 0;
    size_t own = sizeof verify_fields / sizeof verify_fields[0];
    for (size_t i = 0; i < api_attention_n_fields && n < sizeof all / sizeof all[0] - own; i++)
        all[n++] = api_attention_fields[i];
    for (size_t i = 0; i < own; i++)
        all[n++] = verify_fields[i];
    return api_check_fields(doc, "", all, n, err);
}

/* The problem's fields whose work verify does itself, or that change what it compares. */
static bool refuse_fields(const json_t *doc, struct api_error *err)
{
    static const struct {
        const char *name;
        const char *hint;
    } refused[] = {
        { "precision", API_N("verify computes the naive reference in the candidate's format "
                             "itself: send format instead") },
        { "rows", API_N("verify compares every row: send the whole problem and the whole "
                        "answer") },
        { "explain", API_N("ask /v1/attention to explain a row; verify answers a verdict") },
        { "pitfall", API_N("ask /v1/attention for a pitfall; verify answers a verdict") },
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        if (api_member(doc, refused[i].name) == NULL)
            continue;
        api_error_set(err, API_INVALID_VALUE, "%s does not apply to /v1/verify",
                      refused[i].name);
        api_error_at(err, "/%s", refused[i].name);
        api_error_hint(err, "%s", api_tr(refused[i].hint));
        return false;
    }
    return true;
}

static bool read_format(const json_t *doc, struct api_verify_req *r, struct api_error *err)
{
    static const enum attn_format formats[] = { ATTN_FLOAT16, ATTN_BFLOAT16, ATTN_FLOAT32,
                                                ATTN_FLOAT64 };
    const json_t *node = api_member(doc, "format");
    if (node == NULL) {
        api_error_set(err, API_MISSING_FIELD, "format is required: the format the kernel "
                      "computed in");
        api_error_at(err, "/format");
        api_error_hint(err, "send \"format\": \"float16\", \"bfloat16\", \"float32\" or "
                       "\"float64\"");
        return false;
    }
    const char *s = json_string_value(node);
    for (size_t i = 0; s != NULL && i < sizeof formats / sizeof formats[0]; i++)
        if (strcmp(s, attn_format_name(formats[i])) == 0) {
            r->verdict.format = formats[i];
            r->naive_on = formats[i] != ATTN_FLOAT64;
            return true;
        }
    api_error_set(err, API_INVALID_VALUE, "format is %s; it must be float16, bfloat16, float32 "
                  "or float64", s != NULL ? s : api_json_kind(node));
    api_error_at(err, "/format");
    api_error_hint(err, "torch.float16 is \"float16\", torch.bfloat16 \"bfloat16\"");
    return false;
}

/* A tolerance of {rtol, atol}: a finite number ≥ 0, or torch.allclose's default. */
static bool read_tolerance(const json_t *rule, const char *name, double fallback, double *out,
                           struct api_error *err)
{
    const json_t *node = api_member(rule, name);
    *out = node != NULL ? json_number_value(node) : fallback;
    if (node == NULL || (json_is_number(node) && isfinite(*out) && *out >= 0))
        return true;
    api_error_set(err, API_INVALID_VALUE, "rule.%s must be a number of at least 0", name);
    api_error_at(err, "/rule/%s", name);
    api_error_hint(err, "torch.allclose's defaults are rtol 1e-05 and atol 1e-08");
    return false;
}

static bool read_rule_object(const json_t *node, struct api_verify_req *r,
                             struct api_error *err)
{
    static const struct api_field tolerances[] = {
        { "rtol", "relative tolerance, default 1e-05" },
        { "atol", "absolute tolerance, default 1e-08" },
    };
    r->verdict.rule.kind = ATTN_RULE_CLOSE;
    return api_check_fields(node, "/rule", tolerances, 2, err) &&
           read_tolerance(node, "rtol", 1e-5, &r->verdict.rule.rtol, err) &&
           read_tolerance(node, "atol", 1e-8, &r->verdict.rule.atol, err);
}

static bool read_fudge(const json_t *doc, struct api_verify_req *r, struct api_error *err)
{
    const json_t *node = api_member(doc, "fudge");
    r->verdict.rule.fudge = 1.1;
    if (node == NULL)
        return true;
    if (r->verdict.rule.kind != ATTN_RULE_FLEX) {
        api_error_set(err, API_INVALID_VALUE, "fudge belongs to the flex rule");
        api_error_at(err, "/fudge");
        api_error_hint(err, "send \"rule\": \"flex\" with it, or leave fudge out");
        return false;
    }
    r->verdict.rule.fudge = json_number_value(node);
    if (json_is_number(node) && isfinite(r->verdict.rule.fudge) && r->verdict.rule.fudge > 0)
        return true;
    api_error_set(err, API_INVALID_VALUE, "fudge must be a number above 0");
    api_error_at(err, "/fudge");
    api_error_hint(err, "FlexAttention's tests use 1.1; a fudge of 2 allows twice the naive "
                   "reference's mean error");
    return false;
}

static bool read_rule(const json_t *doc, struct api_verify_req *r, struct api_error *err)
{
    const json_t *node = api_member(doc, "rule");
    const char *s = json_string_value(node);
    if (node == NULL || (s != NULL && strcmp(s, "flash") == 0))
        r->verdict.rule.kind = ATTN_RULE_FLASH;
    else if (s != NULL && strcmp(s, "flex") == 0)
        r->verdict.rule.kind = ATTN_RULE_FLEX;
    else if (json_is_object(node)) {
        if (!read_rule_object(node, r, err))
            return false;
    } else {
        api_error_set(err, API_INVALID_VALUE, "rule is %s; it must be \"flash\", \"flex\" or "
                      "{\"rtol\", \"atol\"}", s != NULL ? s : api_json_kind(node));
        api_error_at(err, "/rule");
        api_error_hint(err, "\"flash\" allows twice a naive kernel's largest error, \"flex\" "
                       "its mean error times fudge, {\"rtol\", \"atol\"} is torch.allclose");
        return false;
    }
    return read_fudge(doc, r, err);
}

static bool read_include(const json_t *doc, struct api_verify_req *r, struct api_error *err)
{
    const json_t *node = api_member(doc, "include");
    if (node == NULL)
        return true;
    size_t i;
    const json_t *item;
    if (!json_is_array(node)) {
        api_error_set(err, API_INVALID_VALUE, "include is %s; it must be a list such as "
                      "[\"gold\"]", api_json_kind(node));
        api_error_at(err, "/include");
        return false;
    }
    json_array_foreach(node, i, item) {
        const char *s = json_string_value(item);
        if (s != NULL && strcmp(s, include_names[0]) == 0) {
            r->verdict.include_gold = true;
            continue;
        }
        api_error_set(err, API_INVALID_VALUE, "include names %s; verify can include only "
                      "gold", s != NULL ? s : api_json_kind(item));
        api_error_at(err, "/include/%zu", i);
        api_error_hint(err, "gold is the float64 answer of every tensor the candidate holds");
        return false;
    }
    return true;
}

/* The candidate's names: an object holding output and any of the others. */
static bool check_candidate(const json_t *doc, struct api_error *err)
{
    static const struct api_field names[] = {
        { "output", "the kernel's output, (n_q, d_v)" },
        { "lse", "each query row's log-sum-exp, (n_q)" },
        { "grad_q", "dQ, (n_q, d_k)" },
        { "grad_k", "dK, (n_k, d_k)" },
        { "grad_v", "dV, (n_k, d_v)" },
    };
    const json_t *c = api_member(doc, "candidate");
    if (c == NULL || !json_is_object(c)) {
        api_error_set(err, c == NULL ? API_MISSING_FIELD : API_INVALID_VALUE,
                      "candidate is required: an object holding the kernel's output");
        api_error_at(err, "/candidate");
        api_error_hint(err, "send \"candidate\": {\"output\": [[...]]}, with lse and grad_q, "
                       "grad_k, grad_v when the kernel gives them");
        return false;
    }
    if (!api_check_fields(c, "/candidate", names, API_VERIFY_TENSORS, err))
        return false;
    if (api_member(c, "output") == NULL) {
        api_error_set(err, API_MISSING_FIELD, "candidate.output is required");
        api_error_at(err, "/candidate/output");
        api_error_hint(err, "the output is what every rule judges first: send it with "
                       "anything else the kernel gives");
        return false;
    }
    for (int t = API_VERIFY_GRAD_Q; t < API_VERIFY_TENSORS; t++) {
        if (api_member(c, tensor_names[t]) == NULL || api_member(doc, "backward") != NULL)
            continue;
        api_error_set(err, API_INVALID_VALUE, "candidate.%s is a gradient, but the problem "
                      "has no backward", tensor_names[t]);
        api_error_at(err, "/candidate/%s", tensor_names[t]);
        api_error_hint(err, "send backward: {\"grad_output\": dO}, the dO the kernel's "
                       "backward took");
        return false;
    }
    return true;
}

/* ---- the problem, twice ---- */

/* doc without the verdict's fields, asking for what the candidate holds; in the format
 * when `format` is not NULL. A new reference, or NULL when memory ran out. */
static json_t *problem_doc(const json_t *doc, const char *format)
{
    json_t *p = json_copy((json_t *)doc); /* shallow: the matrices are shared */
    json_t *include = json_array();
    const json_t *c = api_member(doc, "candidate");
    if (p == NULL || include == NULL) {
        json_decref(p);
        json_decref(include);
        return NULL;
    }
    for (size_t i = 0; i < sizeof verify_fields / sizeof verify_fields[0]; i++)
        json_object_del(p, verify_fields[i].name);
    for (int t = 0; t < API_VERIFY_TENSORS; t++)
        if (api_member(c, tensor_names[t]) != NULL)
            json_array_append_new(include, json_string(tensor_names[t]));
    json_object_set_new(p, "include", include);
    if (format != NULL)
        json_object_set_new(p, "precision",
                            json_pack("{s:s, s:s}", "format", format, "accumulate", "float32"));
    return p;
}

static bool parse_problem(const json_t *doc, const char *format, const struct api_limits *limits,
                          struct api_attention_req *out, struct api_error *err)
{
    json_t *p = problem_doc(doc, format);
    if (p == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "the problem");
        return false;
    }
    bool ok = api_attention_parse(p, "", limits, out, err);
    json_decref(p);
    return ok;
}

int api_verify_shape(const struct api_attention_req *g, enum api_verify_tensor t,
                     size_t dims[2])
{
    size_t n_q = g->q.rows, n_k = g->k.rows, d_k = g->q.cols, d_v = g->v.cols;
    const size_t shapes[API_VERIFY_TENSORS][2] = {
        { n_q, d_v }, { n_q, 1 }, { n_q, d_k }, { n_k, d_k }, { n_k, d_v },
    };
    dims[0] = shapes[t][0];
    dims[1] = shapes[t][1];
    if (t == API_VERIFY_LSE || (g->q_is_vector && (t == API_VERIFY_OUTPUT || t == API_VERIFY_GRAD_Q))) {
        dims[0] = t == API_VERIFY_LSE ? n_q : dims[1];
        return 1;
    }
    return 2;
}

/* One tensor of the candidate, in the shape the problem gives it. */
static bool read_tensor(const json_t *node, enum api_verify_tensor t, struct api_verify_req *r,
                        const struct api_limits *limits, struct api_error *err)
{
    char ptr[64], shown[64];
    size_t dims[2];
    int rank = api_verify_shape(&r->gold.req, t, dims);
    snprintf(ptr, sizeof ptr, "/candidate/%s", tensor_names[t]);
    snprintf(shown, sizeof shown, rank == 1 ? "(%zu)" : "(%zu, %zu)", dims[0], dims[1]);
    /* lse's −inf is null, as the answers write it; elsewhere null is not a number */
    const struct api_matrix_spec spec = { .name = tensor_names[t], .shape = shown,
                                          .allow_vector = rank == 1,
                                          .cells = t == API_VERIFY_LSE ? API_CELLS_LSE_WORDS
                                                                       : API_CELLS_NAN_WORDS };
    struct attn_matrix *m = &r->verdict.candidate[t];
    bool vector;
    if (!api_read_matrix(node, ptr, &spec, limits->max_cells, m, &vector, err))
        return false;
    size_t rows = rank == 1 ? 1 : dims[0], cols = rank == 1 ? dims[0] : dims[1];
    if (m->rows == rows && m->cols == cols && vector == (rank == 1))
        return true;
    api_error_set(err, API_SHAPE_MISMATCH, "candidate.%s is (%zu, %zu) but the problem's %s is "
                  "%s", tensor_names[t], m->rows, m->cols, tensor_names[t], shown);
    if (vector)
        api_error_set(err, API_SHAPE_MISMATCH, "candidate.%s is (%zu) but the problem's %s is %s",
                      tensor_names[t], m->cols, tensor_names[t], shown);
    api_error_at(err, "%s", ptr);
    api_error_hint(err, "send the kernel's %s for this problem, shaped %s (check that the "
                   "batch and head dimensions are left out)", tensor_names[t], shown);
    return false;
}

static bool read_candidate(const json_t *doc, const struct api_limits *limits,
                           struct api_verify_req *r, struct api_error *err)
{
    const json_t *c = api_member(doc, "candidate");
    for (int t = 0; t < API_VERIFY_TENSORS; t++) {
        const json_t *node = api_member(c, tensor_names[t]);
        if (node != NULL && !read_tensor(node, (enum api_verify_tensor)t, r, limits, err))
            return false;
    }
    return true;
}

/* The naive pass's parse: what the format's rules cannot compute is said of format. */
static bool parse_naive(const json_t *doc, const struct api_limits *limits,
                        struct api_verify_req *r, struct api_error *err)
{
    if (!r->naive_on)
        return true;
    if (parse_problem(doc, attn_format_name(r->verdict.format), limits, &r->naive.req, err)) {
        /* No report: its float64 pass beside the low one is the gold pass, made already;
         * run and admission take a precision request without one (as V2's verify does). */
        free(r->naive.req.report);
        r->naive.req.report = NULL;
        return true;
    }
    if (strncmp(err->pointer, "/precision", 10) == 0) {
        char detail[sizeof err->detail];
        snprintf(detail, sizeof detail, "%s", err->detail);
        api_error_set(err, API_INVALID_VALUE, "the naive reference in %s cannot be computed: "
                      "%s", attn_format_name(r->verdict.format), detail);
        api_error_at(err, "/format");
    } else if (err->type == API_LIMIT_EXCEEDED) { /* gold streams; a low format's pass cannot */
        api_error_hint(err, "the naive reference in %s keeps every (n_q, n_k) step, each within "
                       "--max-cells: verify a shorter problem in this format, or a float64 "
                       "candidate, whose reference is streamed at any length",
                       attn_format_name(r->verdict.format));
    }
    return false;
}

bool api_verify_parse(const json_t *doc, const struct api_limits *limits,
                      struct api_verify_req *r, struct api_error *err)
{
    memset(r, 0, sizeof *r);
    if (!json_is_object(doc)) {
        api_error_set(err, API_INVALID_VALUE, "the body is %s; it must be a JSON object: an "
                      "attention problem with format and candidate", api_json_kind(doc));
        api_error_at(err, "%s", "");
        return false;
    }
    bool ok = check_fields(doc, err) && refuse_fields(doc, err) && read_format(doc, r, err) &&
              read_rule(doc, r, err) && read_include(doc, r, err) &&
              check_candidate(doc, err) && parse_problem(doc, NULL, limits, &r->gold.req, err) &&
              read_candidate(doc, limits, r, err) && parse_naive(doc, limits, r, err);
    if (!ok)
        api_verify_req_deinit(r);
    return ok;
}

void api_verify_req_deinit(struct api_verify_req *r)
{
    struct api_verify_pass *passes[] = { &r->gold, &r->naive };
    for (size_t i = 0; i < 2; i++) {
        attn_trace_free(&passes[i]->trace);
        attn_stream_free(&passes[i]->stream);
        api_attention_req_deinit(&passes[i]->req);
    }
    for (int t = 0; t < API_VERIFY_TENSORS; t++)
        api_matrix_free(&r->verdict.candidate[t]);
    memset(r, 0, sizeof *r);
}
