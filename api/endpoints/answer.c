/*
 * api/endpoints/answer.c — the parts attention answers share (see answer.h).
 */
#include "api/endpoints/answer.h"

#include <stdint.h>
#include <stdio.h>

#include "api/i18n/fill.h"
#include "api/i18n/lang.h"
#include "api/request/fields.h"
#include "core/ties.h"

/* Whether the mask alone (cells or causal) lets row i see some key. */
static bool mask_allows_some(const struct api_grid *g, size_t n_q, size_t n_k, size_t i)
{
    if (g->mask_kind == ATTN_MASK_CAUSAL) /* key 0 is visible iff 0 + n_q <= i + n_k */
        return g->top_left || i + n_k >= n_q;  /* top-left: key 0 is always visible */
    if (g->mask_kind != ATTN_MASK_CELLS)
        return true;
    const unsigned char *row = g->mask_allow + (g->mask_rows == 1 ? 0 : i) * n_k;
    for (size_t j = 0; j < n_k; j++)
        if (row[j])
            return true;
    return false;
}

/* The query index of answer row i (`rows` picks them). */
static size_t real_row(const struct api_row_causes *c, size_t i)
{
    return c != NULL && c->real_rows != NULL ? c->real_rows[i] : i;
}

/* What emptied answer row i: the mask (0), the window and sink tokens (1), or the
 * documents, chunk and window (2) when the mask alone leaves it some key. */
static int emptied_by(const struct api_row_causes *c, size_t i)
{
    if (c == NULL || !(c->window || c->rules) || c->n_heads == 0 ||
        !mask_allows_some(c->grid, c->grid->n_q, c->heads[0].n_k, real_row(c, i)))
        return 0;
    return c->rules ? 2 : 1;
}

/* The one wording of the warning, after "query <name> ": the mask's, the window's, or
 * the training masks'. */
static void masked_message(char *buf, size_t size, const char *query, const char *zeroed,
                           int by)
{
    if (by == 2)
        snprintf(buf, size, API_TR("query %s may attend to no key (its document, chunk and "
                                   "window show none of the keys its mask allows): its weights "
                                   "and %s"), query, api_tr(zeroed));
    else if (by == 1)
        snprintf(buf, size, API_TR("query %s may attend to no key (its window and sink tokens "
                                   "show none of the keys its mask allows): its weights and %s"),
                 query, api_tr(zeroed));
    else
        snprintf(buf, size, API_TR("query %s may attend to no key (its mask row blocks every "
                                   "key): its weights and %s"), query, api_tr(zeroed));
}

/* Whether the sink took the whole weight of row i in head h (keys to see, all at 0). */
static bool sink_took_all(const struct api_row_causes *c, const unsigned char *fully_masked,
                          size_t h, size_t i)
{
    const struct attn_trace *t = &c->heads[h];
    return c->sink && !fully_masked[i] && t->weights.data != NULL && /* none when streamed */
           attn_row_largest(t->weights.data + i * t->weights.stride, t->n_k) == 0;
}

static void sink_message(char *buf, size_t size, const char *query, size_t h, size_t n_heads)
{
    static const char *const words = API_N("query {1} gives its whole weight to the sink: "
                                           "sink_logit is so far above its scores that every "
                                           "key's weight is 0, and no key wins (argmax null)");
    static const char *const head_words = API_N("head {2}: query {1} gives its whole weight to "
                                                "the sink: sink_logit is so far above its scores "
                                                "that every key's weight is 0, and no key wins "
                                                "(argmax null)");
    char head[24];
    const char *args[] = { query, head };
    snprintf(head, sizeof head, "%zu", h);
    api_fill(buf, size, api_tr(n_heads > 1 ? head_words : words), args, 2);
}

static void write_sink_warnings(struct jw *w, const unsigned char *fully_masked, size_t n_q,
                                const struct api_row_causes *c)
{
    for (size_t h = 0; c != NULL && h < c->n_heads; h++)
        for (size_t i = 0; i < n_q; i++) {
            if (!sink_took_all(c, fully_masked, h, i))
                continue;
            char index[24], message[400];
            snprintf(index, sizeof index, "%zu", real_row(c, i));
            sink_message(message, sizeof message, index, h, c->n_heads);
            jw_object_begin(w);
            JW_KEY(w, "code");
            jw_string(w, "sink_took_all");
            if (c->n_heads > 1) {
                JW_KEY(w, "head");
                jw_int(w, (long long)h);
            }
            JW_KEY(w, "row");
            jw_int(w, (long long)real_row(c, i));
            JW_KEY(w, "message");
            jw_string(w, message);
            jw_object_end(w);
        }
}

