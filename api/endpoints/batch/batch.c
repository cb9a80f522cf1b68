/*
 * api/endpoints/batch/batch.c — POST /v1/attention/batch: several independent /v1/attention
 * problems in one call, {"items": [request, ...]} → {"results": [{"status": 200,
 * "body": {...}} | {"status": 422, "body": {problem}}]}. Each item is validated and
 * computed on its own; one bad item gets its own problem (pointers absolute:
 * /items/2/k/1) and does not fail the others.
 *
 * Items may carry a `name` (the experiment's, echoed in its result); ?format=text is
 * the notes' experiment table (batch/page.h).
 *
 * Limits: at most --max-batch items, and the items' largest matrices together at
 * most --max-cells, checked after validation and before anything is computed, so
 * a small body cannot ask for more work than one large request may.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/endpoints/attention/attention.h"
#include "api/endpoints/batch/page.h"
#include "api/endpoints/handlers.h"
#include "api/endpoints/pipeline.h"
#include "api/http/admission.h"
#include "api/http/respond.h"
#include "api/request/fields.h"

static const struct api_field batch_fields[] = {
    { "items", "the requests, each as for /v1/attention" },
};

/* One item: parsed (ok) or refused (err). */
struct batch_item {
    bool ok;
    struct api_attention_req req;
    struct api_error err;
};

static bool read_items(const json_t *doc, const struct api_limits *limits, const json_t **items,
                       struct api_error *err)
{
    if (!json_is_object(doc)) {
        api_error_set(err, API_INVALID_VALUE, "the body is %s; it must be an object "
                      "{\"items\": [request, ...]}", api_json_kind(doc));
        api_error_at(err, "%s", "");
        return false;
    }
    if (!api_check_fields(doc, "", batch_fields, 1, err))
        return false;
    *items = api_member(doc, "items");
    if (*items == NULL) {
        api_error_set(err, API_MISSING_FIELD, "items is required: a list of /v1/attention "
                      "requests");
        api_error_at(err, "/items");
        return false;
    }
    if (!json_is_array(*items) || json_array_size(*items) == 0) {
        api_error_set(err, API_INVALID_VALUE, "items must be a non-empty array of requests, not "
                      "%s%s", json_is_array(*items) ? "an empty " : "", json_is_array(*items) ?
                      "array" : api_json_kind(*items));
        api_error_at(err, "/items");
        return false;
    }
    if (json_array_size(*items) > limits->max_batch) {
        api_error_set(err, API_LIMIT_EXCEEDED, "items has %zu requests; this server takes at "
                      "most %zu in one batch", json_array_size(*items), limits->max_batch);
        api_error_at(err, "/items");
        api_error_hint(err, "split the items over several batches");
        return false;
    }
    return true;
}

/* The largest matrix an item computes: its scores (n_q, n_k) or its output (n_q, d_v). */
static size_t item_cells(const struct api_attention_req *r)
{
    size_t scores = r->q.rows * r->k.rows, output = r->q.rows * r->v.cols;
    return scores > output ? scores : output;
}

static bool parse_items(const json_t *items, const struct api_limits *limits,
                        struct batch_item *parsed, struct api_error *err)
{
    size_t total = 0, work = 0;
    for (size_t i = 0; i < json_array_size(items); i++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "/items/%zu", i);
        parsed[i].ok = api_attention_parse(json_array_get(items, i), prefix, limits,
                                           &parsed[i].req, &parsed[i].err);
        const struct api_attention_req *q = &parsed[i].req;
        if (parsed[i].ok && q->streamed && q->q.rows * q->k.rows <= limits->max_cells)
            parsed[i].req.streamed = false; /* streamed by choice (masks.h): built here */
        if (parsed[i].ok && parsed[i].req.streamed) { /* a batch builds every item's steps */
            parsed[i].ok = api_attention_refuse_cells(&parsed[i].req, prefix, limits, true,
                                                      &parsed[i].err);
            api_attention_req_deinit(&parsed[i].req);
        }
        if (parsed[i].ok) {
            const struct api_attention_req *r = &parsed[i].req;
            total += item_cells(r); /* each <= max_cells: no overflow */
            work = api_work_add(work, api_work_of(r->q.rows, r->k.rows, r->q.cols, r->v.cols));
            if (!api_within_work_limit(limits, work, prefix, err))
                return false;
        }
        if (total > limits->max_cells) {
            api_error_set(err, API_LIMIT_EXCEEDED, "the items up to /items/%zu ask for %zu "
                          "cells together; this server computes at most %zu cells in one "
                          "request", i, total, limits->max_cells);
            api_error_at(err, "/items/%zu", i);
            api_error_hint(err, "split the items over several batches");
            return false;
        }
    }
    return true;
}

