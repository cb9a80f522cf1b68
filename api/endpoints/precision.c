/*
 * api/endpoints/precision.c — the report of a request computed in a low format (see
 * precision.h).
 */
#include "api/endpoints/precision.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/i18n/lang.h"

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

void api_precision_report_fill(struct api_precision_report *rep,
                               const struct api_precision_inputs *in,
                               const struct attn_precision *p, const struct attn_trace *low,
                               const struct attn_trace *exact)
{
    const struct attn_matrix *lows[5] = { &low->scores, &low->scaled, &low->masked,
                                          &low->weights, &low->output };
    const struct attn_matrix *exacts[5] = { &exact->scores, &exact->scaled, &exact->masked,
                                            &exact->weights, &exact->output };
    for (int s = 0; s < 5; s++)
        rep->steps[s] = attn_step_error_of(lows[s], exacts[s]);
    struct attn_matrix lse_low = attn_matrix_view(low->summary.lse, 1, low->n_q);
    struct attn_matrix lse_exact = attn_matrix_view(exact->summary.lse, 1, exact->n_q);
    rep->lse = attn_step_error_of(&lse_low, &lse_exact);
    rep->lse.rel_row = rep->lse.rel_col; /* a number a row: its cell is the row */
    const struct { const char *name; const struct attn_matrix *m; } inputs[] = {
        { "q", in->q }, { "k", in->k }, { "v", in->v }, { "bias", in->bias },
    };
    rep->first = NULL;
    for (size_t i = 0; i < 4 && rep->first == NULL; i++)
        if (first_lost(inputs[i].m, p->format, &rep->first_row, &rep->first_col))
            rep->first = inputs[i].name;
    if (rep->first == NULL && low->fault.step != ATTN_STEP_NONE) {
        rep->first = step_names[low->fault.step - ATTN_STEP_SCORES];
        rep->first_row = low->fault.row;
        rep->first_col = low->fault.col;
    }
}

/* "step" and "cell" of the first cell that is not finite. */
static void write_first(struct jw *w, const struct api_precision_report *rep)
{
    JW_KEY(w, "step");
    jw_string(w, rep->first);
    JW_KEY(w, "cell");
    jw_array_begin(w);
    jw_int(w, (long long)rep->first_row);
    jw_int(w, (long long)rep->first_col);
    jw_array_end(w);
}

static void write_error(struct jw *w, const struct attn_step_error *e, bool per_row)
{
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
        jw_int(w, (long long)e->rel_row);
        if (!per_row)
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
    for (int s = 0; s < 5; s++) {
        jw_key(w, step_names[s]);
        write_error(w, &rep->steps[s], false);
    }
    JW_KEY(w, "lse");
    write_error(w, &rep->lse, true);
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
    };
    for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++)
        if (strcmp(hints[i].step, step) == 0)
            return api_tr(hints[i].hint);
    return "";
}

/* The warning's sentence, in the answer's language, into message. */
static void warning_message(char *message, size_t size, const struct api_precision *p,
                            const struct api_precision_report *rep)
{
    snprintf(message, size, API_TR("%s is not finite at cell [%zu, %zu] in %s, whose "
                                   "largest finite value is %g"),
             rep->first, rep->first_row, rep->first_col, attn_format_name(p->rules.format),
             attn_format_max(p->rules.format));
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

void api_precision_text_step(struct api_buf *b, const struct api_precision *p,
                             const struct api_precision_report *rep, int step)
{
    const struct attn_step_error *e = &rep->steps[step];
    const char *format = attn_format_name(p->rules.format);
    if (e->rel_row == ATTN_NO_INDEX)
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
