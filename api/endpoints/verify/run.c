/*
 * api/endpoints/verify/run.c — admitting and running a verify request: the problem in
 * float64 (gold) and in the candidate's format (naive), then every tensor the candidate
 * holds judged by the rule (core/verify.h), and the warnings a careful reviewer would
 * give: a tolerance a constant passes, inputs the format cannot hold.
 */
#include "api/endpoints/verify/verify.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- admission ---- */

static size_t add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t api_verify_problem_bytes(const struct api_attention_req *gold,
                                const struct api_attention_req *naive, size_t cells,
                                bool include_gold, size_t body_len)
{
    /* a page holds no more than the JSON: the worst cells, a line each */
    size_t bytes = api_attention_working_set(gold, API_FORMAT_JSON, body_len);
    if (naive != NULL)
        bytes = add(bytes, api_attention_working_set(naive, API_FORMAT_JSON, 0));
    /* the candidate's numbers, the median's scratch, and gold written back when asked */
    size_t per_cell = 2 * sizeof(double) + (include_gold ? 32 : 0);
    return add(bytes, cells > SIZE_MAX / per_cell ? SIZE_MAX : cells * per_cell);
}

size_t api_verify_working_set(const struct api_verify_req *r, enum api_format format,
                              size_t body_len)
{
    (void)format;
    const struct api_verify_verdict *v = &r->verdict;
    size_t cells = 0;
    for (int t = 0; t < API_VERIFY_TENSORS; t++)
        cells = add(cells, v->candidate[t].rows * v->candidate[t].cols);
    return api_verify_problem_bytes(&r->gold.req, r->naive_on ? &r->naive.req : NULL, cells,
                                    v->include_gold, body_len);
}

const char *api_verify_limit_field(const struct api_verify_req *r)
{
    return api_attention_limit_field(&r->gold.req);
}

/* ---- the runs ---- */

bool api_verify_run_pass(struct api_verify_pass *p, struct api_error *err)
{
    struct api_attention_req *r = &p->req;
    if (!api_attention_fill_random(r, err))
        return false;
    if (r->streamed)
        return api_attention_stream(r, "", &p->stream, err) &&
               (!r->backward.on || api_attention_stream_backward(r, &p->stream, err));
    return api_attention_run(r, "", &p->trace, err);
}

const double *api_verify_cells(const struct api_verify_pass *p, enum api_verify_tensor t,
                               size_t *n)
{
    const struct api_attention_req *r = &p->req;
    const struct api_backward_run *b = r->backward.run;
    const struct attn_matrix *m = NULL;
    switch (t) {
    case API_VERIFY_OUTPUT:
        m = r->streamed ? &p->stream.output : &p->trace.output;
        break;
    case API_VERIFY_LSE:
        *n = r->q.rows;
        return r->streamed ? p->stream.summary.lse : p->trace.summary.lse;
    case API_VERIFY_GRAD_Q:
        m = b == NULL ? NULL : r->streamed ? &b->streamed.grad_q : &b->grads.grad_q;
        break;
    case API_VERIFY_GRAD_K:
        m = b == NULL ? NULL : r->streamed ? &b->streamed.grad_k : &b->grads.grad_k;
        break;
    case API_VERIFY_GRAD_V:
        m = b == NULL ? NULL : r->streamed ? &b->streamed.grad_v : &b->grads.grad_v;
        break;
    default:
        break;
    }
    *n = m != NULL ? m->rows * m->cols : 0;
    return m != NULL && m->stride == m->cols ? m->data : NULL; /* every one is contiguous */
}

/* ---- the judgement ---- */

/* Tensor t of the candidate against gold and naive, with the constant that would pass. */
static bool judge(struct api_verify_verdict *r, enum api_verify_tensor t, double *scratch,
                  struct api_error *err)
{
    size_t n_gold = 0, n_naive = 0;
    const double *gold = api_verify_cells(r->gold, t, &n_gold);
    const double *naive = api_verify_cells(r->naive, t, &n_naive);
    const struct attn_matrix *c = &r->candidate[t];
    if (gold == NULL || naive == NULL || n_gold != c->rows * c->cols || n_naive != n_gold) {
        api_error_set(err, API_INTERNAL, "%s of the reference is missing",
                      api_verify_tensor_name(t));
        return false;
    }
    struct attn_verify_tensor x = { c->data, gold, naive, n_gold,
                                    t <= API_VERIFY_LSE ? 2.0 : 3.0, t == API_VERIFY_LSE };
    attn_verify_judge(&r->checks[t], &x, &r->rule, r->format);
    r->inadequate[t] = attn_verify_constant_passes(&x, &r->rule, r->format, scratch,
                                                   &r->constant[t]);
    return true;
}

/* The inputs the kernel read, each checked against the format: the first cell it cannot
 * hold exactly (the kernel saw that cell rounded, gold did not). */
static void check_inputs(struct api_verify_verdict *r)
{
    const struct api_attention_req *g = &r->gold->req;
    const struct api_backward *b = &g->backward;
    struct attn_matrix d_out = b->d_out;
    if (b->on && b->seeded && b->run != NULL)
        d_out = attn_matrix_view(b->run->seeded, g->q.rows, g->v.cols);
    const struct {
        const char *name;
        const struct attn_matrix *m;
    } inputs[API_VERIFY_INPUTS] = {
        { "q", &g->q }, { "k", &g->k }, { "v", &g->v }, { "bias", &g->grid.bias },
        { "backward.grad_output", &d_out },
    };
    r->n_not_in_format = 0;
    for (size_t i = 0; i < API_VERIFY_INPUTS; i++) {
        const struct attn_matrix *m = inputs[i].m;
        size_t at = m->data != NULL ? attn_first_not_in_format(m, r->format) : SIZE_MAX;
        if (at == SIZE_MAX)
            continue;
        r->not_in_format[r->n_not_in_format++] = (struct api_verify_not_in_format){
            inputs[i].name, at / m->cols, at % m->cols, m->data[(at / m->cols) * m->stride +
                                                                at % m->cols] };
    }
}

static size_t most_cells(const struct api_verify_verdict *r)
{
    size_t most = 0;
    for (int t = 0; t < API_VERIFY_TENSORS; t++) {
        size_t n = r->candidate[t].rows * r->candidate[t].cols;
        most = n > most ? n : most;
    }
    return most;
}

bool api_verify_judge(struct api_verify_verdict *r, struct api_error *err)
{
    double *scratch = malloc(most_cells(r) * sizeof *scratch);
    if (scratch == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "the verdict");
        return false;
    }
    bool ok = true;
    r->pass = true;
    for (int t = 0; ok && t < API_VERIFY_TENSORS; t++) {
        if (r->candidate[t].data == NULL)
            continue;
        ok = judge(r, (enum api_verify_tensor)t, scratch, err);
        r->pass = r->pass && r->checks[t].pass;
    }
    free(scratch);
    check_inputs(r);
    return ok;
}

bool api_verify_run(struct api_verify_req *r, struct api_error *err)
{
    if (!api_verify_run_pass(&r->gold, err) || (r->naive_on && !api_verify_run_pass(&r->naive, err)))
        return false;
    r->verdict.gold = &r->gold;
    r->verdict.naive = r->naive_on ? &r->naive : &r->gold;
    return api_verify_judge(&r->verdict, err);
}
