/*
 * api/request/masks.c — documents, prefix, chunk and block (see masks.h), each mistake
 * naming its pointer with a hint.
 */
#include "api/request/masks.h"

#include <stdlib.h>
#include <string.h>

#include "api/i18n/lang.h"
#include "api/request/fields.h"
#include "core/block_map.h"

/* The largest length, prefix, chunk or block: sizes are at most INT_MAX anyway. */
#define API_MASK_MAX_INT 2147483647LL

/* What a length list splits, for messages: "queries" or "keys". */
struct split_of {
    const char *name;  /* "lengths", "lengths_q" or "lengths_k" */
    size_t n;          /* the tokens it splits */
    const char *what;  /* "queries" or "keys" (catalogued) */
};

/* The count of a list of lengths, checked before a number is read: 1 to n documents. */
static bool check_count(const json_t *list, const char *ptr, const struct split_of *s,
                        struct api_error *err)
{
    if (!json_is_array(list)) {
        api_error_set(err, API_INVALID_VALUE, "documents.%s must be a list of lengths, not %s",
                      s->name, api_json_kind(list));
        api_error_at(err, "%s", ptr);
    } else if (json_array_size(list) == 0) {
        api_error_set(err, API_INVALID_VALUE, "documents.%s is empty", s->name);
        api_error_at(err, "%s", ptr);
    } else if (json_array_size(list) > s->n) {
        api_error_set(err, API_INVALID_VALUE, "documents.%s lists %zu documents, but %zu %s "
                      "hold at most %zu of one token or more", s->name, json_array_size(list),
                      s->n, api_tr(s->what), s->n);
        api_error_at(err, "%s", ptr);
    } else {
        return true;
    }
    api_error_hint(err, "one integer >= 1 per document, in order, adding up to %zu (the %s)",
                   s->n, api_tr(s->what));
    return false;
}

/* A list of lengths into starts (n_docs + 1, malloc'd): each >= 1, adding up to s->n. */
static bool read_lengths(const json_t *list, const char *ptr, const struct split_of *s,
                         size_t **starts, struct api_error *err)
{
    *starts = NULL;
    if (!check_count(list, ptr, s, err))
        return false;
    size_t n_docs = json_array_size(list), sum = 0;
    size_t *out = malloc((n_docs + 1) * sizeof *out);
    if (out == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "documents");
        return false;
    }
    out[0] = 0;
    for (size_t d = 0; d < n_docs; d++) {
        char at[200];
        long long len;
        snprintf(at, sizeof at, "%s/%zu", ptr, d);
        if (!api_read_int_range(json_array_get(list, d), at, s->name, 1, API_MASK_MAX_INT, &len,
                                err)) {
            api_error_hint(err, "every document has at least one token: a length is an integer "
                           ">= 1");
            free(out);
            return false;
        }
        sum = sum + (size_t)len > s->n ? s->n + 1 : sum + (size_t)len; /* no wrap past n */
        out[d + 1] = sum;
    }
    if (sum != s->n) {
        size_t total = 0;
        for (size_t d = 0; d < n_docs; d++)
            total += (size_t)json_number_value(json_array_get(list, d));
        api_error_set(err, API_INVALID_VALUE, "documents.%s adds up to %zu, but there are %zu %s",
                      s->name, total, s->n, api_tr(s->what));
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "the lengths split the %s in order, so they add up to %zu",
                       api_tr(s->what), s->n);
        free(out);
        return false;
    }
    *starts = out;
    return true;
}

/* Which of the two forms documents takes; false (err set) for neither, both or half. */
static bool documents_form(const json_t *node, const char *ptr, size_t n_q, size_t n_k,
                           bool *shared, struct api_error *err)
{
    bool one = api_member(node, "lengths") != NULL;
    bool has_q = api_member(node, "lengths_q") != NULL, has_k = api_member(node, "lengths_k") != NULL;
    *shared = one;
    if (one && (has_q || has_k)) {
        api_error_set(err, API_INVALID_VALUE, "documents takes lengths, or lengths_q with "
                      "lengths_k, not both");
        api_error_at(err, "%s", ptr);
    } else if (!one && !has_q && !has_k) {
        api_error_set(err, API_MISSING_FIELD, "documents needs lengths, or lengths_q and "
                      "lengths_k");
        api_error_at(err, "%s", ptr);
    } else if (!one && has_q != has_k) {
        api_error_set(err, API_MISSING_FIELD, "documents.%s is required with documents.%s",
                      has_q ? "lengths_k" : "lengths_q", has_q ? "lengths_q" : "lengths_k");
        api_error_at(err, "%s/%s", ptr, has_q ? "lengths_k" : "lengths_q");
    } else if (one && n_q != n_k) {
        api_error_set(err, API_INVALID_VALUE, "documents.lengths splits queries and keys alike, "
                      "but n_q = %zu and n_k = %zu", n_q, n_k);
        api_error_at(err, "%s/lengths", ptr);
    } else {
        return true;
    }
    api_error_hint(err, "lengths for packed self-attention (the same split of queries and "
                   "keys); lengths_q and lengths_k for FlashAttention's varlen (cu_seqlens_q, "
                   "cu_seqlens_k as lengths)");
    return false;
}

