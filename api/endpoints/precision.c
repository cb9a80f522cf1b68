/*
 * api/endpoints/precision.c — the report of a request computed in a low format (see
 * precision.h).
 */
#include "api/endpoints/precision.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/i18n/lang.h"
#include "core/backward.h"
#include "core/mh_backward.h"
#include "core/variants.h"

static const char *const step_names[5] = { "scores", "scaled", "masked", "weights", "output" };

/* The first cell of m that is finite as sent but not once rounded to f. */
static bool first_lost(const struct attn_matrix *m, enum attn_format f, size_t *row, size_t *col)
{
    for (size_t i = 0; m != NULL && i < m->rows; i++)
        for (size_t j = 0; j < m->cols; j++) {
            double x = attn_at(m, i, j);
            if (isfinite(x) && !isfinite(attn_format_round(x, f))) {
                *row = i;
                *col = j;
                return true;
            }
        }
    return false;
}

struct api_precision_report *api_precision_report_new(struct api_error *err)
{
    struct api_precision_report *rep = calloc(1, sizeof *rep);
    if (rep == NULL)
        api_error_set(err, API_UNAVAILABLE, "no memory for the precision report");
    return rep;
}

/* The first input the format cannot hold, into rep->first. */
static void first_input(struct api_precision_report *rep, const struct api_precision_input *in,
                        size_t n_in, enum attn_format f)
{
    rep->first = NULL;
    rep->first_per_head = false;
    for (size_t i = 0; i < n_in && rep->first == NULL; i++)
        if (first_lost(in[i].m, f, &rep->first_row, &rep->first_col))
            rep->first = in[i].name;
}

static struct api_precision_entry *entry(struct api_precision_report *rep, const char *name,
                                         bool per_head, bool per_row)
{
    struct api_precision_entry *e = &rep->entries[rep->n++];
    *e = (struct api_precision_entry){ .name = name, .per_head = per_head, .per_row = per_row,
                                       .e = { 0, 0, ATTN_NO_INDEX, ATTN_NO_INDEX, 0 } };
    return e;
}

/* Head h's error of a step merged into e: the larger errors, their cell, the counts. */
static void merge(struct api_precision_entry *e, const struct attn_step_error *x, size_t h)
{
    e->e.max_abs = x->max_abs > e->e.max_abs ? x->max_abs : e->e.max_abs;
    if (x->rel_row != ATTN_NO_INDEX && (e->e.rel_row == ATTN_NO_INDEX || x->max_rel > e->e.max_rel)) {
        e->e.max_rel = x->max_rel;
        e->e.rel_row = x->rel_row;
        e->e.rel_col = x->rel_col;
        e->rel_head = h;
    }
    e->e.non_finite += x->non_finite;
}

/* A number a row: its cell is the row. */
static struct attn_step_error per_row_error(const double *low, const double *exact, size_t n)
{
    struct attn_matrix l = attn_matrix_view((double *)low, 1, n);
    struct attn_matrix x = attn_matrix_view((double *)exact, 1, n);
    struct attn_step_error e = attn_step_error_of(&l, &x);
    e.rel_row = e.rel_col;
    return e;
}

void api_precision_report_fill(struct api_precision_report *rep,
                               const struct api_precision_input *in, size_t n_in,
                               const struct attn_precision *p, const struct attn_trace *low,
                               const struct attn_trace *exact)
{
    const struct attn_matrix *lows[5] = { &low->scores, &low->scaled, &low->masked,
                                          &low->weights, &low->output };
    const struct attn_matrix *exacts[5] = { &exact->scores, &exact->scaled, &exact->masked,
                                            &exact->weights, &exact->output };
    rep->n = 0;
    for (int s = 0; s < 5; s++)
        entry(rep, step_names[s], false, false)->e = attn_step_error_of(lows[s], exacts[s]);
    entry(rep, "lse", false, true)->e = per_row_error(low->summary.lse, exact->summary.lse, low->n_q);
    first_input(rep, in, n_in, p->format);
    if (rep->first == NULL && low->fault.step != ATTN_STEP_NONE) {
        rep->first = step_names[low->fault.step - ATTN_STEP_SCORES];
        rep->first_row = low->fault.row;
        rep->first_col = low->fault.col;
    }
}

