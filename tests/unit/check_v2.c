/*
 * tests/unit/check_v2.c — the V2 request readers (api/request/v2_tensor.c) on their
 * own, and the /v2 answers that need a context the HTTP tests cannot set (a server
 * that is draining).
 *
 * Cases: Core (header length, splitting the binary pieces, numbers of every
 * datatype), Errors (each malformed size or shape with its type and pointer), Probes.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/api.h"
#include "api/request/v2_tensor.h"

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
    expect_error(IN("{\"name\": \"A\", \"shape\": [1], \"datatype\": \"FP16\", \"data\": [1]}"), 0,
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
    tcase_add_test(probes, test_binary_request_through_api_handle);
    suite_add_tcase(s, probes);
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
