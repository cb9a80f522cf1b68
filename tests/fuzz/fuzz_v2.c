/*
 * tests/fuzz/fuzz_v2.c — libFuzzer harness for the V2 inference request: the JSON
 * header reader and the binary splitter (api/request/v2_tensor.c), driven through
 * api_handle as the server drives them, with a random Inference-Header-Content-Length.
 *
 * The input:
 *
 *     byte 0      bit 0: model multihead, bit 5: model verify (else attention); bit 1:
 *                 /versions/1;
 *                 bit 2: Content-Type application/octet-stream (else none, as
 *                 tritonclient sends); bits 3-4: the header length: 0 none, 1 the
 *                 number in bytes 1-2, 2 that number with a sign or junk after it,
 *                 3 that number plus 65536 (past any body here)
 *     bytes 1-2   a length, big-endian
 *     the rest    the body: a JSON header, then binary tensors
 *
 * What must hold beyond "no crash, leak or undefined behaviour": a known status
 * (never 500), every JSON answer parses, and a binary answer's
 * Inference-Header-Content-Length is within its body, the header before it parses,
 * and its outputs' binary_data_size add up to exactly the bytes after it.
 *
 * Not here: the rest of the API (fuzz_api.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/api.h"

static void fail(const char *why, const struct api_response *res)
{
    fprintf(stderr, "%s: status %d, %.*s\n", why, res->status,
            (int)(res->body_len > 400 ? 400 : res->body_len), res->body ? res->body : "");
    abort();
}

static const char *header_of(const struct api_response *res, const char *name)
{
    for (size_t i = 0; i < res->n_headers; i++)
        if (strcmp(res->headers[i].name, name) == 0)
            return res->headers[i].value;
    return NULL;
}

static void check_binary(const struct api_response *res)
{
    const char *len = header_of(res, "Inference-Header-Content-Length");
    if (len == NULL)
        fail("a binary answer without Inference-Header-Content-Length", res);
    size_t n = strtoul(len, NULL, 10);
    if (n > res->body_len)
        fail("a header length past the body", res);
    json_error_t e;
    json_t *doc = json_loadb(res->body, n, 0, &e);
    if (doc == NULL)
        fail("a binary answer's header is not JSON", res);
    size_t sum = 0;
    json_t *outputs = json_object_get(doc, "outputs"), *o;
    size_t i;
    json_array_foreach(outputs, i, o) {
        json_t *size = json_object_get(json_object_get(o, "parameters"), "binary_data_size");
        if (size != NULL)
            sum += (size_t)json_integer_value(size);
    }
    json_decref(doc);
    if (sum != res->body_len - n)
        fail("binary_data_size does not add up to the bytes after the header", res);
}

static void check_response(const struct api_response *res)
{
    static const int known[] = { 200, 400, 404, 405, 406, 413, 415, 503 };
    int ok = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        ok |= res->status == known[i];
    if (!ok || res->content_type == NULL)
        fail("an unknown status or no content type", res);
    if (res->body == NULL) {
        if (res->status != 503 || res->body_len != 0)
            fail("no body", res);
        return;
    }
    if (strcmp(res->content_type, "application/octet-stream") == 0) {
        check_binary(res);
        return;
    }
    json_error_t e;
    json_t *doc = json_loadb(res->body, res->body_len, 0, &e);
    if (doc == NULL)
        fail("the answer is not JSON", res);
    json_decref(doc);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    api_global_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    unsigned mode = data[0], length = (unsigned)data[1] << 8 | data[2];
    char path[64], value[32];
    const char *model = (mode & 32) ? "verify" : (mode & 1) ? "multihead" : "attention";
    snprintf(path, sizeof path, "/v2/models/%s%s/infer", model, (mode & 2) ? "/versions/1" : "");
    switch ((mode >> 3) & 3) {
    case 1: snprintf(value, sizeof value, "%u", length); break;
    case 2: snprintf(value, sizeof value, (length & 1) ? "-%u" : "%u x", length); break;
    case 3: snprintf(value, sizeof value, "%u", length + 65536u); break;
    default: break;
    }
    /* A copy of exactly the body's bytes, so that ASan sees any read past its end. */
    size_t body_len = size - 3;
    char *body = malloc(body_len > 0 ? body_len : 1);
    if (body == NULL)
        return 0;
    memcpy(body, data + 3, body_len);

    struct api_context ctx = { .limits = api_default_limits(), .ready = true };
    ctx.limits.max_cells = 4096;  /* small: one input cannot ask for seconds of work */
    ctx.limits.max_work = (size_t)1 << 20; /* nor a streamed problem (no matrix to count) */
    ctx.limits.max_request_bytes = (size_t)64 << 20;
    struct api_request req = {
        .method = "POST", .path = path, .body = body, .body_len = body_len,
        .content_type = (mode & 4) ? "application/octet-stream" : NULL,
        .inference_header_length = ((mode >> 3) & 3) ? value : NULL,
    };
    struct api_response res = { 0 };
    if (api_precheck(&ctx, &req, (long long)body_len, &res))
        check_response(&res);
    api_response_deinit(&res);
    api_handle(&ctx, &req, &res);
    check_response(&res);
    api_response_deinit(&res);
    free(body);
    return 0;
}
