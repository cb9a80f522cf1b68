/*
 * api/endpoints/teach/explain.c — one query row worked out by hand (see explain.h).
 */
#include "api/endpoints/teach/explain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http/problem.h"
#include "api/i18n/fill.h"
#include "api/i18n/lang.h"
#include "api/json/numfmt.h"
#include "api/request/fields.h"

/* Every sentence and word of the text rendering, in English: the keys of the message
   tables (i18n/lang.h), said through api_tr. */
enum explain_words {
    EX_TITLE,      /* query label, row */
    EX_TITLE_HEAD, /* query label, row, head */
    EX_COMPARE,
    EX_SCALE,
    EX_MASK,
    EX_SOFTMAX,
    EX_MIX,
    EX_UNMASKED,   /* the mask step when it changed nothing */
    EX_BLOCKED,    /* key label: a blocked key */
    EX_SUM,        /* the sum of the exponentials */
    EX_OVERFLOW,   /* the largest masked score: e^x overflowed */
    EX_SHIFTED,    /* the row's max: the stable way */
    EX_EMPTY,      /* a fully masked row */
    EX_ROPE,       /* the variants' steps, unnumbered between the note's five */
    EX_ROPE_LINE,  /* label, rotated width */
    EX_SOFTCAP,
    EX_SINK,
    EX_SINK_SHARE, /* the sink's e^z over the sum: the weight no value carries */
    EX_DROPOUT,
    EX_DROPPED_OUT, /* key label: a dropped weight */
    EX_UNMASKED_CAPPED, /* the mask step when it changed nothing after softcap */
    EX_BACKWARD,   /* the backward pass's row: D */
    EX_GRAD_KEY,   /* key label: dS worked */
    EX_WORDS
};

static const char *const explain_words[EX_WORDS] = {
    [EX_TITLE] = API_N("explain  query {1} (row {2}), worked by hand as the first note works it"),
    [EX_TITLE_HEAD] = API_N("explain  head {3}, query {1} (row {2}), worked by hand as the first "
                      "note works it"),
    [EX_COMPARE] = API_N("1 compare"),
    [EX_SCALE] = API_N("2 scale"),
    [EX_MASK] = API_N("3 mask"),
    [EX_SOFTMAX] = API_N("4 softmax"),
    [EX_MIX] = API_N("5 mix V"),
    [EX_UNMASKED] = API_N("nothing blocked or biased: masked = scaled"),
    [EX_BLOCKED] = API_N("{1} is blocked: -inf, and e^-inf = 0"),
    [EX_SUM] = API_N("sum"),
    [EX_OVERFLOW] = API_N("e^{1} overflows to inf, and inf ÷ inf is nan (the notes' pitfall); "
                    "subtract the row's max first: the ratios do not change"),
    [EX_SHIFTED] = API_N("max {1}; e^(masked − max):"),
    [EX_EMPTY] = API_N("every key is blocked: the weights and the output are 0"),
    [EX_BACKWARD] = API_N("backward: D = Σ dO·output"),
    [EX_GRAD_KEY] = API_N("dS[{1}] = weight × (dP − D)"),
    [EX_ROPE] = "rope",
    [EX_ROPE_LINE] = API_N("{1} turned by its position (the first {2} columns)"),
    [EX_SOFTCAP] = "softcap",
    [EX_SINK] = "sink",
    [EX_SINK_SHARE] = API_N("the sink takes {1} of the row and carries no value"),
    [EX_DROPOUT] = "dropout",
    [EX_DROPPED_OUT] = API_N("{1} dropped: 0"),
    [EX_UNMASKED_CAPPED] = API_N("nothing blocked or biased: masked = softcapped"),
};

static const struct api_field fields[] = {
    { "row", "the query row to work out, from 0" },
    { "head", "the head to work out (multi-head), from 0" },
};

