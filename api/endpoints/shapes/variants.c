/*
 * api/endpoints/shapes/variants.c — /v1/shapes' rows for the attention variants, asked for
 * with ?variants=rope,softcap,alibi,window,sink,dropout: where each step stands in the
 * table and what shape it keeps (core/variants.h has the order).
 */
#include "api/endpoints/shapes/variants.h"

#include <stdio.h>
#include <string.h>

#include "api/i18n/lang.h"
#include "api/request/fields.h"

static const char *const variant_names[API_SHAPE_VARIANT_COUNT] = {
    "rope", "softcap", "alibi", "window", "sink", "dropout",
};

bool api_shapes_read_variants(const struct api_request *req, unsigned *variants,
                              struct api_error *err)
{
    const char *value = NULL;
    for (size_t i = 0; i < req->n_params; i++)
        if (strcmp(req->params[i].name, "variants") == 0)
            value = req->params[i].value;
    for (const char *at = value; at != NULL && *at != '\0';) {
        size_t len = strcspn(at, ",");
        int found = -1;
        for (int v = 0; v < API_SHAPE_VARIANT_COUNT; v++)
            if (strlen(variant_names[v]) == len && strncmp(at, variant_names[v], len) == 0)
                found = v;
        if (found < 0) {
            char word[48];
            snprintf(word, sizeof word, "%.*s", (int)(len < 40 ? len : 40), at);
            api_error_set(err, API_INVALID_VALUE, "variants names \"%s\", which is not a "
                          "variant; known: rope, softcap, alibi, window, sink, dropout", word);
            snprintf(err->parameter, sizeof err->parameter, "variants");
            api_error_hint(err, "did you mean \"%s\"? e.g. /v1/shapes?n=10&d_model=512&heads=8"
                           "&variants=rope,window",
                           api_nearest_name(word, variant_names, API_SHAPE_VARIANT_COUNT));
            return false;
        }
        *variants |= 1u << found;
        at += len + (at[len] == ',');
    }
    return true;
}

void api_shapes_variant_rows(unsigned variants, size_t n, size_t n_kv, size_t d_k, int before,
                             api_shape_row_fn *fn, void *data)
{
    size_t m = n_kv, k = d_k;
    bool on[API_SHAPE_VARIANT_COUNT];
    for (int v = 0; v < API_SHAPE_VARIANT_COUNT; v++)
        on[v] = (variants & (1u << v)) != 0;
    if (before == 3 && on[API_SHAPE_ROPE]) {
        const struct api_shape_row q = { "rope(Q)", { 0, n, k }, 0, { 0, 0 }, { n, k },
            API_TR("q_rope: each query's column pairs turned by its position (base^(-2c/r))") };
        const struct api_shape_row kk = { "rope(K)", { 0, m, k }, 0, { 0, 0 }, { m, k },
            API_TR("k_rope: each key turned the same way; then Q_rope @ K_rope^T") };
        fn(&q, data);
        fn(&kk, data);
    }
    if (before == 5 && on[API_SHAPE_SOFTCAP]) {
        const struct api_shape_row r = { "softcap * tanh(scaled / softcap)", { 0, n, m }, 1,
            { 0, 0 }, { n, m }, API_TR("softcapped: every score kept within +-softcap (Gemma 2)") };
        fn(&r, data);
    }
    if (before == 5 && (on[API_SHAPE_ALIBI] || on[API_SHAPE_WINDOW])) {
        const struct api_shape_row r = { on[API_SHAPE_ALIBI] && on[API_SHAPE_WINDOW]
            ? API_TR("+ bias - slope * |i + n_kv - n - j|, -inf outside the window")
            : on[API_SHAPE_ALIBI] ? "+ bias - slope * |i + n_kv - n - j|"
                                  : API_TR("-inf outside the window"),
            { 0, n, m }, 0, { 0, 0 }, { n, m },
            API_TR("masked: ALiBi's distance penalty (a slope a head) and the window's hidden keys") };
        fn(&r, data);
    }
    if (before == 6 && on[API_SHAPE_SINK]) {
        const struct api_shape_row r = { "softmax([masked, sink_logit])", { 0, n, m }, 1,
            { 0, 0 }, { n, m }, API_TR("its column dropped after: rows sum to 1 - sink_weight") };
        fn(&r, data);
    }
    if (before == 7 && on[API_SHAPE_DROPOUT]) { /* after logsumexp: dropout takes the weights */
        const struct api_shape_row r = { "weights * keep / (1 - p)", { 0, n, m }, 2, { n, m },
            { n, m }, API_TR("dropped: weights where keep is 0 dropped, the rest scaled; then @ V") };
        fn(&r, data);
    }
}
