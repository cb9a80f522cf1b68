/*
 * api/endpoints/v2/v2.c — the Open Inference Protocol's paths under /v2: server and model
 * health and metadata, Triton's statistics (the counters are v2/stats.c's), model
 * configuration and repository index, and infer
 * handed to v2/infer.c. The table of models here is the one list of them: metadata and
 * the statistics read it, so a model added to it is in every answer. The router (api/api.c) matches
 * each path's shape ({model} and {version} as any one segment) and its method; here
 * the model and version are checked, an unknown one a V2 404 (application/json with
 * "error", as V2 clients parse it).
 *
 * Not here: reading tensors (request/v2_tensor.c), the models (v2/attention.c,
 * v2/multihead.c, v2/verify.c).
 */
#include <stdio.h>
#include <string.h>

#include "api/endpoints/handlers.h"
#include "api/endpoints/v2/infer.h"
#include "api/endpoints/v2/stats.h"
#include "api/endpoints/version.h"
#include "api/http/respond.h"
#include "api/i18n/lang.h"
#include "api/json/write.h"
#include "api/request/body.h"
#include "api/request/fields.h"

/*
 * Metadata and configuration: one datatype and rank a tensor (V2 metadata has no room
 * for more), and whether a request may leave it out (an input's "optional" in the
 * configuration). Every output is optional: a request names the ones it wants.
 */
struct meta_tensor {
    const char *name;
    const char *datatype;
    int rank;
    bool optional;
};

#define REQUIRED false
#define OPTIONAL true
/* An output (optional, as all are). */
#define OUT(name, datatype, rank) { name, datatype, rank, OPTIONAL }