bool api_explain_read(const json_t *doc, const char *prefix, const struct api_explain_sizes *n,
                      struct api_explain_req *out, struct api_error *err)
{
    char ptr[128], sub[160];
    memset(out, 0, sizeof *out);
    const json_t *node = api_member(doc, "explain");
    if (node == NULL)
        return true;
    API_FIELD_POINTER(ptr, prefix, "explain");
    if (!json_is_object(node)) {
        api_error_set(err, API_INVALID_VALUE, "explain is %s; it must be an object such as "
                      "{\"row\": 1}", api_json_kind(node));
        api_error_at(err, "%s", ptr);
        if (n->heads > 0)
            api_error_hint(err, "name the query row and the head: {\"row\": 0, \"head\": 0}");
        else
            api_error_hint(err, "name the query row to work out: {\"row\": 0}");
        return false;
    }
    if (n->heads == 0 && api_member(node, "head") != NULL) {
        API_FIELD_POINTER(sub, ptr, "head");
        api_error_set(err, API_UNKNOWN_FIELD, "explain has no \"head\" here: one attention "
                      "problem has one head");
        api_error_at(err, "%s", sub);
        api_error_hint(err, "name the query row alone, {\"row\": 0}; heads are /v1/multihead's");
        return false;
    }
    if (!api_check_fields(node, ptr, fields, n->heads > 0 ? 2 : 1, err))
        return false;
    const char *names[] = { "row", "head" };
    const size_t limits[] = { n->n_q, n->heads };
    size_t *slots[] = { &out->row, &out->head };
    for (size_t f = 0; f < (n->heads > 0 ? 2u : 1u); f++) {
        API_FIELD_POINTER(sub, ptr, names[f]);
        const json_t *v = api_member(node, names[f]);
        long long value = 0;
        if (v == NULL) {
            api_error_set(err, API_MISSING_FIELD, "explain.%s is required", names[f]);
            api_error_at(err, "%s", sub);
            api_error_hint(err, "%s 0 to %zu", f == 0 ? API_TR("a query row,") : API_TR("a head,"),
                           limits[f] - 1);
            return false;
        }
        if (!api_read_int_range(v, sub, names[f], 0, (long long)limits[f] - 1, &value, err)) {
            if (f == 0)
                api_error_hint(err, "q has %zu %s: explain one of rows 0 to %zu", n->n_q,
                               n->n_q == 1 ? API_TR("row") : API_TR("rows"), n->n_q - 1);
            else
                api_error_hint(err, "there are %zu heads: explain one of heads 0 to %zu",
                               n->heads, n->heads - 1);
            return false;
        }
        *slots[f] = (size_t)value;
    }
    int overflow = 0;
    size_t terms = attn_cells(n->n_k, n->d_k + n->d_v, &overflow);
    if (overflow || terms > API_EXPLAIN_MAX_TERMS) {
        api_error_set(err, API_LIMIT_EXCEEDED, "explaining one row takes n_k·(d_k + d_v) = "
                      "%zu·(%zu + %zu) terms, more than the %d this server writes out",
                      n->n_k, n->d_k, n->d_v, API_EXPLAIN_MAX_TERMS);
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "explain a smaller problem: fewer keys or narrower vectors");
        return false;
    }
    out->on = true;
    return true;
}

size_t api_explain_numbers(const struct api_explain_req *e, const struct api_explain_sizes *n)
{
    if (!e->on)
        return 0;
    /* The terms' pairs, each value row twice (terms and output), 9 numbers a key; with
     * every variant at most 4 more a key (softcapped, dropout_keep, dropped twice),
     * query_before_rope, the sink's logit and weight. */
    return 2 * n->n_k * n->d_k + 2 * n->n_k * n->d_v + 13 * n->n_k + 2 * n->d_k + 2 * n->d_v +
           10;
}

/* ---------------------------------------------------------------- the numbers */

static double cell(const struct attn_matrix *m, size_t i, size_t j)
{
    return attn_at(m, i, j);
}

static bool blocked(double masked)
{
    return isinf(masked) && masked < 0;
}

/* The largest allowed masked score of the row, the sink logit among them; -inf when
 * every key is blocked and there is no sink. */
static double row_max(const struct api_explain_row *x)
{
    const struct attn_trace *t = x->trace;
    double m = x->variants.sink ? x->variants.sink_logit : -INFINITY;
    for (size_t j = 0; j < t->n_k; j++)
        if (!blocked(cell(&t->masked, x->at, j)) && cell(&t->masked, x->at, j) > m)
            m = cell(&t->masked, x->at, j);
    return m;
}

/* v rounded to the accumulator of a low format's row (core/precision.h), else v. */
static double acc_round(const struct api_explain_row *x, double v)
{
    return x->precision != NULL ? attn_format_round(v, x->precision->accumulate) : v;
}

/* e^masked as the note computes it (inf where it overflows), and the stable e^(masked − max);
 * in a low format each result, and the shift, rounded to the accumulator as held. */
static double exp_unshifted(const struct api_explain_row *x, double masked)
{
    return blocked(masked) ? 0 : acc_round(x, exp(masked));
}

static double shift(const struct api_explain_row *x, double masked, double max)
{
    return acc_round(x, masked - max);
}

static double exp_shifted(const struct api_explain_row *x, double masked, double max)
{
    return blocked(masked) ? 0 : acc_round(x, exp(shift(x, masked, max)));
}

/* The variants' steps that ran for this row: NULL when theirs did not. */
static const struct attn_matrix *softcapped_of(const struct api_explain_row *x)
{
    return x->vsteps != NULL && x->variants.softcap > 0 ? &x->vsteps->softcapped : NULL;
}

static const struct attn_matrix *dropped_of(const struct api_explain_row *x)
{
    return x->vsteps != NULL && x->variants.dropout ? &x->vsteps->dropped : NULL;
}

/* The sink's share of the row, from the trace (0 without a sink). */
static double sink_weight_of(const struct api_explain_row *x)
{
    return x->vsteps != NULL && x->variants.sink ? x->vsteps->sink_weight[x->at] : 0;
}

/* The weight that mixes value row j: dropped with dropout, else the softmax weight. */
static double mixing_weight(const struct api_explain_row *x, size_t j)
{
    const struct attn_matrix *d = dropped_of(x);
    return d != NULL ? cell(d, x->at, j) : cell(&x->trace->weights, x->at, j);
}

/* ---------------------------------------------------------------- a low format's row */

/*
 * A low format's row (x->precision): x's query, keys and values become the format's
 * values, its scale and sink logit the accumulator's. Returns the block they live in
 * (the caller frees it), NULL when memory ran out.
 */