void api_precision_report_backward(struct api_precision_report *rep,
                                   const struct attn_precision *p,
                                   const struct attn_matrix *d_out,
                                   const struct attn_grads *low, const struct attn_grads *exact,
                                   const struct attn_variants *v)
{
    for (int s = ATTN_GRAD_V; s <= ATTN_GRAD_SINK_LOGIT; s++) {
        if (!attn_grad_step_runs(s, v))
            continue;
        const struct attn_matrix l = attn_grads_step(low, s), x = attn_grads_step(exact, s);
        entry(rep, attn_grad_step_name(s), false, false)->e = attn_step_error_of(&l, &x);
    }
    if (rep->first != NULL)
        return;
    if (first_lost(d_out, p->format, &rep->first_row, &rep->first_col)) {
        rep->first = "grad_output";
    } else if (low->fault.step != ATTN_GRAD_NONE) {
        rep->first = attn_grad_step_name(low->fault.step);
        rep->first_row = low->fault.row;
        rep->first_col = low->fault.col;
    }
}

void api_precision_mh_report_fill(struct api_precision_report *rep,
                                  const struct api_precision_input *in, size_t n_in,
                                  const struct attn_precision *p,
                                  const struct attn_mh_trace *low,
                                  const struct attn_mh_trace *exact)
{
    static const char *const head_names[5] = { "scores", "scaled", "masked", "weights",
                                                "head_outputs" };
    rep->n = 0;
    entry(rep, "q", false, false)->e = attn_step_error_of(&low->q, &exact->q);
    entry(rep, "k", false, false)->e = attn_step_error_of(&low->k, &exact->k);
    entry(rep, "v", false, false)->e = attn_step_error_of(&low->v, &exact->v);
    for (int s = 0; s < 5; s++) {
        struct api_precision_entry *e = entry(rep, head_names[s], true, false);
        for (size_t h = 0; h < low->heads; h++) {
            const struct attn_trace *l = &low->head[h], *x = &exact->head[h];
            const struct attn_matrix *lm[5] = { &l->scores, &l->scaled, &l->masked, &l->weights,
                                                &l->output };
            const struct attn_matrix *xm[5] = { &x->scores, &x->scaled, &x->masked, &x->weights,
                                                &x->output };
            const struct attn_step_error one = attn_step_error_of(lm[s], xm[s]);
            merge(e, &one, h);
        }
    }
    entry(rep, "output", false, false)->e = attn_step_error_of(&low->output, &exact->output);
    struct api_precision_entry *lse = entry(rep, "lse", true, true);
    for (size_t h = 0; h < low->heads; h++) {
        const struct attn_step_error one = per_row_error(low->head[h].summary.lse,
                                                         exact->head[h].summary.lse, low->n_q);
        merge(lse, &one, h);
    }
    first_input(rep, in, n_in, p->format);
    const struct attn_mh_fault *f = &low->fault;
    if (rep->first != NULL || f->step == ATTN_MH_NONE)
        return;
    static const char *const mh_names[] = { [ATTN_MH_Q] = "q", [ATTN_MH_K] = "k",
                                            [ATTN_MH_V] = "v", [ATTN_MH_OUTPUT] = "output" };
    rep->first = f->step == ATTN_MH_HEAD ? head_names[f->head_step - ATTN_STEP_SCORES]
                                         : mh_names[f->step];
    rep->first_per_head = f->step == ATTN_MH_HEAD;
    rep->first_head = f->head;
    rep->first_row = f->row;
    rep->first_col = f->col;
}

/* One block of the multi-head backward, low against exact: a vector's cell is [j]. */
static void mh_grad_entry(struct api_precision_report *rep, const struct attn_mh_grads *low,
                          const struct attn_mh_grads *exact, enum attn_mh_grad_step s)
{
    const struct attn_matrix l = attn_mh_grads_step(low, s), x = attn_mh_grads_step(exact, s);
    bool vector = s == ATTN_MH_GRAD_B_O || (s >= ATTN_MH_GRAD_B_Q && s <= ATTN_MH_GRAD_B_V);
    struct api_precision_entry *e = entry(rep, attn_mh_grad_step_name(s, low->self), false, vector);
    e->e = vector ? per_row_error(l.data, x.data, l.cols) : attn_step_error_of(&l, &x);
}