void api_write_masked_warnings(struct jw *w, const unsigned char *fully_masked, size_t n_q,
                               const char *zeroed, const struct api_tie_source *ties,
                               const struct api_row_causes *causes)
{
    JW_KEY(w, "warnings");
    jw_array_begin(w);
    for (size_t i = 0; i < n_q; i++) {
        if (!fully_masked[i])
            continue;
        char index[24], message[200];
        snprintf(index, sizeof index, "%zu", real_row(causes, i));
        masked_message(message, sizeof message, index, zeroed, emptied_by(causes, i));
        jw_object_begin(w);
        JW_KEY(w, "code");
        jw_string(w, "row_fully_masked");
        JW_KEY(w, "row");
        jw_int(w, (long long)real_row(causes, i));
        JW_KEY(w, "message");
        jw_string(w, message);
        jw_object_end(w);
    }
    write_sink_warnings(w, fully_masked, n_q, causes);
    if (ties != NULL)
        api_write_tie_warnings(w, ties);
    if (causes != NULL && causes->precision != NULL)
        api_precision_write_warning(w, causes->precision, causes->report);
    jw_array_end(w);
}

void api_text_masked_warnings(struct api_buf *b, const unsigned char *fully_masked, size_t n_q,
                              const struct api_labels *queries, const char *zeroed,
                              const struct api_row_causes *causes)
{
    for (size_t i = 0; i < n_q; i++) {
        if (!fully_masked[i])
            continue;
        char label[API_TEXT_LABEL], message[API_TEXT_LABEL + 200];
        api_text_label(label, queries, i);
        masked_message(message, sizeof message, label, zeroed, emptied_by(causes, i));
        api_buf_printf(b, API_TR("\nwarning: %s\n"), message);
    }
    for (size_t h = 0; causes != NULL && h < causes->n_heads; h++)
        for (size_t i = 0; i < n_q; i++) {
            if (!sink_took_all(causes, fully_masked, h, i))
                continue;
            char label[API_TEXT_LABEL], message[API_TEXT_LABEL + 400];
            api_text_label(label, queries, i);
            sink_message(message, sizeof message, label, h, causes->n_heads);
            api_buf_printf(b, API_TR("\nwarning: %s\n"), message);
        }
}

/* Saturating, for sizes a client chose. */
static size_t page_mul(size_t a, size_t b)
{
    return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}

static size_t page_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t api_text_page_bytes(size_t matrices, size_t rows, size_t cols, size_t query_rows)
{
    enum { PAGE_FIXED = 16384, STEP_LINE = 512 }; /* headers, shapes, ops, notes */
    /* A summary row: four cells, each a label's or a number's bytes with its padding;
       a fully masked row's warning (its message's buffer and the line's words). */
    const size_t cell = API_TEXT_LABEL + API_TEXT_NUMBER + 4;
    const size_t per_query = 4 * cell + 8 + (API_TEXT_LABEL + 200 + 64) + api_tie_text_bytes();
    size_t bytes = page_mul(matrices, api_text_matrix_bytes(rows, cols) + STEP_LINE);
    return page_add(page_add(bytes, page_mul(query_rows, per_query)), PAGE_FIXED);
}

static const struct attn_summary *head_summary(const struct api_summaries *s, size_t h)
{
    return (const struct attn_summary *)((const char *)s->first + h * s->stride);
}

static void write_argmax(struct jw *w, size_t index)
{
    if (index == ATTN_NO_INDEX)
        jw_null(w);
    else
        jw_int(w, (long long)index);
}