static double *hold(struct api_explain_row *x)
{
    const struct attn_precision *prec = x->precision;
    size_t n_k = x->keys.rows, d_k = x->keys.cols, d_v = x->values.cols;
    double *block = malloc((d_k + n_k * d_k + n_k * d_v) * sizeof *block);
    if (block == NULL)
        return NULL;
    enum attn_format f = prec->format;
    double *q = block, *k = q + d_k, *v = k + n_k * d_k;
    for (size_t c = 0; c < d_k; c++)
        q[c] = attn_format_round(x->query[c], f);
    for (size_t j = 0; j < n_k; j++) {
        for (size_t c = 0; c < d_k; c++)
            k[j * d_k + c] = attn_format_round(cell(&x->keys, j, c), f);
        for (size_t c = 0; c < d_v; c++)
            v[j * d_v + c] = attn_format_round(cell(&x->values, j, c), f);
    }
    x->query = q;
    x->keys = attn_matrix_view(k, n_k, d_k);
    x->values = attn_matrix_view(v, n_k, d_v);
    x->scale = attn_format_round(x->scale, prec->accumulate);
    x->variants.sink_logit = attn_format_round(x->variants.sink_logit, prec->accumulate);
    return block;
}

/* ---------------------------------------------------------------- JSON */

static void write_key(struct jw *w, const struct api_explain_row *x, size_t j, double max)
{
    const struct attn_trace *t = x->trace;
    size_t i = x->at, d_k = x->keys.cols;
    double m = cell(&t->masked, i, j);
    jw_object_begin(w);
    JW_KEY(w, "key");
    jw_int(w, (long long)j);
    JW_KEY(w, "terms");
    jw_array_begin(w);
    for (size_t c = 0; c < d_k; c++) {
        double pair[2] = { x->query[c], cell(&x->keys, j, c) };
        jw_double_array(w, pair, 2);
    }
    jw_array_end(w);
    if (x->precision != NULL) { /* each partial sum as the accumulator rounded it */
        JW_KEY(w, "partial_sums");
        jw_array_begin(w);
        double sum = 0;
        for (size_t c = 0; c < d_k; c++) {
            sum = attn_format_fma(x->query[c], cell(&x->keys, j, c), sum, x->precision->accumulate);
            jw_double(w, sum);
        }
        jw_array_end(w);
    }
    JW_KEY(w, "dot");
    jw_double(w, cell(&t->scores, i, j));
    JW_KEY(w, "scaled");
    jw_double(w, cell(&t->scaled, i, j));
    if (softcapped_of(x) != NULL) {
        JW_KEY(w, "softcapped");
        jw_double(w, cell(softcapped_of(x), i, j));
    }
    /* Blocked: masked, e^masked and the shift are null (JSON has no -inf); an
     * overflowing e^masked is null too, as every non-finite number is. */
    JW_KEY(w, "masked");
    jw_double(w, m);
    JW_KEY(w, "exp_unshifted");
    blocked(m) ? jw_null(w) : jw_double(w, exp_unshifted(x, m));
    JW_KEY(w, "shifted");
    blocked(m) ? jw_null(w) : jw_double(w, shift(x, m, max));
    JW_KEY(w, "exp");
    jw_double(w, exp_shifted(x, m, max));
    JW_KEY(w, "weight");
    jw_double(w, cell(&t->weights, i, j));
    if (dropped_of(x) != NULL) {
        JW_KEY(w, "dropout_keep");
        jw_double(w, cell(&x->vsteps->keep, i, j));
        JW_KEY(w, "dropped");
        jw_double(w, cell(dropped_of(x), i, j));
    }
    jw_object_end(w);
}

static void write_output(struct jw *w, const struct api_explain_row *x)
{
    const struct attn_trace *t = x->trace;
    size_t d_v = x->values.cols;
    JW_KEY(w, "output");
    jw_object_begin(w);
    JW_KEY(w, "terms");
    jw_array_begin(w);
    for (size_t j = 0; j < t->n_k; j++) {
        jw_object_begin(w);
        JW_KEY(w, "key");
        jw_int(w, (long long)j);
        JW_KEY(w, "weight");
        jw_double(w, cell(&t->weights, x->at, j));
        if (dropped_of(x) != NULL) { /* what the value row is weighed by */
            JW_KEY(w, "dropped");
            jw_double(w, cell(dropped_of(x), x->at, j));
        }
        JW_KEY(w, "value");
        jw_double_array(w, x->values.data + j * x->values.stride, d_v);
        jw_object_end(w);
    }
    jw_array_end(w);
    JW_KEY(w, "value");
    jw_double_array(w, t->output.data + x->at * t->output.stride, d_v);
    jw_object_end(w);
}

static void write_row(struct jw *w, const struct api_explain_row *x);

void api_explain_write(struct jw *w, const struct api_explain_row *x)
{
    if (x->precision == NULL) {
        write_row(w, x);
        return;
    }
    struct api_explain_row held = *x;
    double *block = hold(&held);
    if (block == NULL)
        w->failed = true; /* a 503: the row cannot be shown as the format holds it */
    else
        write_row(w, &held);
    free(block);
}

