/*
 * api/endpoints/teach/ties.c — ties in the answers (see ties.h).
 */
#include "api/endpoints/teach/ties.h"

#include <stdio.h>
#include <string.h>

#include "api/http/problem.h"
#include "api/i18n/fill.h"
#include "api/i18n/lang.h"
#include "api/json/numfmt.h"
#include "core/ties.h"

/* Every sentence and word of this module a user reads, in English: the keys of the
   message tables (i18n/lang.h), said through api_tr. */
enum api_tie_words {
    TIE_WORD,         /* the word written where a winner would be named */
    TIE_MESSAGE,      /* query, keys: a tied row's warning */
    TIE_HEAD_MESSAGE, /* head, query, keys: the same in one head */
    TIE_AND,          /* between the last two keys of a list */
    TIE_MORE,         /* how many more keys a cut list leaves out */
    TIE_ROWS,         /* queries: the rows of a heatmap that tie */
    TIE_WORDS
};

static const char *const tie_words[TIE_WORDS] = {
    [TIE_WORD] = API_N("tie"),
    [TIE_MESSAGE] = API_N("query {1} ties keys {2} for the largest weight: no key wins, and "
                    "argmax names only the lowest index"),
    [TIE_HEAD_MESSAGE] = API_N("head {3}: query {1} ties keys {2} for the largest weight: no key "
                         "wins, and argmax names only the lowest index"),
    [TIE_AND] = API_N(" and "),
    [TIE_MORE] = API_N(" and {1} more"),
    [TIE_ROWS] = API_N("tie in {1}"),
};

/* Keys named in a message; the warning's "keys" lists them all. */
enum { NAMED_KEYS = 8, KEY_LIST = NAMED_KEYS * (API_TEXT_LABEL + 2) + 64 };
enum { MESSAGE = KEY_LIST + 2 * API_TEXT_LABEL + 200 };

static const struct attn_trace *head_trace(const struct api_tie_source *s, size_t h)
{
    return &s->traces[h];
}

static const double *weights_row(const struct attn_trace *t, size_t i)
{
    return t->weights.data + i * t->weights.stride;
}

static void write_row_keys(struct jw *w, const struct attn_trace *t, size_t i)
{
    const double *row = weights_row(t, i);
    size_t n_k = t->weights.cols;
    double largest = attn_row_largest(row, n_k);
    jw_array_begin(w);
    for (size_t j = 0; j < n_k; j++)
        if (attn_weight_ties(row[j], largest))
            jw_int(w, (long long)j);
    jw_array_end(w);
}

static void write_head_rows(struct jw *w, const struct attn_trace *t, size_t n_q)
{
    jw_array_begin(w);
    for (size_t i = 0; i < n_q; i++)
        write_row_keys(w, t, i);
    jw_array_end(w);
}

/* The digits of the largest key index, n_k - 1 (one digit for 0). */
static size_t index_digits(size_t n_k)
{
    size_t digits = 1;
    for (size_t top = n_k > 0 ? n_k - 1 : 0; top >= 10; top /= 10)
        digits++;
    return digits;
}

size_t api_tie_text_bytes(void)
{
    return MESSAGE + 64; /* the message's buffer, and "\nwarning: %s\n" in any language */
}

size_t api_tie_numbers(size_t heads, size_t n_q, size_t n_k)
{
    int overflow = 0;
    size_t rows = attn_cells(heads, n_q, &overflow);
    size_t cells = attn_cells(rows, n_k, &overflow);
    /* Each tied key: its index and ", " in tied_keys and again in the warning's keys. */
    size_t per_key = 2 * (index_digits(n_k) + 2);
    /* Each tied row: its warning's members and a sentence of ordinary labels. */
    size_t per_row = 256;
    if (overflow || rows > (size_t)-1 / per_row ||
        cells > ((size_t)-1 - per_row * rows) / per_key)
        return (size_t)-1;
    size_t bytes = cells * per_key + per_row * rows;
    return bytes / API_ANSWER_BYTES_PER_NUMBER + 1;
}

void api_write_tied_keys(struct jw *w, const struct api_tie_source *s)
{
    JW_KEY(w, "tied_keys");
    if (s->vector) {
        write_row_keys(w, head_trace(s, 0), 0);
        return;
    }
    if (!s->per_head) {
        write_head_rows(w, head_trace(s, 0), s->n_q);
        return;
    }
    jw_array_begin(w);
    for (size_t h = 0; h < s->heads; h++)
        write_head_rows(w, head_trace(s, h), s->n_q);
    jw_array_end(w);
}

