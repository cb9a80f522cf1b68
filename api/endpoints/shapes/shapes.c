/*
 * api/endpoints/shapes/shapes.c — GET /v1/shapes: the first lecture note's shape table from sizes
 * alone (n, d_model, heads; n_kv and kv_heads optional), no numbers computed.
 *
 * Every size is a query parameter: problems name it with "parameter" rather than
 * a JSON pointer.
 */
#include "api/endpoints/shapes/shapes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/endpoints/handlers.h"
#include "api/http/respond.h"
#include "api/i18n/lang.h"
#include "api/json/write.h"
#include "api/render/text.h"
#include "api/request/fields.h"

/* The sizes /v1/shapes reads from its query (besides format and lang, which every route
   takes): the router refuses any other name (api/request/query.h). */
const char *const api_shapes_params[] = { "n", "d_model", "heads", "n_kv", "kv_heads", "variants",
                                          "block_q", "block_k", "backward", NULL };

/* ?backward: "true" or "false" (absent: false). */
static bool read_backward(const struct api_request *req, bool *out, struct api_error *err)
{
    for (size_t i = 0; i < req->n_params; i++) {
        const char *v = req->params[i].value;
        if (strcmp(req->params[i].name, "backward") != 0)
            continue;
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0) {
            api_error_set(err, API_INVALID_VALUE, "backward must be true or false, not "
                          "\"%.40s\"", v);
            snprintf(err->parameter, sizeof err->parameter, "backward");
            api_error_hint(err, "backward=true lists the gradients' steps after the forward's");
            return false;
        }
        *out = strcmp(v, "true") == 0;
    }
    return true;
}

static bool param_error(struct api_error *err, enum api_problem_type type, const char *name,
                        const char *value)
{
    api_error_set(err, type, "%s must be an integer from 1 to 2147483648, not \"%.40s\"", name,
                  value);
    snprintf(err->parameter, sizeof err->parameter, "%s", name);
    return false;
}

/* A size parameter: a decimal integer from 1 to 2^31, or absent when optional. */
static bool read_param(const struct api_request *req, const char *name, bool required,
                       size_t *out, struct api_error *err)
{
    const char *value = NULL;
    for (size_t i = 0; i < req->n_params; i++)
        if (strcmp(req->params[i].name, name) == 0)
            value = req->params[i].value;
    if (value == NULL) {
        if (!required)
            return true;
        api_error_set(err, API_MISSING_FIELD, "the query parameter %s is required: "
                      "/v1/shapes?n=10&d_model=512&heads=8", name);
        snprintf(err->parameter, sizeof err->parameter, "%s", name);
        return false;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(value, &end, 10);
    if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0 || v < 1 ||
        v > (1ull << 31))
        return param_error(err, API_INVALID_VALUE, name, value);
    *out = (size_t)v;
    return true;
}

bool api_shapes_parse(const struct api_request *req, struct api_shapes *s, struct api_error *err)
{
    memset(s, 0, sizeof *s);
    if (!read_param(req, "n", true, &s->n, err) ||
        !read_param(req, "d_model", true, &s->d_model, err) ||
        !read_param(req, "heads", true, &s->heads, err) ||
        !read_param(req, "n_kv", false, &s->n_kv, err) ||
        !read_param(req, "kv_heads", false, &s->kv_heads, err) ||
        !read_param(req, "block_q", false, &s->block_q, err) ||
        !read_param(req, "block_k", false, &s->block_k, err) ||
        !read_backward(req, &s->backward, err) ||
        !api_shapes_read_variants(req, &s->variants, err))
        return false;
    if (s->n_kv == 0)
        s->n_kv = s->n;
    if (s->kv_heads == 0)
        s->kv_heads = s->heads;
    s->block_q = s->block_q == 0 ? 128 : s->block_q; /* FlexAttention's tile */
    s->block_k = s->block_k == 0 ? 128 : s->block_k;
    if (s->d_model % s->heads != 0) {
        api_error_set(err, API_INVALID_VALUE, "heads %zu does not divide d_model %zu: each head "
                      "takes d_model/heads columns", s->heads, s->d_model);
        snprintf(err->parameter, sizeof err->parameter, "heads");
        api_error_hint(err, "the original Transformer has d_model 512 and 8 heads (d_k 64)");
        return false;
    }
    if (s->heads % s->kv_heads != 0) {
        api_error_set(err, API_INVALID_VALUE, "kv_heads %zu does not divide heads %zu",
                      s->kv_heads, s->heads);
        snprintf(err->parameter, sizeof err->parameter, "kv_heads");
        api_error_hint(err, "kv_heads 1 is multi-query attention; kv_heads = heads is ordinary "
                       "multi-head attention");
        return false;
    }
    s->d_k = s->d_model / s->heads;
    return true;
}

