/*
 * tests/unit/check_v2_memory.c — the working set a V2 request is admitted with,
 * against the memory it really takes: for a few shapes (one problem and a batch,
 * attention and multihead, FP64 and FP32, binary and JSON outputs, pieces or one
 * buffer), the estimate api/ hands to api_context.admit must cover the peak of the
 * bytes allocated while the request is answered (plus its body, which the server
 * holds), and not overstate it by more than an eighth (and a fixed slack of 48 KiB
 * for what does not grow with the tensors).
 *
 * How: this binary is linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,
 * --wrap=free (see the Makefile), as check_alloc is; while armed, every block's
 * usable size is added when it is made and taken away when it is freed, and the
 * highest total is kept. OpenBLAS keeps its own buffers (mmap'd once): not counted,
 * and not part of any request's estimate either.
 *
 * Cases: Estimate (the streamed answers of both models too).
 */
#include <check.h>
#include <malloc.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

/* Counted only while armed: Check (linked statically) allocates through here too. */
static atomic_bool armed;
/* Signed: a block made before arming and freed while armed takes live below zero. */
static atomic_llong live, peak;

static void count_in(void *p)
{
    if (p == NULL || !atomic_load(&armed))
        return;
    long long size = (long long)malloc_usable_size(p);
    long long now = atomic_fetch_add(&live, size) + size;
    long long was = atomic_load(&peak);
    while (now > was && !atomic_compare_exchange_weak(&peak, &was, now))
        ;
}

static void count_out(void *p)
{
    if (p != NULL && atomic_load(&armed))
        atomic_fetch_sub(&live, (long long)malloc_usable_size(p));
}

void *__wrap_malloc(size_t n)
{
    void *p = __real_malloc(n);
    count_in(p);
    return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
    void *p = __real_calloc(n, size);
    count_in(p);
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    count_out(p);
    void *q = __real_realloc(p, n);
    count_in(q != NULL ? q : p); /* a failed realloc leaves p as it was */
    return q;
}

void __wrap_free(void *p)
{
    count_out(p);
    __real_free(p);
}

/* What the estimate adds for what does not grow with the tensors (v2/attention.c). */
#define SLACK ((size_t)48 * 1024)

/* What admission was asked for (api_context.admit). */
static size_t estimated;

static enum api_admission record(void *cls, size_t bytes)
{
    (void)cls;
    estimated = bytes;
    return API_ADMIT_YES;
}

/* One V2 input: name, shape and the datatype's little-endian bytes of its values. */
struct input {
    const char *name;
    size_t rank, shape[3];
};

/* A deterministic value in [-1, 1) for cell i of input j. */
static double value_of(size_t j, size_t i)
{
    return (double)((i * 2654435761u + j * 40503u) % 2001) / 1000.0 - 1.0;
}

/*
 * A tritonclient-style binary body for the inputs (FP32 or FP64) asking for the
 * outputs named (each binary or not), with parameters (a JSON object's members, or
 * ""). Returns the malloc'd body (not counted: armed later); *hlen its header length.
 */
static char *binary_request(const struct input *in, size_t n_in, bool fp32,
                            const char *outputs, const char *params, size_t *len, size_t *hlen)
{
    char header[4096];
    size_t at = (size_t)snprintf(header, sizeof header, "{\"inputs\":[");
    size_t bytes = 0, w = fp32 ? 4 : 8;
    for (size_t j = 0; j < n_in; j++) {
        size_t count = 1;
        char shape[64] = "";
        for (size_t d = 0; d < in[j].rank; d++) {
            count *= in[j].shape[d];
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%zu",
                     d ? "," : "", in[j].shape[d]);
        }
        at += (size_t)snprintf(header + at, sizeof header - at,
                               "%s{\"name\":\"%s\",\"shape\":[%s],\"datatype\":\"%s\","
                               "\"parameters\":{\"binary_data_size\":%zu}}",
                               j ? "," : "", in[j].name, shape, fp32 ? "FP32" : "FP64", count * w);
        bytes += count * w;
    }
    at += (size_t)snprintf(header + at, sizeof header - at, "],\"outputs\":[%s]%s%s}", outputs,
                           *params ? "," : "", params);
    ck_assert_uint_lt(at, sizeof header);
    char *body = malloc(at + bytes);
    ck_assert_ptr_nonnull(body);
    memcpy(body, header, at);
    char *p = body + at;
    for (size_t j = 0; j < n_in; j++) {
        size_t count = 1;
        for (size_t d = 0; d < in[j].rank; d++)
            count *= in[j].shape[d];
        for (size_t i = 0; i < count; i++, p += w) {
            double x = value_of(j, i);
            float f = (float)x;
            memcpy(p, fp32 ? (const void *)&f : (const void *)&x, w);
        }
    }
    *len = at + bytes;
    *hlen = at;
    return body;
}