static const struct meta_tensor attention_inputs[] = {
    { "Q", "FP64", 2, REQUIRED }, { "K", "FP64", 2, REQUIRED }, { "V", "FP64", 2, REQUIRED },
    { "MASK", "BOOL", 2, OPTIONAL }, { "BIAS", "FP64", 2, OPTIONAL },
    /* packed documents' lengths, one list a batch shares (INT32 read too) */
    { "LENGTHS", "INT64", 1, OPTIONAL }, { "LENGTHS_Q", "INT64", 1, OPTIONAL },
    { "LENGTHS_K", "INT64", 1, OPTIONAL },
    /* dL/dOUTPUT, OUTPUT's shape: the backward pass's steps become outputs */
    { "GRAD_OUTPUT", "FP64", 2, OPTIONAL },
};
static const struct meta_tensor attention_outputs[] = {
    OUT("SCORES", "FP64", 2), OUT("SCALED", "FP64", 2), OUT("MASKED", "FP64", 2),
    OUT("WEIGHTS", "FP64", 2), OUT("OUTPUT", "FP64", 2),
    /* the variants' steps, when their parameters ask for them */
    OUT("Q_ROPE", "FP64", 2), OUT("K_ROPE", "FP64", 2), OUT("SOFTCAPPED", "FP64", 2),
    OUT("DROPOUT_KEEP", "FP64", 2), OUT("DROPPED", "FP64", 2),
    /* the row statistics: (n_q), or (B, n_q) */
    OUT("LSE", "FP64", 1), OUT("ROW_SUM", "FP64", 1), OUT("ROW_MAX", "FP64", 1),
    /* the tiles of visible keys: (n_q / B_q, n_k / B_k) rounded up, or (B, ...) */
    OUT("BLOCK_MAP", "INT8", 2),
    /* the backward pass's steps, with GRAD_OUTPUT; the sink logit's gradient a number */
    OUT("GRAD_OUTPUT", "FP64", 2), OUT("GRAD_V", "FP64", 2), OUT("GRAD_WEIGHTS", "FP64", 2),
    OUT("DELTA", "FP64", 1), OUT("GRAD_MASKED", "FP64", 2), OUT("GRAD_SCALED", "FP64", 2),
    OUT("GRAD_SCORES", "FP64", 2), OUT("GRAD_Q_ROPE", "FP64", 2), OUT("GRAD_K_ROPE", "FP64", 2),
    OUT("GRAD_Q", "FP64", 2), OUT("GRAD_K", "FP64", 2), OUT("GRAD_SINK_LOGIT", "FP64", 0),
    OUT("GRAD_BIAS", "FP64", 2),
};
static const struct meta_tensor multihead_inputs[] = {
    /* X, or X_Q with X_KV: each is optional alone */
    { "X", "FP64", 2, OPTIONAL }, { "X_Q", "FP64", 2, OPTIONAL }, { "X_KV", "FP64", 2, OPTIONAL },
    { "W_Q", "FP64", 2, REQUIRED }, { "W_K", "FP64", 2, REQUIRED }, { "W_V", "FP64", 2, REQUIRED },
    { "W_O", "FP64", 2, REQUIRED }, { "B_Q", "FP64", 1, OPTIONAL }, { "B_K", "FP64", 1, OPTIONAL },
    { "B_V", "FP64", 1, OPTIONAL }, { "B_O", "FP64", 1, OPTIONAL }, { "MASK", "BOOL", 2, OPTIONAL },
    { "BIAS", "FP64", 2, OPTIONAL }, { "LENGTHS", "INT64", 1, OPTIONAL },
    { "LENGTHS_Q", "INT64", 1, OPTIONAL }, { "LENGTHS_K", "INT64", 1, OPTIONAL },
    /* dL/dOUTPUT, OUTPUT's shape: the backward pass's steps become outputs */
    { "GRAD_OUTPUT", "FP64", 2, OPTIONAL },
};
static const struct meta_tensor multihead_outputs[] = {
    OUT("OUTPUT", "FP64", 2), OUT("WEIGHTS", "FP64", 3), OUT("WEIGHTS_MEAN", "FP64", 2),
    OUT("Q", "FP64", 2), OUT("K", "FP64", 2), OUT("V", "FP64", 2), OUT("SCORES", "FP64", 3),
    OUT("SCALED", "FP64", 3), OUT("MASKED", "FP64", 3), OUT("HEAD_OUTPUTS", "FP64", 3),
    OUT("CONCAT", "FP64", 2), OUT("LSE", "FP64", 2), OUT("ROW_SUM", "FP64", 2),
    OUT("ROW_MAX", "FP64", 2), OUT("BLOCK_MAP", "INT8", 2),
    /* the backward pass's steps, with GRAD_OUTPUT: each head's (h, ...) and the layer's */
    OUT("GRAD_OUTPUT", "FP64", 2), OUT("GRAD_W_O", "FP64", 2), OUT("GRAD_B_O", "FP64", 1),
    OUT("GRAD_WEIGHTS", "FP64", 3), OUT("DELTA", "FP64", 2), OUT("GRAD_MASKED", "FP64", 3),
    OUT("GRAD_Q", "FP64", 2), OUT("GRAD_K", "FP64", 2), OUT("GRAD_V", "FP64", 2),
    OUT("GRAD_W_Q", "FP64", 2), OUT("GRAD_W_K", "FP64", 2), OUT("GRAD_W_V", "FP64", 2),
    OUT("GRAD_B_Q", "FP64", 1), OUT("GRAD_B_K", "FP64", 1), OUT("GRAD_B_V", "FP64", 1),
    OUT("GRAD_X", "FP64", 2), OUT("GRAD_X_Q", "FP64", 2), OUT("GRAD_X_KV", "FP64", 2),
    OUT("GRAD_SINK_LOGIT", "FP64", 1), OUT("GRAD_BIAS", "FP64", 2),
};

/* verify: the problem's inputs, then the kernel's answer (FP16, BF16, FP32 or FP64 read
 * too); a verdict and a report (/v1/verify's JSON) a problem, and gold on request. */
static const struct meta_tensor verify_inputs[] = {
    { "Q", "FP64", 2, REQUIRED }, { "K", "FP64", 2, REQUIRED }, { "V", "FP64", 2, REQUIRED },
    { "MASK", "BOOL", 2, OPTIONAL }, { "BIAS", "FP64", 2, OPTIONAL },
    { "LENGTHS", "INT64", 1, OPTIONAL }, { "LENGTHS_Q", "INT64", 1, OPTIONAL },
    { "LENGTHS_K", "INT64", 1, OPTIONAL }, { "GRAD_OUTPUT", "FP64", 2, OPTIONAL },
    /* the kernel's answer: OUTPUT always, the rest when the kernel gives them */
    { "OUTPUT", "FP64", 2, REQUIRED }, { "LSE", "FP64", 1, OPTIONAL },
    { "GRAD_Q", "FP64", 2, OPTIONAL }, { "GRAD_K", "FP64", 2, OPTIONAL },
    { "GRAD_V", "FP64", 2, OPTIONAL },
};
static const struct meta_tensor verify_outputs[] = {
    OUT("VERDICT", "BOOL", 1), OUT("REPORT", "BYTES", 1), OUT("GOLD", "FP64", 2),
    OUT("GOLD_LSE", "FP64", 1), OUT("GOLD_GRAD_Q", "FP64", 2), OUT("GOLD_GRAD_K", "FP64", 2),
    OUT("GOLD_GRAD_V", "FP64", 2),
};