/* With `backward`: the row's dS worked by hand (explain.h). */
static void write_backward(struct jw *w, const struct api_explain_row *x)
{
    const struct attn_grads *g = x->grads;
    if (g == NULL)
        return;
    size_t i = x->at, d_v = g->d_v;
    const double *out = x->trace->output.data + i * x->trace->output.stride;
    JW_KEY(w, "backward");
    jw_object_begin(w);
    JW_KEY(w, "grad_output");
    jw_double_array(w, x->grad_output, d_v);
    JW_KEY(w, "delta_terms");
    jw_array_begin(w);
    for (size_t c = 0; c < d_v; c++)
        jw_double(w, x->grad_output[c] * out[c]);
    jw_array_end(w);
    JW_KEY(w, "delta");
    jw_double(w, g->delta[i]);
    JW_KEY(w, "keys");
    jw_array_begin(w);
    for (size_t j = 0; j < g->n_k; j++) {
        jw_object_begin(w);
        JW_KEY(w, "key");
        jw_int(w, (long long)j);
        JW_KEY(w, "weight");
        jw_double(w, cell(&x->trace->weights, i, j));
        JW_KEY(w, "grad_weight");
        jw_double(w, cell(&g->grad_weights, i, j));
        JW_KEY(w, "grad_masked");
        jw_double(w, cell(&g->grad_masked, i, j));
        jw_object_end(w);
    }
    jw_array_end(w);
    jw_object_end(w);
}

static void write_row(struct jw *w, const struct api_explain_row *x)
{
    const struct attn_trace *t = x->trace;
    double max = row_max(x);
    double unshifted = 0, sum = 0;
    for (size_t j = 0; j < t->n_k; j++) {
        unshifted = acc_round(x, unshifted + exp_unshifted(x, cell(&t->masked, x->at, j)));
        sum = acc_round(x, sum + exp_shifted(x, cell(&t->masked, x->at, j), max));
    }
    if (x->variants.sink) { /* the sink's term is in both sums (last): it takes weight */
        unshifted = acc_round(x, unshifted + exp_unshifted(x, x->variants.sink_logit));
        sum = acc_round(x, sum + exp_shifted(x, x->variants.sink_logit, max));
    }
    JW_KEY(w, "explain");
    jw_object_begin(w);
    JW_KEY(w, "row");
    jw_int(w, (long long)x->row);
    JW_KEY(w, "head");
    x->has_head ? jw_int(w, (long long)x->head) : jw_null(w);
    JW_KEY(w, "query");
    jw_double_array(w, x->query, x->keys.cols); /* with rope: q_rope's row */
    if (x->query_before_rope != NULL) {
        JW_KEY(w, "query_before_rope");
        jw_double_array(w, x->query_before_rope, x->keys.cols);
    }
    JW_KEY(w, "keys");
    jw_array_begin(w);
    for (size_t j = 0; j < t->n_k; j++)
        write_key(w, x, j, max);
    jw_array_end(w);
    JW_KEY(w, "scale");
    jw_double(w, x->scale);
    JW_KEY(w, "row_max");
    jw_double(w, max); /* null for a fully masked row */
    JW_KEY(w, "exp_unshifted_sum");
    jw_double(w, unshifted); /* null when e^masked overflowed */
    JW_KEY(w, "exp_sum");
    jw_double(w, sum);
    if (x->variants.sink) {
        JW_KEY(w, "sink_logit");
        jw_double(w, x->variants.sink_logit);
        JW_KEY(w, "sink_weight");
        jw_double(w, sink_weight_of(x));
    }
    write_output(w, x);
    write_backward(w, x);
    jw_object_end(w);
}

/* ---------------------------------------------------------------- text */

/* At most this many terms of one sum are written out; the rest are "…". */
enum { SHOWN = 8 };

/*
 * x rounded to `decimals`, its trailing zeros dropped ("1", "2.72"); returns whether
 * rounding changed it (the caller writes "≈" rather than "="). buf: API_NUMBER_MAX.
 */
static bool show(char *buf, double x, int decimals)
{
    double r = api_round_decimals(x, decimals);
    if (!isfinite(x)) {
        snprintf(buf, API_NUMBER_MAX, "%s", isnan(x) ? "nan" : x > 0 ? "inf" : "-inf");
        return false;
    }
    api_format_double(r == 0 ? 0 : r, buf); /* never "-0" */
    return r != x;
}

static const char *eq(bool approx)
{
    return approx ? "≈" : "=";
}

/* "[10, 0]", at most SHOWN numbers. */
static void vector_text(struct api_buf *b, const double *v, size_t n, int decimals)
{
    api_buf_puts(b, "[");
    for (size_t c = 0; c < n; c++) {
        if (c == SHOWN - 1 && n > SHOWN) {
            api_buf_puts(b, ", …");
            c = n - 1;
        }
        char num[API_NUMBER_MAX];
        show(num, v[c], decimals);
        api_buf_printf(b, "%s%s", c == 0 ? "" : ", ", num);
    }
    api_buf_puts(b, "]");
}

/* The step's name in its column, or as much blank space on the next lines. */
static void lead(struct api_buf *b, enum explain_words step, bool first)
{
    /* Padded by display width, not bytes: a Korean step name is wider per byte. */
    const char *name = first ? api_tr(explain_words[step]) : "";
    size_t width = api_text_width(name);
    api_buf_printf(b, "  %s%*s", name, width < 11 ? (int)(11 - width) : 0, "");
}

static void compare_lines(struct api_buf *b, const struct api_explain_row *x, int decimals,
                          const char *query, const struct api_labels *keys)
{
    size_t d_k = x->keys.cols;
    for (size_t j = 0; j < x->trace->n_k; j++) {
        char key[API_TEXT_LABEL], num[API_NUMBER_MAX];
        api_text_label(key, keys, j);
        lead(b, EX_COMPARE, j == 0);
        api_buf_printf(b, "%s·%s = ", query, key);
        for (size_t c = 0; c < d_k; c++) {
            if (c == SHOWN - 2 && d_k > SHOWN) {
                api_buf_puts(b, " + …");
                c = d_k - 1;
            }
            char qc[API_NUMBER_MAX], kc[API_NUMBER_MAX];
            show(qc, x->query[c], decimals);
            show(kc, cell(&x->keys, j, c), decimals);
            api_buf_printf(b, "%s%s×%s", c == 0 ? "" : " + ", qc, kc);
        }
        bool approx = show(num, cell(&x->trace->scores, x->at, j), decimals);
        api_buf_printf(b, " %s %s\n", eq(approx), num);
    }
}

