/*
 * api/endpoints/batch/page.c — the experiment table of a batch (see batch/page.h).
 */
#include "api/endpoints/batch/page.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/endpoints/attention/page.h"
#include "api/http/problem.h"
#include "api/i18n/fill.h"
#include "api/i18n/lang.h"
#include "api/json/numfmt.h"
#include "api/render/text.h"
#include "core/ties.h"

/* Every word of the table a user reads, in English: the keys of the message tables
   (i18n/lang.h), said through api_tr; "-" is no word. */
enum batch_words {
    BW_EXPERIMENT, BW_QUERY, BW_KEY, BW_WEIGHT, BW_CHANGE, /* the header */
    BW_ITEM,          /* index: an item without a name */
    BW_TIE,           /* the key column of a tied row */
    BW_NONE,          /* a fully masked row has no key */
    BW_BASE,          /* the first item's change */
    BW_NO_CHANGE,
    BW_WEIGHT_CHANGE, /* signed difference: the same key, another weight */
    BW_WINNER,        /* old key, new key */
    BW_TIE_BROKEN,    /* new key */
    BW_NOW_TIE,
    BW_STILL_TIE,
    BW_TIE_CHANGED,
    BW_NOT_COMPARED,  /* the first item has no such query, or failed */
    BW_FAILED,        /* status, type: the item's problem */
    BW_WORDS
};

static const char *const batch_words[BW_WORDS] = {
    [BW_EXPERIMENT] = API_N("experiment"), [BW_QUERY] = API_N("query"), [BW_KEY] = API_N("key"),
    [BW_WEIGHT] = API_N("weight"), [BW_CHANGE] = API_N("change"),
    [BW_ITEM] = API_N("item {1}"),
    [BW_TIE] = API_N("tie"),
    [BW_NONE] = "-",
    [BW_BASE] = API_N("(the base)"),
    [BW_NO_CHANGE] = API_N("no change"),
    [BW_WEIGHT_CHANGE] = API_N("same key, weight {1}"),
    [BW_WINNER] = API_N("winner changed: {1} -> {2}"),
    [BW_TIE_BROKEN] = API_N("tie broken: {1} wins"),
    [BW_NOW_TIE] = API_N("now a tie"),
    [BW_STILL_TIE] = API_N("still a tie"),
    [BW_TIE_CHANGED] = API_N("tied keys changed"),
    [BW_NOT_COMPARED] = "-",
    [BW_FAILED] = API_N("failed: {1} {2}"),
};

enum { COLS = 5, SLOT = API_TEXT_LABEL + 64 };

void api_batch_table_init(struct api_batch_table *t)
{
    memset(t, 0, sizeof *t);
}

void api_batch_table_deinit(struct api_batch_table *t)
{
    free(t->cells);
    free(t->base);
    memset(t, 0, sizeof *t);
}

/* A new line of COLS empty slots, or NULL (t->failed) when memory ran short. */
static char *new_row(struct api_batch_table *t)
{
    if (t->failed)
        return NULL;
    if (t->rows == t->cap) {
        size_t cap = t->cap == 0 ? 8 : 2 * t->cap;
        char *cells = realloc(t->cells, cap * COLS * SLOT);
        if (cells == NULL) {
            t->failed = true;
            return NULL;
        }
        t->cells = cells;
        t->cap = cap;
    }
    char *row = t->cells + t->rows++ * COLS * SLOT;
    memset(row, 0, COLS * SLOT);
    return row;
}

static void fill1(char *slot, enum batch_words word, const char *a1, const char *a2)
{
    const char *args[] = { a1, a2 };
    api_fill(slot, SLOT, api_tr(batch_words[word]), args, 2);
}

static void experiment_name(char *slot, size_t index, const char *name)
{
    char i[24];
    snprintf(i, sizeof i, "%zu", index);
    if (name != NULL) {
        const char *const names[] = { name };
        const struct api_labels l = { names, 1, "" };
        api_text_label(slot, &l, 0); /* shown visibly and cut, as every label */
    } else {
        fill1(slot, BW_ITEM, i, NULL);
    }
}