/* [a, b], [a] for one number a row (b == 0), [] for a scalar (b == 0 and a == 0), or
 * [h, a, b] when h != 0. */
static void write_dims(struct jw *w, size_t h, size_t a, size_t b)
{
    jw_array_begin(w);
    if (h != 0)
        jw_int(w, (long long)h);
    if (a != 0)
        jw_int(w, (long long)a);
    if (b != 0)
        jw_int(w, (long long)b);
    jw_array_end(w);
}

/* The rows of the masks and the row statistics, at their place among the lecture's:
 * visible and its block map after the mask (before softmax, row 5), row_sum before
 * logsumexp (row 6). */
static void mask_rows(const struct api_shapes *s, int before, api_shape_row_fn *fn, void *data)
{
    size_t n = s->n, m = s->n_kv;
    size_t tiles_q = n / s->block_q + (n % s->block_q != 0);
    size_t tiles_k = m / s->block_k + (m % s->block_k != 0);
    const struct api_shape_row visible = { "rules(i, j)", { 0, n, m }, 0, { 0, 0 }, { n, m },
        API_TR("visible: 1 where every rule lets query i see key j, else 0") };
    const struct api_shape_row map = { "tiles(visible, B_q, B_k)", { 0, n, m }, 0, { 0, 0 },
        { tiles_q, tiles_k }, API_TR("block_map: each tile 2 full, 1 partial, 0 empty; a kernel "
                                     "skips the empty ones") };
    const struct api_shape_row row_sum = { "sum(exp(masked - row_max), axis=-1)", { 0, n, m }, 0,
        { 0, 0 }, { n, 0 }, API_TR("row_sum: what softmax divides each row by") };
    if (before == 5) {
        fn(&visible, data);
        fn(&map, data);
    }
    if (before == 6)
        fn(&row_sum, data);
}

/* The backward pass of one head and its projections, after the forward's rows: each
 * gradient the shape of what it is the gradient of. */
