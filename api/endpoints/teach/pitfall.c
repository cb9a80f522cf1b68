/*
 * api/endpoints/teach/pitfall.c — the learner's mistake beside the right answer (see pitfall.h).
 */
#include "api/endpoints/teach/pitfall.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http/problem.h"
#include "api/i18n/fill.h"
#include "api/i18n/lang.h"
#include "api/json/numfmt.h"
#include "api/request/fields.h"
#include "core/pitfall.h"

static const char *const pitfall_names[API_PITFALL_COUNT] = {
    [API_PITFALL_NONE] = "none",
    [API_PITFALL_NO_TRANSPOSE] = "no_transpose",
    [API_PITFALL_COLUMN_SOFTMAX] = "column_softmax",
    [API_PITFALL_NO_MAX_SUBTRACTION] = "no_max_subtraction",
};

/* Every sentence of this module a user reads, in English: the keys of the message tables
   (i18n/lang.h), said through api_tr; numpy's own error stays as numpy writes it. */
enum pitfall_words {
    PW_WHAT_NO_TRANSPOSE,
    PW_WHAT_COLUMN_SOFTMAX,
    PW_WHAT_NO_MAX_SUBTRACTION,
    PW_NUMPY_MISMATCH, /* numpy's own words: n_k, d_k */
    PW_TITLE,          /* name */
    PW_ERROR,          /* the error */
    PW_NON_FINITE,     /* count */
    PW_DIFFERENCE,     /* the step compared, the difference */
    PW_NO_DIFFERENCE,  /* the step compared */
    PW_WORDS
};

static const char *const pitfall_words[PW_WORDS] = {
    [PW_WHAT_NO_TRANSPOSE] = API_N("Q @ K instead of Q @ K.T: the product needs K's rows to match "
                             "Q's columns, so it fails unless n_k = d_k, and then it runs "
                             "and its numbers are silently wrong"),
    [PW_WHAT_COLUMN_SOFTMAX] = API_N("softmax down the columns (axis=0) instead of along each row "
                               "(axis=-1): each column sums to 1, the rows do not, and a "
                               "query's weights depend on the other queries"),
    [PW_WHAT_NO_MAX_SUBTRACTION] = API_N("e^score divided by the row's sum without subtracting the "
                                   "row's max first: a large score overflows e^x to inf and "
                                   "inf ÷ inf is nan; subtracting the max gives the same "
                                   "ratios without overflow"),
    [PW_NUMPY_MISMATCH] = "matmul: Input operand 1 has a mismatch in its core dimension 0, "
                          "with gufunc signature (n?,k),(k,m?)->(n?,m?) (size {1} is "
                          "different from {2})",
    [PW_TITLE] = API_N("pitfall  {1}"),
    [PW_ERROR] = API_N("numpy raises ValueError: {1}"),
    [PW_NON_FINITE] = API_N("non-finite cells (inf, nan): {1}"),
    [PW_DIFFERENCE] = API_N("largest |wrong - right| over the {1}: {2}"),
    [PW_NO_DIFFERENCE] = API_N("no finite cell of the {1} to compare"),
};

bool api_pitfall_read(const json_t *doc, const char *prefix, enum api_pitfall *out,
                      struct api_error *err)
{
    char ptr[128];
    *out = API_PITFALL_NONE;
    const json_t *node = api_member(doc, "pitfall");
    if (node == NULL)
        return true;
    API_FIELD_POINTER(ptr, prefix, "pitfall");
    size_t which;
    if (!api_read_choice(node, ptr, "pitfall", pitfall_names + 1, API_PITFALL_COUNT - 1, &which,
                         err)) {
        if (err->hint[0] == '\0')
            api_error_hint(err, "pitfall names one mistake from the notes, as a string: "
                           "{\"pitfall\": \"no_transpose\"}");
        return false;
    }
    *out = (enum api_pitfall)(which + 1);
    return true;
}

size_t api_pitfall_cells(enum api_pitfall p, size_t n_q, size_t n_k, size_t d_v)
{
    if (p == API_PITFALL_NONE)
        return 0;
    /* no_transpose: a whole trace and Kᵀ; the others three steps. Each at most (n_q, n_k)
     * or (n_q, d_v); written once more as the answer's numbers. */
    size_t trace = attn_trace_cells(n_q, n_k, d_v);
    return 2 * (trace + n_k * n_k + 3 * n_q * (n_k + d_v));
}

static const char *what(enum api_pitfall p)
{
    return p == API_PITFALL_NO_TRANSPOSE ? api_tr(pitfall_words[PW_WHAT_NO_TRANSPOSE])
         : p == API_PITFALL_COLUMN_SOFTMAX ? api_tr(pitfall_words[PW_WHAT_COLUMN_SOFTMAX])
         : api_tr(pitfall_words[PW_WHAT_NO_MAX_SUBTRACTION]);
}

/* ---------------------------------------------------------------- computing */

