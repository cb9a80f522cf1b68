/*
 * api/request/grid.c — mask, mask_semantics, bias, labels and round (see grid.h).
 */
#include "api/request/grid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/request/fields.h"
#include "api/request/matrix.h"

static const char *const semantics_names[] = { "keep", "block" };

/*
 * A mask or bias must be (n_q, n_k) — or, for a single query or a key-padding
 * mask, (n_k) or (1, n_k). Writes which of those it is into *rows.
 */
static bool check_grid_shape(const struct attn_matrix *m, bool is_vector, bool allow_key_row,
                             const struct api_grid *g, const char *ptr,
                             const char *name, size_t *rows, struct api_error *err)
{
    size_t n_q = g->n_q, n_k = g->n_k;
    if (m->cols == n_k && (m->rows == n_q || (m->rows == 1 && (allow_key_row || n_q == 1)))) {
        *rows = m->rows;
        return true;
    }
    if (is_vector)
        api_error_set(err, API_SHAPE_MISMATCH, "%s has %zu entries but there are %zu keys: a "
                      "%s vector has one entry per key", name, m->cols, n_k, name);
    else
        api_error_set(err, API_SHAPE_MISMATCH, "%s is (%zu, %zu) but must be (n_q, n_k) = "
                      "(%zu, %zu): one row per query, one column per key", name, m->rows,
                      m->cols, n_q, n_k);
    api_error_at(err, "%s", ptr);
    if (!is_vector && m->rows == n_k && m->cols == n_q && n_q != n_k)
        api_error_hint(err, "%s looks transposed: it is (n_k, n_q); send it as (n_q, n_k), one "
                       "row per query", name);
    else
        api_error_hint(err, "n_q = %zu queries (rows of q) and n_k = %zu keys (rows of k)",
                       n_q, n_k);
    return false;
}

static bool read_mask_cells(const json_t *node, const char *ptr, const struct api_limits *limits,
                            struct api_grid *g, struct api_error *err)
{
    static const struct api_matrix_spec spec = { "mask", "(n_q, n_k)", true, true };
    struct attn_matrix m;
    if (!api_read_matrix(node, ptr, &spec, limits->max_cells, &m, &g->mask_is_vector, err))
        return false;
    if (!check_grid_shape(&m, g->mask_is_vector, true, g, ptr, "mask", &g->mask_rows, err)) {
        api_matrix_free(&m);
        return false;
    }
    size_t cells = m.rows * m.cols;
    g->mask_allow = malloc(cells);
    if (g->mask_allow == NULL) {
        api_matrix_free(&m);
        api_error_set(err, API_UNAVAILABLE, "no memory for the mask (%zu cells)", cells);
        return false;
    }
    /* core knows only "allowed"; the request's semantics are translated here, once. */
    for (size_t i = 0; i < cells; i++) {
        bool set = m.data[i] != 0.0;
        g->mask_allow[i] = g->block_semantics ? !set : set;
    }
    g->mask_kind = ATTN_MASK_CELLS;
    api_matrix_free(&m);
    return true;
}

static bool read_mask(const json_t *doc, const char *prefix, const struct api_limits *limits,
                      struct api_grid *g, struct api_error *err)
{
    char ptr[128];
    const json_t *sem = api_member(doc, "mask_semantics");
    if (sem != NULL) {
        size_t which;
        API_FIELD_POINTER(ptr, prefix, "mask_semantics");
        if (!api_read_choice(sem, ptr, "mask_semantics", semantics_names, 2, &which, err))
            return false;
        g->block_semantics = which == 1;
    }
    const json_t *node = api_member(doc, "mask");
    API_FIELD_POINTER(ptr, prefix, "mask");
    if (node == NULL)
        return true;
    if (json_is_string(node)) {
        const char *name = json_string_value(node);
        if (strcmp(name, "causal") == 0 || strcmp(name, "causal_top_left") == 0) {
            g->mask_kind = ATTN_MASK_CAUSAL;
            g->top_left = strcmp(name, "causal_top_left") == 0;
            return true;
        }
        api_error_set(err, API_INVALID_VALUE, "mask is \"%.64s\"; the mask strings are "
                      "\"causal\" and \"causal_top_left\"", name);
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "\"causal\" aligns bottom-right (FlashAttention: query i sees key j "
                       "iff j <= i + n_k - n_q), \"causal_top_left\" top-left (SDPA's is_causal: "
                       "j <= i); otherwise send a matrix (n_q, n_k) of 0/1 or true/false, or a "
                       "vector (n_k) applied to every query");
        return false;
    }
    return read_mask_cells(node, ptr, limits, g, err);
}