static void scale_lines(struct api_buf *b, const struct api_explain_row *x, int decimals)
{
    char scale[API_NUMBER_MAX];
    bool scale_approx = show(scale, x->scale, decimals);
    for (size_t j = 0; j < x->trace->n_k; j++) {
        char s[API_NUMBER_MAX], r[API_NUMBER_MAX];
        show(s, cell(&x->trace->scores, x->at, j), decimals);
        bool approx = show(r, cell(&x->trace->scaled, x->at, j), decimals) || scale_approx;
        lead(b, EX_SCALE, j == 0);
        api_buf_printf(b, "%s × %s %s %s\n", s, scale, eq(approx), r);
    }
}

static void mask_lines(struct api_buf *b, const struct api_explain_row *x, int decimals,
                       const struct api_labels *keys)
{
    const struct attn_trace *t = x->trace;
    bool first = true;
    for (size_t j = 0; j < t->n_k; j++) {
        const struct attn_matrix *before = softcapped_of(x) ? softcapped_of(x) : &t->scaled;
        double m = cell(&t->masked, x->at, j), s = cell(before, x->at, j);
        if (m == s)
            continue;
        char key[API_TEXT_LABEL], line[API_TEXT_LABEL + 80];
        api_text_label(key, keys, j);
        lead(b, EX_MASK, first);
        first = false;
        if (blocked(m)) {
            const char *args[] = { key };
            api_fill(line, sizeof line, api_tr(explain_words[EX_BLOCKED]), args, 1);
            api_buf_printf(b, "%s\n", line);
            continue;
        }
        char sv[API_NUMBER_MAX], bv[API_NUMBER_MAX], mv[API_NUMBER_MAX];
        show(sv, s, decimals);
        show(bv, m - s, decimals);
        bool approx = show(mv, m, decimals);
        api_buf_printf(b, "%s: %s + %s %s %s %s\n", key, sv,
                       x->variants.alibi ? "bias + alibi" : "bias", bv,
                       eq(approx), mv);
    }
    if (first) {
        lead(b, EX_MASK, true);
        api_buf_printf(b, "%s\n", api_tr(explain_words[softcapped_of(x) != NULL ? EX_UNMASKED_CAPPED
                                                                                 : EX_UNMASKED]));
    }
}

/*
 * Softmax as the note does it: e^masked, their sum, each divided by the sum. When
 * e^masked overflows, the note's way gives nan: say so and show the stable way.
 */
static void softmax_lines(struct api_buf *b, const struct api_explain_row *x, int decimals)
{
    const struct attn_trace *t = x->trace;
    size_t n_k = t->n_k, i = x->at;
    double max = row_max(x), sum = 0;
    bool sink = x->variants.sink;
    double z = x->variants.sink_logit;
    if (isinf(max)) {
        lead(b, EX_SOFTMAX, true);
        api_buf_printf(b, "%s\n", api_tr(explain_words[EX_EMPTY]));
        return;
    }
    for (size_t j = 0; j < n_k; j++)
        sum = acc_round(x, sum + exp_unshifted(x, cell(&t->masked, i, j)));
    if (sink)
        sum = acc_round(x, sum + exp_unshifted(x, z));
    bool stable = !isfinite(sum);
    bool first = true;
    if (stable) {
        char mx[API_NUMBER_MAX], line[2 * API_NUMBER_MAX + 200];
        show(mx, max, decimals);
        const char *args[] = { mx };
        lead(b, EX_SOFTMAX, first);
        first = false;
        api_fill(line, sizeof line, api_tr(explain_words[EX_OVERFLOW]), args, 1);
        api_buf_printf(b, "%s\n", line);
        lead(b, EX_SOFTMAX, false);
        api_fill(line, sizeof line, api_tr(explain_words[EX_SHIFTED]), args, 1);
        api_buf_printf(b, "%s\n", line);
        sum = 0;
        for (size_t j = 0; j < n_k; j++)
            sum = acc_round(x, sum + exp_shifted(x, cell(&t->masked, i, j), max));
        if (sink)
            sum = acc_round(x, sum + exp_shifted(x, z, max));
    }
    char sum_text[API_NUMBER_MAX];
    bool sum_approx = show(sum_text, sum, decimals);
    for (size_t j = 0; j < n_k; j++) {
        double m = cell(&t->masked, i, j);
        if (blocked(m))
            continue;
        char arg[API_NUMBER_MAX], e[API_NUMBER_MAX];
        bool approx = show(arg, stable ? m - max : m, decimals);
        approx = show(e, stable ? exp_shifted(x, m, max) : exp_unshifted(x, m), decimals) || approx;
        lead(b, EX_SOFTMAX, first);
        first = false;
        api_buf_printf(b, stable ? "e^(%s) %s %s\n" : "e^%s %s %s\n", arg, eq(approx), e);
    }
    char sink_e[API_NUMBER_MAX] = "";
    if (sink) { /* the sink's own exponential: a logit in the sum, with no value row */
        char arg[API_NUMBER_MAX];
        bool approx = show(arg, stable ? z - max : z, decimals);
        approx = show(sink_e, stable ? exp_shifted(x, z, max) : exp_unshifted(x, z), decimals) ||
                 approx;
        lead(b, EX_SINK, true);
        api_buf_printf(b, stable ? "e^(%s) %s %s\n" : "e^%s %s %s\n", arg, eq(approx), sink_e);
    }
    lead(b, EX_SOFTMAX, false);
    api_buf_printf(b, "%s ", api_tr(explain_words[EX_SUM]));
    size_t written = 0;
    for (size_t j = 0; j < n_k && written < SHOWN; j++) {
        double m = cell(&t->masked, i, j);
        if (blocked(m))
            continue;
        char e[API_NUMBER_MAX];
        show(e, stable ? exp_shifted(x, m, max) : exp_unshifted(x, m), decimals);
        api_buf_printf(b, "%s%s", written++ == 0 ? "" : " + ", e);
    }
    api_buf_printf(b, "%s%s%s %s %s\n", written == SHOWN && n_k > SHOWN ? " + …" : "",
                   sink ? " + " : "", sink_e, eq(sum_approx), sum_text);
    for (size_t j = 0; j < n_k; j++) {
        double m = cell(&t->masked, i, j);
        char e[API_NUMBER_MAX], wv[API_NUMBER_MAX];
        show(e, stable ? exp_shifted(x, m, max) : exp_unshifted(x, m), decimals);
        bool approx = show(wv, cell(&t->weights, i, j), decimals);
        lead(b, EX_SOFTMAX, false);
        api_buf_printf(b, "%s ÷ %s %s %s\n", e, sum_text, eq(approx || sum_approx), wv);
    }
    if (sink) {
        char share[API_NUMBER_MAX], line[API_NUMBER_MAX + 120];
        bool approx = show(share, sink_weight_of(x), decimals);
        lead(b, EX_SINK, true);
        api_buf_printf(b, "%s ÷ %s %s %s: ", sink_e, sum_text, eq(approx || sum_approx), share);
        const char *args[] = { share };
        api_fill(line, sizeof line, api_tr(explain_words[EX_SINK_SHARE]), args, 1);
        api_buf_printf(b, "%s\n", line);
    }
}