#define N_OF(a) (sizeof a / sizeof a[0])

static const struct {
    const char *name;
    const struct meta_tensor *inputs, *outputs;
    size_t n_inputs, n_outputs;
} models[API_V2_MODEL_COUNT] = {
    [API_V2_ATTENTION] = { "attention", attention_inputs, attention_outputs,
                           N_OF(attention_inputs), N_OF(attention_outputs) },
    [API_V2_MULTIHEAD] = { "multihead", multihead_inputs, multihead_outputs,
                           N_OF(multihead_inputs), N_OF(multihead_outputs) },
    [API_V2_VERIFY] = { "verify", verify_inputs, verify_outputs, N_OF(verify_inputs),
                        N_OF(verify_outputs) },
};

/* ---- answers ---- */

static void respond_v2_error(struct api_response *res, enum api_problem_type type,
                             const char *detail)
{
    struct api_error err;
    api_error_set(&err, type, "%s", detail);
    api_respond_error_as(res, &err, API_ERRORS_V2);
}

static void server_metadata(struct api_response *res)
{
    struct jw w;
    jw_init(&w, -1);
    jw_object_begin(&w);
    JW_KEY(&w, "name");
    jw_string(&w, "attnd");
    JW_KEY(&w, "version");
    jw_string(&w, attnd_version);
    JW_KEY(&w, "extensions");
    jw_array_begin(&w);
    jw_string(&w, "binary_tensor_data");
    jw_string(&w, "statistics");
    jw_string(&w, "model_configuration");
    jw_string(&w, "model_repository");
    jw_array_end(&w);
    jw_object_end(&w);
    api_respond_json_as(res, &w, API_ERRORS_V2);
}

/* {"live": true}, {"ready": bool} or a model's {"name", "ready"}; 503 when not ready. */
static void health(struct api_response *res, const char *model, const char *key, bool ok)
{
    struct jw w;
    jw_init(&w, -1);
    jw_object_begin(&w);
    if (model != NULL) {
        JW_KEY(&w, "name");
        jw_string(&w, model);
    }
    jw_key(&w, key);
    jw_bool(&w, ok);
    jw_object_end(&w);
    api_respond_json_as(res, &w, API_ERRORS_V2);
    if (res->status == 200 && !ok) {
        res->status = 503;
        api_response_add_header(res, "Retry-After", API_RETRY_AFTER_SECONDS);
    }
}

/* How a list of tensors is written: V2 metadata's, or Triton's model configuration's. */
enum tensor_form { FORM_METADATA, FORM_CONFIG_INPUT, FORM_CONFIG_OUTPUT };

static void write_tensors(struct jw *w, const struct meta_tensor *t, size_t n,
                          enum tensor_form form)
{
    jw_array_begin(w);
    for (size_t i = 0; i < n; i++) {
        jw_object_begin(w);
        JW_KEY(w, "name");
        jw_string(w, t[i].name);
        if (form == FORM_METADATA) {
            JW_KEY(w, "datatype");
            jw_string(w, t[i].datatype);
            JW_KEY(w, "shape");
        } else {
            /* Triton's TYPE_ names: the protocol's datatype, but BYTES is TYPE_STRING. */
            char type[24];
            bool bytes = strcmp(t[i].datatype, "BYTES") == 0;
            snprintf(type, sizeof type, "TYPE_%s", bytes ? "STRING" : t[i].datatype);
            JW_KEY(w, "data_type");
            jw_string(w, type);
            JW_KEY(w, "dims");
        }
        jw_array_begin(w);
        for (int d = 0; d < t[i].rank; d++)
            jw_int(w, -1);
        jw_array_end(w);
        if (form == FORM_CONFIG_INPUT) {
            JW_KEY(w, "optional");
            jw_bool(w, t[i].optional);
        }
        jw_object_end(w);
    }
    jw_array_end(w);
}

static void model_metadata(enum api_v2_model m, struct api_response *res)
{
    struct jw w;
    jw_init(&w, -1);
    jw_object_begin(&w);
    JW_KEY(&w, "name");
    jw_string(&w, models[m].name);
    JW_KEY(&w, "versions");
    jw_array_begin(&w);
    jw_string(&w, "1");
    jw_array_end(&w);
    JW_KEY(&w, "platform");
    jw_string(&w, "attnd");
    JW_KEY(&w, "inputs");
    write_tensors(&w, models[m].inputs, models[m].n_inputs, FORM_METADATA);
    JW_KEY(&w, "outputs");
    write_tensors(&w, models[m].outputs, models[m].n_outputs, FORM_METADATA);
    jw_object_end(&w);
    api_respond_json_as(res, &w, API_ERRORS_V2);
}

