/*
 * api/endpoints/multihead/decode.c — `decode` on /v1/multihead (DESIGN.md, "The KV cache,
 * one token at a time"): the tokens after the prefill generated one at a time against a
 * growing cache (core's attn_decode_run), beside the full causal pass, and how far the two
 * differ.
 *
 * What the answer holds, and why: each token's query (h, d_k), weights (h, t + 1) and
 * output row, with the shapes of the cache it read; the cache's numbers once, as they
 * stand after the last token. Every earlier cache is a prefix of that one (a cache only
 * grows), so the numbers of every step would repeat them O(n²·d) times for nothing.
 *
 * Not here: the arithmetic (core/decode.c), the full pass (multihead/run.c).
 */
#include "api/endpoints/multihead/multihead.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "api/endpoints/answer.h"
#include "api/i18n/lang.h"
#include "api/json/buf.h"
#include "api/json/matrix_write.h"
#include "api/json/numfmt.h"
#include "api/render/text.h"
#include "api/request/fields.h"
#include "core/decode.h"

/* The run's answer: every token's rows and the cache, and their distance to the full pass. */
struct api_mh_decoded {
    struct attn_decode d;
    double matches;  /* the larger of weights' and output's max|Δ| / max|value| */
};

static const struct api_field decode_fields[] = {
    { "prefill", "how many tokens the first pass computes, 0 < prefill < n" },
};

/* ---- reading ---- */

/* A field decode cannot be combined with, and why; hint NULL: "leave it out". */
struct conflict {
    const char *field;
    bool present;
    const char *reason; /* translated (API_TR) */
    const char *hint;
};

static bool refuse_conflicts(const struct conflict *c, size_t n, const char *prefix,
                             struct api_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (!c[i].present)
            continue;
        api_error_set(err, API_INVALID_VALUE, "%s cannot be combined with decode: %s",
                      c[i].field, c[i].reason);
        if (c[i].field[0] == '?') /* the format is no field of the body: decode is */
            api_error_at(err, "%s/decode", prefix);
        else
            api_error_at(err, "%s/%s", prefix, c[i].field);
        if (c[i].hint != NULL)
            api_error_hint(err, "%s", c[i].hint);
        else
            api_error_hint(err, "leave %s out with decode", c[i].field);
        return false;
    }
    return true;
}

/* Self-attention with mask "causal": what a decoder generates from. */
static bool check_causal_self(const json_t *doc, const char *prefix,
                              const struct api_multihead_req *r, struct api_error *err)
{
    if (r->cross) {
        api_error_set(err, API_INVALID_VALUE, "decode generates from one sequence: it needs "
                      "self-attention (x), not x_q and x_kv");
        api_error_at(err, "%s/%s", prefix, api_member(doc, "x_q") != NULL ? "x_q"
                                           : api_member(doc, "x_kv") != NULL ? "x_kv"
                                                                              : "random/n_kv");
        api_error_hint(err, "send x: the cache holds the keys and values of the tokens "
                       "generated so far");
        return false;
    }
    if (r->grid.mask_kind == ATTN_MASK_CAUSAL && !r->grid.top_left)
        return true;
    api_error_set(err, API_INVALID_VALUE, "decode needs mask \"causal\": a generated token "
                  "sees only the tokens before it");
    api_error_at(err, "%s/mask", prefix);
    api_error_hint(err, "add \"mask\": \"causal\" (for self-attention \"causal_top_left\" is "
                   "the same mask: send \"causal\")");
    return false;
}

