/*
 * api/endpoints/verify/json.c — the verdict as JSON: verdict, format, rule, a check per
 * tensor with its worst cells, the warnings, and gold when asked.
 *
 * A number that is not finite (a NaN the candidate holds, the +inf error it counts
 * as, a fully masked row's −inf lse) is written as the word a client reads back:
 * "NaN", "Infinity" or "-Infinity", the strings the candidate may send.
 */
#include "api/endpoints/verify/verify.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "api/i18n/lang.h"
#include "api/json/matrix_write.h"

static void number_or_word(struct jw *w, double x)
{
    if (isnan(x))
        jw_string(w, "NaN");
    else if (isinf(x))
        jw_string(w, x > 0 ? "Infinity" : "-Infinity");
    else
        jw_double(w, x);
}

/* "key": x, a word where x is not finite. */
static void member(struct jw *w, const char *key, double x)
{
    jw_key(w, key);
    number_or_word(w, x);
}

/* A row-major index of tensor t as its cell: [i, j], or [i] for a vector. */
static void write_cell(struct jw *w, const struct api_verify_verdict *r, enum api_verify_tensor t,
                       size_t index)
{
    size_t dims[2];
    int rank = api_verify_shape(&r->gold->req, t, dims);
    jw_array_begin(w);
    if (rank == 1) {
        jw_int(w, (long long)index);
    } else {
        jw_int(w, (long long)(index / dims[1]));
        jw_int(w, (long long)(index % dims[1]));
    }
    jw_array_end(w);
}

static void write_rule(struct jw *w, const struct attn_rule *rule)
{
    static const char *const names[] = { "flash", "flex", "allclose" };
    jw_object_begin(w);
    JW_KEY(w, "name");
    jw_string(w, names[rule->kind]);
    if (rule->kind == ATTN_RULE_FLEX) {
        JW_KEY(w, "fudge");
        jw_double(w, rule->fudge);
    } else if (rule->kind == ATTN_RULE_CLOSE) {
        JW_KEY(w, "rtol");
        jw_double(w, rule->rtol);
        JW_KEY(w, "atol");
        jw_double(w, rule->atol);
    }
    jw_object_end(w);
}

static void write_worst(struct jw *w, const struct api_verify_verdict *r, enum api_verify_tensor t)
{
    const struct attn_verify_check *c = &r->checks[t];
    JW_KEY(w, "worst");
    jw_array_begin(w);
    for (size_t i = 0; i < c->n_worst; i++) {
        const struct attn_verify_cell *x = &c->worst[i];
        jw_object_begin(w);
        JW_KEY(w, "cell");
        write_cell(w, r, t, x->index);
        member(w, "candidate", x->candidate);
        member(w, "gold", x->gold);
        member(w, "naive", x->naive);
        member(w, "error", x->error);
        jw_object_end(w);
    }
    jw_array_end(w);
}

static void write_check(struct jw *w, const struct api_verify_verdict *r, enum api_verify_tensor t)
{
    const struct attn_verify_check *c = &r->checks[t];
    size_t dims[2];
    int rank = api_verify_shape(&r->gold->req, t, dims);
    jw_object_begin(w);
    JW_KEY(w, "name");
    jw_string(w, api_verify_tensor_name(t));
    JW_KEY(w, "shape");
    jw_array_begin(w);
    for (int i = 0; i < rank; i++)
        jw_int(w, (long long)dims[i]);
    jw_array_end(w);
    JW_KEY(w, "pass");
    jw_bool(w, c->pass);
    member(w, "max_abs_error", c->max_abs_error);
    member(w, "mean_abs_error", c->mean_abs_error);
    member(w, "max_rel_error", c->max_rel_error);
    JW_KEY(w, "max_rel_cell");
    if (c->max_rel_index == SIZE_MAX)
        jw_null(w);
    else
        write_cell(w, r, t, c->max_rel_index);
    member(w, "bound", c->bound);
    member(w, "measured", c->measured);
    member(w, "atol", c->atol);
    member(w, "naive_max_abs_error", c->naive_max_abs_error);
    member(w, "naive_mean_abs_error", c->naive_mean_abs_error);
    JW_KEY(w, "nan_cells");
    jw_int(w, (long long)c->nan_cells);
    write_worst(w, r, t);
    jw_object_end(w);
}