/*
 * Triton's model configuration, read-only, from the same tables as the metadata. No
 * batching of Triton's kind (max_batch_size 0): a leading batch size is a dimension of
 * the tensors, which every -1 stands for.
 */
static void model_config(enum api_v2_model m, struct api_response *res)
{
    struct jw w;
    jw_init(&w, -1);
    jw_object_begin(&w);
    JW_KEY(&w, "name");
    jw_string(&w, models[m].name);
    JW_KEY(&w, "platform");
    jw_string(&w, "attnd");
    JW_KEY(&w, "backend");
    jw_string(&w, "attnd");
    JW_KEY(&w, "max_batch_size");
    jw_int(&w, 0);
    JW_KEY(&w, "input");
    write_tensors(&w, models[m].inputs, models[m].n_inputs, FORM_CONFIG_INPUT);
    JW_KEY(&w, "output");
    write_tensors(&w, models[m].outputs, models[m].n_outputs, FORM_CONFIG_OUTPUT);
    jw_object_end(&w);
    api_respond_json_as(res, &w, API_ERRORS_V2);
}

/* {"model_stats": [...]}: every model's, or the one given. */
static void model_stats(const enum api_v2_model *one, struct api_response *res)
{
    struct jw w;
    jw_init(&w, -1);
    jw_object_begin(&w);
    JW_KEY(&w, "model_stats");
    jw_array_begin(&w);
    for (int m = 0; m < API_V2_MODEL_COUNT; m++)
        if (one == NULL || *one == (enum api_v2_model)m)
            api_v2_stats_write(&w, (enum api_v2_model)m, models[m].name);
    jw_array_end(&w);
    jw_object_end(&w);
    api_respond_json_as(res, &w, API_ERRORS_V2);
}

/*
 * The repository index request: no body, or {"ready": bool} (true: only the models
 * ready for inference). False, with err, for a body that is not that.
 */
static bool index_request(const struct api_request *req, bool *ready_only, struct api_error *err)
{
    size_t i = 0;
    while (i < req->body_len && strchr(" \t\r\n", req->body[i]) != NULL)
        i++;
    if (i == req->body_len) /* tritonclient sends none */
        return true;
    json_t *doc = api_parse_body_nodes(req->body, req->body_len, err);
    if (doc == NULL)
        return false;
    static const struct api_field known[] = {
        { "ready", "true: only the models ready for inference" },
    };
    bool ok = json_is_object(doc) && api_check_fields(doc, "", known, 1, err);
    const json_t *ready = json_object_get(doc, "ready");
    if (!json_is_object(doc)) {
        api_error_set(err, API_INVALID_VALUE, "the repository index request is %s; it must be "
                      "an object such as {\"ready\": true}, or no body", api_json_kind(doc));
        api_error_at(err, "%s", "");
    } else if (ok && ready != NULL && !json_is_boolean(ready)) {
        api_error_set(err, API_INVALID_VALUE, "ready must be true or false, not %s",
                      api_json_kind(ready));
        api_error_at(err, "%s", "/ready");
        ok = false;
    }
    *ready_only = ok && json_is_true(ready);
    api_release_body(doc);
    return ok;
}

/*
 * [{"name", "version": "1", "state"}, ...]: every model of the table, READY, or
 * UNAVAILABLE with its reason once shutdown has begun (as the model's ready answers
 * false then); with ready_only, those READY.
 */
static void repository_index(bool ready, bool ready_only, struct api_response *res)
{
    struct jw w;
    jw_init(&w, -1);
    jw_array_begin(&w);
    for (int m = 0; m < API_V2_MODEL_COUNT; m++) {
        if (ready_only && !ready)
            continue;
        jw_object_begin(&w);
        JW_KEY(&w, "name");
        jw_string(&w, models[m].name);
        JW_KEY(&w, "version");
        jw_string(&w, "1");
        JW_KEY(&w, "state");
        if (ready) {
            jw_string(&w, "READY");
        } else {
            jw_string(&w, "UNAVAILABLE");
            JW_KEY(&w, "reason");
            jw_string(&w, API_TR("the server is shutting down"));
        }
        jw_object_end(&w);
    }
    jw_array_end(&w);
    api_respond_json_as(res, &w, API_ERRORS_V2);
}

