/*
 * api/endpoints/v2/variants.c — V2's flat variant parameters and the document lengths'
 * inputs, read as /v1's fields (see v2/variants.h): the parameters and LENGTHS (or
 * LENGTHS_Q and LENGTHS_K) become the object /v1 would have been sent, its reader
 * checks it, and a problem's pointer is turned back into the parameter's or the input's.
 */
#include "api/endpoints/v2/variants.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/i18n/lang.h"

/* Sets obj[key] = value (a new reference taken over); false when memory ran out. */
static bool put(json_t *obj, const char *key, json_t *value)
{
    return value != NULL && json_object_set_new(obj, key, value) == 0;
}

/* Copies params[name] into obj[key] when present; a window side of -1 becomes null. */
static bool copy(json_t *obj, const char *key, const json_t *params, const char *name,
                 bool minus_one_is_null)
{
    json_t *x = json_object_get(params, name);
    if (x == NULL)
        return true;
    if (minus_one_is_null && json_is_number(x) && json_number_value(x) == -1)
        return put(obj, key, json_null());
    return put(obj, key, json_incref(x) ? x : NULL);
}

/* obj[key] = {members from params}, when any of them is present. */
static bool group(json_t *doc, const char *key, const json_t *params, const char *const *names,
                  const char *const *members, size_t n, bool minus_one_is_null)
{
    bool any = false;
    for (size_t i = 0; i < n; i++)
        any |= json_object_get(params, names[i]) != NULL;
    if (!any)
        return true;
    json_t *obj = json_object();
    if (!put(doc, key, obj))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!copy(obj, members[i], params, names[i], minus_one_is_null))
            return false;
    return true;
}

/* block_q and block_k as /v1's block [B_q, B_k], the one not sent at its default. */
static bool block(json_t *doc, const json_t *params)
{
    json_t *b_q = json_object_get(params, "block_q"), *b_k = json_object_get(params, "block_k");
    if (b_q == NULL && b_k == NULL)
        return true;
    json_t *list = json_array();
    if (!put(doc, "block", list))
        return false;
    return json_array_append_new(list, b_q != NULL ? json_incref(b_q)
                                                   : json_integer(API_BLOCK_DEFAULT)) == 0 &&
           json_array_append_new(list, b_k != NULL ? json_incref(b_k)
                                                   : json_integer(API_BLOCK_DEFAULT)) == 0;
}

/* The /v1 document the parameters mean; NULL when memory ran out. */
static json_t *as_v1(const json_t *params)
{
    static const char *const rope[] = { "rope_base", "rope_layout", "rope_fraction" };
    static const char *const rope_m[] = { "base", "layout", "fraction" };
    static const char *const window[] = { "window_left", "window_right" };
    static const char *const window_m[] = { "left", "right" };
    static const char *const dropout[] = { "dropout_p", "dropout_seed" };
    static const char *const dropout_m[] = { "p", "seed" };
    static const char *const plain[] = { "softcap", "alibi", "sink_tokens", "sink_logit",
                                         "prefix", "chunk" };
    json_t *doc = json_object();
    bool ok = doc != NULL && group(doc, "rope", params, rope, rope_m, 3, false) &&
              group(doc, "window", params, window, window_m, 2, true) &&
              group(doc, "dropout", params, dropout, dropout_m, 2, false) &&
              block(doc, params);
    for (size_t i = 0; ok && i < sizeof plain / sizeof plain[0]; i++)
        ok = copy(doc, plain[i], params, plain[i], false);
    if (!ok) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* The inputs that are /v1's documents lists, by the list's name. */
static const char *const list_names[] = { "lengths", "lengths_q", "lengths_k" };
static const char *const list_inputs[] = { "LENGTHS", "LENGTHS_Q", "LENGTHS_K" };
#define N_LISTS 3

/*
 * "/documents/lengths_q/3" → "/inputs/<i>/data/3" (or its binary_data_size, where a
 * binary input's cells are named), "/documents/lengths_k" → "/inputs/<i>", a list not
 * sent → "/inputs" (where a missing input is named), "/documents" (the two forms mixed)
 * → the list sent beside LENGTHS.
 */
static void repoint_documents(struct api_error *err, const struct api_v2_infer *r)
{
    char was[sizeof err->pointer];
    memcpy(was, err->pointer, sizeof was);
    const char *p = was + strlen("/documents");
    const struct api_v2_tensor *t = NULL;
    if (*p == '\0') {
        for (size_t i = N_LISTS; t == NULL && i-- > 0;)
            t = api_v2_input(r, list_inputs[i]);
    } else {
        size_t len = strcspn(++p, "/");
        for (size_t i = 0; i < N_LISTS; i++)
            if (strlen(list_names[i]) == len && strncmp(p, list_names[i], len) == 0)
                t = api_v2_input(r, list_inputs[i]);
        p += len;
    }
    if (t == NULL)
        api_error_at(err, "/inputs");
    else if (*p == '\0')
        api_error_at(err, "/inputs/%zu", t->index);
    else if (t->bytes != NULL)
        api_error_at(err, "/inputs/%zu/parameters/binary_data_size", t->index);
    else
        api_error_at(err, "/inputs/%zu/data%s", t->index, p);
}

/* "/rope/base" → "/parameters/rope_base", and so on; the documents to their inputs. */
static void repoint(struct api_error *err, const struct api_v2_infer *r)
{
    static const char *const from[] = { "/rope/base", "/rope/layout", "/rope/fraction", "/rope",
                                        "/window/left", "/window/right", "/dropout/p",
                                        "/dropout/seed", "/softcap", "/alibi", "/sink_tokens",
                                        "/sink_logit", "/prefix", "/chunk", "/block/0",
                                        "/block/1", "/block" };
    static const char *const to[] = { "rope_base", "rope_layout", "rope_fraction",
                                      "rope_fraction", "window_left", "window_right",
                                      "dropout_p", "dropout_seed", "softcap", "alibi",
                                      "sink_tokens", "sink_logit", "prefix", "chunk", "block_q",
                                      "block_k", "block_q" };
    if (!err->has_pointer)
        return;
    if (strncmp(err->pointer, "/documents", 10) == 0 &&
        (err->pointer[10] == '\0' || err->pointer[10] == '/')) {
        repoint_documents(err, r);
        return;
    }
    for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
        size_t n = strlen(from[i]);
        if (strncmp(err->pointer, from[i], n) == 0 &&
            (err->pointer[n] == '\0' || err->pointer[n] == '/')) {
            api_error_at(err, "/parameters/%s", to[i]);
            return;
        }
    }
}

