/*
 * api/endpoints/attention/variants.c — /v1/attention with variants (rope, softcap,
 * alibi, window, sinks, dropout): the run on core's attn_forward_variants, the bytes it
 * adds for admission, its overflow problems, and the variants' parts of the answer
 * (the ops of the steps, their matrices in JSON, their steps in text).
 *
 * The plain pass (attention/run.c) answers every request that asks for no variant, so
 * those answers keep their bits; this file only runs when one is asked for.
 */
#include "api/endpoints/attention/attention.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/endpoints/answer.h"
#include "api/endpoints/attention/variants.h"
#include "api/i18n/lang.h"
#include "api/json/matrix_write.h"

size_t api_attention_variants_bytes(const struct api_attention_req *r)
{
    struct attn_variants v = api_variants_for_head(&r->variants, 0);
    return attn_vtrace_bytes(r->q.rows, r->k.rows, r->q.cols, r->v.cols, &v);
}

/* Shared with attention/run.c, which calls down into this file (never the other way). */
struct attn_problem api_attention_problem(const struct api_attention_req *r)
{
    struct attn_problem p = {
        .q = &r->q, .k = &r->k, .v = &r->v,
        .bias = api_grid_bias(&r->grid),
        .mask = api_grid_mask(&r->grid),
        .scale = r->scale,
    };
    return p;
}

bool api_attention_no_memory(const struct api_attention_req *r, struct api_error *err)
{
    api_error_set(err, API_UNAVAILABLE, "no memory for a %zu x %zu attention", r->q.rows,
                  r->k.rows);
    return false;
}

/* The problem for an overflow in a step of the variant path, pointing at its input. */
static void overflow_problem(const struct api_attention_req *r, const char *prefix,
                             const struct attn_vtrace *vt, const struct attn_fault *f,
                             struct api_error *err)
{
    const char *step = attn_variant_step_name(vt->fault_step);
    api_error_set(err, API_NUMERIC_OVERFLOW, "step %s produced a non-finite number at cell "
                  "[%zu, %zu]", step, f->row, f->col);
    api_error_step_cell(err, step, f->row, f->col);
    switch (vt->fault_step) {
    case ATTN_STEP_Q_ROPE:
    case ATTN_STEP_K_ROPE: {
        bool is_q = vt->fault_step == ATTN_STEP_Q_ROPE;
        if (is_q && r->q_is_vector)
            api_error_at(err, "%s/q", prefix);
        else
            api_error_at(err, "%s/%s/%zu", prefix, is_q ? "q" : "k", f->row);
        api_error_hint(err, "rotating %s row %zu adds two of its numbers beyond the largest "
                       "double (~1.8e308): scale %s down", is_q ? "q" : "k", f->row,
                       is_q ? "q" : "k");
        break;
    }
    default:
        api_attention_overflow_at(r, prefix, vt->fault_step, f->row, f->col, err);
    }
}

bool api_attention_run_variants(const struct api_attention_req *r, const char *prefix,
                                struct attn_trace *trace, struct api_error *err)
{
    struct attn_vtrace *vt = r->vsteps; /* the request's, filled here */
    struct attn_variants v = api_variants_for_head(&r->variants, 0);
    /* Keys a window hides are not multiplied when no step before masked is shown
     * (explain shows its row's scores, scaled and softcapped). */
    v.band_only = !r->for_page && !r->explain.on && !(r->include & ((1ul << API_PART_SCORES) |
                                                 (1ul << API_PART_SCALED) |
                                                 (1ul << API_PART_SOFTCAPPED)));
    attn_vtrace_free(vt);
    if (attn_vtrace_alloc(vt, r->q.rows, r->k.rows, r->q.cols, r->v.cols, &v) != ATTN_OK)
        return api_attention_no_memory(r, err);
    struct attn_problem p = api_attention_problem(r);
    enum attn_status st = attn_forward_variants(vt, &p, &v);
    /* The five steps go to the caller's trace (freed with attn_trace_free); the
     * variants' own stay in r->vsteps for the writers. */
    *trace = vt->base;
    memset(&vt->base, 0, sizeof vt->base);
    if (st == ATTN_OK)
        return true;
    if (st == ATTN_EOVERFLOW)
        overflow_problem(r, prefix, vt, &trace->fault, err);
    else
        api_error_set(err, st == ATTN_ENOMEM ? API_UNAVAILABLE : API_INTERNAL,
                      "the computation failed: %s", attn_status_str(st));
    attn_trace_free(trace);
    return false;
}