/*
 * Answers body on `model` with the allocator counting; asserts a 200 and that the
 * estimate covers the peak (plus the body) within an eighth and the slack. Prints
 * both, for the log.
 */
static void check_estimate(const char *what, const char *model, char *body, size_t len,
                           size_t hlen, bool pieces)
{
    char path[64], hl[24];
    snprintf(path, sizeof path, "/v2/models/%s/infer", model);
    snprintf(hl, sizeof hl, "%zu", hlen);
    struct api_context ctx = { .limits = api_default_limits(), .ready = true,
                               .segments_ok = pieces, .admit = record };
    ctx.limits.max_request_bytes = 0; /* measure, do not refuse */
    struct api_request req = { .method = "POST", .path = path, .body = body, .body_len = len,
                               .inference_header_length = hl };
    struct api_response res = { 0 };
    estimated = 0;
    atomic_store(&live, 0);
    atomic_store(&peak, 0);
    atomic_store(&armed, true);
    api_handle(&ctx, &req, &res);
    atomic_store(&armed, false);
    ck_assert_msg(res.status == 200, "%s: %d %.300s", what, res.status,
                  res.body != NULL ? res.body : "");
    size_t used = (size_t)atomic_load(&peak) + len;
    printf("# %-44s estimate %10zu bytes, peak %10zu bytes (%.3f)\n", what, estimated, used,
           (double)estimated / (double)used);
    ck_assert_msg(estimated >= used, "%s: estimate %zu below the peak %zu", what, estimated,
                  used);
    ck_assert_msg(estimated <= used + used / 8 + SLACK, "%s: estimate %zu over the peak %zu "
                  "by more than an eighth and the slack", what, estimated, used);
    api_response_deinit(&res);
    free(body);
}

#define EVERY_STEP_BINARY                                                                  \
    "{\"name\":\"SCORES\",\"parameters\":{\"binary_data\":true}},"                         \
    "{\"name\":\"SCALED\",\"parameters\":{\"binary_data\":true}},"                         \
    "{\"name\":\"MASKED\",\"parameters\":{\"binary_data\":true}},"                         \
    "{\"name\":\"WEIGHTS\",\"parameters\":{\"binary_data\":true}},"                        \
    "{\"name\":\"OUTPUT\",\"parameters\":{\"binary_data\":true}}"

/* ------------------------------------------------------------------ Estimate */

START_TEST(test_attention_every_step_fp64)
{
    /* The bench's request at n = 256: every step binary FP64, sent from the trace. */
    const struct input in[] = { { "Q", 2, { 256, 64 } }, { "K", 2, { 256, 64 } },
                                { "V", 2, { 256, 64 } } };
    size_t len, hlen;
    char *body = binary_request(in, 3, false, EVERY_STEP_BINARY, "", &len, &hlen);
    check_estimate("attention 256x64 every step FP64, pieces", "attention", body, len, hlen, true);
    body = binary_request(in, 3, false, EVERY_STEP_BINARY, "", &len, &hlen);
    check_estimate("attention 256x64 every step FP64, one buffer", "attention", body, len, hlen,
                   false);
}
END_TEST