/*
 * A lengths input's shape, before a number is read: one list (rank 1; a batch shares
 * it), of at most `tokens` documents (what /v1 says of a list too long).
 */
static bool check_list(const struct api_v2_tensor *t, const char *name, size_t tokens,
                       const char *what, struct api_error *err)
{
    if (t->rank != 1) {
        api_error_set(err, API_SHAPE_MISMATCH, "inputs[%zu] (%.64s) has rank %zu; document "
                      "lengths are one list (rank 1), shared by every problem of a batch",
                      t->index, t->name, t->rank);
        api_error_at(err, "/inputs/%zu/shape", t->index);
        return false;
    }
    if (t->count <= tokens)
        return true;
    api_error_set(err, API_INVALID_VALUE, "documents.%s lists %zu documents, but %zu %s "
                  "hold at most %zu of one token or more", name, t->count, tokens, api_tr(what),
                  tokens);
    api_error_at(err, "/inputs/%zu/shape/0", t->index);
    api_error_hint(err, "one integer >= 1 per document, in order, adding up to %zu (the %s)",
                   tokens, api_tr(what));
    return false;
}

/* A lengths input's numbers as /v1's list of integers, into documents[name]. */
static bool put_list(json_t *documents, const char *name, const struct api_v2_tensor *t,
                     struct api_error *err)
{
    json_t *list = json_array();
    /* documents owns the list from here (set_new takes it, on failure too) */
    double *x = put(documents, name, list) ? malloc(t->count * sizeof *x) : NULL;
    bool ok = x != NULL;
    if (!ok)
        api_error_set(err, API_UNAVAILABLE, "no memory for the variants' parameters");
    else
        ok = api_v2_tensor_read(t, API_CELLS_NUMBERS, x, err);
    for (size_t i = 0; ok && i < t->count; i++) {
        /* INT32 and INT64 cells: whole numbers, stored as JSON integers where they fit */
        json_t *n = fabs(x[i]) < 0x1p62 ? json_integer((json_int_t)x[i]) : json_real(x[i]);
        if (json_array_append_new(list, n) != 0) {
            api_error_set(err, API_UNAVAILABLE, "no memory for the variants' parameters");
            ok = false;
        }
    }
    free(x);
    return ok;
}

/* LENGTHS, LENGTHS_Q, LENGTHS_K (those sent) as /v1's documents object in doc. */
static bool documents(json_t *doc, const struct api_v2_infer *r,
                      const struct api_variant_sizes *sizes, struct api_error *err)
{
    const size_t tokens[N_LISTS] = { sizes->n_q > sizes->n_k ? sizes->n_q : sizes->n_k,
                                     sizes->n_q, sizes->n_k };
    const char *const what[N_LISTS] = { API_N("queries"), API_N("queries"), API_N("keys") };
    json_t *obj = NULL;
    for (size_t i = 0; i < N_LISTS; i++) {
        const struct api_v2_tensor *t = api_v2_input(r, list_inputs[i]);
        if (t == NULL)
            continue;
        if (!check_list(t, list_names[i], tokens[i], what[i], err))
            return false;
        if (obj == NULL && !put(doc, "documents", obj = json_object())) {
            api_error_set(err, API_UNAVAILABLE, "no memory for the variants' parameters");
            return false;
        }
        if (!put_list(obj, list_names[i], t, err))
            return false;
    }
    return true;
}

bool api_v2_read_variants(const struct api_v2_infer *r, const struct api_variant_sizes *sizes,
                          struct api_variants *v, struct api_error *err)
{
    memset(v, 0, sizeof *v);
    json_t *doc = r->parameters != NULL ? as_v1(r->parameters) : json_object();
    if (doc == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for the variants' parameters");
        return false;
    }
    bool ok = documents(doc, r, sizes, err);
    if (ok && !(ok = api_variants_read(doc, "", sizes, v, err)))
        repoint(err, r);
    json_decref(doc);
    return ok;
}