static void backward_rows(const struct api_shapes *s, api_shape_row_fn *fn, void *data)
{
    size_t n = s->n, m = s->n_kv, d = s->d_model, k = s->d_k;
    const struct api_shape_row rows[] = {
        { "dO @ W_O^T", { 0, n, d }, 2, { d, d }, { n, d },
          API_TR("grad_concat: each head's dO is its d_k columns") },
        { "concat^T @ dO", { 0, d, n }, 2, { n, d }, { d, d },
          API_TR("grad_w_o: the output projection's gradient") },
        { "dO_i @ V^T", { 0, n, k }, 2, { k, m }, { n, m }, API_TR("grad_weights: dP, one head") },
        { "sum(dO_i * out_i, axis=-1)", { 0, n, k }, 0, { 0, 0 }, { n, 0 },
          API_TR("delta: D, each row's dot of dO and the output") },
        { "weights * (dP - D)", { 0, n, m }, 0, { 0, 0 }, { n, m },
          API_TR("grad_masked: dS, softmax's gradient (each row sums to 0)") },
        { "dS * scale", { 0, n, m }, 1, { 0, 0 }, { n, m }, API_TR("grad_scores: dS times the scale") },
        { "grad_scores @ K", { 0, n, m }, 2, { m, k }, { n, k }, API_TR("grad_q, one head") },
        { "grad_scores^T @ Q", { 0, m, n }, 2, { n, k }, { m, k }, API_TR("grad_k, one head") },
        { "weights^T @ dO_i", { 0, m, n }, 2, { n, k }, { m, k }, API_TR("grad_v, one head") },
        { "X_q^T @ grad_Q", { 0, d, n }, 2, { n, d }, { d, d }, API_TR("grad_w_q (grad_w_k, grad_w_v alike)") },
        { "grad_Q @ W_Q^T", { 0, n, d }, 2, { d, d }, { n, d },
          API_TR("grad_x through Q; through K and V it adds grad_K @ W_K^T and grad_V @ W_V^T") },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        fn(&rows[i], data);
}

void api_shapes_rows(const struct api_shapes *s, api_shape_row_fn *fn, void *data)
{
    size_t n = s->n, m = s->n_kv, d = s->d_model, h = s->heads, k = s->d_k;
    char kv_note[160];
    /* The meanings are sentences: they speak the answer's language (the ops are names). */
    if (s->kv_heads == h)
        snprintf(kv_note, sizeof kv_note, API_TR("one head's keys (%zu key/value heads in all, "
                 "one for each query head)"), s->kv_heads);
    else if (s->kv_heads == 1)
        snprintf(kv_note, sizeof kv_note, API_TR("one head's keys (one key/value head, shared "
                 "by all %zu query heads)"), h);
    else
        snprintf(kv_note, sizeof kv_note, API_TR("one head's keys (%zu key/value heads in all, "
                 "each shared by %zu query heads)"), s->kv_heads, h / s->kv_heads);
    const struct api_shape_row rows[] = {
        { "X_q @ W_Q", { 0, n, d }, 2, { d, k }, { n, k },
          API_TR("one head's queries: each token's d_model numbers become d_k") },
        { "X_kv @ W_K", { 0, m, d }, 2, { d, k }, { m, k }, kv_note },
        { "X_kv @ W_V", { 0, m, d }, 2, { d, k }, { m, k }, API_TR("one head's values") },
        { "Q @ K^T", { 0, n, k }, 2, { k, m }, { n, m },
          API_TR("scores: how well each query matches each key") },
        { "scores * scale", { 0, n, m }, 1, { 0, 0 }, { n, m },
          API_TR("scale = 1/sqrt(d_k) keeps the scores' spread independent of d_k") },
        { "softmax(axis=-1)", { 0, n, m }, 0, { 0, 0 }, { n, m },
          API_TR("weights: each row becomes ratios that sum to 1") },
        { "logsumexp(axis=-1)", { 0, n, m }, 0, { 0, 0 }, { n, 0 },
          API_TR("lse: the log of each row's softmax denominator, what a fast kernel returns "
                 "beside its output") },
        { "weights @ V", { 0, n, m }, 2, { m, k }, { n, k },
          API_TR("one head's output: each query's mix of the values") },
        { "concat(heads)", { h, n, k }, 0, { 0, 0 }, { n, d },
          API_TR("the heads' outputs side by side") },
        { "concat @ W_O", { 0, n, d }, 2, { d, d }, { n, d },
          API_TR("back to d_model: the layer's output, one row per token") },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        /* none unless ?variants names them */
        api_shapes_variant_rows(s->variants, s->n, s->n_kv, s->d_k, (int)i, fn, data);
        mask_rows(s, (int)i, fn, data);
        fn(&rows[i], data);
    }
    if (s->backward)
        backward_rows(s, fn, data);
}

static void write_row(const struct api_shape_row *row, void *data)
{
    struct jw *w = data;
    jw_object_begin(w);
    JW_KEY(w, "op");
    jw_string(w, row->op);
    JW_KEY(w, "left");
    write_dims(w, row->left[0], row->left[1], row->left[2]);
    JW_KEY(w, "right");
    if (row->right_kind == 0)
        jw_null(w);
    else
        write_dims(w, 0, row->right[0], row->right[1]);
    JW_KEY(w, "result");
    write_dims(w, 0, row->result[0], row->result[1]);
    JW_KEY(w, "meaning");
    jw_string(w, row->meaning);
    jw_object_end(w);
}

void api_shapes_write(struct jw *w, const struct api_shapes *s)
{
    static const char *const keys[] = { "n", "n_kv", "d_model", "heads", "kv_heads", "d_k" };
    const size_t values[] = { s->n, s->n_kv, s->d_model, s->heads, s->kv_heads, s->d_k };
    jw_object_begin(w);
    for (size_t i = 0; i < 6; i++) {
        jw_key(w, keys[i]);
        jw_int(w, (long long)values[i]);
    }
    if (s->variants != 0) {
        static const char *const names[] = { "rope", "softcap", "alibi", "window", "sink",
                                             "dropout" };
        JW_KEY(w, "variants");
        jw_array_begin(w);
        for (int v = 0; v < API_SHAPE_VARIANT_COUNT; v++)
            if (s->variants & (1u << v))
                jw_string(w, names[v]);
        jw_array_end(w);
    }
    JW_KEY(w, "rows");
    jw_array_begin(w);
    api_shapes_rows(s, write_row, w);
    jw_array_end(w);
    jw_object_end(w);
}

/* ---- the answer ---- */

/* "(10, 512)", "(8, 10, 64)", "scalar" or "-" for a row's operand. */
static void dims_text(char *buf, size_t len, size_t h, size_t a, size_t b, int kind)
{
    if (kind == 0)
        snprintf(buf, len, "-");
    else if (kind == 1)
        snprintf(buf, len, "%s", API_TR("scalar"));
    else if (h != 0)
        snprintf(buf, len, "(%zu, %zu, %zu)", h, a, b);
    else if (b == 0)
        snprintf(buf, len, "(%zu)", a);
    else
        snprintf(buf, len, "(%zu, %zu)", a, b);
}

/* The table's cells, copied: a row's strings live only while api_shapes_rows runs. */
struct shape_text {
    char (*text)[5][160];
    const char **cells;
    size_t n;
};

static void collect_row(const struct api_shape_row *row, void *data)
{
    struct shape_text *st = data;
    char (*t)[160] = st->text[st->n];
    snprintf(t[0], sizeof t[0], "%s", row->op);
    dims_text(t[1], sizeof t[1], row->left[0], row->left[1], row->left[2], 2);
    dims_text(t[2], sizeof t[2], 0, row->right[0], row->right[1], row->right_kind);
    dims_text(t[3], sizeof t[3], 0, row->result[0], row->result[1], 2);
    snprintf(t[4], sizeof t[4], "%s", row->meaning);
    const char **c = st->cells + st->n * 5;
    for (int i = 0; i < 5; i++)
        c[i] = t[i];
    st->n++;
}

/* The table as text/plain, aligned by render/text.h. */
static void shapes_text(struct api_buf *b, const struct api_shapes *s)
{
    enum { ROWS = 10 + 3 + 6 + 11 }; /* the table, the masks' rows, the variants', the backward's */
    const char *const header[] = { "op", API_TR("left"), API_TR("right"), API_TR("result"),
                                   API_TR("meaning") };
    char text[ROWS][5][160];
    const char *cells[ROWS * 5];
    struct shape_text st = { text, cells, 0 };
    api_shapes_rows(s, collect_row, &st);
    api_buf_printf(b, "shapes  n %zu  n_kv %zu  d_model %zu  heads %zu  kv_heads %zu  d_k %zu\n\n",
                   s->n, s->n_kv, s->d_model, s->heads, s->kv_heads, s->d_k);
    struct api_text_table tab = { header, cells, st.n, 5, "lrrrl", NULL };
    api_text_table(b, &tab);
}

void api_shapes_handle(const struct api_context *ctx, const struct api_request *req,
                       enum api_format format, struct api_response *res)
{
    (void)ctx;
    struct api_shapes shapes;
    struct api_error err;
    if (!api_shapes_parse(req, &shapes, &err)) {
        api_respond_error(res, &err);
        return;
    }
    if (format == API_FORMAT_TEXT) {
        struct api_buf b;
        api_buf_init(&b);
        shapes_text(&b, &shapes);
        api_respond_page(res, &b, API_FORMAT_TEXT);
        return;
    }
    struct jw w;
    jw_init(&w, -1);
    api_shapes_write(&w, &shapes);
    api_respond_json(res, &w);
}