/* rope: the query and every key as sent, and as turned by position (then compared). */
static void rope_lines(struct api_buf *b, const struct api_explain_row *x, int decimals,
                       const char *query, const struct api_labels *keys)
{
    char rotated[24], line[API_TEXT_LABEL + 120];
    snprintf(rotated, sizeof rotated, "%zu", x->variants.rope->rotated);
    size_t d_k = x->keys.cols;
    for (size_t j = 0; j <= x->trace->n_k; j++) {
        char label[API_TEXT_LABEL];
        if (j == 0)
            snprintf(label, sizeof label, "%s", query);
        else
            api_text_label(label, keys, j - 1);
        const char *args[] = { label, rotated };
        api_fill(line, sizeof line, api_tr(explain_words[EX_ROPE_LINE]), args, 2);
        lead(b, EX_ROPE, j == 0);
        api_buf_printf(b, "%s: ", line);
        const struct attn_matrix *sent = &x->keys_before_rope;
        vector_text(b, j == 0 ? x->query_before_rope : sent->data + (j - 1) * sent->stride, d_k,
                    decimals);
        api_buf_puts(b, " → ");
        vector_text(b, j == 0 ? x->query : x->keys.data + (j - 1) * x->keys.stride, d_k,
                    decimals);
        api_buf_puts(b, "\n");
    }
}

/* softcap: c·tanh(scaled / c) for each key, after the scale. */
static void softcap_lines(struct api_buf *b, const struct api_explain_row *x, int decimals)
{
    char c[API_NUMBER_MAX];
    show(c, x->variants.softcap, decimals);
    for (size_t j = 0; j < x->trace->n_k; j++) {
        char sv[API_NUMBER_MAX], r[API_NUMBER_MAX];
        show(sv, cell(&x->trace->scaled, x->at, j), decimals);
        bool approx = show(r, cell(softcapped_of(x), x->at, j), decimals);
        lead(b, EX_SOFTCAP, j == 0);
        api_buf_printf(b, "%s·tanh(%s ÷ %s) %s %s\n", c, sv, c, eq(approx), r);
    }
}

/* dropout: each weight kept and scaled by 1 ÷ (1 − p), or dropped to 0. */
static void dropout_lines(struct api_buf *b, const struct api_explain_row *x, int decimals,
                          const struct api_labels *keys)
{
    char keep[API_NUMBER_MAX];
    bool keep_approx = show(keep, 1 - x->variants.dropout_p, decimals);
    for (size_t j = 0; j < x->trace->n_k; j++) {
        char key[API_TEXT_LABEL], wv[API_NUMBER_MAX], d[API_NUMBER_MAX];
        char line[API_TEXT_LABEL + 40];
        api_text_label(key, keys, j);
        lead(b, EX_DROPOUT, j == 0);
        if (cell(&x->vsteps->keep, x->at, j) == 0) {
            const char *args[] = { key };
            api_fill(line, sizeof line, api_tr(explain_words[EX_DROPPED_OUT]), args, 1);
            api_buf_printf(b, "%s\n", line);
            continue;
        }
        show(wv, cell(&x->trace->weights, x->at, j), decimals);
        bool approx = show(d, cell(dropped_of(x), x->at, j), decimals) || keep_approx;
        api_buf_printf(b, "%s: %s ÷ %s %s %s\n", key, wv, keep, eq(approx), d);
    }
}