START_TEST(test_attention_small)
{
    /* Eight queries: what the request holds besides its tensors dominates. */
    const struct input in[] = { { "Q", 2, { 8, 1 } }, { "K", 2, { 8, 1 } }, { "V", 2, { 8, 1 } } };
    size_t len, hlen;
    char *body = binary_request(in, 3, false, EVERY_STEP_BINARY, "", &len, &hlen);
    check_estimate("attention 8x1 every step FP64", "attention", body, len, hlen, true);
}
END_TEST

START_TEST(test_attention_weights_fp32)
{
    /* FP32 weights alone: the trace keeps one (n_q, n_k) buffer, the piece 4 bytes a cell. */
    const struct input in[] = { { "Q", 2, { 512, 32 } }, { "K", 2, { 512, 32 } },
                                { "V", 2, { 512, 32 } } };
    size_t len, hlen;
    char *body = binary_request(in, 3, true,
                                "{\"name\":\"WEIGHTS\",\"parameters\":{\"binary_data\":true}}", "",
                                &len, &hlen);
    check_estimate("attention 512x32 weights FP32", "attention", body, len, hlen, true);
}
END_TEST

START_TEST(test_attention_batch)
{
    /* A batch of 3: one trace at a time, the outputs copied into the answer's tensors. */
    const struct input in[] = { { "Q", 3, { 3, 128, 16 } }, { "K", 3, { 3, 128, 16 } },
                                { "V", 3, { 3, 128, 16 } } };
    size_t len, hlen;
    char *body = binary_request(in, 3, false, EVERY_STEP_BINARY, "", &len, &hlen);
    check_estimate("attention batch 3x128x16 every step FP64", "attention", body, len, hlen, true);
}
END_TEST

START_TEST(test_attention_json_outputs)
{
    /* Outputs as JSON data: the text is what the answer adds to the trace. */
    const struct input in[] = { { "Q", 2, { 192, 16 } }, { "K", 2, { 192, 16 } },
                                { "V", 2, { 192, 16 } } };
    size_t len, hlen;
    char *body = binary_request(in, 3, false, "{\"name\":\"WEIGHTS\"},{\"name\":\"OUTPUT\"}", "",
                                &len, &hlen);
    check_estimate("attention 192x16 weights, output JSON", "attention", body, len, hlen, true);
}
END_TEST

#define GRADS_BINARY                                                                       \
    "{\"name\":\"OUTPUT\",\"parameters\":{\"binary_data\":true}},"                          \
    "{\"name\":\"GRAD_Q\",\"parameters\":{\"binary_data\":true}},"                          \
    "{\"name\":\"GRAD_K\",\"parameters\":{\"binary_data\":true}},"                          \
    "{\"name\":\"GRAD_V\",\"parameters\":{\"binary_data\":true}},"                          \
    "{\"name\":\"GRAD_SCORES\",\"parameters\":{\"binary_data\":true}}"

START_TEST(test_attention_backward)
{
    /* GRAD_OUTPUT: every forward step kept, the gradients beside them, the outputs copied
       out of both; one problem and a batch of 2. */
    const struct input in[] = { { "Q", 2, { 256, 32 } }, { "K", 2, { 256, 32 } },
                                { "V", 2, { 256, 32 } }, { "GRAD_OUTPUT", 2, { 256, 32 } } };
    size_t len, hlen;
    char *body = binary_request(in, 4, false, GRADS_BINARY, "", &len, &hlen);
    check_estimate("attention 256x32 backward", "attention", body, len, hlen, true);
    const struct input batch[] = { { "Q", 3, { 2, 128, 32 } }, { "K", 3, { 2, 128, 32 } },
                                   { "V", 3, { 2, 128, 32 } },
                                   { "GRAD_OUTPUT", 3, { 2, 128, 32 } } };
    body = binary_request(batch, 4, false, GRADS_BINARY, "", &len, &hlen);
    check_estimate("attention batch 2x128x32 backward", "attention", body, len, hlen, true);
    body = binary_request(in, 4, false, GRADS_BINARY, "\"parameters\":{\"precision\":\"bfloat16\"}",
                          &len, &hlen);
    check_estimate("attention 256x32 backward in bfloat16", "attention", body, len, hlen, true);
}
END_TEST