static bool read_bias(const json_t *doc, const char *prefix, const struct api_limits *limits,
                      struct api_grid *g, struct api_error *err)
{
    static const struct api_matrix_spec spec = { "bias", "(n_q, n_k)", true, false };
    const json_t *node = api_member(doc, "bias");
    if (node == NULL)
        return true;
    char ptr[128];
    API_FIELD_POINTER(ptr, prefix, "bias");
    bool is_vector;
    if (!api_read_matrix(node, ptr, &spec, limits->max_cells, &g->bias, &is_vector, err))
        return false;
    size_t rows;
    /* Unlike a mask, a bias row is never broadcast: one row of bias per query. */
    if (!check_grid_shape(&g->bias, is_vector, false, g, ptr, "bias", &rows, err)) {
        api_matrix_free(&g->bias);
        return false;
    }
    return true;
}

static const struct api_field label_fields[] = {
    { "queries", "one name per query (row of q)" },
    { "keys", "one name per key (row of k)" },
};

static bool check_label_list(const json_t *labels, const char *ptr, const char *name,
                             size_t want, const char *what, struct api_error *err)
{
    char p[160];
    API_FIELD_POINTER(p, ptr, name);
    const json_t *list = api_member(labels, name);
    if (list == NULL)
        return true;
    if (!api_read_string_list(list, p, name, err))
        return false;
    if (json_array_size(list) == want)
        return true;
    api_error_set(err, API_SHAPE_MISMATCH, "labels.%s has %zu names but there are %zu %s",
                  name, json_array_size(list), want, what);
    api_error_at(err, "%s", p);
    return false;
}

static bool read_labels(const json_t *doc, const char *prefix, struct api_grid *g,
                        struct api_error *err)
{
    const json_t *labels = api_member(doc, "labels");
    if (labels == NULL)
        return true;
    char ptr[128];
    API_FIELD_POINTER(ptr, prefix, "labels");
    if (!json_is_object(labels)) {
        api_error_set(err, API_INVALID_VALUE, "labels is %s; it must be an object such as "
                      "{\"queries\": [\"Q1\"], \"keys\": [\"K1\", \"K2\"]}", api_json_kind(labels));
        api_error_at(err, "%s", ptr);
        return false;
    }
    if (!api_check_fields(labels, ptr, label_fields, 2, err) ||
        !check_label_list(labels, ptr, "queries", g->n_q, "queries", err) ||
        !check_label_list(labels, ptr, "keys", g->n_k, "keys", err))
        return false;
    g->labels = labels;
    return true;
}

static bool read_round(const json_t *doc, const char *prefix, struct api_grid *g,
                       struct api_error *err)
{
    const json_t *node = api_member(doc, "round");
    g->round = -1;
    if (node == NULL)
        return true;
    char ptr[128];
    long long decimals;
    API_FIELD_POINTER(ptr, prefix, "round");
    if (!api_read_int_range(node, ptr, "round", 0, 15, &decimals, err))
        return false;
    g->round = (int)decimals;
    return true;
}

bool api_grid_read(const json_t *doc, const char *prefix, const struct api_limits *limits,
                   struct api_grid *g, struct api_error *err)
{
    bool ok = read_mask(doc, prefix, limits, g, err) && read_bias(doc, prefix, limits, g, err) &&
              read_labels(doc, prefix, g, err) && read_round(doc, prefix, g, err);
    if (!ok)
        api_grid_deinit(g);
    return ok;
}

void api_grid_deinit(struct api_grid *g)
{
    free(g->mask_allow);
    g->mask_allow = NULL;
    g->mask_kind = ATTN_MASK_NONE;
    api_matrix_free(&g->bias);
}

struct attn_mask api_grid_mask(const struct api_grid *g)
{
    struct attn_mask m = { g->mask_kind, g->mask_allow, g->mask_rows };
    return m;
}

const struct attn_matrix *api_grid_bias(const struct api_grid *g)
{
    return g->bias.data != NULL ? &g->bias : NULL;
}