void api_variant_ops_of(const struct api_variants *v, bool block_semantics,
                        struct api_variant_ops *ops)
{
    snprintf(ops->scores, sizeof ops->scores, "%s", v->has_rope ? "Q_rope @ K_rope^T" : "Q @ K^T");
    /* A formula with words in it: the words speak the answer's language. */
    snprintf(ops->masked, sizeof ops->masked, API_TR("%s + bias%s, -inf where mask is %s%s%s"),
             v->softcap > 0 ? "softcapped" : "scaled",
             v->alibi ? " - slope * |i + n_k - n_q - j|" : "", block_semantics ? "1" : "0",
             v->window ? API_TR(" or the key is outside the window") : "",
             api_masks_hide(&v->masks) ? API_TR(" or outside the query's document or chunk")
                                       : "");
    snprintf(ops->weights, sizeof ops->weights, "%s",
             v->sink ? API_TR("softmax([masked, sink_logit], axis=-1) without the sink's column")
                     : "softmax(masked, axis=-1)");
    snprintf(ops->output, sizeof ops->output, "%s", v->dropout ? "dropped @ V" : "weights @ V");
}

/* Appends text to buf (len bytes, NUL-terminated), cutting it short rather than overflowing. */
static void append(char *buf, size_t len, const char *text)
{
    size_t used = strlen(buf);
    if (used + 1 < len)
        snprintf(buf + used, len - used, "%s", text);
}

void api_variants_describe(const struct api_variants *v, char *buf, size_t len)
{
    char part[96];
    buf[0] = '\0';
    if (!v->any || len == 0)
        return;
    append(buf, len, ";");
    if (v->has_rope) {
        snprintf(part, sizeof part, " RoPE (%s, r %zu),",
                 v->rope.layout == ATTN_ROPE_HALF ? API_TR("half") : API_TR("interleaved"),
                 v->rope.rotated);
        append(buf, len, part);
    }
    if (v->softcap > 0) {
        snprintf(part, sizeof part, " softcap %g,", v->softcap);
        append(buf, len, part);
    }
    if (v->alibi)
        append(buf, len, v->alibi_auto ? API_TR(" ALiBi (auto),") : " ALiBi,");
    if (v->window) {
        char left[48], right[48];
        snprintf(left, sizeof left, "%s", API_TR("unbounded"));
        snprintf(right, sizeof right, "%s", API_TR("unbounded"));
        if (v->has_left)
            snprintf(left, sizeof left, "%zu", v->left);
        if (v->has_right)
            snprintf(right, sizeof right, "%zu", v->right);
        snprintf(part, sizeof part, API_TR(" window %s back, %s ahead,"), left, right);
        append(buf, len, part);
    }
    if (v->window && v->sink_tokens > 0) {
        snprintf(part, sizeof part, v->sink_tokens == 1 ? API_TR(" %zu sink token,")
                                                        : API_TR(" %zu sink tokens,"),
                 v->sink_tokens);
        append(buf, len, part);
    }
    if (v->sink)
        append(buf, len, API_TR(" a sink logit,"));
    if (v->dropout) {
        snprintf(part, sizeof part, API_TR(" dropout %g (weights before it),"), v->dropout_p);
        append(buf, len, part);
    }
    const struct api_masks *m = &v->masks; /* the masks of training: each rule named */
    if (m->doc_q != NULL) {
        snprintf(part, sizeof part, API_TR(" %zu documents,"), m->n_docs);
        append(buf, len, part);
    }
    if (m->prefix > 0) {
        snprintf(part, sizeof part, API_TR(" prefix %zu,"), m->prefix);
        append(buf, len, part);
    }
    if (m->chunk > 0) {
        snprintf(part, sizeof part, API_TR(" chunk %zu,"), m->chunk);
        append(buf, len, part);
    }
    size_t used = strlen(buf);
    if (used > 0 && buf[used - 1] == ',')
        buf[used - 1] = '\0';
    if (strcmp(buf, ";") == 0) /* a rule without words here: no empty clause */
        buf[0] = '\0';
}