static void mix_line(struct api_buf *b, const struct api_explain_row *x, int decimals)
{
    const struct attn_trace *t = x->trace;
    size_t d_v = x->values.cols;
    lead(b, EX_MIX, true);
    for (size_t j = 0; j < t->n_k; j++) {
        if (j == SHOWN && t->n_k > SHOWN) {
            api_buf_puts(b, " + …");
            break;
        }
        char wv[API_NUMBER_MAX];
        show(wv, mixing_weight(x, j), decimals);
        api_buf_printf(b, "%s%s×", j == 0 ? "" : " + ", wv);
        vector_text(b, x->values.data + j * x->values.stride, d_v, decimals);
    }
    api_buf_puts(b, " = ");
    vector_text(b, t->output.data + x->at * t->output.stride, d_v, decimals);
    api_buf_puts(b, "\n");
}

/* With `backward`: D term by term, then each key's dS = P·(dP − D). */
static void backward_lines(struct api_buf *b, const struct api_explain_row *x, int decimals,
                           const struct api_labels *keys)
{
    const struct attn_grads *g = x->grads;
    size_t i = x->at, d_v = g->d_v;
    const double *out = x->trace->output.data + i * x->trace->output.stride;
    char num[API_NUMBER_MAX];
    api_buf_printf(b, "  %s = ", api_tr(explain_words[EX_BACKWARD]));
    for (size_t c = 0; c < d_v; c++) {
        if (c == SHOWN && d_v > SHOWN) {
            api_buf_puts(b, " + …");
            break;
        }
        char a[API_NUMBER_MAX], o[API_NUMBER_MAX];
        show(a, x->grad_output[c], decimals);
        show(o, out[c], decimals);
        api_buf_printf(b, "%s%s×%s", c == 0 ? "" : " + ", a, o);
    }
    bool approx = show(num, g->delta[i], decimals);
    api_buf_printf(b, " %s %s\n", eq(approx), num);
    for (size_t j = 0; j < g->n_k; j++) {
        if (j == SHOWN && g->n_k > SHOWN) {
            api_buf_puts(b, "    …\n");
            break;
        }
        char label[API_TEXT_LABEL], line[API_TEXT_LABEL + 64];
        char p[API_NUMBER_MAX], dp[API_NUMBER_MAX], d[API_NUMBER_MAX];
        api_text_label(label, keys, j);
        const char *args[] = { label };
        api_fill(line, sizeof line, api_tr(explain_words[EX_GRAD_KEY]), args, 1);
        show(p, cell(&x->trace->weights, i, j), decimals);
        show(dp, cell(&g->grad_weights, i, j), decimals);
        show(d, g->delta[i], decimals);
        approx = show(num, cell(&g->grad_masked, i, j), decimals);
        api_buf_printf(b, "    %s = %s × (%s − %s) %s %s\n", line, p, dp, d, eq(approx), num);
    }
}

static void text_row(struct api_buf *b, const struct api_explain_row *x, int decimals,
                     const struct api_labels *queries, const struct api_labels *keys);

void api_explain_text(struct api_buf *b, const struct api_explain_row *x, int decimals,
                      const struct api_labels *queries, const struct api_labels *keys)
{
    if (x->precision == NULL) {
        text_row(b, x, decimals, queries, keys);
        return;
    }
    struct api_explain_row held = *x;
    double *block = hold(&held);
    if (block == NULL)
        b->failed = true;
    else
        text_row(b, &held, decimals, queries, keys);
    free(block);
}

static void text_row(struct api_buf *b, const struct api_explain_row *x, int decimals,
                     const struct api_labels *queries, const struct api_labels *keys)
{
    char query[API_TEXT_LABEL], row[24], head[24], title[API_TEXT_LABEL + 200];
    api_text_label(query, queries, x->at);
    snprintf(row, sizeof row, "%zu", x->row);
    snprintf(head, sizeof head, "%zu", x->head);
    const char *args[] = { query, row, head };
    api_fill(title, sizeof title, api_tr(explain_words[x->has_head ? EX_TITLE_HEAD : EX_TITLE]), args, 3);
    api_buf_printf(b, "\n%s\n", title);
    if (x->query_before_rope != NULL)
        rope_lines(b, x, decimals, query, keys);
    compare_lines(b, x, decimals, query, keys);
    scale_lines(b, x, decimals);
    if (softcapped_of(x) != NULL)
        softcap_lines(b, x, decimals);
    mask_lines(b, x, decimals, keys);
    softmax_lines(b, x, decimals);
    if (dropped_of(x) != NULL)
        dropout_lines(b, x, decimals, keys);
    mix_line(b, x, decimals);
    if (x->grads != NULL)
        backward_lines(b, x, decimals, keys);
}

/* ---------------------------------------------------------------- softmax's inner steps */

enum { PART_ROW_MAX = 1, PART_SHIFTED = 2, PART_EXP = 4 };

/*
 * Row i's max as softmax subtracted it: the summary's, which counts a sink logit (its
 * term is in row_sum too, so weights = exp / row_sum on every row). −inf, written null,
 * for a fully masked row with no sink.
 */
