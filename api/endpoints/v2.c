/*
 * api/endpoints/v2.c — the Open Inference Protocol's paths under /v2: the router
 * (api/api.c) hands every /v2 request here, and this file matches the path's
 * segments ({model}, the optional /versions/1), answers server and model health and
 * metadata, and passes infer to v2_infer.c. Its 404 and 405 are V2 errors
 * (application/json with "error"), as V2 clients parse them.
 *
 * Not here: reading tensors (request/v2_tensor.c), the models (v2_attention.c,
 * v2_multihead.c).
 */
#include <stdio.h>
#include <string.h>

#include "api/endpoints/handlers.h"
#include "api/endpoints/v2_infer.h"
#include "api/endpoints/version.h"
#include "api/http/respond.h"
#include "api/json/write.h"

/* Metadata: one datatype and rank an input (V2 metadata has no room for more). */
struct meta_tensor {
    const char *name;
    const char *datatype;
    int rank;
};

static const struct meta_tensor attention_inputs[] = {
    { "Q", "FP64", 2 }, { "K", "FP64", 2 }, { "V", "FP64", 2 }, { "MASK", "BOOL", 2 },
    { "BIAS", "FP64", 2 },
};
static const struct meta_tensor attention_outputs[] = {
    { "SCORES", "FP64", 2 }, { "SCALED", "FP64", 2 }, { "MASKED", "FP64", 2 },
    { "WEIGHTS", "FP64", 2 }, { "OUTPUT", "FP64", 2 },
};
static const struct meta_tensor multihead_inputs[] = {
    { "X", "FP64", 2 }, { "X_Q", "FP64", 2 }, { "X_KV", "FP64", 2 }, { "W_Q", "FP64", 2 },
    { "W_K", "FP64", 2 }, { "W_V", "FP64", 2 }, { "W_O", "FP64", 2 }, { "B_Q", "FP64", 1 },
    { "B_K", "FP64", 1 }, { "B_V", "FP64", 1 }, { "B_O", "FP64", 1 }, { "MASK", "BOOL", 2 },
    { "BIAS", "FP64", 2 },
};
static const struct meta_tensor multihead_outputs[] = {
    { "OUTPUT", "FP64", 2 }, { "WEIGHTS", "FP64", 3 }, { "WEIGHTS_MEAN", "FP64", 2 },
    { "Q", "FP64", 2 }, { "K", "FP64", 2 }, { "V", "FP64", 2 }, { "SCORES", "FP64", 3 },
    { "SCALED", "FP64", 3 }, { "MASKED", "FP64", 3 }, { "HEAD_OUTPUTS", "FP64", 3 },
    { "CONCAT", "FP64", 2 },
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
};

/* ---- answers ---- */

static void respond_v2_error(struct api_response *res, enum api_problem_type type,
                             const char *detail)
{
    struct api_error err;
    api_error_set(&err, type, "%s", detail);
    api_respond_error_as(res, &err, API_ERRORS_V2);
}

/*
 * A path under /v2 that is none of the protocol's: the 404 every unknown path gets
 * (problem+json, listing the endpoints), as it was before /v2 existed; V2 clients
 * only call the protocol's paths, whose unknown models and versions are V2 errors.
 */
static void not_found(const char *path, struct api_response *res)
{
    char detail[400];
    snprintf(detail, sizeof detail, "nothing is served at %.100s; attnd serves POST "
             "/v1/attention, /v1/attention/batch, /v1/multihead, GET /v1/shapes and the V2 "
             "paths /v2, /v2/health/live, /v2/health/ready and "
             "/v2/models/{attention|multihead}[/versions/1][/ready|/infer]", path);
    api_respond_not_found(res, detail);
}