static void add_step(struct api_pitfall_result *r, const char *name, struct attn_matrix m)
{
    r->names[r->n_steps] = name;
    r->steps[r->n_steps++] = m;
}

/* The wrong attention with the right answer's variants (rope already applied to q and
 * k): its five steps go to r->trace, the variants' own are dropped. */
static enum attn_status with_variants(struct api_pitfall_result *r, const struct attn_problem *p,
                                      const struct attn_variants *v)
{
    struct attn_variants same = *v;
    same.rope = NULL;
    same.band_only = false;
    struct attn_vtrace vt;
    attn_trace_free(&r->trace); /* the plain trace is replaced by the variants' */
    if (attn_vtrace_alloc(&vt, p->q->rows, p->k->rows, p->q->cols, p->v->cols, &same) != ATTN_OK)
        return ATTN_ENOMEM;
    enum attn_status st = attn_reference_variants(&vt, p, &same);
    r->trace = vt.base;
    memset(&vt.base, 0, sizeof vt.base);
    attn_vtrace_free(&vt);
    return st;
}

/* Q @ K: it runs only when K's rows (n_k) match Q's columns (d_k), and then it is
 * attention with Kᵀ as its keys, mask, bias and scale as asked. */
static void no_transpose(struct api_pitfall_result *r, const struct api_pitfall_inputs *in)
{
    size_t n_q = in->q->rows, n_k = in->k->rows, d_k = in->k->cols, d_v = in->v->cols;
    if (n_k != d_k) {
        char a[24], b[24];
        snprintf(a, sizeof a, "%zu", n_k);
        snprintf(b, sizeof b, "%zu", d_k);
        const char *args[] = { a, b };
        api_fill(r->error, sizeof r->error, pitfall_words[PW_NUMPY_MISMATCH], args, 2);
        return;
    }
    r->block = malloc(n_k * d_k * sizeof *r->block);
    if (r->block == NULL || attn_trace_alloc(&r->trace, n_q, n_k, d_v) != ATTN_OK) {
        r->failed = true;
        return;
    }
    struct attn_matrix kt = attn_matrix_view(r->block, d_k, n_k);
    attn_transpose(&kt, in->k);
    const struct attn_problem p = {
        .q = in->q, .k = &kt, .v = in->v, .bias = in->bias, .mask = in->mask,
        .scale = in->scale, .skip_summary = true,
    };
    static const struct attn_variants none;
    enum attn_status st = in->precision != NULL
        ? attn_forward_precision_variants(&r->trace, &p, in->variants ? in->variants : &none,
                                          in->precision)
        : in->variants != NULL ? with_variants(r, &p, in->variants)
                               : attn_reference(&r->trace, &p);
    if (st != ATTN_OK && st != ATTN_EOVERFLOW) {
        r->failed = true;
        return;
    }
    add_step(r, "scores", r->trace.scores);
    add_step(r, "weights", r->trace.weights);
    add_step(r, "output", r->trace.output);
}

/* Softmax done wrong from the right masked scores, then weights @ V. */
static void wrong_softmax(struct api_pitfall_result *r, const struct api_pitfall_inputs *in)
{
    const struct attn_trace *t = in->right;
    size_t n_q = t->n_q, n_k = t->n_k, d_v = t->d_v;
    bool with_exp = in->which == API_PITFALL_NO_MAX_SUBTRACTION;
    r->block = malloc((2 * n_q * n_k + n_q * d_v) * sizeof *r->block);
    if (r->block == NULL) {
        r->failed = true;
        return;
    }
    struct attn_matrix e = attn_matrix_view(r->block, n_q, n_k);
    struct attn_matrix w = attn_matrix_view(r->block + n_q * n_k, n_q, n_k);
    struct attn_matrix o = attn_matrix_view(r->block + 2 * n_q * n_k, n_q, d_v);
    if (with_exp && in->precision != NULL) {
        attn_softmax_rows_unshifted_precision(&e, &w, &t->masked, in->precision);
        add_step(r, "exp", e);
    } else if (with_exp) {
        for (size_t i = 0; i < n_q; i++)
            for (size_t j = 0; j < n_k; j++)
                e.data[i * n_k + j] = exp(attn_at(&t->masked, i, j));
        add_step(r, "exp", e);
        attn_softmax_rows_unshifted(&w, &t->masked);
    } else if (in->precision != NULL) {
        attn_softmax_columns_precision(&w, &t->masked, in->precision);
    } else {
        attn_softmax_columns(&w, &t->masked);
    }
    if (in->precision != NULL)
        attn_matmul_precision(&o, &w, in->v, in->precision);
    else
        attn_matmul_plain(&o, &w, in->v);
    add_step(r, "weights", w);
    add_step(r, "output", o);
}

