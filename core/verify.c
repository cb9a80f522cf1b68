/*
 * core/verify.c — the rules that judge a kernel's answer (see verify.h).
 */
#include "verify.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* |c − g| as the rules read it: +inf for a NaN, or for an infinity gold does not hold. */
static double cell_error(double c, double g, bool inf_any_sign)
{
    if (isnan(c))
        return INFINITY;
    if (isinf(g))
        return (c == g || (inf_any_sign && isinf(c))) ? 0.0 : INFINITY;
    return fabs(c - g);
}

double attn_verify_flash_atol(const double *gold, size_t n, enum attn_format f)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double g = attn_format_round(gold[i], f);
        if (!isfinite(g))
            continue;
        double there = attn_format_round(g + 0.3, f);
        double back = attn_format_round(there - 0.3, f);
        double e = fabs(back - g);
        worst = e > worst ? e : worst;
    }
    return 2.0 * worst;
}

/* ---- the measures ---- */

/* The candidate's cell i, or the constant when there is no candidate. */
static double cand_at(const double *c, double constant, size_t i)
{
    return c != NULL ? c[i] : constant;
}

struct measures {
    double max_abs, sum_abs, max_rel;
    size_t max_rel_index, nan_cells;
    double close_excess, close_bound, close_error; /* the cell over its bound by most */
};

static void measure(struct measures *m, const struct attn_verify_tensor *t, const double *c,
                    double constant, const struct attn_rule *rule)
{
    *m = (struct measures){ .max_rel_index = SIZE_MAX, .close_excess = -INFINITY };
    for (size_t i = 0; i < t->n; i++) {
        double x = cand_at(c, constant, i), g = t->gold[i];
        double e = cell_error(x, g, t->inf_any_sign);
        m->nan_cells += isnan(x);
        m->max_abs = e > m->max_abs ? e : m->max_abs;
        m->sum_abs += e;
        if (g != 0.0 && isfinite(g) && (m->max_rel_index == SIZE_MAX || e / fabs(g) > m->max_rel)) {
            m->max_rel = e / fabs(g);
            m->max_rel_index = i;
        }
        if (rule->kind == ATTN_RULE_CLOSE) {
            /* torch.allclose: an infinity is close only to itself, and e is 0 there. */
            double allowed = rule->atol + rule->rtol * (isfinite(g) ? fabs(g) : 0.0);
            double excess = e == INFINITY ? INFINITY : e - allowed;
            if (excess > m->close_excess) {
                m->close_excess = excess;
                m->close_bound = allowed;
                m->close_error = e;
            }
        }
    }
}

/* The naive reference's errors over its finite cells where gold is finite. */
static void naive_errors(struct attn_verify_check *out, const struct attn_verify_tensor *t)
{
    double sum = 0.0;
    for (size_t i = 0; i < t->n; i++) {
        double g = t->gold[i], x = t->naive[i];
        if (isfinite(g) && !isfinite(x)) {
            out->naive_non_finite++;
            continue;
        }
        double e = cell_error(x, g, t->inf_any_sign);
        e = isfinite(e) ? e : 0.0; /* gold's infinities the naive pass missed: not a bound */
        out->naive_max_abs_error = e > out->naive_max_abs_error ? e : out->naive_max_abs_error;
        sum += e;
    }
    out->naive_mean_abs_error = t->n > 0 ? sum / (double)t->n : 0.0;
}

/* Whether the measures pass the rule; sets bound, measured and atol. */
static bool rule_holds(struct attn_verify_check *out, const struct measures *m, size_t n,
                       const struct attn_rule *rule, double factor, double flash_atol)
{
    double mean = n > 0 ? m->sum_abs / (double)n : 0.0;
    switch (rule->kind) {
    case ATTN_RULE_FLASH:
        out->atol = flash_atol;
        out->bound = factor * out->naive_max_abs_error + flash_atol;
        out->measured = m->max_abs;
        break;
    case ATTN_RULE_FLEX:
        out->atol = 0.0;
        out->bound = rule->fudge * out->naive_mean_abs_error;
        out->measured = mean;
        break;
    case ATTN_RULE_CLOSE:
        out->atol = rule->atol;
        out->bound = m->close_bound;
        out->measured = m->close_error;
        return m->nan_cells == 0 && m->close_excess <= 0.0;
    }
    return m->nan_cells == 0 && out->measured <= out->bound;
}