/* What changed in this row from the base's same row: the change column. */
static void change_text(char *slot, const struct api_batch_table *t, size_t i,
                        const double *row, size_t n_k, const struct api_labels *keys,
                        int decimals)
{
    if (t->base == NULL || i >= t->base_q || n_k != t->base_k) {
        fill1(slot, BW_NOT_COMPARED, NULL, NULL);
        return;
    }
    const double *base = t->base + i * t->base_k;
    size_t b_first = 0, a_first = 0;
    size_t b_n = attn_row_ties(base, n_k, NULL), a_n = attn_row_ties(row, n_k, NULL);
    if (b_n == 0 || a_n == 0) {
        fill1(slot, BW_NOT_COMPARED, NULL, NULL);
        return;
    }
    char old_key[API_TEXT_LABEL], new_key[API_TEXT_LABEL];
    if (b_n == 1)
        attn_row_ties(base, n_k, &b_first);
    if (a_n == 1)
        attn_row_ties(row, n_k, &a_first);
    if (b_n > 1 && a_n > 1) {
        bool same = true;
        double bl = attn_row_largest(base, n_k), al = attn_row_largest(row, n_k);
        for (size_t j = 0; j < n_k; j++)
            same &= attn_weight_ties(base[j], bl) == attn_weight_ties(row[j], al);
        fill1(slot, same ? BW_STILL_TIE : BW_TIE_CHANGED, NULL, NULL);
    } else if (b_n > 1) {
        api_text_label(new_key, keys, a_first);
        fill1(slot, BW_TIE_BROKEN, new_key, NULL);
    } else if (a_n > 1) {
        fill1(slot, BW_NOW_TIE, NULL, NULL);
    } else if (a_first != b_first) {
        api_text_label(old_key, keys, b_first);
        api_text_label(new_key, keys, a_first);
        fill1(slot, BW_WINNER, old_key, new_key);
    } else {
        double d = api_round_decimals(row[a_first] - base[b_first], decimals);
        if (d == 0) {
            fill1(slot, BW_NO_CHANGE, NULL, NULL);
            return;
        }
        char num[API_TEXT_NUMBER + 1];
        num[0] = d > 0 ? '+' : '\0';
        api_text_number(num + (d > 0), d, decimals);
        fill1(slot, BW_WEIGHT_CHANGE, num, NULL);
    }
}

static void keep_base(struct api_batch_table *t, const struct attn_trace *trace)
{
    size_t n_q = trace->n_q, n_k = trace->n_k;
    t->base = malloc(n_q * n_k * sizeof *t->base);
    if (t->base == NULL) {
        t->failed = true;
        return;
    }
    for (size_t i = 0; i < n_q; i++)
        memcpy(t->base + i * n_k, trace->weights.data + i * trace->weights.stride,
               n_k * sizeof *t->base);
    t->base_q = n_q;
    t->base_k = n_k;
}

static void add_failed(struct api_batch_table *t, size_t index, const char *name,
                       const struct api_error *err)
{
    char *row = new_row(t);
    if (row == NULL)
        return;
    char status[24];
    const struct api_problem_info *info = api_problem_info(err->type);
    snprintf(status, sizeof status, "%d", info->status);
    experiment_name(row, index, name);
    fill1(row + 4 * SLOT, BW_FAILED, status, info->slug);
}

void api_batch_table_add(struct api_batch_table *t, size_t index, const char *name,
                         const struct api_attention_req *req, const struct attn_trace *trace,
                         const struct api_error *err)
{
    bool first = !t->base_set;
    t->base_set = true;
    if (trace == NULL) {
        add_failed(t, index, name, err);
        return;
    }
    if (first)
        keep_base(t, trace);
    static const char *const lone_query[] = { "q" };
    const char **q_names = api_label_names(req->grid.labels, "queries", req->q.rows);
    const char **k_names = api_label_names(req->grid.labels, "keys", req->k.rows);
    struct api_labels queries = { q_names, req->q.rows, "q" };
    if (q_names == NULL && req->q_is_vector)
        queries.names = lone_query;
    const struct api_labels keys = { k_names, req->k.rows, "k" };
    int decimals = req->grid.round >= 0 ? req->grid.round : 4;
    for (size_t i = 0; i < trace->n_q; i++) {
        char *row = new_row(t);
        if (row == NULL)
            break;
        const double *w = trace->weights.data + i * trace->weights.stride;
        size_t n_tied = attn_row_ties(w, trace->n_k, NULL), winner = 0;
        experiment_name(row, index, name);
        api_text_label(row + SLOT, &queries, i);
        if (n_tied == 1)
            attn_row_ties(w, trace->n_k, &winner);
        if (n_tied == 1)
            api_text_label(row + 2 * SLOT, &keys, winner);
        else
            fill1(row + 2 * SLOT, n_tied == 0 ? BW_NONE : BW_TIE, NULL, NULL);
        api_text_number(row + 3 * SLOT, attn_row_largest(w, trace->n_k), decimals);
        if (first)
            fill1(row + 4 * SLOT, BW_BASE, NULL, NULL);
        else
            change_text(row + 4 * SLOT, t, i, w, trace->n_k, &keys, decimals);
    }
    free(q_names);
    free(k_names);
}

void api_batch_table_write(const struct api_batch_table *t, struct api_buf *b)
{
    if (t->failed) {
        b->failed = true;
        return;
    }
    const char **cells = malloc((t->rows * COLS + 1) * sizeof *cells);
    if (cells == NULL) {
        b->failed = true;
        return;
    }
    for (size_t c = 0; c < t->rows * COLS; c++)
        cells[c] = t->cells + c * SLOT;
    const char *const header[COLS] = { api_tr(batch_words[BW_EXPERIMENT]), api_tr(batch_words[BW_QUERY]),
                                       api_tr(batch_words[BW_KEY]), api_tr(batch_words[BW_WEIGHT]),
                                       api_tr(batch_words[BW_CHANGE]) };
    struct api_text_table tab = { header, cells, t->rows, COLS, "lllrl", NULL };
    api_text_table(b, &tab);
    free(cells);
}