/* One head's values of one key: k is 0 row_sums, 1 argmax, 2 max_weight, 3 entropy. */
static void write_values(struct jw *w, const struct attn_summary *a, int k, size_t n_q,
                         bool as_scalar)
{
    const double *xs = k == 0 ? a->row_sums : k == 2 ? a->max_weight : a->entropy;
    if (as_scalar) {
        if (k == 1)
            write_argmax(w, a->argmax[0]);
        else
            jw_double(w, xs[0]);
    } else if (k == 1) {
        jw_array_begin(w);
        for (size_t i = 0; i < n_q; i++)
            write_argmax(w, a->argmax[i]);
        jw_array_end(w);
    } else {
        jw_double_array(w, xs, n_q);
    }
}

/* Each row's sink weight: a scalar (vector q), a list, or a list per head. */
static void write_sink_weights(struct jw *w, const struct api_summaries *s)
{
    if (s->layout == API_SUMMARY_VECTOR) {
        jw_double(w, s->sink_weight[0][0]);
        return;
    }
    if (s->layout == API_SUMMARY_ROWS) {
        jw_double_array(w, s->sink_weight[0], s->n_q);
        return;
    }
    jw_array_begin(w);
    for (size_t h = 0; h < s->heads; h++)
        jw_double_array(w, s->sink_weight[h], s->n_q);
    jw_array_end(w);
}

void api_write_summary(struct jw *w, const struct api_summaries *s)
{
    static const char *const keys[] = { "row_sums", "argmax", "max_weight", "entropy" };
    JW_KEY(w, "summary");
    jw_object_begin(w);
    for (int k = 0; k < 4; k++) {
        jw_key(w, keys[k]);
        if (s->layout != API_SUMMARY_HEADS) {
            write_values(w, s->first, k, s->n_q, s->layout == API_SUMMARY_VECTOR);
            continue;
        }
        jw_array_begin(w);
        for (size_t h = 0; h < s->heads; h++)
            write_values(w, head_summary(s, h), k, s->n_q, false);
        jw_array_end(w);
    }
    if (s->sink_weight != NULL) {
        JW_KEY(w, "sink_weight");
        write_sink_weights(w, s);
    }
    JW_KEY(w, "fully_masked_rows"); /* query indices: `rows`' own when it picked them */
    const size_t *real = s->ties != NULL ? s->ties->real_rows : NULL;
    jw_array_begin(w);
    for (size_t i = 0; i < s->n_q; i++)
        if (s->first->fully_masked[i])
            jw_int(w, (long long)(real != NULL ? real[i] : i));
    jw_array_end(w);
    if (s->ties != NULL)
        api_write_tied_keys(w, s->ties);
    jw_object_end(w);
}

void api_write_shape(struct jw *w, size_t rows, size_t cols, bool as_vector)
{
    jw_array_begin(w);
    if (!as_vector)
        jw_int(w, (long long)rows);
    jw_int(w, (long long)cols);
    jw_array_end(w);
}

void api_grid_write_shapes(struct jw *w, const struct api_grid *g)
{
    JW_KEY(w, "mask");
    if (g->mask_kind == ATTN_MASK_CAUSAL)
        jw_string(w, g->top_left ? "causal_top_left" : "causal");
    else if (g->mask_kind == ATTN_MASK_CELLS)
        api_write_shape(w, g->mask_rows, g->n_k, g->mask_is_vector);
    else
        jw_null(w);
    JW_KEY(w, "bias");
    if (g->bias.data != NULL)
        api_write_shape(w, g->bias.rows, g->bias.cols, g->q_is_vector);
    else
        jw_null(w);
}

void api_grid_write_labels(struct jw *w, const struct api_grid *g)
{
    static const char *const lists[] = { "queries", "keys" };
    if (g->labels == NULL)
        return;
    JW_KEY(w, "labels");
    jw_object_begin(w);
    for (size_t l = 0; l < 2; l++) {
        const json_t *list = api_member(g->labels, lists[l]);
        if (list == NULL)
            continue;
        jw_key(w, lists[l]);
        jw_array_begin(w);
        for (size_t i = 0; i < json_array_size(list); i++) {
            const json_t *s = json_array_get(list, i);
            jw_string_n(w, json_string_value(s), json_string_length(s));
        }
        jw_array_end(w);
    }
    jw_object_end(w);
}

void api_svg_words(struct api_svg_heatmap *h)
{
    h->axis_x = API_TR("keys");
    h->axis_y = API_TR("queries");
    h->note = API_TR("hatched: masked cells; a hatched row attends to no key (its weights are 0)");
}