static void write_inadequate(struct jw *w, const struct api_verify_verdict *r,
                             enum api_verify_tensor t)
{
    char message[256];
    const char *name = api_verify_tensor_name(t);
    if (r->constant[t] == 0.0)
        snprintf(message, sizeof message, API_TR("an all-zero %s would pass this rule"), name);
    else
        snprintf(message, sizeof message, API_TR("a %s of the constant %g in every cell would "
                                                 "pass this rule"), name, r->constant[t]);
    jw_object_begin(w);
    JW_KEY(w, "code");
    jw_string(w, "inadequate-tolerance");
    JW_KEY(w, "tensor");
    jw_string(w, name);
    JW_KEY(w, "constant");
    jw_double(w, r->constant[t]);
    JW_KEY(w, "message");
    jw_string(w, message);
    JW_KEY(w, "hint");
    jw_string(w, API_TR("the tolerance cannot tell a kernel from a constant: use rule \"flash\" "
                        "or \"flex\", which scale with a naive kernel's error"));
    jw_object_end(w);
}

static void write_not_in_format(struct jw *w, const struct api_verify_verdict *r,
                                const struct api_verify_not_in_format *x)
{
    char message[256];
    snprintf(message, sizeof message, API_TR("%s[%zu, %zu] = %.17g is not exactly a %s number: "
                                             "the kernel reads it rounded, gold does not"),
             x->input, x->row, x->col, x->value, attn_format_name(r->format));
    jw_object_begin(w);
    JW_KEY(w, "code");
    jw_string(w, "input-not-in-format");
    JW_KEY(w, "input");
    jw_string(w, x->input);
    JW_KEY(w, "cell");
    jw_array_begin(w);
    jw_int(w, (long long)x->row);
    jw_int(w, (long long)x->col);
    jw_array_end(w);
    JW_KEY(w, "value");
    jw_double(w, x->value);
    JW_KEY(w, "message");
    jw_string(w, message);
    JW_KEY(w, "hint");
    jw_string(w, API_TR("send the inputs as the kernel holds them (converted to the format and "
                        "back), so gold answers the same problem"));
    jw_object_end(w);
}

static void write_warnings(struct jw *w, const struct api_verify_verdict *r)
{
    JW_KEY(w, "warnings");
    jw_array_begin(w);
    for (int t = 0; t < API_VERIFY_TENSORS; t++)
        if (r->candidate[t].data != NULL && r->inadequate[t])
            write_inadequate(w, r, (enum api_verify_tensor)t);
    for (size_t i = 0; i < r->n_not_in_format; i++)
        write_not_in_format(w, r, &r->not_in_format[i]);
    jw_array_end(w);
}

static void write_gold(struct jw *w, const struct api_verify_verdict *r)
{
    JW_KEY(w, "gold");
    jw_object_begin(w);
    for (int t = 0; t < API_VERIFY_TENSORS; t++) {
        size_t n, dims[2];
        if (r->candidate[t].data == NULL)
            continue;
        const double *cells = api_verify_cells(r->gold, (enum api_verify_tensor)t, &n);
        int rank = api_verify_shape(&r->gold->req, (enum api_verify_tensor)t, dims);
        jw_key(w, api_verify_tensor_name((enum api_verify_tensor)t));
        if (rank == 1) {
            jw_double_array(w, cells, n); /* lse's −inf as null, as /v1/attention writes it */
        } else {
            struct attn_matrix m = attn_matrix_view((double *)cells, dims[0], dims[1]);
            api_write_matrix(w, &m);
        }
    }
    jw_object_end(w);
}

void api_verify_write(struct jw *w, const struct api_verify_verdict *r)
{
    jw_object_begin(w);
    JW_KEY(w, "verdict");
    jw_string(w, r->pass ? "pass" : "fail");
    JW_KEY(w, "format");
    jw_string(w, attn_format_name(r->format));
    JW_KEY(w, "rule");
    write_rule(w, &r->rule);
    JW_KEY(w, "checks");
    jw_array_begin(w);
    for (int t = 0; t < API_VERIFY_TENSORS; t++)
        if (r->candidate[t].data != NULL)
            write_check(w, r, (enum api_verify_tensor)t);
    jw_array_end(w);
    write_warnings(w, r);
    if (r->include_gold)
        write_gold(w, r);
    jw_object_end(w);
}