static double row_max_of(const struct attn_trace *t, size_t i)
{
    return t->summary.row_max[i];
}

/* Row i's shifted scores (part PART_SHIFTED) or their exponentials into out (n_k). */
/* Row i's shifted or exp; in a low format (prec), each rounded to its accumulator as the
 * pass held them (core/precision.h). */
static void softmax_part_row(double *out, const struct attn_trace *t, size_t i, unsigned part,
                             const struct attn_precision *prec)
{
    double max = row_max_of(t, i);
    for (size_t j = 0; j < t->n_k; j++) {
        double m = cell(&t->masked, i, j);
        if (prec != NULL) {
            double shifted = attn_format_round(m - max, prec->accumulate);
            out[j] = part == PART_SHIFTED ? (blocked(m) ? NAN : shifted)
                     : blocked(m) ? 0 : attn_format_round(exp(shifted), prec->accumulate);
            continue;
        }
        out[j] = part == PART_SHIFTED ? (blocked(m) ? NAN : m - max)
                 : blocked(m)          ? 0
                                       : exp(m - max);
    }
}

void api_write_softmax_parts(struct jw *w, const struct attn_trace *t, unsigned parts,
                             bool as_vector, const struct attn_precision *prec)
{
    if (parts == 0)
        return;
    if (parts & PART_ROW_MAX) {
        JW_KEY(w, "row_max");
        if (!as_vector)
            jw_array_begin(w);
        for (size_t i = 0; i < t->n_q; i++)
            jw_double(w, row_max_of(t, i));
        if (!as_vector)
            jw_array_end(w);
    }
    double *row = malloc(t->n_k * sizeof *row);
    if (row == NULL) {
        w->failed = true;
        return;
    }
    for (unsigned part = PART_SHIFTED; part <= PART_EXP; part <<= 1) {
        if (!(parts & part))
            continue;
        jw_key(w, part == PART_SHIFTED ? "shifted" : "exp");
        if (!as_vector)
            jw_array_begin(w);
        for (size_t i = 0; i < t->n_q; i++) {
            softmax_part_row(row, t, i, part, prec);
            jw_double_array(w, row, t->n_k);
        }
        if (!as_vector)
            jw_array_end(w);
    }
    free(row);
}

void api_text_softmax_parts(struct api_buf *b, const struct attn_trace *t, unsigned parts,
                            int decimals, const struct api_labels *queries,
                            const struct api_labels *keys, const struct attn_precision *prec)
{
    if (parts == 0)
        return;
    double *m = malloc(t->n_q * (t->n_k + 1) * sizeof *m);
    if (m == NULL) {
        b->failed = true;
        return;
    }
    static const char *const name[] = { "row_max", "shifted = masked - row_max",
                                        "exp = e^shifted" };
    for (unsigned k = 0; k < 3; k++) {
        unsigned part = 1u << k;
        if (!(parts & part))
            continue;
        size_t cols = part == PART_ROW_MAX ? 1 : t->n_k;
        for (size_t i = 0; i < t->n_q; i++) {
            if (part == PART_ROW_MAX)
                m[i] = row_max_of(t, i);
            else
                softmax_part_row(m + i * cols, t, i, part, prec);
        }
        api_buf_printf(b, "\n%s\n", name[k]);
        static const char *const max_label[] = { "max" };
        struct api_text_matrix tm = {
            .data = m, .rows = t->n_q, .cols = cols, .stride = cols,
            .row_labels = *queries,
            .col_labels = part == PART_ROW_MAX ? (struct api_labels){ max_label, 1, "" } : *keys,
            .decimals = decimals, .indent = "  ",
        };
        api_text_matrix(b, &tm);
    }
    free(m);
}

/* ---------------------------------------------------------------- row statistics */

enum { STAT_ROW_SUM = 1, STAT_LSE = 2 };

static const double *row_stat(const struct attn_summary *s, unsigned part)
{
    return part == STAT_ROW_SUM ? s->row_sum : s->lse;
}

void api_write_row_stats(struct jw *w, const struct attn_summary *s, size_t n, unsigned parts,
                         bool as_vector)
{
    for (unsigned part = STAT_ROW_SUM; part <= STAT_LSE; part <<= 1) {
        if (!(parts & part))
            continue;
        jw_key(w, part == STAT_ROW_SUM ? "row_sum" : "lse");
        if (as_vector)
            jw_double(w, row_stat(s, part)[0]); /* −inf is written null */
        else
            jw_double_array(w, row_stat(s, part), n);
    }
}

void api_text_row_stats(struct api_buf *b, const struct attn_summary *s, size_t n,
                        unsigned parts, int decimals, const struct api_labels *queries)
{
    static const char *const row_sum_label[] = { "sum" }, *const lse_label[] = { "lse" };
    for (unsigned part = STAT_ROW_SUM; part <= STAT_LSE; part <<= 1) {
        if (!(parts & part))
            continue;
        api_buf_printf(b, "\n%s\n", part == STAT_ROW_SUM
                                         ? "row_sum = sum of e^(masked - row_max)"
                                         : "lse = row_max + ln row_sum");
        struct api_text_matrix tm = {
            .data = row_stat(s, part), .rows = n, .cols = 1, .stride = 1,
            .row_labels = *queries,
            .col_labels = { part == STAT_ROW_SUM ? row_sum_label : lse_label, 1, "" },
            .decimals = decimals, .indent = "  ",
        };
        api_text_matrix(b, &tm);
    }
}
