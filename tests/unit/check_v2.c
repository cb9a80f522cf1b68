/*
 * tests/unit/check_v2.c — the V2 request readers (api/request/v2_tensor.c) on their
 * own, and the /v2 answers that need a context the HTTP tests cannot set (a server
 * that is draining).
 *
 * Cases: Core (header length, splitting the binary pieces, numbers of every
 * datatype), Errors (each malformed size or shape with its type and pointer), Probes,
 * Memory (a binary answer's pieces lie in the trace it owns; what it holds), Stats (the
 * statistics' counters: batch rows, their bound, threads racing for them).
 *
 * Under valgrind the tests share one process (CK_FORK=no): the Stats tests compare the
 * counters before and after what they record.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "api/api.h"
#include "api/endpoints/v2/common.h"
#include "api/endpoints/v2/stats.h"
#include "api/request/float16.h"
#include "api/request/v2_tensor.h"
#include "core/attention.h"

static json_t *doc_of(const char *text)
{
    json_error_t e;
    json_t *d = json_loads(text, 0, &e);
    ck_assert_msg(d != NULL, "test JSON: %s", e.text);
    return d;
}

/* ------------------------------------------------------------------ Core */

START_TEST(test_header_length)
{
    struct api_error err;
    size_t n = 0;
    ck_assert(api_v2_header_length(NULL, 10, &n, &err));
    ck_assert_uint_eq(n, 10);
    ck_assert(api_v2_header_length("7", 10, &n, &err));
    ck_assert_uint_eq(n, 7);
    ck_assert(api_v2_header_length("10", 10, &n, &err));
    static const char *const bad[] = { "11", "", "-1", "+3", " 3", "3 ", "0x3",
                                       "99999999999999999999999", "1e2" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(!api_v2_header_length(bad[i], 10, &n, &err), "%s", bad[i]);
        ck_assert_int_eq(err.type, API_INVALID_VALUE);
    }
}
END_TEST

START_TEST(test_split_binary_in_input_order)
{
    /* Two inputs: FP32 (2) then INT64 (1): 8 + 8 bytes after the header. */
    json_t *doc = doc_of("{\"inputs\": ["
        "{\"name\": \"A\", \"shape\": [2], \"datatype\": \"FP32\", \"parameters\": {\"binary_data_size\": 8}},"
        "{\"name\": \"B\", \"shape\": [1, 1], \"datatype\": \"INT64\", \"parameters\": {\"binary_data_size\": 8}}],"
        "\"outputs\": [{\"name\": \"X\"}, {\"name\": \"Y\", \"parameters\": {\"binary_data\": false}}],"
        "\"parameters\": {\"binary_data_output\": true}}");
    unsigned char bin[16];
    float a[2] = { 1.5f, -2.25f };
    int64_t b = -3;
    memcpy(bin, a, 8);
    memcpy(bin + 8, &b, 8);
    struct api_v2_infer r;
    struct api_error err;
    ck_assert(api_v2_read_infer(doc, bin, sizeof bin, 100, &r, &err));
    ck_assert_uint_eq(r.n_inputs, 2);
    ck_assert_ptr_eq(r.inputs[0].bytes, bin);
    ck_assert_ptr_eq(r.inputs[1].bytes, bin + 8);
    ck_assert_uint_eq(r.inputs[1].count, 1);
    ck_assert(r.outputs[0].binary);   /* from binary_data_output */
    ck_assert(!r.outputs[1].binary);  /* its own binary_data wins */
    double out[2];
    ck_assert(api_v2_tensor_read(&r.inputs[0], false, out, &err));
    ck_assert(out[0] == 1.5 && out[1] == -2.25);
    ck_assert(api_v2_tensor_read(&r.inputs[1], false, out, &err));
    ck_assert(out[0] == -3.0);
    ck_assert_ptr_eq(api_v2_input(&r, "B"), &r.inputs[1]);
    ck_assert_ptr_null(api_v2_input(&r, "C"));
    json_decref(doc);
}
END_TEST

START_TEST(test_json_data_flat_and_nested)
{
    json_t *doc = doc_of("{\"inputs\": ["
        "{\"name\": \"A\", \"shape\": [2, 2], \"datatype\": \"FP64\", \"data\": [[1, 2.5], [3, 4]]},"
        "{\"name\": \"B\", \"shape\": [2, 2], \"datatype\": \"BOOL\", \"data\": [true, false, false, true]},"
        "{\"name\": \"C\", \"shape\": [3], \"datatype\": \"FP32\", \"data\": [0.1, 1, 2]}]}");
    struct api_v2_infer r;
    struct api_error err;
    ck_assert(api_v2_read_infer(doc, NULL, 0, 100, &r, &err));
    double out[4];
    ck_assert(api_v2_tensor_read(&r.inputs[0], false, out, &err));
    ck_assert(out[0] == 1 && out[1] == 2.5 && out[2] == 3 && out[3] == 4);
    ck_assert(api_v2_tensor_read(&r.inputs[1], true, out, &err));
    ck_assert(out[0] == 1 && out[1] == 0 && out[2] == 0 && out[3] == 1);
    ck_assert(api_v2_tensor_read(&r.inputs[2], false, out, &err));
    ck_assert(out[0] == (double)0.1f); /* FP32 data is read as float32 */
    json_decref(doc);
}
END_TEST