static void count(struct api_pitfall_result *r, const struct attn_trace *right)
{
    bool by_output = r->which == API_PITFALL_NO_TRANSPOSE;
    const struct attn_matrix *ref = by_output ? &right->output : &right->weights;
    r->max_abs_difference = NAN;
    for (size_t s = 0; s < r->n_steps; s++) {
        const struct attn_matrix *m = &r->steps[s];
        bool compared = strcmp(r->names[s], by_output ? "output" : "weights") == 0;
        for (size_t i = 0; i < m->rows; i++)
            for (size_t j = 0; j < m->cols; j++) {
                double x = attn_at(m, i, j);
                if (!isfinite(x)) {
                    r->non_finite++;
                    continue;
                }
                double d = fabs(x - attn_at(ref, i, j));
                if (compared && (isnan(r->max_abs_difference) || d > r->max_abs_difference))
                    r->max_abs_difference = d;
            }
    }
}

void api_pitfall_compute(struct api_pitfall_result *out, const struct api_pitfall_inputs *in)
{
    memset(out, 0, sizeof *out);
    out->which = in->which;
    out->max_abs_difference = NAN;
    if (in->which == API_PITFALL_NONE)
        return;
    if (in->which == API_PITFALL_NO_TRANSPOSE)
        no_transpose(out, in);
    else
        wrong_softmax(out, in);
    if (!out->failed)
        count(out, in->right);
}

void api_pitfall_result_free(struct api_pitfall_result *r)
{
    attn_trace_free(&r->trace);
    free(r->block);
    memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------- writing */

void api_pitfall_write(struct jw *w, const struct api_pitfall_result *r, bool as_vector)
{
    if (r->failed) {
        w->failed = true; /* no memory for the mistake: a 503, never half an answer */
        return;
    }
    JW_KEY(w, "pitfall");
    jw_object_begin(w);
    JW_KEY(w, "name");
    jw_string(w, pitfall_names[r->which]);
    JW_KEY(w, "what");
    jw_string(w, what(r->which));
    JW_KEY(w, "steps");
    jw_object_begin(w);
    for (size_t s = 0; s < r->n_steps; s++) {
        const struct attn_matrix *m = &r->steps[s];
        jw_key(w, r->names[s]);
        if (as_vector) {
            jw_double_array(w, m->data, m->cols); /* non-finite cells are null */
            continue;
        }
        jw_array_begin(w);
        for (size_t i = 0; i < m->rows; i++)
            jw_double_array(w, m->data + i * m->stride, m->cols);
        jw_array_end(w);
    }
    jw_object_end(w);
    JW_KEY(w, "error");
    r->error[0] != '\0' ? jw_string(w, r->error) : jw_null(w);
    JW_KEY(w, "non_finite");
    jw_int(w, (long long)r->non_finite);
    JW_KEY(w, "max_abs_difference");
    jw_double(w, r->max_abs_difference); /* NaN: null, nothing compared */
    jw_object_end(w);
}

static void line(struct api_buf *b, enum pitfall_words word, const char *a1, const char *a2)
{
    char text[512];
    const char *args[] = { a1, a2 };
    api_fill(text, sizeof text, api_tr(pitfall_words[word]), args, 2);
    api_buf_printf(b, "  %s\n", text);
}

void api_pitfall_text(struct api_buf *b, const struct api_pitfall_result *r, int decimals,
                      const struct api_labels *queries, const struct api_labels *keys)
{
    if (r->failed) {
        b->failed = true;
        return;
    }
    char title[128];
    const char *name[] = { pitfall_names[r->which] };
    api_fill(title, sizeof title, api_tr(pitfall_words[PW_TITLE]), name, 1);
    api_buf_printf(b, "\n%s\n  %s\n", title, what(r->which));
    if (r->error[0] != '\0') {
        line(b, PW_ERROR, r->error, NULL);
        return;
    }
    /* Q @ K's columns are K's columns, not keys: they are numbered, not labelled. */
    bool by_key = r->which != API_PITFALL_NO_TRANSPOSE;
    for (size_t s = 0; s < r->n_steps; s++) {
        const struct attn_matrix *m = &r->steps[s];
        bool output = strcmp(r->names[s], "output") == 0;
        api_buf_printf(b, API_TR("  %s (wrong)\n"), r->names[s]);
        struct api_text_matrix tm = {
            .data = m->data, .rows = m->rows, .cols = m->cols, .stride = m->stride,
            .row_labels = *queries,
            .col_labels = by_key && !output ? *keys : (struct api_labels){ NULL, 0, "" },
            .decimals = decimals, .indent = "    ",
        };
        api_text_matrix(b, &tm);
    }
    char n[24], d[API_NUMBER_MAX];
    snprintf(n, sizeof n, "%zu", r->non_finite);
    line(b, PW_NON_FINITE, n, NULL);
    const char *compared = by_key ? "weights" : "output";
    if (isnan(r->max_abs_difference)) {
        line(b, PW_NO_DIFFERENCE, compared, NULL);
        return;
    }
    api_text_number(d, r->max_abs_difference, decimals);
    line(b, PW_DIFFERENCE, compared, d);
}