START_TEST(test_multihead)
{
    /* Four heads: per-head weights and the output, binary FP64 from the trace. */
    const struct input in[] = { { "X", 2, { 160, 64 } }, { "W_Q", 2, { 64, 64 } },
                                { "W_K", 2, { 64, 64 } }, { "W_V", 2, { 64, 64 } },
                                { "W_O", 2, { 64, 64 } } };
    size_t len, hlen;
    char *body = binary_request(in, 5, false,
                                "{\"name\":\"WEIGHTS\",\"parameters\":{\"binary_data\":true}},"
                                "{\"name\":\"OUTPUT\",\"parameters\":{\"binary_data\":true}}",
                                "\"parameters\":{\"heads\":4}", &len, &hlen);
    check_estimate("multihead 160x64, 4 heads, weights, output", "multihead", body, len, hlen,
                   true);
}
END_TEST

#define MH_GRADS_BINARY                                                                    \
    "{\"name\":\"GRAD_X\",\"parameters\":{\"binary_data\":true}},"                          \
    "{\"name\":\"GRAD_W_Q\",\"parameters\":{\"binary_data\":true}},"                        \
    "{\"name\":\"GRAD_MASKED\",\"parameters\":{\"binary_data\":true}}"

START_TEST(test_multihead_backward)
{
    /* GRAD_OUTPUT: each head's steps and gradients beside the trace; one problem (sent from
       where they lie) and a batch of 2 (copied out of each). */
    const struct input in[] = { { "X", 2, { 96, 64 } }, { "W_Q", 2, { 64, 64 } },
                                { "W_K", 2, { 64, 32 } }, { "W_V", 2, { 64, 32 } },
                                { "W_O", 2, { 64, 64 } }, { "GRAD_OUTPUT", 2, { 96, 64 } } };
    size_t len, hlen;
    char *body = binary_request(in, 6, false, MH_GRADS_BINARY,
                                "\"parameters\":{\"heads\":4,\"kv_heads\":2}", &len, &hlen);
    check_estimate("multihead 96x64 backward", "multihead", body, len, hlen, true);
    const struct input batch[] = { { "X", 3, { 2, 64, 64 } }, { "W_Q", 2, { 64, 64 } },
                                   { "W_K", 2, { 64, 32 } }, { "W_V", 2, { 64, 32 } },
                                   { "W_O", 2, { 64, 64 } }, { "GRAD_OUTPUT", 3, { 2, 64, 64 } } };
    body = binary_request(batch, 6, false, MH_GRADS_BINARY,
                          "\"parameters\":{\"heads\":4,\"kv_heads\":2}", &len, &hlen);
    check_estimate("multihead batch 2x64x64 backward", "multihead", body, len, hlen, true);
    /* in a low format: core's copies of one product's operands at a time beside them */
    body = binary_request(in, 6, false, MH_GRADS_BINARY,
                          "\"parameters\":{\"heads\":4,\"kv_heads\":2,\"precision\":\"float16\"}",
                          &len, &hlen);
    check_estimate("multihead 96x64 backward in float16", "multihead", body, len, hlen, true);
}
END_TEST

#define OUTPUT_LSE_BINARY                                                                  \
    "{\"name\":\"OUTPUT\",\"parameters\":{\"binary_data\":true}},"                         \
    "{\"name\":\"LSE\",\"parameters\":{\"binary_data\":true}}"

START_TEST(test_attention_streamed)
{
    /* OUTPUT and LSE: streamed, no (n_q, n_k) matrix; the answer's block and the scratch. */
    const struct input in[] = { { "Q", 2, { 1024, 32 } }, { "K", 2, { 1024, 32 } },
                                { "V", 2, { 1024, 32 } } };
    size_t len, hlen;
    char *body = binary_request(in, 3, false, OUTPUT_LSE_BINARY, "", &len, &hlen);
    check_estimate("attention 1024x32 output, lse streamed", "attention", body, len, hlen, true);
}
END_TEST