START_TEST(test_every_binary_datatype)
{
    static const struct { const char *type; unsigned char bytes[8]; size_t size; double want; } cases[] = {
        { "BOOL", { 1 }, 1, 1 },
        { "UINT8", { 0xff }, 1, 255 },
        { "INT8", { 0xff }, 1, -1 },
        { "INT32", { 0xfe, 0xff, 0xff, 0xff }, 4, -2 },
        { "INT64", { 0x00, 0x01 }, 8, 256 },
        { "FP32", { 0x00, 0x00, 0xc0, 0x3f }, 4, 1.5 },
        { "FP64", { 0, 0, 0, 0, 0, 0, 0xf0, 0xbf }, 8, -1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[200];
        snprintf(text, sizeof text, "{\"inputs\": [{\"name\": \"A\", \"shape\": [1], \"datatype\": "
                 "\"%s\", \"parameters\": {\"binary_data_size\": %zu}}]}", cases[i].type,
                 cases[i].size);
        json_t *doc = doc_of(text);
        struct api_v2_infer r;
        struct api_error err;
        ck_assert_msg(api_v2_read_infer(doc, cases[i].bytes, cases[i].size, 10, &r, &err), "%s: %s",
                      cases[i].type, err.detail);
        double out;
        ck_assert(api_v2_tensor_read(&r.inputs[0], false, &out, &err));
        ck_assert_msg(out == cases[i].want, "%s: %g", cases[i].type, out);
        json_decref(doc);
    }
}
END_TEST

START_TEST(test_reserved_parameters_ignored)
{
    json_t *p = doc_of("{\"timeout\": 1, \"priority\": 2, \"sequence_id\": 3, \"sequence_start\": true,"
                       " \"headers\": {}, \"triton_x\": 1, \"binary_data_output\": true, \"scale\": 1}");
    static const char *const known[] = { "scale" };
    struct api_error err;
    ck_assert(api_v2_check_params(p, known, 1, &err));
    json_object_set_new(p, "scael", json_integer(1));
    ck_assert(!api_v2_check_params(p, known, 1, &err));
    ck_assert_int_eq(err.type, API_UNKNOWN_FIELD);
    ck_assert_str_eq(err.pointer, "/parameters/scael");
    json_decref(p);
}
END_TEST

/* ------------------------------------------------------------------ Errors */

static void expect_error(const char *text, size_t bin_len, enum api_problem_type type,
                         const char *pointer)
{
    static unsigned char bin[64];
    json_t *doc = doc_of(text);
    struct api_v2_infer r;
    struct api_error err;
    bool ok = api_v2_read_infer(doc, bin, bin_len, 16, &r, &err);
    if (ok) { /* a number problem shows when the numbers are read */
        double out[64];
        for (size_t i = 0; ok && i < r.n_inputs; i++)
            ok = api_v2_tensor_read(&r.inputs[i], strcmp(r.inputs[i].name, "MASK") == 0, out, &err);
    }
    ck_assert_msg(!ok, "accepted: %s", text);
    ck_assert_msg(err.type == type, "%s: type %d, %s", text, (int)err.type, err.detail);
    ck_assert_msg(strcmp(err.pointer, pointer) == 0, "%s: pointer %s", text, err.pointer);
    json_decref(doc);
}

START_TEST(test_malformed_headers)
{
#define IN(x) "{\"inputs\": [" x "]}"
    expect_error("[]", 0, API_INVALID_VALUE, "");
    expect_error("{}", 0, API_MISSING_FIELD, "/inputs");
    expect_error(IN(""), 0, API_INVALID_VALUE, "/inputs");
    expect_error(IN("1"), 0, API_INVALID_VALUE, "/inputs/0");
    expect_error(IN("{\"shape\": [1], \"datatype\": \"FP64\", \"data\": [1]}"), 0, API_MISSING_FIELD,
                 "/inputs/0/name");
    expect_error(IN("{\"name\": \"A\", \"shape\": [1], \"datatype\": \"FP8\", \"data\": [1]}"), 0,
                 API_INVALID_VALUE, "/inputs/0/datatype");
    expect_error(IN("{\"name\": \"A\", \"shape\": [], \"datatype\": \"FP64\", \"data\": [1]}"), 0,
                 API_INVALID_VALUE, "/inputs/0/shape");
    expect_error(IN("{\"name\": \"A\", \"shape\": [1, 1, 1, 1, 1], \"datatype\": \"FP64\", \"data\": [1]}"),
                 0, API_INVALID_VALUE, "/inputs/0/shape");
    expect_error(IN("{\"name\": \"A\", \"shape\": [2, -1], \"datatype\": \"FP64\", \"data\": [1]}"), 0,
                 API_INVALID_VALUE, "/inputs/0/shape/1");
    expect_error(IN("{\"name\": \"A\", \"shape\": [5, 4], \"datatype\": \"FP64\", \"data\": [1]}"), 0,
                 API_LIMIT_EXCEEDED, "/inputs/0/shape/1");
    expect_error(IN("{\"name\": \"A\", \"shape\": [4294967296, 4294967296], \"datatype\": \"FP64\"}"), 0,
                 API_LIMIT_EXCEEDED, "/inputs/0/shape/0");
    expect_error(IN("{\"name\": \"A\", \"shape\": [2], \"datatype\": \"FP64\", \"data\": [1]}"), 0,
                 API_SHAPE_MISMATCH, "/inputs/0/data");
    expect_error(IN("{\"name\": \"A\", \"shape\": [2], \"datatype\": \"FP64\", \"data\": [[[[[[1]]]]], 2]}"), 0,
                 API_SHAPE_MISMATCH, "/inputs/0/data");
    expect_error(IN("{\"name\": \"A\", \"shape\": [2], \"datatype\": \"FP64\"}"), 0, API_MISSING_FIELD,
                 "/inputs/0/data");
    expect_error(IN("{\"name\": \"A\", \"shape\": [2], \"datatype\": \"INT32\", \"data\": [1, 1.5]}"), 0,
                 API_NOT_A_NUMBER, "/inputs/0/data/1");
    expect_error(IN("{\"name\": \"A\", \"shape\": [1], \"datatype\": \"FP32\", \"data\": [1e300]}"), 0,
                 API_NOT_A_NUMBER, "/inputs/0/data/0");
    expect_error(IN("{\"name\": \"MASK\", \"shape\": [2], \"datatype\": \"INT8\", \"data\": [1, 3]}"), 0,
                 API_INVALID_VALUE, "/inputs/0/data");
    expect_error(IN("{\"name\": \"A\", \"shape\": [1], \"datatype\": \"FP64\", \"data\": [1]},"
                    "{\"name\": \"A\", \"shape\": [1], \"datatype\": \"FP64\", \"data\": [1]}"), 0,
                 API_INVALID_VALUE, "/inputs/1/name");
    expect_error(IN("{\"name\": \"A\", \"shape\": [1], \"datatype\": \"FP64\", \"data\": [1], \"dtype\": 1}"),
                 0, API_UNKNOWN_FIELD, "/inputs/0/dtype");
    /* binary sizes: past the bytes, negative, not a number, disagreeing, with data, leftovers */
#define BIN(size) "{\"name\": \"A\", \"shape\": [2], \"datatype\": \"FP64\", \"parameters\": " \
                  "{\"binary_data_size\": " size "}}"
    expect_error(IN(BIN("16")), 15, API_INVALID_VALUE, "/inputs/0/parameters/binary_data_size");
    expect_error(IN(BIN("-16")), 16, API_INVALID_VALUE, "/inputs/0/parameters/binary_data_size");
    expect_error(IN(BIN("\"16\"")), 16, API_INVALID_VALUE, "/inputs/0/parameters/binary_data_size");
    expect_error(IN(BIN("9223372036854775807")), 16, API_INVALID_VALUE,
                 "/inputs/0/parameters/binary_data_size");
    expect_error(IN(BIN("8")), 16, API_SHAPE_MISMATCH, "/inputs/0/parameters/binary_data_size");
    expect_error(IN(BIN("16")), 24, API_INVALID_VALUE, "/inputs");
    expect_error(IN(BIN("16") "," BIN("16")), 24, API_INVALID_VALUE, "/inputs/1/parameters/binary_data_size");
    expect_error(IN("{\"name\": \"A\", \"shape\": [1], \"datatype\": \"FP64\", \"data\": [1],"
                    " \"parameters\": {\"binary_data_size\": 8}}"), 8, API_INVALID_VALUE,
                 "/inputs/0/data");
    expect_error("{\"inputs\": [{\"name\": \"A\", \"shape\": [1], \"datatype\": \"FP64\", \"data\": [1]}],"
                 " \"outputs\": [{\"name\": \"X\", \"parameters\": {\"binary_data\": 1}}]}", 0,
                 API_INVALID_VALUE, "/outputs/0/parameters/binary_data");
    expect_error("{\"inputs\": [{\"name\": \"A\", \"shape\": [1], \"datatype\": \"FP64\", \"data\": [1]}],"
                 " \"id\": 7}", 0, API_INVALID_VALUE, "/id");
#undef BIN
#undef IN
}
END_TEST

START_TEST(test_bool_bytes_are_zero_or_one)
{
    json_t *doc = doc_of("{\"inputs\": [{\"name\": \"A\", \"shape\": [2], \"datatype\": \"BOOL\","
                         " \"parameters\": {\"binary_data_size\": 2}}]}");
    unsigned char bin[2] = { 1, 2 };
    struct api_v2_infer r;
    struct api_error err;
    ck_assert(api_v2_read_infer(doc, bin, 2, 10, &r, &err));
    double out[2];
    ck_assert(!api_v2_tensor_read(&r.inputs[0], false, out, &err));
    ck_assert_int_eq(err.type, API_INVALID_VALUE);
    /* A NaN in FP64 bytes cannot be computed with. */
    json_decref(doc);
    doc = doc_of("{\"inputs\": [{\"name\": \"A\", \"shape\": [1], \"datatype\": \"FP64\","
                 " \"parameters\": {\"binary_data_size\": 8}}]}");
    double nan = NAN;
    ck_assert(api_v2_read_infer(doc, (const unsigned char *)&nan, 8, 10, &r, &err));
    ck_assert(!api_v2_tensor_read(&r.inputs[0], false, out, &err));
    ck_assert_int_eq(err.type, API_NOT_A_NUMBER);
    json_decref(doc);
}
END_TEST

/* ------------------------------------------------------------------ Probes */

static struct api_response get(const struct api_context *ctx, const char *path)
{
    struct api_request req = { .method = "GET", .path = path };
    struct api_response res = { 0 };
    api_handle(ctx, &req, &res);
    return res;
}

START_TEST(test_ready_is_503_while_draining)
{
    struct api_context ctx = { .limits = api_default_limits(), .ready = false };
    static const char *const paths[] = { "/v2/health/ready", "/v2/models/attention/ready",
                                         "/v2/models/multihead/versions/1/ready" };
    for (size_t i = 0; i < 3; i++) {
        struct api_response res = get(&ctx, paths[i]);
        ck_assert_int_eq(res.status, 503);
        ck_assert_str_eq(res.content_type, "application/json");
        ck_assert_ptr_nonnull(strstr(res.body, "\"ready\":false"));
        ck_assert_str_eq(res.headers[0].name, "Retry-After");
        api_response_deinit(&res);
    }
    struct api_response live = get(&ctx, "/v2/health/live");
    ck_assert_int_eq(live.status, 200);
    ck_assert_str_eq(live.body, "{\"live\":true}\n");
    api_response_deinit(&live);
    ctx.ready = true;
    struct api_response ready = get(&ctx, "/v2/health/ready");
    ck_assert_int_eq(ready.status, 200);
    ck_assert_str_eq(ready.body, "{\"ready\":true}\n");
    api_response_deinit(&ready);
}
END_TEST

/* POST path with body through api_handle. */
static struct api_response post(const struct api_context *ctx, const char *path, const char *body)
{
    struct api_request req = { .method = "POST", .path = path, .body = body,
                               .body_len = strlen(body) };
    struct api_response res = { 0 };
    api_handle(ctx, &req, &res);
    return res;
}

/* Every entry of an index answer (a JSON list of API_V2_MODEL_COUNT models) in `state`. */
static void assert_index(const struct api_response *res, const char *state, const char *reason)
{
    ck_assert_int_eq(res->status, 200);
    json_t *doc = doc_of(res->body);
    ck_assert_uint_eq(json_array_size(doc), API_V2_MODEL_COUNT);
    size_t i;
    json_t *m;
    json_array_foreach(doc, i, m) {
        ck_assert_str_eq(json_string_value(json_object_get(m, "name")),
                         api_v2_model_name((enum api_v2_model)i));
        ck_assert_str_eq(json_string_value(json_object_get(m, "version")), "1");
        ck_assert_str_eq(json_string_value(json_object_get(m, "state")), state);
        const json_t *why = json_object_get(m, "reason");
        if (reason == NULL)
            ck_assert_ptr_null(why);
        else
            ck_assert_str_eq(json_string_value(why), reason);
    }
    json_decref(doc);
}

START_TEST(test_repository_index_while_draining)
{
    struct api_context ctx = { .limits = api_default_limits(), .ready = true };
    struct api_response res = post(&ctx, "/v2/repository/index", "");
    assert_index(&res, "READY", NULL);
    api_response_deinit(&res);
    /* Draining: every model UNAVAILABLE, with why, as each model's ready answers false. */
    ctx.ready = false;
    res = post(&ctx, "/v2/repository/index", "{\"ready\": false}");
    assert_index(&res, "UNAVAILABLE", "the server is shutting down");
    api_response_deinit(&res);
    res = post(&ctx, "/v2/repository/index", "{\"ready\": true}");
    ck_assert_int_eq(res.status, 200);
    ck_assert_str_eq(res.body, "[]\n");
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_binary_request_through_api_handle)
{
    /* The header length reaches api/ in api_request.inference_header_length. */
    static const char header[] =
        "{\"inputs\":[{\"name\":\"Q\",\"shape\":[1],\"datatype\":\"FP64\",\"parameters\":{\"binary_data_size\":8}},"
        "{\"name\":\"K\",\"shape\":[1,1],\"datatype\":\"FP64\",\"parameters\":{\"binary_data_size\":8}},"
        "{\"name\":\"V\",\"shape\":[1,1],\"datatype\":\"FP64\",\"parameters\":{\"binary_data_size\":8}}],"
        "\"outputs\":[{\"name\":\"OUTPUT\",\"parameters\":{\"binary_data\":true}}]}";
    char body[sizeof header - 1 + 24];
    double vals[3] = { 2, 3, 4.5 };
    memcpy(body, header, sizeof header - 1);
    memcpy(body + sizeof header - 1, vals, 24);
    char len[16];
    snprintf(len, sizeof len, "%zu", sizeof header - 1);
    struct api_context ctx = { .limits = api_default_limits(), .ready = true };
    struct api_request req = { .method = "POST", .path = "/v2/models/attention/infer",
                               .body = body, .body_len = sizeof body,
                               .inference_header_length = len };
    struct api_response res = { 0 };
    api_handle(&ctx, &req, &res);
    ck_assert_int_eq(res.status, 200);
    ck_assert_str_eq(res.content_type, "application/octet-stream");
    ck_assert_str_eq(res.headers[0].name, "Inference-Header-Content-Length");
    size_t n = strtoul(res.headers[0].value, NULL, 10);
    ck_assert_uint_eq(res.body_len, n + 8);
    double out;
    memcpy(&out, res.body + n, 8);
    ck_assert(out == 4.5); /* one key: weight 1, output v */
    ck_assert_ptr_nonnull(strstr(res.body, "\"shape\":[1]"));
    api_response_deinit(&res);
}
END_TEST

/*
 * Seed 000 tiled: n (even) queries and keys alternating seed 000's two rows, V's rows
 * alternating [10, 0] and [0, 10], as a binary request (Q, K, V FP64 or FP32) asking
 * SCORES, WEIGHTS and OUTPUT as binary (FP32 when Q is). The answer through api_handle;
 * *body (malloc'd) must outlive it, as the server's body does.
 */
static struct api_response seed000_tiled(size_t n, bool fp32, bool segments_ok, char **body)
{
    static const double q2[2][4] = { { 1, 0, 1, 0 }, { 0, 1, 0, 1 } },
                        k2[2][4] = { { 1, 0, 1, 0 }, { 1, 1, 1, 1 } },
                        v2[2][2] = { { 10, 0 }, { 0, 10 } };
    const char *dt = fp32 ? "FP32" : "FP64";
    size_t w = fp32 ? 4 : 8;
    char header[1024];
    int len = snprintf(header, sizeof header,
        "{\"inputs\":[{\"name\":\"Q\",\"shape\":[%zu,4],\"datatype\":\"%s\",\"parameters\":{\"binary_data_size\":%zu}},"
        "{\"name\":\"K\",\"shape\":[%zu,4],\"datatype\":\"%s\",\"parameters\":{\"binary_data_size\":%zu}},"
        "{\"name\":\"V\",\"shape\":[%zu,2],\"datatype\":\"%s\",\"parameters\":{\"binary_data_size\":%zu}}],"
        "\"parameters\":{\"binary_data_output\":true},"
        "\"outputs\":[{\"name\":\"SCORES\"},{\"name\":\"WEIGHTS\"},{\"name\":\"OUTPUT\"}]}",
        n, dt, 4 * n * w, n, dt, 4 * n * w, n, dt, 2 * n * w);
    ck_assert(len > 0 && (size_t)len < sizeof header);
    *body = malloc((size_t)len + 10 * n * w);
    ck_assert_ptr_nonnull(*body);
    memcpy(*body, header, (size_t)len);
    char *p = *body + len;
    for (int t = 0; t < 3; t++)
        for (size_t r = 0; r < n; r++)
            for (size_t c = 0; c < (t == 2 ? 2u : 4u); c++, p += w) {
                double x = t == 0 ? q2[r % 2][c] : t == 1 ? k2[r % 2][c] : v2[r % 2][c];
                float f = (float)x;
                memcpy(p, fp32 ? (const void *)&f : (const void *)&x, w);
            }
    static char hlen[16];
    snprintf(hlen, sizeof hlen, "%d", len);
    struct api_context ctx = { .limits = api_default_limits(), .ready = true,
                               .segments_ok = segments_ok };
    struct api_request req = { .method = "POST", .path = "/v2/models/attention/infer",
                               .body = *body, .body_len = (size_t)(p - *body),
                               .inference_header_length = hlen };
    struct api_response res = { 0 };
    api_handle(&ctx, &req, &res);
    ck_assert_int_eq(res.status, 200);
    ck_assert_str_eq(res.content_type, "application/octet-stream");
    return res;
}

/*
 * seed000_tiled's step (0 SCORES, 1 WEIGHTS, 2 OUTPUT) at cell (i, j), worked out as
 * DESIGN.md works seed 000 (scale 1/2): scores q_i . k_j are 2, except 0 for an odd
 * query and an even key; an even query weighs every key 1/n; an odd one weighs even
 * keys 1/(1+e) and odd keys e/(1+e), over n/2 keys each; outputs follow from V.
 */
static double seed000_tiled_want(int step, size_t i, size_t j, size_t n)
{
    double e = exp(1.0), half = (double)n / 2;
    bool odd_q = i % 2, odd_k = j % 2;
    if (step == 0)
        return odd_q && !odd_k ? 0 : 2;
    if (step == 1)
        return !odd_q ? 1.0 / (double)n : (odd_k ? e : 1) / ((1 + e) * half);
    return !odd_q ? 5 : (j == 0 ? 10 / (1 + e) : 10 * e / (1 + e));
}

START_TEST(test_binary_answer_borrows_the_trace)
{
    /* n = 128: 265 KB of binary FP64, past API_V2_PIECES_MIN. */
    const size_t n = 128;
    char *body;
    struct api_response res = seed000_tiled(n, false, true, &body);
    ck_assert_ptr_null(res.body);
    struct api_segments *segs = res.segments;
    ck_assert_ptr_nonnull(segs);
    /* The header, then SCORES, WEIGHTS and OUTPUT, each where the trace holds it. */
    ck_assert_uint_eq(segs->n, 4);
    size_t hlen = strtoul(res.headers[0].value, NULL, 10);
    ck_assert_uint_eq(segs->seg[0].len, hlen);
    ck_assert_uint_eq(segs->total, hlen + (2 * n * n + 2 * n) * 8);
    ck_assert_uint_eq(res.body_len, segs->total);
    const struct api_v2_outs *outs = segs->owner;
    ck_assert_ptr_nonnull(outs);
    ck_assert(segs->owner_free == api_v2_outs_free);
    const struct attn_trace *t = outs->owner;
    ck_assert_ptr_nonnull(t);
    const double *steps[3] = { t->scores.data, t->weights.data, t->output.data };
    const size_t cols[3] = { n, n, 2 };
    for (int i = 0; i < 3; i++) {
        const struct api_segment *s = &segs->seg[1 + i];
        ck_assert_ptr_null(s->base); /* borrowed, not a copy */
        ck_assert_ptr_eq(s->data, (const char *)steps[i]);
        ck_assert_uint_eq(s->len, n * cols[i] * 8);
        for (size_t r = 0; r < n; r++)
            for (size_t c = 0; c < cols[i]; c++) {
                double x, want = seed000_tiled_want(i, r, c, n);
                memcpy(&x, s->data + 8 * (r * cols[i] + c), 8);
                ck_assert_msg(fabs(x - want) <= 1e-12 + 1e-12 * fabs(want),
                              "step %d cell [%zu, %zu]: %.17g, want %.17g", i, r, c, x, want);
            }
    }
    /* What the budget is charged: the header and the whole trace, which the pieces own. */
    size_t trace = attn_trace_bytes_keep(n, n, 2, ATTN_KEEP(ATTN_STEP_SCORES) |
                                         ATTN_KEEP(ATTN_STEP_WEIGHTS) | ATTN_KEEP(ATTN_STEP_OUTPUT));
    ck_assert_uint_eq(segs->owner_bytes, trace);
    ck_assert_uint_eq(api_segments_held(segs), hlen + trace);
    api_response_deinit(&res); /* frees the trace too: valgrind and ASan would say */
    free(body);
}
END_TEST

/* The answer's bytes, whether in pieces or one buffer, into out (len bytes). */
static void answer_bytes(const struct api_response *res, char *out, size_t len)
{
    ck_assert_uint_eq(res->body_len, len);
    if (res->segments == NULL) {
        memcpy(out, res->body, len);
        return;
    }
    for (size_t i = 0, at = 0; i < res->segments->n; at += res->segments->seg[i++].len)
        memcpy(out + at, res->segments->seg[i].data, res->segments->seg[i].len);
}

START_TEST(test_binary_answer_fp32_small_and_one_buffer)
{
    /* FP32 at n = 128 (132 KB): each output converted once into a piece of its own. */
    const size_t n = 128;
    char *body, *body2, *body3;
    struct api_response res = seed000_tiled(n, true, true, &body);
    struct api_segments *segs = res.segments;
    ck_assert_ptr_nonnull(segs);
    ck_assert_uint_eq(segs->n, 4);
    const size_t cols[3] = { n, n, 2 };
    for (int i = 0; i < 3; i++) {
        ck_assert_ptr_nonnull(segs->seg[1 + i].base);
        ck_assert_uint_eq(segs->seg[1 + i].len, n * cols[i] * 4);
        for (size_t r = 0; r < n; r++)
            for (size_t c = 0; c < cols[i]; c++) {
                float f;
                memcpy(&f, segs->seg[1 + i].data + 4 * (r * cols[i] + c), 4);
                ck_assert_msg(f == (float)seed000_tiled_want(i, r, c, n),
                              "step %d cell [%zu, %zu]: %.9g", i, r, c, f);
            }
    }
    /* Owned pieces are counted once more besides the trace. */
    ck_assert_uint_eq(api_segments_held(segs),
                      segs->seg[0].len + (2 * n * n + 2 * n) * 4 + segs->owner_bytes);
    /* A caller that takes one buffer gets the same bytes, joined. */
    struct api_response one = seed000_tiled(n, true, false, &body2);
    ck_assert_ptr_null(one.segments);
    char *a = malloc(res.body_len), *b = malloc(res.body_len);
    answer_bytes(&res, a, res.body_len);
    answer_bytes(&one, b, res.body_len);
    ck_assert(memcmp(a, b, res.body_len) == 0);
    /* Seed 000 itself (n = 2, 96 bytes of tensors): one buffer, copied, as small
       answers go whatever the caller takes; its numbers are the seed's. */
    struct api_response small = seed000_tiled(2, false, true, &body3);
    ck_assert_ptr_null(small.segments);
    ck_assert_ptr_nonnull(small.body);
    size_t hlen = strtoul(small.headers[0].value, NULL, 10);
    ck_assert_uint_eq(small.body_len, hlen + 12 * 8);
    for (int i = 0, at = 0; i < 3; i++)
        for (size_t r = 0; r < 2; r++)
            for (size_t c = 0; c < 2; c++, at++) {
                double x;
                memcpy(&x, small.body + hlen + 8 * at, 8);
                ck_assert_msg(fabs(x - seed000_tiled_want(i, r, c, 2)) <= 1e-12,
                              "seed 000 step %d cell [%zu, %zu]: %.17g", i, r, c, x);
            }
    free(a);
    free(b);
    api_response_deinit(&small);
    api_response_deinit(&one);
    api_response_deinit(&res);
    free(body);
    free(body2);
    free(body3);
}
END_TEST

/* ------------------------------------------------------------------ Halfs */

/* FP16's value by its definition, in ldexp arithmetic (NaN for the NaN patterns). */
static double fp16_reference(unsigned b)
{
    unsigned e = (b >> 10) & 31, f = b & 1023;
    double s = (b & 0x8000) ? -1 : 1;
    if (e == 31)
        return f ? NAN : s * INFINITY;
    return e == 0 ? s * ldexp(f, -24) : s * ldexp(1024 + f, (int)e - 25);
}

/* BF16's value: the float32 whose top 16 bits these are. */
static double bf16_reference(unsigned b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

typedef double (*widen_fn)(uint16_t);
typedef bool (*narrow_fn)(double, uint16_t *);

/*
 * Every pattern: widened to the reference's value; narrowed back to itself; and, beside
 * each finite value and the next one up, the midpoint goes to the even one of the two and
 * the doubles just either side of it to the nearer one, straight from the double.
 */
static void check_every_pattern(widen_fn widen, narrow_fn narrow, double (*ref)(unsigned),
                                double max)
{
    for (unsigned b = 0; b < 65536; b++) {
        double x = widen((uint16_t)b), want = ref(b);
        if (isnan(want)) {
            ck_assert_msg(isnan(x), "pattern %04x", b);
            uint16_t n;
            ck_assert(narrow(x, &n));
            ck_assert(isnan(widen(n)));
            continue;
        }
        ck_assert_msg(x == want && signbit(x) == signbit(want), "pattern %04x: %a, not %a", b,
                      x, want);
        uint16_t back;
        ck_assert(narrow(x, &back));
        ck_assert_msg(back == b, "pattern %04x narrows to %04x", b, back);
        if (isinf(x) || signbit(x) || x == max)
            continue;
        /* b + 1 is the next value up for non-negative finite b. */
        double up = widen((uint16_t)(b + 1)), mid = x + (up - x) / 2; /* exact: a double */
        uint16_t even = (b & 1) ? (uint16_t)(b + 1) : (uint16_t)b, n;
        ck_assert(narrow(mid, &n));
        ck_assert_msg(n == even, "midpoint of %04x: %04x", b, n);
        ck_assert(narrow(nextafter(mid, 0), &n) && n == b);
        ck_assert(narrow(nextafter(mid, INFINITY), &n) && n == b + 1);
        ck_assert(narrow(-nextafter(mid, 0), &n) && n == (b | 0x8000));
    }
}

START_TEST(test_fp16_every_pattern)
{
    check_every_pattern(api_fp16_to_double, api_double_to_fp16, fp16_reference, API_FP16_MAX);
    ck_assert(api_fp16_to_double(0x0001) == 0x1p-24);  /* the smallest subnormal */
    ck_assert(api_fp16_to_double(0x7bff) == 65504.0);
}
END_TEST

START_TEST(test_bf16_every_pattern)
{
    check_every_pattern(api_bf16_to_double, api_double_to_bf16, bf16_reference, API_BF16_MAX);
    ck_assert(api_bf16_to_double(0x0001) == 0x1p-133);
    ck_assert(api_bf16_to_double(0x7f7f) == API_BF16_MAX);
}
END_TEST

START_TEST(test_narrowing_rounds_once_and_overflows)
{
    uint16_t b;
    /* Through float this would be the tie 1 + 2^-8, rounded to even: 1. */
    ck_assert(api_double_to_bf16(1 + 0x1p-8 + 0x1p-30, &b));
    ck_assert_uint_eq(b, 0x3f81);
    ck_assert(api_double_to_fp16(1 + 0x1p-11 + 0x1p-40, &b));
    ck_assert_uint_eq(b, 0x3c01);
    /* 65504 + 16 is the tie above FP16's largest: to even is 65536, past the range. */
    ck_assert(api_double_to_fp16(65519.99, &b) && b == 0x7bff);
    ck_assert(!api_double_to_fp16(65520, &b) && b == 0x7c00);
    ck_assert(!api_double_to_fp16(-1e300, &b) && b == 0xfc00);
    ck_assert(!api_double_to_bf16(3.4e38, &b) && b == 0x7f80);
    ck_assert(api_double_to_bf16(-INFINITY, &b) && b == 0xff80);
    /* Below half the smallest subnormal: ±0; just above it: the subnormal. */
    ck_assert(api_double_to_fp16(0x1p-25, &b) && b == 0);
    ck_assert(api_double_to_fp16(-0x1.0000000000001p-25, &b) && b == 0x8001);
    ck_assert(api_double_to_bf16(-0.0, &b) && b == 0x8000);
    ck_assert(api_double_to_bf16(0x1p-1074, &b) && b == 0);
}
END_TEST

/* ------------------------------------------------------------------ Stats */

/* The model's $model_stat, parsed (json_decref it). */
static json_t *stats_of(enum api_v2_model model)
{
    struct jw w;
    jw_init(&w, -1);
    api_v2_stats_write(&w, model, "m");
    size_t len;
    char *text = jw_take(&w, &len);
    ck_assert_ptr_nonnull(text);
    json_t *doc = doc_of(text);
    free(text);
    return doc;
}

static long long stat_int(const json_t *doc, const char *a, const char *b, const char *c)
{
    const json_t *x = json_object_get(doc, a);
    if (b != NULL)
        x = json_object_get(json_object_get(x, b), c);
    ck_assert_msg(json_is_integer(x), "%s %s %s is an integer", a, b ? b : "", c ? c : "");
    return json_integer_value(x);
}

/* The row of batch size `size` in doc's batch_stats, or NULL; every size in one row. */
static const json_t *batch_row_of(const json_t *doc, long long size)
{
    const json_t *rows = json_object_get(doc, "batch_stats"), *found = NULL;
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row)
        if (json_integer_value(json_object_get(row, "batch_size")) == size) {
            ck_assert_msg(found == NULL, "batch size %lld has two rows", size);
            found = row;
        }
    return found;
}

static long long row_count(const json_t *row, const char *part)
{
    if (row == NULL)
        return 0;
    return json_integer_value(json_object_get(json_object_get(row, part), "count"));
}

START_TEST(test_stats_batch_rows_and_their_bound)
{
    json_t *before = stats_of(API_V2_MULTIHEAD);
    const json_t *rows = json_object_get(before, "batch_stats");
    size_t taken = json_array_size(rows);
    const struct api_v2_timing t = { .queue_ns = 1, .input_ns = 2, .infer_ns = 3, .output_ns = 4 };
    long long t0 = (long long)time(NULL) * 1000;
    /* Sizes from 70 down to 1: every one past the bound's rows is still counted. */
    long long problems = 0;
    for (size_t b = 70; b >= 1; b--) {
        api_v2_stats_success(API_V2_MULTIHEAD, b, &t);
        problems += (long long)b;
    }
    api_v2_stats_fail(API_V2_MULTIHEAD, 5);
    long long t1 = ((long long)time(NULL) + 1) * 1000;
    json_t *after = stats_of(API_V2_MULTIHEAD);
    ck_assert_int_eq(stat_int(after, "inference_count", NULL, NULL) -
                     stat_int(before, "inference_count", NULL, NULL), problems);
    ck_assert_int_eq(stat_int(after, "execution_count", NULL, NULL) -
                     stat_int(before, "execution_count", NULL, NULL), 70);
    static const char *const parts[] = { "success", "queue", "compute_input", "compute_infer",
                                         "compute_output" };
    static const long long ns[] = { 10, 1, 2, 3, 4 };
    for (int p = 0; p < 5; p++) {
        ck_assert_int_eq(stat_int(after, "inference_stats", parts[p], "count") -
                         stat_int(before, "inference_stats", parts[p], "count"), 70);
        json_t *d_after = json_object_get(json_object_get(after, "inference_stats"), parts[p]);
        json_t *d_before = json_object_get(json_object_get(before, "inference_stats"), parts[p]);
        ck_assert_int_eq(json_integer_value(json_object_get(d_after, "ns")) -
                         json_integer_value(json_object_get(d_before, "ns")), 70 * ns[p]);
    }
    ck_assert_int_eq(stat_int(after, "inference_stats", "fail", "count") -
                     stat_int(before, "inference_stats", "fail", "count"), 1);
    /* The first API_V2_STATS_BATCH_SIZES sizes seen have rows, smallest first. */
    rows = json_object_get(after, "batch_stats");
    ck_assert_uint_eq(json_array_size(rows), API_V2_STATS_BATCH_SIZES);
    for (size_t i = 1; i < json_array_size(rows); i++) {
        const json_t *prev = json_array_get(rows, i - 1), *row = json_array_get(rows, i);
        ck_assert_int_lt(json_integer_value(json_object_get(prev, "batch_size")),
                         json_integer_value(json_object_get(row, "batch_size")));
    }
    if (taken == 0) {
        for (long long b = 70; b > 70 - API_V2_STATS_BATCH_SIZES; b--)
            ck_assert_int_eq(row_count(batch_row_of(after, b), "compute_infer"), 1);
        ck_assert_ptr_null(batch_row_of(after, 70 - API_V2_STATS_BATCH_SIZES));
    }
    long long last = stat_int(after, "last_inference", NULL, NULL);
    ck_assert(last >= t0 && last <= t1);
    json_decref(before);
    json_decref(after);
}
END_TEST

enum { RACERS = 4, ROUNDS = 25, SIZES = 32 };

static void *race(void *arg)
{
    (void)arg;
    const struct api_v2_timing t = { .input_ns = 1, .infer_ns = 1, .output_ns = 1 };
    for (int r = 0; r < ROUNDS; r++)
        for (size_t b = 1; b <= SIZES; b++)
            api_v2_stats_success(API_V2_ATTENTION, b, &t);
    return NULL;
}

START_TEST(test_stats_threads_share_the_rows)
{
    json_t *before = stats_of(API_V2_ATTENTION);
    pthread_t th[RACERS];
    for (int i = 0; i < RACERS; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, race, NULL), 0);
    for (int i = 0; i < RACERS; i++)
        pthread_join(th[i], NULL);
    json_t *after = stats_of(API_V2_ATTENTION);
    ck_assert_int_eq(stat_int(after, "execution_count", NULL, NULL) -
                     stat_int(before, "execution_count", NULL, NULL), RACERS * ROUNDS * SIZES);
    ck_assert_int_eq(stat_int(after, "inference_count", NULL, NULL) -
                     stat_int(before, "inference_count", NULL, NULL),
                     RACERS * ROUNDS * (long long)SIZES * (SIZES + 1) / 2);
    /* Each size in exactly one row (batch_row_of checks), with every one of its requests. */
    static const char *const parts[] = { "compute_input", "compute_infer", "compute_output" };
    for (long long b = 1; b <= SIZES; b++)
        for (int p = 0; p < 3; p++) {
            ck_assert_int_eq(row_count(batch_row_of(after, b), parts[p]) -
                             row_count(batch_row_of(before, b), parts[p]), RACERS * ROUNDS);
        }
    json_decref(before);
    json_decref(after);
}
END_TEST

