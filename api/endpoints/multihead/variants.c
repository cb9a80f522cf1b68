/*
 * api/endpoints/multihead/variants.c — /v1/multihead with variants: each head runs
 * them with its own ALiBi slope, sink logit and dropout cells (core's
 * attn_mh_forward_variants), and the answer shows their steps per head: q_rope,
 * softcapped, dropout_keep and dropped as [h][...], k_rope per kv head, sink_weight
 * per head in the summary.
 *
 * Requests without variants keep the plain pass (multihead/run.c) and its bits.
 */
#include "api/endpoints/multihead/multihead.h"

#include <stdlib.h>

#include "api/endpoints/multihead/variants.h"
#include "api/endpoints/attention/variants.h"
#include "api/i18n/lang.h"
#include "api/json/matrix_write.h"

enum attn_status api_multihead_run_variants(const struct api_multihead_req *r,
                                            struct attn_mh_trace *t,
                                            const struct attn_mh_problem *p)
{
    size_t h = r->heads;
    struct attn_variants *of = malloc(h * sizeof *of);
    if (of == NULL)
        return ATTN_ENOMEM;
    enum attn_status st = ATTN_OK;
    for (size_t i = 0; i < h && st == ATTN_OK; i++) {
        of[i] = api_variants_for_head(&r->variants, i);
        /* Keys a window hides are not multiplied when no step before masked is shown
         * (the text and SVG pages include every step; explain shows its row's). */
        of[i].band_only = !r->explain.on && !(r->include & ((1ul << API_MH_SCORES) | (1ul << API_MH_SCALED) |
                                          (1ul << API_MH_SOFTCAPPED)));
        attn_vtrace_free(&r->vsteps[i]);
        st = attn_vtrace_alloc_steps(&r->vsteps[i], t->n_q, t->n_k, r->d_k, &of[i]);
    }
    if (st == ATTN_OK)
        st = attn_mh_forward_variants(t, p, of, r->vsteps);
    free(of);
    return st;
}

/* The variant steps' names, ops and shapes at `stage`, as /v1/attention has them. */
int api_multihead_write_variant_steps(struct jw *w, const struct api_multihead_req *r,
                                      int stage, int number, size_t n_q, size_t n_k)
{
    struct api_variant_step steps[2];
    size_t n = r->variants.any
                   ? api_variant_steps_at(&r->variants, (enum api_variant_stage)stage, steps)
                   : 0;
    for (size_t s = 0; w != NULL && s < n; s++) {
        char c = steps[s].operand;
        jw_object_begin(w);
        JW_KEY(w, "step");
        jw_int(w, number + (int)s);
        JW_KEY(w, "name");
        jw_string(w, steps[s].name);
        JW_KEY(w, "op");
        jw_string(w, steps[s].op);
        JW_KEY(w, "shape"); /* per head; k_rope per kv head */
        jw_array_begin(w);
        jw_int(w, (long long)(c == 'k' ? r->kv_heads : r->heads));
        jw_int(w, (long long)(c == 'k' ? n_k : n_q));
        jw_int(w, (long long)(c == 'g' ? n_k : r->d_k));
        jw_array_end(w);
        jw_object_end(w);
    }
    return (int)n;
}

void api_multihead_write_variants(struct jw *w, const struct api_multihead_req *r)
{
    static const int parts[] = { API_MH_Q_ROPE, API_MH_K_ROPE, API_MH_SOFTCAPPED,
                                 API_MH_DROPOUT_KEEP, API_MH_DROPPED };
    static const int steps_of[] = { API_PART_Q_ROPE, API_PART_K_ROPE, API_PART_SOFTCAPPED,
                                    API_PART_DROPOUT_KEEP, API_PART_DROPPED };
    static const char *const keys[] = { "q_rope", "k_rope", "softcapped", "dropout_keep",
                                        "dropped" };
    if (!r->variants.any)
        return;
    for (int p = 0; p < 5; p++) {
        if (!(r->include & (1ul << parts[p])) ||
            api_variant_step_matrix(&r->vsteps[0], steps_of[p])->data == NULL)
            continue;
        jw_key(w, keys[p]);
        jw_array_begin(w);
        for (size_t i = 0; i < r->heads; i++) {
            /* k_rope once per kv head: the first query head that reads it. */
            if (parts[p] == API_MH_K_ROPE && i > 0 &&
                attn_mh_kv_head(i, r->heads, r->kv_heads) ==
                    attn_mh_kv_head(i - 1, r->heads, r->kv_heads))
                continue;
            api_write_matrix(w, api_variant_step_matrix(&r->vsteps[i], steps_of[p]));
        }
        jw_array_end(w);
    }
}

void api_multihead_text_variant_steps(struct api_buf *b, const struct api_multihead_req *r,
                                      int stage, int *number, const struct api_labels *queries,
                                      const struct api_labels *keys)
{
    static const int mh_part[] = {
        [API_PART_Q_ROPE] = API_MH_Q_ROPE, [API_PART_K_ROPE] = API_MH_K_ROPE,
        [API_PART_SOFTCAPPED] = API_MH_SOFTCAPPED, [API_PART_DROPOUT_KEEP] = API_MH_DROPOUT_KEEP,
        [API_PART_DROPPED] = API_MH_DROPPED,
    };
    struct api_variant_step steps[2];
    size_t n = r->variants.any
                   ? api_variant_steps_at(&r->variants, (enum api_variant_stage)stage, steps)
                   : 0;
    int decimals = r->grid.round >= 0 ? r->grid.round : 4;
    if (stage == API_STAGE_AFTER_WEIGHTS && r->variants.sink) {
        api_buf_puts(b, API_TR("  sink_weight (the sink logit's share of each row, per head):\n"));
        for (size_t h = 0; h < r->heads; h++) {
            api_buf_printf(b, API_TR("    head %zu:"), h);
            for (size_t i = 0; i < api_multihead_answer_rows(r); i++) { /* `rows`' rows */
                char num[API_TEXT_NUMBER];
                api_text_number(num, r->vsteps[h].sink_weight[i], decimals);
                api_buf_printf(b, " %s", num);
            }
            api_buf_puts(b, "\n");
        }
    }
    for (size_t s = 0; s < n; s++) {
        bool is_k = steps[s].operand == 'k';
        const struct attn_matrix *m0 = api_variant_step_matrix(&r->vsteps[0], steps[s].part);
        api_buf_printf(b, API_TR("\nstep %d  %s = %s  -> (%zu, %zu, %zu)\n"), (*number)++,
                       steps[s].name,
                       steps[s].op, is_k ? r->kv_heads : r->heads, m0->rows, m0->cols);
        if (!(r->include & (1ul << mh_part[steps[s].part])))
            continue;
        for (size_t h = 0; h < r->heads; h++) {
            size_t g = attn_mh_kv_head(h, r->heads, r->kv_heads);
            if (is_k && h > 0 && g == attn_mh_kv_head(h - 1, r->heads, r->kv_heads))
                continue; /* k_rope once per kv head */
            if (is_k)
                api_buf_printf(b, "  kv head %zu\n", g);
            else
                api_buf_printf(b, API_TR("  head %zu (kv head %zu)\n"), h, g);
            const struct attn_matrix *m = api_variant_step_matrix(&r->vsteps[h], steps[s].part);
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
}