static bool read_documents(const json_t *node, const char *prefix, size_t n_q, size_t n_k,
                           struct api_masks *m, struct api_error *err)
{
    static const struct api_field fields[] = {
        { "lengths", "each document's tokens, queries and keys alike" },
        { "lengths_q", "each document's queries" },
        { "lengths_k", "each document's keys" },
    };
    char ptr[160], at[200];
    API_FIELD_POINTER(ptr, prefix, "documents");
    if (!json_is_object(node)) {
        api_error_set(err, API_INVALID_VALUE, "documents must be an object, not %s",
                      api_json_kind(node));
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "e.g. {\"lengths\": [3, 5]}: two packed documents of 3 and 5 tokens");
        return false;
    }
    if (!api_check_fields(node, ptr, fields, 3, err) ||
        !documents_form(node, ptr, n_q, n_k, &m->lengths_shared, err))
        return false;
    struct split_of q = { m->lengths_shared ? "lengths" : "lengths_q", n_q, API_N("queries") };
    struct split_of k = { m->lengths_shared ? "lengths" : "lengths_k", n_k, API_N("keys") };
    API_FIELD_POINTER(at, ptr, q.name);
    if (!read_lengths(api_member(node, q.name), at, &q, &m->doc_q, err))
        return false;
    API_FIELD_POINTER(at, ptr, k.name);
    if (!read_lengths(api_member(node, k.name), at, &k, &m->doc_k, err))
        return false;
    size_t count_q = json_array_size(api_member(node, q.name));
    size_t count_k = json_array_size(api_member(node, k.name));
    if (count_q != count_k) {
        api_error_set(err, API_INVALID_VALUE, "documents.lengths_q lists %zu documents and "
                      "documents.lengths_k %zu", count_q, count_k);
        api_error_at(err, "%s", at);
        api_error_hint(err, "each document has queries and keys: the two lists name the same "
                       "documents, in order");
        return false;
    }
    m->n_docs = count_q;
    return true;
}

/* block: [B_q, B_k], each an integer >= 1. */
static bool read_block(const json_t *node, const char *prefix, struct api_masks *m,
                       struct api_error *err)
{
    char ptr[160], at[200];
    API_FIELD_POINTER(ptr, prefix, "block");
    if (!json_is_array(node) || json_array_size(node) != 2) {
        api_error_set(err, API_INVALID_VALUE, "block must be a list of two integers [B_q, B_k], "
                      "not %s", api_json_kind(node));
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "e.g. [128, 128], FlexAttention's tile: B_q queries by B_k keys");
        return false;
    }
    size_t *out[] = { &m->block_q, &m->block_k };
    for (size_t i = 0; i < 2; i++) {
        long long b;
        snprintf(at, sizeof at, "%s/%zu", ptr, i);
        if (!api_read_int_range(json_array_get(node, i), at, "block", 1, API_MASK_MAX_INT, &b,
                                err)) {
            api_error_hint(err, "a tile holds at least one query and one key: each of B_q and "
                           "B_k is an integer >= 1");
            return false;
        }
        *out[i] = (size_t)b;
    }
    return true;
}

static bool read_scalars(const json_t *doc, const char *prefix, size_t n_k, struct api_masks *m,
                         struct api_error *err)
{
    char ptr[160];
    const json_t *node;
    long long x;
    if ((node = api_member(doc, "prefix")) != NULL) {
        API_FIELD_POINTER(ptr, prefix, "prefix");
        if (!api_read_int_range(node, ptr, "prefix", 0, (long long)n_k, &x, err)) {
            api_error_hint(err, "prefix P lets every query see keys 0 to P - 1 both ways (a "
                           "prefix-LM): 0 <= P <= n_k = %zu", n_k);
            return false;
        }
        m->prefix = (size_t)x;
    }
    if ((node = api_member(doc, "chunk")) != NULL) {
        API_FIELD_POINTER(ptr, prefix, "chunk");
        if (!api_read_int_range(node, ptr, "chunk", 1, API_MASK_MAX_INT, &x, err)) {
            api_error_hint(err, "chunk C: each query sees only the keys of its own chunk of C "
                           "positions (Llama 4 uses 8192); C >= 1");
            return false;
        }
        m->chunk = (size_t)x;
    }
    return true;
}

bool api_masks_read(const json_t *doc, const char *prefix, size_t n_q, size_t n_k,
                    struct api_masks *m, struct api_error *err)
{
    const json_t *node;
    memset(m, 0, sizeof *m);
    m->block_q = m->block_k = API_BLOCK_DEFAULT;
    bool ok = read_scalars(doc, prefix, n_k, m, err) &&
              ((node = api_member(doc, "documents")) == NULL ||
               read_documents(node, prefix, n_q, n_k, m, err)) &&
              ((node = api_member(doc, "block")) == NULL || read_block(node, prefix, m, err));
    if (!ok)
        api_masks_deinit(m);
    return ok;
}

void api_masks_deinit(struct api_masks *m)
{
    free(m->doc_q);
    free(m->doc_k);
    m->doc_q = m->doc_k = NULL;
    m->n_docs = 0;
}

bool api_check_block_map(const struct api_masks *m, size_t n_q, size_t n_k, const char *prefix,
                         const struct api_limits *limits, struct api_error *err)
{
    size_t rows = attn_tiles_along(n_q, m->block_q), cols = attn_tiles_along(n_k, m->block_k);
    if (rows <= limits->max_cells / cols)
        return true;
    char ptr[160];
    API_FIELD_POINTER(ptr, prefix, "block");
    api_error_set(err, API_LIMIT_EXCEEDED, "block_map would have %zu x %zu tiles; this server "
                  "computes at most %zu cells in one matrix", rows, cols, limits->max_cells);
    api_error_at(err, "%s", ptr);
    api_error_hint(err, "send larger tiles in block: [128, 128] is FlexAttention's");
    return false;
}

bool api_masks_hide(const struct api_masks *m)
{
    return m->doc_q != NULL || m->chunk > 0;
}

void api_masks_apply(const struct api_masks *m, struct attn_variants *out)
{
    out->top_left = m->top_left;
    out->prefix = m->prefix;
    out->chunk = m->chunk;
    out->doc_q = m->doc_q;
    out->doc_k = m->doc_k;
    out->n_docs = m->n_docs;
}