static void write_item(struct jw *w, struct batch_item *item, const char *prefix)
{
    struct attn_trace trace = { 0 };
    bool ok = item->ok && api_attention_fill_random(&item->req, &item->err) &&
              api_attention_prepare_shown(&item->req, &item->err) &&
              api_attention_run(&item->req, prefix, &trace, &item->err);
    jw_object_begin(w);
    JW_KEY(w, "status");
    jw_int(w, ok ? 200 : api_problem_info(item->err.type)->status);
    if (item->ok && item->req.name != NULL) {
        JW_KEY(w, "name");
        jw_string(w, item->req.name);
    }
    JW_KEY(w, "body");
    if (ok) {
        w->round = item->req.grid.round; /* each item rounds as it asked */
        api_attention_write(w, &item->req, &trace);
        w->round = -1;
        attn_trace_free(&trace);
    } else {
        api_error_write(w, &item->err);
    }
    jw_object_end(w);
}

/*
 * Admission of the valid items' working sets added up (their answers accumulate in
 * one; their traces come and go one at a time, so this bounds them from above), the
 * body counted once. The request limit is checked as the sum grows, so that its
 * pointer names the item that passes it, and inside that item the field that drives
 * it when the item alone is over the limit.
 */
static bool admit_items(const struct api_context *ctx, const struct batch_item *parsed,
                        size_t n, size_t body_len, struct api_error *err)
{
    size_t total = body_len;
    for (size_t i = 0; i < n; i++) {
        if (!parsed[i].ok)
            continue;
        size_t item = api_attention_working_set(&parsed[i].req, API_FORMAT_JSON, 0);
        total = item > SIZE_MAX - total ? SIZE_MAX : total + item;
        char ptr[64];
        bool alone = ctx->limits.max_request_bytes != 0 && item > ctx->limits.max_request_bytes;
        snprintf(ptr, sizeof ptr, "/items/%zu%s", i,
                 alone ? api_attention_limit_field(&parsed[i].req) : "");
        if (!api_within_request_limit(&ctx->limits, total, ptr, err))
            return false;
    }
    return api_admit(ctx, total, "/items", err);
}

/* The items, parsed, on the handler's stack. */
struct batch_state {
    enum api_format format;    /* JSON, or text: the experiment table */
    size_t n;
    struct batch_item *parsed; /* n items, owned */
};

static void free_items(struct batch_state *st)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->parsed[i].ok)
            api_attention_req_deinit(&st->parsed[i].req);
    free(st->parsed);
    st->parsed = NULL;
    st->n = 0;
}

static bool parse(void *state, const json_t *doc, const struct api_context *ctx,
                  enum api_format format, struct api_error *err)
{
    struct batch_state *st = state;
    st->format = format;
    const json_t *items = NULL;
    if (!read_items(doc, &ctx->limits, &items, err))
        return false;
    st->n = json_array_size(items);
    st->parsed = calloc(st->n, sizeof *st->parsed);
    if (st->parsed == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %zu batch items", st->n);
        st->n = 0;
        return false;
    }
    if (!parse_items(items, &ctx->limits, st->parsed, err)) {
        free_items(st);
        return false;
    }
    return true;
}

static bool admit(void *state, const struct api_context *ctx, size_t body_len,
                  struct api_error *err)
{
    const struct batch_state *st = state;
    return admit_items(ctx, st->parsed, st->n, body_len, err);
}

/* The experiment table: each item run and added in turn, one trace at a time. */
static void respond_text(struct batch_state *st, struct api_response *res)
{
    struct api_batch_table table;
    api_batch_table_init(&table);
    for (size_t i = 0; i < st->n; i++) {
        char prefix[32];
        struct batch_item *item = &st->parsed[i];
        struct attn_trace trace = { 0 };
        snprintf(prefix, sizeof prefix, "/items/%zu", i);
        bool ok = item->ok && api_attention_fill_random(&item->req, &item->err) &&
              api_attention_prepare_shown(&item->req, &item->err) &&
              api_attention_run(&item->req, prefix, &trace, &item->err);
        api_batch_table_add(&table, i, item->ok ? item->req.name : NULL, &item->req,
                            ok ? &trace : NULL, &item->err);
        attn_trace_free(&trace);
    }
    struct api_buf b;
    api_buf_init(&b);
    api_batch_table_write(&table, &b);
    api_batch_table_deinit(&table);
    api_respond_page(res, &b, API_FORMAT_TEXT);
}

/* Each item is run as its result is written: one trace at a time. */
static void respond(void *state, const struct api_context *ctx, struct api_response *res)
{
    (void)ctx;
    struct batch_state *st = state;
    if (st->format == API_FORMAT_TEXT) {
        respond_text(st, res);
        return;
    }
    struct jw w;
    jw_init(&w, -1);
    jw_object_begin(&w);
    JW_KEY(&w, "results");
    jw_array_begin(&w);
    for (size_t i = 0; i < st->n; i++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "/items/%zu", i);
        write_item(&w, &st->parsed[i], prefix);
    }
    jw_array_end(&w);
    jw_object_end(&w);
    api_respond_json(res, &w);
}

static void deinit(void *state)
{
    free_items(state);
}

static const struct api_endpoint batch = {
    .parse = parse, .admit = admit, .respond = respond, .deinit = deinit,
    .errors = API_ERRORS_PROBLEM,
};

void api_batch_handle(const struct api_context *ctx, const struct api_request *req,
                      enum api_format format, struct api_response *res)
{
    struct batch_state state = { 0 };
    api_pipeline_run(&batch, &state, ctx, req, format, res);
}