/* decode.prefill: 0 < p < n. */
static bool read_prefill(const json_t *node, const char *ptr, size_t n,
                         struct api_multihead_req *r, struct api_error *err)
{
    char sub[160];
    long long p;
    API_FIELD_POINTER(sub, ptr, "prefill");
    const json_t *value = api_member(node, "prefill");
    if (value == NULL) {
        api_error_set(err, API_MISSING_FIELD, "decode.prefill is required: how many tokens "
                      "the first pass computes");
        api_error_at(err, "%s", sub);
        api_error_hint(err, "{\"prefill\": p} computes tokens 0 … p−1 in one pass, then each "
                       "later token alone against the KV cache");
        return false;
    }
    if (n < 2) {
        api_error_set(err, API_INVALID_VALUE, "decode needs at least 2 tokens, and x has %zu: "
                      "the prefill takes p >= 1 of them and at least one comes after it", n);
        api_error_at(err, "%s", sub);
        return false;
    }
    if (!api_read_int_range(value, sub, "decode.prefill", 1, (long long)n - 1, &p, err)) {
        api_error_hint(err, "0 < prefill < n = %zu: the prefill computes tokens 0 … p−1, then "
                       "tokens p … n−1 come one at a time", n);
        return false;
    }
    r->decode.prefill = (size_t)p;
    return true;
}