/* The variant steps after `stage` (enum api_variant_stage), as api_variant_step_info. */
size_t api_variant_steps_at(const struct api_variants *v, enum api_variant_stage stage,
                            struct api_variant_step *out)
{
    size_t n = 0;
    if (stage == API_STAGE_BEFORE_SCORES && v->has_rope) {
        out[n++] = (struct api_variant_step){ "q_rope", API_PART_Q_ROPE, 'q',
            v->rope.layout == ATTN_ROPE_HALF ? API_TR("rotate q's first r columns, c with c + r/2")
                                             : API_TR("rotate q's first r columns, 2c with 2c + 1") };
        out[n++] = (struct api_variant_step){ "k_rope", API_PART_K_ROPE, 'k',
            v->rope.layout == ATTN_ROPE_HALF ? API_TR("rotate k's first r columns, c with c + r/2")
                                             : API_TR("rotate k's first r columns, 2c with 2c + 1") };
    }
    if (stage == API_STAGE_AFTER_SCALED && v->softcap > 0)
        out[n++] = (struct api_variant_step){ "softcapped", API_PART_SOFTCAPPED, 'g',
                                              "softcap * tanh(scaled / softcap)" };
    if (stage == API_STAGE_AFTER_WEIGHTS && v->dropout) {
        out[n++] = (struct api_variant_step){ "dropout_keep", API_PART_DROPOUT_KEEP, 'g',
                                              API_TR("1 where u >= p, u from the generator (stream 7)") };
        out[n++] = (struct api_variant_step){ "dropped", API_PART_DROPPED, 'g',
                                              "weights * dropout_keep / (1 - p)" };
    }
    return n;
}

const struct attn_matrix *api_variant_step_matrix(const struct attn_vtrace *vt, int part)
{
    switch (part) {
    case API_PART_Q_ROPE: return &vt->q_rope;
    case API_PART_K_ROPE: return &vt->k_rope;
    case API_PART_SOFTCAPPED: return &vt->softcapped;
    case API_PART_DROPOUT_KEEP: return &vt->keep;
    default: return &vt->dropped;
    }
}

void api_attention_write_variant_steps(struct jw *w, const struct api_attention_req *r)
{
    if (!r->variants.any)
        return;
    for (int stage = 0; stage < API_STAGE_COUNT; stage++) {
        struct api_variant_step steps[2];
        size_t n = api_variant_steps_at(&r->variants, (enum api_variant_stage)stage, steps);
        for (size_t s = 0; s < n; s++) {
            if (!(r->include & (1ul << steps[s].part)))
                continue;
            const struct attn_matrix *m = api_variant_step_matrix(r->vsteps, steps[s].part);
            jw_key(w, steps[s].name);
            if (r->q_is_vector && steps[s].operand != 'k')
                jw_double_array(w, m->data, m->cols);
            else
                api_write_matrix(w, m);
        }
    }
}

void api_attention_text_variant_steps(struct api_buf *b, const struct api_attention_req *r,
                                      enum api_variant_stage stage, int *number, int decimals,
                                      const struct api_labels *queries,
                                      const struct api_labels *keys)
{
    struct api_variant_step steps[2];
    size_t n = r->variants.any ? api_variant_steps_at(&r->variants, stage, steps) : 0;
    if (stage == API_STAGE_AFTER_WEIGHTS && r->variants.sink) {
        api_buf_puts(b, API_TR("  sink_weight (the sink logit's share of each row):"));
        for (size_t i = 0; i < r->q.rows; i++) {
            char num[API_TEXT_NUMBER];
            api_text_number(num, r->vsteps->sink_weight[i], decimals);
            api_buf_printf(b, " %s", num);
        }
        api_buf_puts(b, "\n");
    }
    for (size_t s = 0; s < n; s++) {
        const struct attn_matrix *m = api_variant_step_matrix(r->vsteps, steps[s].part);
        bool is_k = steps[s].operand == 'k';
        char shape[API_TEXT_SHAPE];
        api_text_shape(shape, m->rows, m->cols, r->q_is_vector && !is_k);
        api_buf_printf(b, API_TR("\nstep %d  %s = %s  -> %s\n"), (*number)++, steps[s].name,
                       steps[s].op, shape);
        if (!(r->include & (1ul << steps[s].part)))
            continue;
        struct api_text_matrix tm = {
            .data = m->data, .rows = m->rows, .cols = m->cols, .stride = m->stride,
            .row_labels = is_k ? *keys : *queries,
            .col_labels = steps[s].operand == 'g' ? *keys : (struct api_labels){ NULL, 0, "" },
            .decimals = decimals,
            .indent = "  ",
        };
        api_text_matrix(b, &tm);
    }
}