/* ---- the model in the path ---- */

/* The segment at p (up to '/' or the end): its length. */
static size_t segment(const char *p)
{
    return strcspn(p, "/");
}

/*
 * The model of /v2/models/{model}[/versions/{version}]/...: false, with res the V2
 * 404, for an unknown model or a version other than 1. The router matched the
 * path's shape, so it starts with "/v2/models/".
 */
static bool model_of(const struct api_request *req, enum api_v2_model *out,
                     struct api_response *res)
{
    const char *p = req->path + strlen("/v2/models/");
    size_t len = segment(p);
    int m = 0;
    while (m < API_V2_MODEL_COUNT &&
           !(strlen(models[m].name) == len && strncmp(p, models[m].name, len) == 0))
        m++;
    char detail[200];
    if (m == API_V2_MODEL_COUNT) {
        snprintf(detail, sizeof detail, "there is no model %.*s; the models are attention, "
                 "multihead and verify", (int)(len > 64 ? 64 : len), p);
        respond_v2_error(res, API_NOT_FOUND, detail);
        return false;
    }
    p += len;
    if (strncmp(p, "/versions/", 10) == 0 && !(segment(p + 10) == 1 && p[10] == '1')) {
        size_t vlen = segment(p + 10);
        snprintf(detail, sizeof detail, "model %s has no version %.*s; it has version 1",
                 models[m].name, (int)(vlen > 32 ? 32 : vlen), p + 10);
        respond_v2_error(res, API_NOT_FOUND, detail);
        return false;
    }
    *out = (enum api_v2_model)m;
    return true;
}

/* ---- the handlers (api/api.c routes each V2 path here) ---- */

void api_v2_server_handle(const struct api_context *ctx, const struct api_request *req,
                          enum api_format format, struct api_response *res)
{
    (void)ctx;
    (void)req;
    (void)format;
    server_metadata(res);
}

void api_v2_live_handle(const struct api_context *ctx, const struct api_request *req,
                        enum api_format format, struct api_response *res)
{
    (void)ctx;
    (void)req;
    (void)format;
    health(res, NULL, "live", true);
}

void api_v2_ready_handle(const struct api_context *ctx, const struct api_request *req,
                         enum api_format format, struct api_response *res)
{
    (void)req;
    (void)format;
    health(res, NULL, "ready", ctx->ready);
}

void api_v2_model_handle(const struct api_context *ctx, const struct api_request *req,
                         enum api_format format, struct api_response *res)
{
    (void)ctx;
    (void)format;
    enum api_v2_model m;
    if (model_of(req, &m, res))
        model_metadata(m, res);
}

void api_v2_model_ready_handle(const struct api_context *ctx, const struct api_request *req,
                               enum api_format format, struct api_response *res)
{
    (void)format;
    enum api_v2_model m;
    if (model_of(req, &m, res))
        health(res, models[m].name, "ready", ctx->ready);
}

void api_v2_infer_handle(const struct api_context *ctx, const struct api_request *req,
                         enum api_format format, struct api_response *res)
{
    (void)format;
    enum api_v2_model m;
    if (model_of(req, &m, res))
        api_v2_infer(ctx, req, m, res);
}

void api_v2_stats_handle(const struct api_context *ctx, const struct api_request *req,
                         enum api_format format, struct api_response *res)
{
    (void)ctx;
    (void)req;
    (void)format;
    model_stats(NULL, res);
}

void api_v2_model_stats_handle(const struct api_context *ctx, const struct api_request *req,
                               enum api_format format, struct api_response *res)
{
    (void)ctx;
    (void)format;
    enum api_v2_model m;
    if (model_of(req, &m, res))
        model_stats(&m, res);
}

void api_v2_model_config_handle(const struct api_context *ctx, const struct api_request *req,
                                enum api_format format, struct api_response *res)
{
    (void)ctx;
    (void)format;
    enum api_v2_model m;
    if (model_of(req, &m, res))
        model_config(m, res);
}

void api_v2_repository_index_handle(const struct api_context *ctx, const struct api_request *req,
                                    enum api_format format, struct api_response *res)
{
    (void)format;
    bool ready_only = false;
    struct api_error err;
    if (!index_request(req, &ready_only, &err)) {
        api_respond_error_as(res, &err, API_ERRORS_V2);
        return;
    }
    repository_index(ctx->ready, ready_only, res);
}