/* ---- the worst cells ---- */

/* Keeps the ATTN_VERIFY_WORST largest errors, largest first (insertion: the list is short). */
static void keep_worst(struct attn_verify_check *out, const struct attn_verify_cell *cell)
{
    size_t at = out->n_worst;
    while (at > 0 && !(out->worst[at - 1].error >= cell->error))
        at--;
    if (at >= ATTN_VERIFY_WORST)
        return;
    size_t last = out->n_worst < ATTN_VERIFY_WORST ? out->n_worst : ATTN_VERIFY_WORST - 1;
    memmove(&out->worst[at + 1], &out->worst[at], (last - at) * sizeof out->worst[0]);
    out->worst[at] = *cell;
    if (out->n_worst < ATTN_VERIFY_WORST)
        out->n_worst++;
}

static void find_worst(struct attn_verify_check *out, const struct attn_verify_tensor *t)
{
    for (size_t i = 0; i < t->n; i++) {
        struct attn_verify_cell cell = { .index = i, .candidate = t->candidate[i],
                                         .gold = t->gold[i], .naive = t->naive[i] };
        cell.error = cell_error(cell.candidate, cell.gold, t->inf_any_sign);
        if (cell.error > 0.0)
            keep_worst(out, &cell);
    }
}

void attn_verify_judge(struct attn_verify_check *out, const struct attn_verify_tensor *t,
                       const struct attn_rule *rule, enum attn_format f)
{
    memset(out, 0, sizeof *out);
    struct measures m;
    measure(&m, t, t->candidate, 0.0, rule);
    naive_errors(out, t);
    double atol = rule->kind == ATTN_RULE_FLASH ? attn_verify_flash_atol(t->gold, t->n, f) : 0.0;
    out->pass = rule_holds(out, &m, t->n, rule, t->factor, atol);
    out->max_abs_error = m.max_abs;
    out->mean_abs_error = t->n > 0 ? m.sum_abs / (double)t->n : 0.0;
    out->max_rel_error = m.max_rel;
    out->max_rel_index = m.max_rel_index;
    out->nan_cells = m.nan_cells;
    find_worst(out, t);
}

/* ---- a constant candidate ---- */

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* gold's finite cells sorted into scratch; their count. */
static size_t sorted_finite(const struct attn_verify_tensor *t, double *scratch)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++)
        if (isfinite(t->gold[i]))
            scratch[k++] = t->gold[i];
    qsort(scratch, k, sizeof *scratch, by_value);
    return k;
}

static bool constant_passes(const struct attn_verify_tensor *t, const struct attn_rule *rule,
                            const struct attn_verify_check *naive, double atol, double c)
{
    struct measures m;
    measure(&m, t, NULL, c, rule);
    struct attn_verify_check out = *naive;
    return rule_holds(&out, &m, t->n, rule, t->factor, atol);
}

bool attn_verify_constant_passes(const struct attn_verify_tensor *t, const struct attn_rule *rule,
                                 enum attn_format f, double *scratch, double *constant)
{
    struct attn_verify_check naive = { 0 };
    naive_errors(&naive, t);
    double atol = rule->kind == ATTN_RULE_FLASH ? attn_verify_flash_atol(t->gold, t->n, f) : 0.0;
    size_t k = sorted_finite(t, scratch);
    double tries[3] = { 0.0, 0.0, 0.0 };
    size_t n_tries = 1;
    if (k > 0) {
        tries[n_tries++] = scratch[0] / 2 + scratch[k - 1] / 2; /* the midpoint: least max */
        tries[n_tries++] = scratch[k / 2];                      /* a median: least mean */
    }
    for (size_t i = 0; i < n_tries; i++)
        if (constant_passes(t, rule, &naive, atol, tries[i])) {
            *constant = tries[i];
            return true;
        }
    return false;
}

size_t attn_first_not_in_format(const struct attn_matrix *m, enum attn_format f)
{
    for (size_t i = 0; i < m->rows; i++)
        for (size_t j = 0; j < m->cols; j++) {
            double x = m->data[i * m->stride + j];
            if (isfinite(x) && attn_format_round(x, f) != x)
                return i * m->cols + j;
        }
    return SIZE_MAX;
}