void api_precision_mh_report_backward(struct api_precision_report *rep,
                                      const struct attn_precision *p,
                                      const struct attn_matrix *d_out,
                                      const struct attn_mh_problem *problem, bool sink,
                                      const struct attn_mh_grads *low,
                                      const struct attn_mh_grads *exact)
{
    static const enum attn_grad_step per_head[] = { ATTN_GRAD_WEIGHTS, ATTN_GRAD_DELTA,
                                                    ATTN_GRAD_MASKED };
    static const enum attn_mh_grad_step blocks[] = {
        ATTN_MH_GRAD_Q, ATTN_MH_GRAD_K, ATTN_MH_GRAD_V, ATTN_MH_GRAD_W_Q, ATTN_MH_GRAD_W_K,
        ATTN_MH_GRAD_W_V, ATTN_MH_GRAD_B_Q, ATTN_MH_GRAD_B_K, ATTN_MH_GRAD_B_V,
        ATTN_MH_GRAD_X_Q, ATTN_MH_GRAD_X_KV,
    };
    /* the answer's order: W_O's, the heads' steps, the blocks, the sink's, grad_bias */
    mh_grad_entry(rep, low, exact, ATTN_MH_GRAD_W_O);
    if (attn_mh_grad_step_runs(ATTN_MH_GRAD_B_O, problem))
        mh_grad_entry(rep, low, exact, ATTN_MH_GRAD_B_O);
    for (size_t s = 0; s < sizeof per_head / sizeof per_head[0]; s++) {
        bool delta = per_head[s] == ATTN_GRAD_DELTA;
        struct api_precision_entry *e = entry(rep, attn_grad_step_name(per_head[s]), true, delta);
        for (size_t h = 0; h < low->heads; h++) {
            const struct attn_matrix l = attn_grads_step(&low->head[h], per_head[s]);
            const struct attn_matrix x = attn_grads_step(&exact->head[h], per_head[s]);
            const struct attn_step_error one = delta ? per_row_error(l.data, x.data, l.rows)
                                                     : attn_step_error_of(&l, &x);
            merge(e, &one, h);
        }
    }
    for (size_t s = 0; s < sizeof blocks / sizeof blocks[0]; s++)
        if (attn_mh_grad_step_runs(blocks[s], problem))
            mh_grad_entry(rep, low, exact, blocks[s]);
    if (sink) /* a number a head: its cell is [h] */
        entry(rep, "grad_sink_logit", false, true)->e =
            per_row_error(low->grad_sink_logit, exact->grad_sink_logit, low->heads);
    if (attn_mh_grad_step_runs(ATTN_MH_GRAD_BIAS, problem))
        mh_grad_entry(rep, low, exact, ATTN_MH_GRAD_BIAS);
    if (rep->first != NULL)
        return;
    const struct attn_mh_grad_fault *f = &low->fault;
    if (first_lost(d_out, p->format, &rep->first_row, &rep->first_col)) {
        rep->first = "grad_output";
    } else if (f->step != ATTN_MH_GRAD_NONE) {
        rep->first_per_head = f->step == ATTN_MH_GRAD_HEAD;
        rep->first = rep->first_per_head ? attn_grad_step_name(f->head_step)
                                         : attn_mh_grad_step_name(f->step, low->self);
        rep->first_head = f->head;
        rep->first_row = f->row;
        rep->first_col = f->col;
    }
}

/* "step" and "cell" of the first cell that is not finite. */
static void write_first(struct jw *w, const struct api_precision_report *rep)
{
    JW_KEY(w, "step");
    jw_string(w, rep->first);
    JW_KEY(w, "cell");
    jw_array_begin(w);
    if (rep->first_per_head)
        jw_int(w, (long long)rep->first_head);
    jw_int(w, (long long)rep->first_row);
    jw_int(w, (long long)rep->first_col);
    jw_array_end(w);
}