/* "k0, k1 and k2" (at most NAMED_KEYS named) from the tied keys of a row. */
static void key_list(char *buf, const double *row, size_t n_k, size_t n_tied,
                     const struct api_labels *keys)
{
    double largest = attn_row_largest(row, n_k);
    size_t used = 0, named = 0;
    buf[0] = '\0';
    for (size_t j = 0; j < n_k && named < NAMED_KEYS; j++) {
        if (!attn_weight_ties(row[j], largest))
            continue;
        char label[API_TEXT_LABEL];
        if (keys != NULL)
            api_text_label(label, keys, j);
        else
            snprintf(label, sizeof label, "%zu", j);
        const char *sep = named == 0 ? "" : named + 1 == n_tied ? api_tr(tie_words[TIE_AND]) : ", ";
        int n = snprintf(buf + used, KEY_LIST - used, "%s%s", sep, label);
        if (n > 0)
            used += (size_t)n < KEY_LIST - used ? (size_t)n : KEY_LIST - used - 1;
        named++;
    }
    if (n_tied > named) {
        char more[24];
        const char *args[] = { more };
        snprintf(more, sizeof more, "%zu", n_tied - named);
        api_fill(buf + used, KEY_LIST - used, api_tr(tie_words[TIE_MORE]), args, 1);
    }
}

/* The warning's sentence for row i of head h, queries and keys by label or index. */
static void tie_message(char *buf, size_t size, const struct api_tie_source *s, size_t h,
                        size_t i, const struct api_labels *queries,
                        const struct api_labels *keys)
{
    const struct attn_trace *t = head_trace(s, h);
    const double *row = weights_row(t, i);
    size_t n_k = t->weights.cols;
    char list[KEY_LIST], query[API_TEXT_LABEL], head[24];
    key_list(list, row, n_k, attn_row_ties(row, n_k, NULL), keys);
    if (queries != NULL)
        api_text_label(query, queries, i);
    else
        snprintf(query, sizeof query, "%zu", s->real_rows != NULL ? s->real_rows[i] : i);
    snprintf(head, sizeof head, "%zu", h);
    const char *args[] = { query, list, head };
    api_fill(buf, size, api_tr(tie_words[s->per_head ? TIE_HEAD_MESSAGE : TIE_MESSAGE]), args, 3);
}


void api_write_tie_warnings(struct jw *w, const struct api_tie_source *s)
{
    for (size_t h = 0; h < s->heads; h++) {
        const struct attn_trace *t = head_trace(s, h);
        for (size_t i = 0; i < s->n_q; i++) {
            if (attn_row_ties(weights_row(t, i), t->weights.cols, NULL) < 2)
                continue;
            char message[MESSAGE];
            tie_message(message, sizeof message, s, h, i, NULL, NULL);
            jw_object_begin(w);
            JW_KEY(w, "code");
            jw_string(w, "tie");
            if (s->per_head) {
                JW_KEY(w, "head");
                jw_int(w, (long long)h);
            }
            JW_KEY(w, "row");
            jw_int(w, (long long)(s->real_rows != NULL ? s->real_rows[i] : i));
            JW_KEY(w, "keys");
            write_row_keys(w, t, i);
            JW_KEY(w, "message");
            jw_string(w, message);
            jw_object_end(w);
        }
    }
}

void api_text_tie_warnings(struct api_buf *b, const struct api_tie_source *s,
                           const struct api_labels *queries, const struct api_labels *keys)
{
    for (size_t h = 0; h < s->heads; h++) {
        const struct attn_trace *t = head_trace(s, h);
        for (size_t i = 0; i < s->n_q; i++) {
            if (attn_row_ties(weights_row(t, i), t->weights.cols, NULL) < 2)
                continue;
            char message[MESSAGE];
            tie_message(message, sizeof message, s, h, i, queries, keys);
            api_buf_printf(b, API_TR("\nwarning: %s\n"), message);
        }
    }
}

void api_text_winner(char *buf, const struct attn_trace *t, size_t i,
                     const struct api_labels *keys)
{
    const double *row = weights_row(t, i);
    size_t first = 0;
    size_t n = attn_row_ties(row, t->weights.cols, NULL);
    if (n == 0) {
        snprintf(buf, API_TEXT_LABEL, "-");
        return;
    }
    if (n > 1) {
        snprintf(buf, API_TEXT_LABEL, "%s", api_tr(tie_words[TIE_WORD]));
        return;
    }
    attn_row_ties(row, t->weights.cols, &first);
    api_text_label(buf, keys, first);
}

void api_text_tie_rows(char *buf, size_t size, const struct attn_trace *t, size_t n_q,
                       const struct api_labels *queries)
{
    char list[KEY_LIST];
    size_t used = 0, named = 0, tied = 0;
    list[0] = '\0';
    for (size_t i = 0; i < n_q; i++) {
        if (attn_row_ties(weights_row(t, i), t->weights.cols, NULL) < 2)
            continue;
        tied++;
        if (named == NAMED_KEYS)
            continue;
        char label[API_TEXT_LABEL];
        api_text_label(label, queries, i);
        int n = snprintf(list + used, KEY_LIST - used, "%s%s", named == 0 ? "" : ", ", label);
        if (n > 0)
            used += (size_t)n < KEY_LIST - used ? (size_t)n : KEY_LIST - used - 1;
        named++;
    }
    buf[0] = '\0';
    if (tied == 0)
        return;
    if (tied > named)
        snprintf(list + used, KEY_LIST - used, ", ...");
    const char *args[] = { list };
    api_fill(buf, size, api_tr(tie_words[TIE_ROWS]), args, 1);
}
