/*
 * api/endpoints/verify/page.c — the verdict as text: one screen a CI log can show, the
 * verdict first, then each tensor's line with the bound the rule allowed, its three
 * worst cells, and the warnings.
 */
#include "api/endpoints/verify/verify.h"

#include <math.h>
#include <stdint.h>

#include "api/i18n/lang.h"

#define TEXT_WORST 3

static const char *verdict_of(bool pass)
{
    if (pass)
        return API_TR("pass");
    return API_TR("FAIL");
}

static const char *sign_of(bool pass)
{
    return pass ? "<=" : ">";
}

static void cell_text(struct api_buf *b, const struct api_verify_verdict *r, enum api_verify_tensor t,
                      size_t index)
{
    size_t dims[2];
    if (api_verify_shape(&r->gold->req, t, dims) == 1)
        api_buf_printf(b, "[%zu]", index);
    else
        api_buf_printf(b, "[%zu, %zu]", index / dims[1], index % dims[1]);
}

/* The rule's sum, as the check computed it. */
static void bound_text(struct api_buf *b, const struct api_verify_verdict *r,
                       const struct attn_verify_check *c, double factor)
{
    switch (r->rule.kind) {
    case ATTN_RULE_FLASH:
        api_buf_printf(b, API_TR("  max |candidate - gold| %.3g %s %.3g = %g x naive %.3g + "
                                 "atol %.3g\n"), c->measured, sign_of(c->pass), c->bound, factor,
                       c->naive_max_abs_error, c->atol);
        break;
    case ATTN_RULE_FLEX:
        api_buf_printf(b, API_TR("  mean |candidate - gold| %.3g %s %.3g = fudge %g x naive "
                                 "mean %.3g\n"), c->measured, sign_of(c->pass), c->bound,
                       r->rule.fudge, c->naive_mean_abs_error);
        break;
    case ATTN_RULE_CLOSE:
        api_buf_printf(b, API_TR("  |candidate - gold| %.3g %s atol + rtol x |gold| = %.3g at "
                                 "the cell furthest over\n"), c->measured, sign_of(c->pass),
                       c->bound);
        break;
    }
}

static void check_text(struct api_buf *b, const struct api_verify_verdict *r, enum api_verify_tensor t)
{
    const struct attn_verify_check *c = &r->checks[t];
    size_t dims[2];
    int rank = api_verify_shape(&r->gold->req, t, dims);
    api_buf_printf(b, "%-7s ", api_verify_tensor_name(t));
    if (rank == 1)
        api_buf_printf(b, "(%zu)  ", dims[0]);
    else
        api_buf_printf(b, "(%zu, %zu)  ", dims[0], dims[1]);
    api_buf_printf(b, "%s\n", verdict_of(c->pass));
    bound_text(b, r, c, t <= API_VERIFY_LSE ? 2.0 : 3.0);
    api_buf_printf(b, API_TR("  mean error %.3g, largest relative error %.3g, NaN cells %zu\n"),
                   c->mean_abs_error, c->max_rel_error, c->nan_cells);
    for (size_t i = 0; i < c->n_worst && i < TEXT_WORST; i++) {
        const struct attn_verify_cell *x = &c->worst[i];
        api_buf_printf(b, "  ");
        cell_text(b, r, t, x->index);
        api_buf_printf(b, API_TR("  candidate %.9g  gold %.9g  naive %.9g\n"), x->candidate,
                       x->gold, x->naive);
    }
}

static void warnings_text(struct api_buf *b, const struct api_verify_verdict *r)
{
    for (int t = 0; t < API_VERIFY_TENSORS; t++)
        if (r->candidate[t].data != NULL && r->inadequate[t])
            api_buf_printf(b, API_TR("warning inadequate-tolerance: a constant %g in every cell "
                                     "of %s would pass this rule\n"), r->constant[t],
                           api_verify_tensor_name((enum api_verify_tensor)t));
    for (size_t i = 0; i < r->n_not_in_format; i++) {
        const struct api_verify_not_in_format *x = &r->not_in_format[i];
        api_buf_printf(b, API_TR("warning input-not-in-format: %s[%zu, %zu] = %.17g is not "
                                 "exactly a %s number\n"), x->input, x->row, x->col, x->value,
                       attn_format_name(r->format));
    }
}

void api_verify_text(struct api_buf *b, const struct api_verify_verdict *r)
{
    static const char *const rules[] = { "flash", "flex", "allclose" };
    api_buf_printf(b, API_TR("verify  %s  (rule %s, format %s)\n"),
                   verdict_of(r->pass), rules[r->rule.kind],
                   attn_format_name(r->format));
    for (int t = 0; t < API_VERIFY_TENSORS; t++)
        if (r->candidate[t].data != NULL)
            check_text(b, r, (enum api_verify_tensor)t);
    warnings_text(b, r);
}