static Suite *v2_suite(void)
{
    Suite *s = suite_create("v2");
    TCase *core = tcase_create("Core");
    tcase_add_test(core, test_header_length);
    tcase_add_test(core, test_split_binary_in_input_order);
    tcase_add_test(core, test_json_data_flat_and_nested);
    tcase_add_test(core, test_every_binary_datatype);
    tcase_add_test(core, test_reserved_parameters_ignored);
    suite_add_tcase(s, core);
    TCase *errors = tcase_create("Errors");
    tcase_add_test(errors, test_malformed_headers);
    tcase_add_test(errors, test_bool_bytes_are_zero_or_one);
    suite_add_tcase(s, errors);
    TCase *probes = tcase_create("Probes");
    tcase_add_test(probes, test_ready_is_503_while_draining);
    tcase_add_test(probes, test_repository_index_while_draining);
    tcase_add_test(probes, test_binary_request_through_api_handle);
    suite_add_tcase(s, probes);
    TCase *memory = tcase_create("Memory");
    tcase_add_test(memory, test_binary_answer_borrows_the_trace);
    tcase_add_test(memory, test_binary_answer_fp32_small_and_one_buffer);
    suite_add_tcase(s, memory);
    TCase *halfs = tcase_create("Halfs");
    tcase_add_test(halfs, test_fp16_every_pattern);
    tcase_add_test(halfs, test_bf16_every_pattern);
    tcase_add_test(halfs, test_narrowing_rounds_once_and_overflows);
    suite_add_tcase(s, halfs);
    TCase *stats = tcase_create("Stats");
    tcase_add_test(stats, test_stats_batch_rows_and_their_bound);
    tcase_add_test(stats, test_stats_threads_share_the_rows);
    suite_add_tcase(s, stats);
    return s;
}

int main(void)
{
    api_global_init();
    SRunner *r = srunner_create(v2_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
