/*
 * api/endpoints/bertviz.c — the bertviz answer (see bertviz.h).
 */
#include "api/endpoints/bertviz.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/http/respond.h"
#include "api/json/matrix_write.h"
#include "api/json/numfmt.h"
#include "api/request/fields.h"

/* labels[which] when it was sent (the parse checked its length), else NULL. */
static const json_t *label_list(const json_t *labels, const char *which)
{
    return labels != NULL ? api_member(labels, which) : NULL;
}

static bool same_names(const json_t *a, const json_t *b)
{
    size_t n = json_array_size(a);
    if (n != json_array_size(b))
        return false;
    for (size_t i = 0; i < n; i++) {
        const char *x = json_string_value(json_array_get(a, i));
        const char *y = json_string_value(json_array_get(b, i));
        if (x == NULL || y == NULL || strcmp(x, y) != 0)
            return false;
    }
    return true;
}

bool api_bertviz_is_cross(const struct api_bertviz *b)
{
    if (b->cross_inputs || b->n_q != b->n_k)
        return true;
    const json_t *queries = label_list(b->labels, "queries");
    const json_t *keys = label_list(b->labels, "keys");
    return queries != NULL && keys != NULL && !same_names(queries, keys);
}

size_t api_bertviz_token_bytes(size_t n_q, size_t n_k, size_t body_len)
{
    if (n_q > SIZE_MAX / 2 - n_k)
        return SIZE_MAX;
    size_t tokens = n_q + n_k;
    if (tokens > (SIZE_MAX - body_len) / API_ANSWER_BYTES_PER_NUMBER)
        return SIZE_MAX;
    return tokens * API_ANSWER_BYTES_PER_NUMBER + body_len;
}

/* The names: the list sent, else t0 … t(n-1). */
static void write_tokens(struct jw *w, const json_t *names, size_t n)
{
    jw_array_begin(w);
    for (size_t i = 0; i < n; i++) {
        const char *name = names != NULL ? json_string_value(json_array_get(names, i)) : NULL;
        if (name != NULL) {
            jw_string(w, name);
        } else {
            char t[32];
            snprintf(t, sizeof t, "t%zu", i);
            jw_string(w, t);
        }
    }
    jw_array_end(w);
}

/* [layer][batch][head][n_q][n_k] with one layer and a batch of one. */
static void write_maps(struct jw *w, const struct api_bertviz *b)
{
    jw_array_begin(w);
    jw_array_begin(w);
    jw_array_begin(w);
    for (size_t h = 0; h < b->n_heads; h++)
        api_write_matrix(w, &b->heads[h].weights);
    jw_array_end(w);
    jw_array_end(w);
    jw_array_end(w);
}

void api_bertviz_write(struct jw *w, const struct api_bertviz *b)
{
    const json_t *queries = label_list(b->labels, "queries");
    const json_t *keys = label_list(b->labels, "keys");
    jw_object_begin(w);
    if (api_bertviz_is_cross(b)) {
        JW_KEY(w, "encoder_tokens");
        write_tokens(w, keys, b->n_k);
        JW_KEY(w, "decoder_tokens");
        write_tokens(w, queries, b->n_q);
        JW_KEY(w, "cross_attention");
    } else {
        JW_KEY(w, "tokens");
        write_tokens(w, keys != NULL ? keys : queries, b->n_k);
        JW_KEY(w, "attention");
    }
    write_maps(w, b);
    jw_object_end(w);
}

void api_bertviz_respond(struct api_response *res, const struct api_bertviz *b, int round,
                         bool segments_ok)
{
    struct jw w;
    api_write_start(&w, round, b->n_heads * b->n_q * b->n_k, segments_ok);
    api_bertviz_write(&w, b);
    api_respond_json(res, &w);
}