static void write_error(struct jw *w, const struct api_precision_entry *x)
{
    const struct attn_step_error *e = &x->e;
    jw_object_begin(w);
    JW_KEY(w, "max_abs_error");
    jw_double(w, e->max_abs);
    JW_KEY(w, "max_rel_error");
    jw_double(w, e->max_rel);
    JW_KEY(w, "max_rel_cell");
    if (e->rel_row == ATTN_NO_INDEX) {
        jw_null(w);
    } else {
        jw_array_begin(w);
        if (x->per_head)
            jw_int(w, (long long)x->rel_head);
        jw_int(w, (long long)e->rel_row);
        if (!x->per_row)
            jw_int(w, (long long)e->rel_col);
        jw_array_end(w);
    }
    JW_KEY(w, "non_finite");
    jw_int(w, (long long)e->non_finite);
    jw_object_end(w);
}

void api_precision_write(struct jw *w, const struct api_precision *p,
                         const struct api_precision_report *rep)
{
    JW_KEY(w, "precision");
    jw_object_begin(w);
    JW_KEY(w, "format");
    jw_string(w, attn_format_name(p->rules.format));
    JW_KEY(w, "accumulate");
    jw_string(w, api_precision_accumulate_name(&p->rules));
    JW_KEY(w, "max_finite");
    jw_double(w, attn_format_max(p->rules.format));
    jw_object_end(w);
    JW_KEY(w, "precision_report");
    jw_object_begin(w);
    for (size_t s = 0; s < rep->n; s++) {
        jw_key(w, rep->entries[s].name);
        write_error(w, &rep->entries[s]);
    }
    jw_object_end(w);
    JW_KEY(w, "first_non_finite");
    if (rep->first == NULL) {
        jw_null(w);
        return;
    }
    jw_object_begin(w);
    write_first(w, rep);
    jw_object_end(w);
}

/* What fixes a non-finite cell where it first appears. */
static const char *hint_for(const char *step)
{
    static const struct {
        const char *step, *hint;
    } hints[] = {
        { "q", API_N("q holds a number past the format's range: scale q down before the "
                     "kernel reads it") },
        { "k", API_N("k holds a number past the format's range: scale k down before the "
                     "kernel reads it") },
        { "v", API_N("v holds a number past the format's range: scale v down") },
        { "bias", API_N("a bias past the format's range becomes -inf or +inf (-1e9 does in "
                        "float16): block those keys with mask instead, or keep the bias "
                        "within the format") },
        { "scores", API_N("accumulate in float32, or scale q by 1/sqrt(d_k) before Q @ K^T") },
        { "scaled", API_N("accumulate in float32, or scale q first") },
        { "masked", API_N("accumulate in float32, or keep the bias within the format") },
        { "weights", API_N("subtract the row max before exp, and accumulate in float32") },
        { "output", API_N("accumulate in float32") },
        { "head_outputs", API_N("accumulate in float32") },
        { "x", API_N("x holds a number past the format's range: scale it down (normalize it) "
                     "before the projections") },
        { "x_q", API_N("x holds a number past the format's range: scale it down (normalize it) "
                       "before the projections") },
        { "x_kv", API_N("x holds a number past the format's range: scale it down (normalize "
                        "it) before the projections") },
        { "grad_output", API_N("grad_output holds a number past the format's range: scale the "
                               "loss down, so that dO is smaller") },
    };
    for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++)
        if (strcmp(hints[i].step, step) == 0)
            return api_tr(hints[i].hint);
    if (strncmp(step, "grad_", 5) == 0 || strcmp(step, "delta") == 0) /* a backward step */
        return api_tr(API_N("accumulate in float32, or scale the loss down: a smaller dO keeps "
                            "the gradients within the format"));
    /* the weights and biases of a projection */
    return api_tr(API_N("a weight or bias past the format's range: the kernel cannot hold "
                        "it; rescale the layer"));
}

/* The warning's sentence, in the answer's language, into message. */
static void warning_message(char *message, size_t size, const struct api_precision *p,
                            const struct api_precision_report *rep)
{
    const char *format = attn_format_name(p->rules.format);
    double max = attn_format_max(p->rules.format);
    if (rep->first_per_head)
        snprintf(message, size, API_TR("%s of head %zu is not finite at cell [%zu, %zu] in %s, "
                                       "whose largest finite value is %g"),
                 rep->first, rep->first_head, rep->first_row, rep->first_col, format, max);
    else
        snprintf(message, size, API_TR("%s is not finite at cell [%zu, %zu] in %s, whose "
                                       "largest finite value is %g"),
                 rep->first, rep->first_row, rep->first_col, format, max);
}