bool api_multihead_read_decode(const json_t *doc, const char *prefix, enum api_format format,
                               struct api_multihead_req *r, size_t n, struct api_error *err)
{
    const json_t *node = api_member(doc, "decode");
    if (node == NULL)
        return true;
    char ptr[128];
    API_FIELD_POINTER(ptr, prefix, "decode");
    if (!json_is_object(node)) {
        api_error_set(err, API_INVALID_VALUE, "decode is %s; it must be an object such as "
                      "{\"prefill\": 4}", api_json_kind(node));
        api_error_at(err, "%s", ptr);
        return false;
    }
    const struct api_masks *m = &r->variants.masks;
    /* Generation's rules: the masks of training, a low format and pages it does not run. */
    const char *masks = API_TR("decode runs the causal mask with rope, alibi, softcap, window, "
                               "sink_tokens and sink_logit");
    const char *pages = API_TR("decode is answered as JSON or text");
    const char *ask = API_TR("ask as JSON, or with ?format=text");
    const struct conflict conflicts[] = {
        { "rows", r->rows != NULL, API_TR("decode answers every token after the prefill"),
          API_TR("leave rows out: decode.tokens are the rows p … n−1 of the full pass") },
        { "dropout", r->variants.dropout, API_TR("generation does not drop weights, and "
                 "dropout's cells are drawn for the whole pass"), NULL },
        { "documents", m->doc_q != NULL, masks, NULL },
        { "prefix", m->prefix > 0, masks, NULL },
        { "chunk", m->chunk > 0, masks, NULL },
        { "precision", r->precision.on, API_TR("decode runs in float64"), NULL },
        { "?format=svg", format == API_FORMAT_SVG, pages, ask },
        { "?format=bertviz", format == API_FORMAT_BERTVIZ, pages, ask },
    };
    if (!api_check_fields(node, ptr, decode_fields, 1, err) ||
        !read_prefill(node, ptr, n, r, err) || !check_causal_self(doc, prefix, r, err) ||
        !refuse_conflicts(conflicts, sizeof conflicts / sizeof conflicts[0], prefix, err))
        return false;
    if ((r->decode.done = calloc(1, sizeof *r->decode.done)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %zu heads of %zu x %zu", r->heads, n, n);
        return false;
    }
    r->decode.on = true;
    return true;
}

void api_multihead_decode_free(struct api_multihead_req *r)
{
    if (r->decode.done != NULL)
        attn_decode_free(&r->decode.done->d);
    free(r->decode.done);
    r->decode.done = NULL;
}

/* ---- sizes ---- */

static size_t add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t mul_sat(size_t a, size_t b)
{
    int overflow = 0;
    size_t c = attn_cells(a, b, &overflow);
    return overflow ? SIZE_MAX : c;
}

size_t api_multihead_decode_cells(const struct api_multihead_req *r, size_t n)
{
    if (!r->decode.on)
        return 0;
    size_t cells = attn_decode_cells(n, r->decode.prefill, r->d_model, r->heads, r->kv_heads);
    /* and each head's variants for the run (a few pointers and numbers: a bound) */
    return cells == 0 ? SIZE_MAX : add_sat(cells, mul_sat(r->heads, 32));
}

size_t api_multihead_decode_numbers(const struct api_multihead_req *r, size_t n)
{
    if (!r->decode.on)
        return 0;
    size_t tokens = n - r->decode.prefill, kv_cols = r->kv_heads * r->d_k;
    /* q, output, weights (every head's t + 1 a token: below h·n a token), two shapes of
       two numbers per kv head and t a token, the caches once */
    size_t per_token = add_sat(add_sat(mul_sat(2, r->d_model), mul_sat(r->heads, n)),
                               add_sat(mul_sat(4, r->kv_heads), 1));
    return add_sat(add_sat(mul_sat(tokens, per_token), mul_sat(mul_sat(2, n), kv_cols)), 2);
}

/* At most this many weights a head on a token's text line (the rest elided). */
enum { TEXT_WEIGHTS = 8 };

size_t api_multihead_decode_text_bytes(const struct api_multihead_req *r, size_t n)
{
    if (!r->decode.on)
        return 0;
    size_t line = add_sat(256, mul_sat(r->heads, (TEXT_WEIGHTS + 2) * (API_TEXT_NUMBER + 2)));
    return add_sat(mul_sat(n, line), 1024);
}

/* ---- the run ---- */

/* max|a − b| and max|b| over n cells, into *diff and *top. */
static void widen(const double *a, const double *b, size_t n, double *diff, double *top)
{
    for (size_t c = 0; c < n; c++) {
        double d = fabs(a[c] - b[c]), v = fabs(b[c]);
        *diff = d > *diff ? d : *diff;
        *top = v > *top ? v : *top;
    }
}

static double relative(double diff, double top)
{
    return top > 0 ? diff / top : diff; /* all zero: the difference itself */
}

/* The larger of weights' and output's largest |difference| over their largest |value|,
 * each compared with the same rows of the full pass. */
static double compare(const struct attn_decode *d, const struct attn_mh_trace *full)
{
    double dw = 0, tw = 0, dout = 0, tout = 0;
    for (size_t t = d->prefill; t < d->n; t++) {
        const double *w = attn_decode_weights(d, t);
        for (size_t i = 0; i < d->heads; i++)
            widen(w + i * (t + 1), full->head[i].weights.data + t * full->head[i].weights.stride,
                  t + 1, &dw, &tw);
        widen(d->output.data + (t - d->prefill) * d->output.stride,
              full->output.data + t * full->output.stride, d->d_model, &dout, &tout);
    }
    double a = relative(dw, tw), b = relative(dout, tout);
    return a > b ? a : b;
}

bool api_multihead_decode(const struct api_multihead_req *r, const char *prefix,
                          const struct attn_mh_trace *full, struct api_error *err)
{
    if (!r->decode.on)
        return true;
    struct attn_decode *d = &r->decode.done->d;
    size_t n = r->x_q.rows;
    struct attn_variants *of = r->variants.any ? malloc(r->heads * sizeof *of) : NULL;
    if ((r->variants.any && of == NULL) ||
        attn_decode_alloc(d, n, r->decode.prefill, r->d_model, r->heads, r->kv_heads) != ATTN_OK) {
        free(of);
        api_error_set(err, API_UNAVAILABLE, "no memory for %zu heads of %zu x %zu", r->heads, n,
                      n);
        return false;
    }
    for (size_t h = 0; of != NULL && h < r->heads; h++)
        of[h] = api_variants_for_head(&r->variants, h); /* each head's slope and sink logit */
    struct attn_mh_problem p = api_multihead_problem(r);
    enum attn_status st = attn_decode_run(d, &p, of);
    free(of);
    if (st != ATTN_OK) {
        api_multihead_run_failed(st, &d->fault, prefix, err);
        return false;
    }
    r->decode.done->matches = compare(d, full);
    return true;
}

/* ---- JSON ---- */

/* [[rows, d_k], …] once per kv head: the cache a token read. */
static void cache_shapes(struct jw *w, size_t kv_heads, size_t rows, size_t d_k)
{
    jw_array_begin(w);
    for (size_t g = 0; g < kv_heads; g++)
        api_write_shape(w, rows, d_k, false);
    jw_array_end(w);
}

static void write_token(struct jw *w, const struct attn_decode *d, size_t t)
{
    size_t s = t - d->prefill, d_k = d->d_k, len = t + 1;
    const double *q = d->q.data + s * d->q.stride, *weights = attn_decode_weights(d, t);
    jw_object_begin(w);
    JW_KEY(w, "t");
    jw_int(w, (long long)t);
    JW_KEY(w, "q");
    jw_array_begin(w);
    for (size_t i = 0; i < d->heads; i++)
        jw_double_array(w, q + i * d_k, d_k);
    jw_array_end(w);
    JW_KEY(w, "cache_k");
    cache_shapes(w, d->kv_heads, len, d_k);
    JW_KEY(w, "cache_v");
    cache_shapes(w, d->kv_heads, len, d_k);
    JW_KEY(w, "weights");
    jw_array_begin(w);
    for (size_t i = 0; i < d->heads; i++)
        jw_double_array(w, weights + i * len, len);
    jw_array_end(w);
    JW_KEY(w, "output");
    jw_double_array(w, d->output.data + s * d->output.stride, d->d_model);
    jw_object_end(w);
}

/* [kv][n][d_k]: a cache after the last token. */
static void write_cache(struct jw *w, const struct attn_decode *d, const struct attn_matrix *m)
{
    jw_array_begin(w);
    for (size_t g = 0; g < d->kv_heads; g++) {
        struct attn_matrix block = { m->data + g * d->d_k, m->rows, d->d_k, m->stride };
        api_write_matrix(w, &block);
    }
    jw_array_end(w);
}

void api_multihead_write_decode(struct jw *w, const struct api_multihead_req *r)
{
    if (!r->decode.on)
        return;
    const struct attn_decode *d = &r->decode.done->d;
    JW_KEY(w, "decode");
    jw_object_begin(w);
    JW_KEY(w, "prefill");
    jw_int(w, (long long)d->prefill);
    JW_KEY(w, "tokens");
    jw_array_begin(w);
    for (size_t t = d->prefill; t < d->n; t++)
        write_token(w, d, t);
    jw_array_end(w);
    JW_KEY(w, "cache_k");
    write_cache(w, d, &d->cache_k);
    JW_KEY(w, "cache_v");
    write_cache(w, d, &d->cache_v);
    /* Unrounded: a ratio near 1e-16 at `round` decimals would read 0 and show nothing. */
    int round = w->round;
    w->round = -1;
    JW_KEY(w, "matches_full_pass");
    jw_double(w, r->decode.done->matches);
    w->round = round;
    jw_object_end(w);
}

/* ---- text ---- */

/* One head's weights on a token's line: all of them, or the first and last few. */
static void text_weights(struct api_buf *b, const double *w, size_t len, int decimals)
{
    for (size_t j = 0; j < len; j++) {
        if (len > TEXT_WEIGHTS && j == TEXT_WEIGHTS / 2) {
            api_buf_puts(b, " …");
            j = len - TEXT_WEIGHTS / 2;
        }
        char num[API_TEXT_NUMBER];
        api_text_number(num, w[j], decimals);
        api_buf_printf(b, " %s", num);
    }
}

void api_multihead_text_decode(struct api_buf *b, const struct api_multihead_req *r)
{
    if (!r->decode.on)
        return;
    const struct attn_decode *d = &r->decode.done->d;
    int decimals = r->grid.round >= 0 ? r->grid.round : 4;
    api_buf_printf(b, API_TR("\ndecode: the first %zu tokens in one pass (the prefill), then "
                             "each token alone against the KV cache\n"), d->prefill);
    for (size_t t = d->prefill; t < d->n; t++) {
        api_buf_printf(b, API_TR("  t %zu  cache k, v (%zu, %zu) x %zu kv heads  weights"), t,
                       t + 1, d->d_k, d->kv_heads);
        const double *w = attn_decode_weights(d, t);
        for (size_t i = 0; i < d->heads; i++) {
            api_buf_printf(b, "  h%zu", i);
            text_weights(b, w + i * (t + 1), t + 1, decimals);
        }
        api_buf_puts(b, "\n");
    }
    char num[API_NUMBER_MAX]; /* shortest: rounded it would read 0 */
    api_format_double(r->decode.done->matches, num);
    api_buf_printf(b, API_TR("  matches the full pass: %s (the largest difference over the "
                             "largest value, of weights and output)\n"), num);
}