START_TEST(test_multihead_streamed)
{
    /* OUTPUT and LSE of four heads: streamed head by head, one problem and a batch of 2. */
    const struct input in[] = { { "X", 2, { 768, 64 } }, { "W_Q", 2, { 64, 64 } },
                                { "W_K", 2, { 64, 64 } }, { "W_V", 2, { 64, 64 } },
                                { "W_O", 2, { 64, 64 } } };
    size_t len, hlen;
    char *body = binary_request(in, 5, false, OUTPUT_LSE_BINARY, "\"parameters\":{\"heads\":4}",
                                &len, &hlen);
    check_estimate("multihead 768x64, 4 heads, output, lse streamed", "multihead", body, len,
                   hlen, true);
    const struct input batch[] = { { "X", 3, { 2, 512, 64 } }, { "W_Q", 2, { 64, 64 } },
                                   { "W_K", 2, { 64, 64 } }, { "W_V", 2, { 64, 64 } },
                                   { "W_O", 2, { 64, 64 } } };
    body = binary_request(batch, 5, false, OUTPUT_LSE_BINARY, "\"parameters\":{\"heads\":4}",
                          &len, &hlen);
    check_estimate("multihead batch 2x512x64, output, lse streamed", "multihead", body, len,
                   hlen, true);
}
END_TEST

#define VERDICT_BINARY                                                                     \
    "{\"name\":\"VERDICT\",\"parameters\":{\"binary_data\":true}},"                        \
    "{\"name\":\"REPORT\",\"parameters\":{\"binary_data\":true}},"                         \
    "{\"name\":\"GOLD\",\"parameters\":{\"binary_data\":true}}"

START_TEST(test_verify)
{
    /* verify in float32: gold and the naive pass of one problem at a time, the report and
       gold kept for every problem; one problem, a batch of 3, and a float64 backward. */
    const struct input in[] = { { "Q", 2, { 256, 32 } }, { "K", 2, { 256, 32 } },
                                { "V", 2, { 256, 32 } }, { "OUTPUT", 2, { 256, 32 } } };
    size_t len, hlen;
    char *body = binary_request(in, 4, true, VERDICT_BINARY, "", &len, &hlen);
    check_estimate("verify 256x32 float32, gold", "verify", body, len, hlen, true);
    const struct input batch[] = { { "Q", 3, { 3, 128, 32 } }, { "K", 3, { 3, 128, 32 } },
                                   { "V", 3, { 3, 128, 32 } }, { "OUTPUT", 3, { 3, 128, 32 } } };
    body = binary_request(batch, 4, true, VERDICT_BINARY, "", &len, &hlen);
    check_estimate("verify batch 3x128x32 float32, gold", "verify", body, len, hlen, true);
    const struct input grads[] = { { "Q", 2, { 192, 32 } }, { "K", 2, { 192, 32 } },
                                   { "V", 2, { 192, 32 } }, { "GRAD_OUTPUT", 2, { 192, 32 } },
                                   { "OUTPUT", 2, { 192, 32 } }, { "GRAD_Q", 2, { 192, 32 } },
                                   { "GRAD_K", 2, { 192, 32 } }, { "GRAD_V", 2, { 192, 32 } } };
    body = binary_request(grads, 8, false, "", "", &len, &hlen);
    check_estimate("verify 192x32 float64 backward", "verify", body, len, hlen, true);
}
END_TEST

static Suite *v2_memory_suite(void)
{
    Suite *s = suite_create("v2_memory");
    TCase *est = tcase_create("Estimate");
    tcase_set_timeout(est, 60);
    tcase_add_test(est, test_attention_every_step_fp64);
    tcase_add_test(est, test_attention_small);
    tcase_add_test(est, test_attention_weights_fp32);
    tcase_add_test(est, test_attention_batch);
    tcase_add_test(est, test_attention_json_outputs);
    tcase_add_test(est, test_attention_backward);
    tcase_add_test(est, test_multihead);
    tcase_add_test(est, test_multihead_backward);
    tcase_add_test(est, test_attention_streamed);
    tcase_add_test(est, test_multihead_streamed);
    tcase_add_test(est, test_verify);
    suite_add_tcase(s, est);
    return s;
}

int main(void)
{
    api_global_init();
    SRunner *r = srunner_create(v2_memory_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