void api_precision_write_warning(struct jw *w, const struct api_precision *p,
                                 const struct api_precision_report *rep)
{
    if (rep == NULL || rep->first == NULL)
        return;
    double max = attn_format_max(p->rules.format);
    char message[320];
    warning_message(message, sizeof message, p, rep);
    jw_object_begin(w);
    JW_KEY(w, "code");
    jw_string(w, "precision-overflow");
    write_first(w, rep);
    JW_KEY(w, "max_finite");
    jw_double(w, max);
    JW_KEY(w, "message");
    jw_string(w, message);
    JW_KEY(w, "hint");
    jw_string(w, hint_for(rep->first));
    jw_object_end(w);
}

void api_precision_text_header(struct api_buf *b, const struct api_precision *p)
{
    api_buf_printf(b, API_TR("precision  %s, sums in %s; the largest finite value %g\n"),
                   attn_format_name(p->rules.format), attn_format_name(p->rules.accumulate),
                   attn_format_max(p->rules.format));
}

/* A step of one number a row (lse, delta) or a vector's error line: its cell is [i]. */
static void text_step_per_row(struct api_buf *b, const char *format,
                              const struct api_precision_entry *x)
{
    const struct attn_step_error *e = &x->e;
    if (x->per_head)
        api_buf_printf(b, API_TR("  %s against float64: max abs error %.3g, max rel error %.3g "
                                 "at head %zu [%zu], %zu not finite\n"), format, e->max_abs,
                       e->max_rel, x->rel_head, e->rel_row, e->non_finite);
    else
        api_buf_printf(b, API_TR("  %s against float64: max abs error %.3g, max rel error %.3g "
                                 "at [%zu], %zu not finite\n"), format, e->max_abs, e->max_rel,
                       e->rel_row, e->non_finite);
}

void api_precision_text_step(struct api_buf *b, const struct api_precision *p,
                             const struct api_precision_report *rep, const char *step)
{
    const struct api_precision_entry *x = NULL;
    for (size_t s = 0; s < rep->n && x == NULL; s++)
        if (strcmp(rep->entries[s].name, step) == 0)
            x = &rep->entries[s];
    if (x == NULL)
        return;
    const struct attn_step_error *e = &x->e;
    const char *format = attn_format_name(p->rules.format);
    if (e->rel_row != ATTN_NO_INDEX && x->per_row) /* a number a row (a head): [i] */
        text_step_per_row(b, format, x);
    else if (e->rel_row != ATTN_NO_INDEX && x->per_head)
        api_buf_printf(b, API_TR("  %s against float64: max abs error %.3g, max rel error %.3g "
                                 "at head %zu [%zu, %zu], %zu not finite\n"), format, e->max_abs,
                       e->max_rel, x->rel_head, e->rel_row, e->rel_col, e->non_finite);
    else if (e->rel_row == ATTN_NO_INDEX)
        api_buf_printf(b, API_TR("  %s against float64: max abs error %.3g, no relative error, "
                                 "%zu not finite\n"), format, e->max_abs, e->non_finite);
    else
        api_buf_printf(b, API_TR("  %s against float64: max abs error %.3g, max rel error %.3g "
                                 "at [%zu, %zu], %zu not finite\n"), format, e->max_abs,
                       e->max_rel, e->rel_row, e->rel_col, e->non_finite);
}

void api_precision_text_warning(struct api_buf *b, const struct api_precision *p,
                                const struct api_precision_report *rep)
{
    if (rep == NULL || rep->first == NULL)
        return;
    char message[320];
    warning_message(message, sizeof message, p, rep);
    api_buf_printf(b, API_TR("\nwarning: %s\n"), message);
    api_buf_printf(b, API_TR("  hint: %s\n"), hint_for(rep->first));
}

void api_precision_svg_note(char *buf, size_t size, const struct api_precision *p,
                            const struct attn_matrix *weights)
{
    buf[0] = '\0';
    for (size_t i = 0; p->on && i < weights->rows; i++)
        for (size_t j = 0; j < weights->cols; j++)
            if (!isfinite(attn_at(weights, i, j))) {
                snprintf(buf, size, API_TR("; red: not finite in %s"),
                         attn_format_name(p->rules.format));
                return;
            }
}