/* GET and HEAD, or POST (infer): else a 405 naming what is allowed. */
static bool method_ok(const struct api_request *req, bool post, struct api_response *res)
{
    bool get = strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
    bool is_post = strcmp(req->method, "POST") == 0;
    if (post ? is_post : get)
        return true;
    const char *allow = post ? "POST, OPTIONS" : "GET, HEAD, OPTIONS";
    char detail[160];
    snprintf(detail, sizeof detail, "%.16s is not allowed on %.80s; allowed: %s", req->method,
             req->path, allow);
    respond_v2_error(res, API_METHOD_NOT_ALLOWED, detail);
    api_response_add_header(res, "Allow", allow);
    return false;
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
    jw_array_end(&w);
    jw_object_end(&w);
    api_respond_json(res, &w);
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
    api_respond_json(res, &w);
    if (res->status == 200 && !ok) {
        res->status = 503;
        api_response_add_header(res, "Retry-After", API_RETRY_AFTER_SECONDS);
    }
}

static void write_tensors(struct jw *w, const struct meta_tensor *t, size_t n)
{
    jw_array_begin(w);
    for (size_t i = 0; i < n; i++) {
        jw_object_begin(w);
        JW_KEY(w, "name");
        jw_string(w, t[i].name);
        JW_KEY(w, "datatype");
        jw_string(w, t[i].datatype);
        JW_KEY(w, "shape");
        jw_array_begin(w);
        for (int d = 0; d < t[i].rank; d++)
            jw_int(w, -1);
        jw_array_end(w);
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
    write_tensors(&w, models[m].inputs, models[m].n_inputs);
    JW_KEY(&w, "outputs");
    write_tensors(&w, models[m].outputs, models[m].n_outputs);
    jw_object_end(&w);
    api_respond_json(res, &w);
}

/* ---- routing ---- */

/* The segment at p (up to '/' or the end): its length. */
static size_t segment(const char *p)
{
    return strcspn(p, "/");
}

/* /v2/models/{model}[/versions/{v}][/ready|/infer], with p after "/v2/models/". */
static void route_model(const struct api_context *ctx, const struct api_request *req,
                        const char *p, struct api_response *res)
{
    size_t len = segment(p);
    int m = 0;
    while (m < API_V2_MODEL_COUNT &&
           !(strlen(models[m].name) == len && strncmp(p, models[m].name, len) == 0))
        m++;
    if (m == API_V2_MODEL_COUNT) {
        char detail[200];
        snprintf(detail, sizeof detail, "there is no model %.*s; the models are attention and "
                 "multihead", (int)(len > 64 ? 64 : len), p);
        respond_v2_error(res, API_NOT_FOUND, detail);
        return;
    }
    p += len;
    if (strncmp(p, "/versions/", 10) == 0) {
        size_t vlen = segment(p + 10);
        if (vlen != 1 || p[10] != '1') {
            char detail[200];
            snprintf(detail, sizeof detail, "model %s has no version %.*s; it has version 1",
                     models[m].name, (int)(vlen > 32 ? 32 : vlen), p + 10);
            respond_v2_error(res, API_NOT_FOUND, detail);
            return;
        }
        p += 11;
    }
    if (*p == '\0') {
        if (method_ok(req, false, res))
            model_metadata((enum api_v2_model)m, res);
    } else if (strcmp(p, "/ready") == 0) {
        if (method_ok(req, false, res))
            health(res, models[m].name, "ready", ctx->ready);
    } else if (strcmp(p, "/infer") == 0) {
        if (method_ok(req, true, res))
            api_v2_infer(ctx, req, (enum api_v2_model)m, res);
    } else {
        not_found(req->path, res);
    }
}

void api_v2_handle(const struct api_context *ctx, const struct api_request *req,
                   enum api_format format, struct api_response *res)
{
    (void)format;
    const char *path = req->path;
    if (strcmp(path, "/v2") == 0) {
        if (method_ok(req, false, res))
            server_metadata(res);
    } else if (strcmp(path, "/v2/health/live") == 0) {
        if (method_ok(req, false, res))
            health(res, NULL, "live", true);
    } else if (strcmp(path, "/v2/health/ready") == 0) {
        if (method_ok(req, false, res))
            health(res, NULL, "ready", ctx->ready);
    } else if (strncmp(path, "/v2/models/", 11) == 0) {
        route_model(ctx, req, path + 11, res);
    } else {
        not_found(path, res);
    }
}
