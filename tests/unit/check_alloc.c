/*
 * tests/unit/check_alloc.c — every allocation of a request fails in turn, and each
 * request still ends in a 503 problem or in its normal answer: never a crash, a
 * leak, or a wrong 200.
 *
 * How: this binary is linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,
 * --wrap=free (see the Makefile), so every allocation that api/ and core/ make
 * goes through the counting functions below; so does jansson, which api_global_init
 * points at api/'s allocator (api_json_alloc_init). The production code is linked unchanged. OpenBLAS
 * keeps its own buffers and is not failed here.
 *
 * For each request of the table: a dry run counts its allocations N and records
 * the normal answer; then for i in 0..N-1, allocation i fails (once, and then
 * again with every later one failing too). After each run:
 *   - the status is the normal one, with the normal body byte for byte (some
 *     allocations are only hints, such as the writer's presize), or 503 with a
 *     problem+json body (or no body when not even the problem fit); a batch may
 *     instead answer 200 with the item that ran out of memory as a 503 item;
 *   - as many blocks are live as before the call: nothing leaked.
 * A block the test frees itself (the response body) is counted when it is made, not
 * when the test frees it, hence "before + 1" for an answer with a body.
 * Run it under ASan + LSan (`make alloc`) or valgrind (`make valgrind`), which
 * also catch a use of a failed block or a double free.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/api.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

/*
 * Counting and failing happen only while armed, during the api calls: Check itself
 * is linked statically on Debian, so its own mallocs come through here too.
 */
static bool armed;
static long alloc_seen;    /* allocations asked for since the last reset */
static long fail_at = -1;  /* the index of the allocation to fail, or -1 for none */
static bool fail_after;    /* fail every allocation after fail_at as well */
static long failed;        /* allocations failed since the last reset */
static long live;          /* blocks handed out and not yet freed */
static long runs_total;    /* requests run with a failing allocation, for the summary */

static bool fail_this(void)
{
    if (!armed)
        return false;
    long i = alloc_seen++;
    if (fail_at < 0 || i < fail_at || (i > fail_at && !fail_after))
        return false;
    failed++;
    return true;
}

void *__wrap_malloc(size_t n)
{
    if (fail_this())
        return NULL;
    void *p = __real_malloc(n);
    live += armed && p != NULL;
    return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
    if (fail_this())
        return NULL;
    void *p = __real_calloc(n, size);
    live += armed && p != NULL;
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    if (fail_this())
        return NULL; /* p stays valid, as realloc promises */
    void *q = __real_realloc(p, n);
    live += armed && p == NULL && q != NULL;
    return q;
}

void __wrap_free(void *p)
{
    live -= armed && p != NULL;
    __real_free(p);
}

#define SEED000 "\"q\":[[1,0,1,0],[0,1,0,1]],\"k\":[[1,0,1,0],[1,1,1,1]],\"v\":[[10,0],[0,10]]"

static const struct alloc_case {
    const char *method, *path, *accept, *body;
    const char *format; /* ?format=..., or NULL */
} cases[] = {
    { "POST", "/v1/attention", NULL, "{" SEED000 "}", NULL },
    { "POST", "/v1/attention", NULL,
      "{\"q\":[[1,0],[0,1],[1,1]],\"k\":[[1,0],[0,1],[1,1]],\"v\":[[1],[2],[3]],"
      "\"mask\":[[1,0,0],[1,1,0],[0,0,0]],\"mask_semantics\":\"keep\","
      "\"bias\":[[0,0.5,0],[0,0,1],[1,1,1]],\"scale\":0.5,\"round\":3,"
      "\"labels\":{\"queries\":[\"a\",\"b\",\"c\"],\"keys\":[\"x\",\"y\",\"z\"]}}", NULL },
    { "POST", "/v1/attention", NULL,
      "{\"q\":[1,0],\"k\":[[1,0],[0,1],[0.8,0.2]],\"v\":[[10,0],[0,20],[8,4]],\"mask\":\"causal\","
      "\"include\":[\"weights\",\"summary\"]}", NULL },
    { "POST", "/v1/attention", "text/plain", "{" SEED000 ",\"labels\":{\"keys\":[\"사과\",\"k\"]}}",
      NULL },
    { "POST", "/v1/attention", NULL, "{" SEED000 ",\"mask\":[[1,1],[0,0]]}", "svg" },
    { "POST", "/v1/attention", NULL,
      "{" SEED000 ",\"labels\":{\"queries\":[\"a\",\"b\"],\"keys\":[\"x\",\"y\"]}}", "bertviz" },
    { "POST", "/v1/multihead", NULL,
      "{\"heads\":2,\"kv_heads\":1,\"random\":{\"seed\":2,\"n\":2,\"d_model\":4}}", "bertviz" },
    { "POST", "/v1/multihead", NULL,
      "{\"heads\":2,\"random\":{\"seed\":1,\"n\":3,\"d_model\":4},"
      "\"labels\":{\"queries\":[\"a\",\"b\",\"c\"],\"keys\":[\"x\",\"y\",\"a long key label\"]}}", "svg" },
    /* rows: the whole problem, then its rows; as text with the rows' labels and explain */
    { "POST", "/v1/attention", NULL,
      "{\"q\":[[1,0],[0,1],[1,1]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":\"causal\","
      "\"rows\":[2,0,2],\"window\":{\"left\":1,\"right\":0},\"sink_logit\":0.5}", NULL },
    { "POST", "/v1/attention", "text/plain",
      "{\"q\":[[1,0],[0,1],[1,1]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"rows\":[2,1],"
      "\"explain\":{\"row\":1},\"labels\":{\"queries\":[\"a\",\"b\",\"c\"]}}", NULL },
    /* over the default --max-cells (2100 x 2100), output and lse only: streamed, two rows */
    { "POST", "/v1/attention", NULL,
      "{\"random\":{\"seed\":1,\"n_q\":2100,\"n_k\":2100,\"d_k\":2,\"d_v\":1},"
      "\"rows\":[2099,0],\"include\":[\"output\",\"lse\"]}", NULL },
    /* /v1/multihead: rows with variants, as text with labels; over --max-cells, streamed */
    { "POST", "/v1/multihead", NULL,
      "{\"heads\":2,\"kv_heads\":1,\"random\":{\"seed\":2,\"n\":3,\"d_model\":4},"
      "\"mask\":\"causal\",\"rows\":[2,0,2],\"rope\":{},\"sink_logit\":0.5,"
      "\"include\":[\"weights\",\"summary\",\"q_rope\",\"output\"]}", NULL },
    { "POST", "/v1/multihead", "text/plain",
      "{\"heads\":2,\"random\":{\"seed\":1,\"n\":3,\"d_model\":4},\"rows\":[1],"
      "\"labels\":{\"queries\":[\"a\",\"b\",\"c\"]}}", NULL },
    { "POST", "/v1/multihead", NULL,
      "{\"heads\":2,\"random\":{\"seed\":1,\"n\":1500,\"d_model\":4},\"rows\":[1499,0],"
      "\"window\":{\"left\":3},\"include\":[\"output\",\"lse\"]}", NULL },
    /* precision: the low format and float64 side by side, the report, an overflow warned */
    { "POST", "/v1/attention", NULL,
      "{" SEED000 ",\"bias\":[[0,-1e9],[0,0]],\"precision\":{\"format\":\"float16\"},"
      "\"rows\":[1,0],\"alibi\":0.5,\"window\":{\"left\":1}}", NULL },
    { "POST", "/v1/attention", NULL, "{" SEED000 ",\"precision\":{\"format\":\"fp16\"}}", NULL },
    { "POST", "/v1/attention", "text/plain",
      "{" SEED000 ",\"pitfall\":\"no_transpose\",\"precision\":{\"format\":\"bfloat16\"}}",
      NULL },
    { "POST", "/v1/attention", NULL,
      "{" SEED000 ",\"rope\":{},\"softcap\":20,\"sink_logit\":0.5,\"dropout\":{\"p\":0.25,"
      "\"seed\":3},\"precision\":{\"format\":\"float16\",\"accumulate\":\"same\"},"
      "\"explain\":{\"row\":1}}", NULL },
    /* precision with backward: the low gradients, float64's beside them for the report */
    { "POST", "/v1/attention", NULL,
      "{" SEED000 ",\"rope\":{},\"softcap\":20,\"sink_logit\":0.5,\"bias\":[[0,1],[1,0]],"
      "\"precision\":{\"format\":\"float16\"},\"backward\":{\"seed\":1}}", NULL },
    { "POST", "/v1/attention", "text/plain",
      "{" SEED000 ",\"dropout\":{\"p\":0.25,\"seed\":3},\"precision\":{\"format\":\"float16\"},"
      "\"backward\":{\"grad_output\":[[70000,1],[0,1]]}}", NULL },
    { "POST", "/v1/multihead", "text/plain",
      "{\"heads\":2,\"kv_heads\":1,\"random\":{\"seed\":2,\"n\":3,\"d_model\":4},"
      "\"b_q\":[0,1,2,3],\"rows\":[2,0],\"precision\":{\"format\":\"bfloat16\"},"
      "\"rope\":{},\"sink_logit\":0.5,\"dropout\":{\"p\":0.25,\"seed\":1}}", NULL },
    /* multi-head's low backward, float64's beside it for the report; as text, cross */
    { "POST", "/v1/multihead", NULL,
      "{\"heads\":2,\"kv_heads\":1,\"random\":{\"seed\":2,\"n\":3,\"d_model\":4},"
      "\"b_q\":[0,1,2,3],\"bias\":[[0,1,0],[1,0,1],[0,0,1]],\"rope\":{},\"sink_logit\":0.5,"
      "\"precision\":{\"format\":\"float16\"},\"backward\":{\"seed\":1}}", NULL },
    { "POST", "/v1/multihead", "text/plain",
      "{\"heads\":2,\"random\":{\"seed\":2,\"n\":2,\"n_kv\":3,\"d_model\":4},"
      "\"dropout\":{\"p\":0.25,\"seed\":1},\"precision\":{\"format\":\"bfloat16\"},"
      "\"backward\":{\"grad_output\":[[70000,1,0,0],[0,1,0,0]]}}", NULL },
    /* the masks of training: visible and the block map, documents streamed, every head */
    { "POST", "/v1/attention", NULL,
      "{\"q\":[[1,0],[0,1],[1,1]],\"k\":[[1,0],[0,1],[1,1]],\"v\":[[1],[2],[3]],"
      "\"mask\":\"causal_top_left\",\"documents\":{\"lengths_q\":[1,2],\"lengths_k\":[2,1]},"
      "\"prefix\":1,\"chunk\":2,\"block\":[2,1],\"include\":[\"weights\",\"visible\",\"block_map\"]}",
      NULL },
    { "POST", "/v1/attention", NULL,
      "{\"random\":{\"seed\":1,\"n_q\":6,\"n_k\":6,\"d_k\":2,\"d_v\":2},\"mask\":\"causal\","
      "\"documents\":{\"lengths\":[2,4]},\"rows\":[5,0],\"include\":[\"output\",\"lse\",\"block_map\"]}",
      NULL },
    { "POST", "/v1/multihead", NULL,
      "{\"heads\":2,\"random\":{\"seed\":1,\"n\":4,\"d_model\":4},\"documents\":{\"lengths\":[1,3]},"
      "\"include\":[\"weights\",\"visible\",\"block_map\"]}", NULL },
    /* decode: the tokens after the prefill one at a time, JSON and text, with GQA and RoPE */
    { "POST", "/v1/multihead", NULL,
      "{\"heads\":2,\"kv_heads\":1,\"random\":{\"seed\":1,\"n\":4,\"d_model\":4},"
      "\"mask\":\"causal\",\"rope\":{},\"alibi\":\"auto\",\"decode\":{\"prefill\":2}}", NULL },
    { "POST", "/v1/multihead", "text/plain",
      "{\"heads\":2,\"random\":{\"seed\":1,\"n\":3,\"d_model\":4},\"mask\":\"causal\","
      "\"window\":{\"left\":1},\"decode\":{\"prefill\":1}}", NULL },
    { "POST", "/v1/attention", NULL, "{" SEED000 ",\"documents\":{\"lengths\":[1,0]}}", NULL },
    /* the backward pass: dO from the seed, every gradient step, and as text */
    { "POST", "/v1/attention", NULL,
      "{" SEED000 ",\"rope\":{},\"softcap\":5,\"sink_logit\":0.5,\"bias\":[[0,1],[1,0]],"
      "\"backward\":{\"seed\":1}}", NULL },
    { "POST", "/v1/attention", "text/plain",
      "{" SEED000 ",\"backward\":{\"grad_output\":[[1,0],[0,1]]}}", NULL },
    { "POST", "/v1/multihead", NULL,
      "{\"heads\":2,\"kv_heads\":1,\"random\":{\"seed\":3,\"n\":3,\"d_model\":4},"
      "\"b_q\":[0,1,2,3],\"mask\":\"causal\",\"backward\":{\"seed\":1}}", NULL },
    { "POST", "/v1/attention", NULL, /* streamed: documents, and only what needs no (n, n) */
      "{\"random\":{\"seed\":1,\"n_q\":6,\"n_k\":6,\"d_k\":2,\"d_v\":2},\"mask\":\"causal\","
      "\"documents\":{\"lengths\":[2,4]},\"rope\":{},\"backward\":{\"seed\":1},"
      "\"include\":[\"output\",\"grad_q\",\"grad_k\",\"grad_v\"]}", NULL },
    /* V2: JSON tensors in and out, a backward, the block map */
    { "POST", "/v2/models/attention/infer", NULL,
      "{\"inputs\":[{\"name\":\"Q\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,0,1]},"
      "{\"name\":\"K\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,1,1]},"
      "{\"name\":\"V\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,2,3,4]},"
      "{\"name\":\"GRAD_OUTPUT\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,0,1]}],"
      "\"outputs\":[{\"name\":\"OUTPUT\"},{\"name\":\"GRAD_Q\"},{\"name\":\"BLOCK_MAP\"}]}", NULL },
    { "POST", "/v2/models/multihead/infer", NULL,
      "{\"parameters\":{\"heads\":2,\"kv_heads\":1},\"inputs\":["
      "{\"name\":\"X\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,0,1]},"
      "{\"name\":\"W_Q\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,0,1]},"
      "{\"name\":\"W_K\",\"shape\":[2,1],\"datatype\":\"FP64\",\"data\":[1,2]},"
      "{\"name\":\"W_V\",\"shape\":[2,1],\"datatype\":\"FP64\",\"data\":[1,0]},"
      "{\"name\":\"W_O\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,0,1]},"
      "{\"name\":\"B_O\",\"shape\":[2],\"datatype\":\"FP64\",\"data\":[1,0]},"
      "{\"name\":\"GRAD_OUTPUT\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,0,1]}],"
      "\"outputs\":[{\"name\":\"GRAD_X\"},{\"name\":\"GRAD_MASKED\"},{\"name\":\"GRAD_B_O\"}]}",
      NULL },
    /* V2 verify: a batch of 2 in float16 with LSE, its NaN and gold, JSON and binary out */
    { "POST", "/v2/models/verify/infer", NULL,
      "{\"inputs\":[{\"name\":\"Q\",\"shape\":[2,2,2],\"datatype\":\"FP64\",\"data\":[1,0,0,1,1,1,0,1]},"
      "{\"name\":\"K\",\"shape\":[2,2,2],\"datatype\":\"FP64\",\"data\":[1,0,1,1,0,1,1,0]},"
      "{\"name\":\"V\",\"shape\":[2,2,2],\"datatype\":\"FP64\",\"data\":[1,2,3,4,5,6,7,8]},"
      "{\"name\":\"OUTPUT\",\"shape\":[2,2,2],\"datatype\":\"FP16\",\"data\":[1,2,3,\"NaN\",5,6,7,8]},"
      "{\"name\":\"LSE\",\"shape\":[2,2],\"datatype\":\"FP32\",\"data\":[1,null,2,3]}],"
      "\"parameters\":{\"causal\":true},"
      "\"outputs\":[{\"name\":\"VERDICT\"},{\"name\":\"REPORT\",\"parameters\":{\"binary_data\":true}},"
      "{\"name\":\"GOLD_LSE\"}]}", NULL },
    { "POST", "/v2/models/verify/infer", NULL,
      "{\"inputs\":[{\"name\":\"Q\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,0,1]},"
      "{\"name\":\"K\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,1,1]},"
      "{\"name\":\"V\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,2,3,4]},"
      "{\"name\":\"GRAD_OUTPUT\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,0,1]},"
      "{\"name\":\"OUTPUT\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,2,3,4]},"
      "{\"name\":\"GRAD_V\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,2,3,4]}],"
      "\"parameters\":{\"softcap\":5,\"rule\":\"flex\"},"
      "\"outputs\":[{\"name\":\"VERDICT\"},{\"name\":\"GOLD_GRAD_V\"}]}", NULL },
    { "POST", "/v2/models/multihead/infer", NULL, /* the low format's backward, no report */
      "{\"parameters\":{\"heads\":2,\"kv_heads\":1,\"precision\":\"bfloat16\"},\"inputs\":["
      "{\"name\":\"X\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,0,1]},"
      "{\"name\":\"W_Q\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,0,1]},"
      "{\"name\":\"W_K\",\"shape\":[2,1],\"datatype\":\"FP64\",\"data\":[1,2]},"
      "{\"name\":\"W_V\",\"shape\":[2,1],\"datatype\":\"FP64\",\"data\":[1,0]},"
      "{\"name\":\"W_O\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,0,1]},"
      "{\"name\":\"GRAD_OUTPUT\",\"shape\":[2,2],\"datatype\":\"FP64\",\"data\":[1,0,0,1]}],"
      "\"outputs\":[{\"name\":\"GRAD_X\"},{\"name\":\"GRAD_W_K\"}]}", NULL },
    /* verify: gold and naive, the rules, the warnings, gold written back, and as text */
    { "POST", "/v1/verify", NULL,
      "{" SEED000 ",\"format\":\"float16\",\"rule\":{\"atol\":9},\"include\":[\"gold\"],"
      "\"candidate\":{\"output\":[[0.1,0],[0,\"NaN\"]],\"lse\":[1,null]}}", NULL },
    { "POST", "/v1/verify", "text/plain",
      "{" SEED000 ",\"format\":\"bfloat16\",\"rule\":\"flex\",\"mask\":\"causal\","
      "\"candidate\":{\"output\":[[1,2],[3,4]]}}", NULL },
    { "POST", "/v1/verify", NULL,
      "{" SEED000 ",\"format\":\"float64\",\"backward\":{\"seed\":2},"
      "\"candidate\":{\"output\":[[1,2],[3,4]],\"grad_q\":[[1,2],[3,4]],"
      "\"grad_k\":[[1,2],[3,4]],\"grad_v\":[[1,2],[3,4]]}}", NULL },
    { "POST", "/v1/verify", NULL,
      "{" SEED000 ",\"format\":\"float16\",\"candidate\":{\"output\":[[1,2]]}}", NULL },
    /* V2's metadata, and for operators the statistics, a configuration, the repository index */
    { "GET", "/v2/models/attention", NULL, NULL, NULL },
    { "GET", "/v2/models/stats", NULL, NULL, NULL },
    { "GET", "/v2/models/multihead/config", NULL, NULL, NULL },
    { "POST", "/v2/repository/index", NULL, "{\"ready\":true}", NULL },
    { "POST", "/v2/repository/index", NULL, "{\"ready\":1}", NULL },
    { "POST", "/v1/attention", NULL, "{" SEED000 ",\"maks\":\"causal\"}", NULL },
    { "POST", "/v1/attention", NULL, "{\"q\":[[1,\"0\"]],\"k\":[[1,0]],\"v\":[[1]]}", NULL },
    { "POST", "/v1/attention", NULL,
      "{\"q\":[[1,0,1,0]],\"k\":[[1,1],[0,1],[1,1],[0,1]],\"v\":[[1],[2]]}", NULL },
    { "POST", "/v1/attention", NULL, "{\"q\": [[1, 0]],\n \"k\": [[1 0]]}", NULL },
    { "POST", "/v1/attention", NULL, "{\"q\":[[1],[1e200]],\"k\":[[1],[1e200]],\"v\":[[1],[1]]}",
      NULL },
    { "POST", "/v1/multihead", NULL,
      "{\"heads\":2,\"random\":{\"seed\":1,\"n\":3,\"d_model\":4}}", NULL },
    { "POST", "/v1/multihead", "text/plain",
      "{\"heads\":2,\"kv_heads\":1,\"random\":{\"seed\":2,\"n\":2,\"d_model\":4}}", NULL },
    { "POST", "/v1/attention/batch", NULL,
      "{\"items\":[{" SEED000 "},{\"q\":[[1]],\"k\":[[1,2]],\"v\":[[1]]}]}", NULL },
    { "GET", "/v1/shapes?n=10&d_model=512&heads=8", NULL, NULL, NULL },
    { "GET", "/version", NULL, NULL, NULL },
    { "GET", "/openapi.json", NULL, NULL, NULL },
    { "GET", "/problems/shape-mismatch", NULL, NULL, NULL },
    { "GET", "/nowhere", NULL, NULL, NULL },
    { "DELETE", "/v1/attention", NULL, NULL, NULL },
    { "GET", "/metrics", NULL, NULL, NULL },
};

/* One call of the server's sequence: precheck, then (when it wants the body) handle. */
static void run(const struct alloc_case *c, struct api_response *res)
{
    struct api_context ctx = {
        .limits = api_default_limits(), .ready = true, .http_library = "0.9.75"};
    char path[128];
    struct api_param params[4];
    size_t n_params = 0;
    snprintf(path, sizeof path, "%s", c->path);
    char *query = strchr(path, '?');
    if (query != NULL) {
        *query++ = '\0';
        for (char *tok = strtok(query, "&"); tok != NULL && n_params < 4; tok = strtok(NULL, "&")) {
            char *eq = strchr(tok, '=');
            *eq = '\0';
            params[n_params++] = (struct api_param){ tok, eq + 1 };
        }
    }
    if (c->format != NULL)
        params[n_params++] = (struct api_param){ "format", c->format };
    struct api_request req = { c->method, path, params, n_params, c->accept, "application/json",
                               c->body, c->body != NULL ? strlen(c->body) : 0, NULL, NULL };
    memset(res, 0, sizeof *res);
    armed = true;
    if (!api_precheck(&ctx, &req, (long long)req.body_len, res)) {
        api_response_deinit(res);
        api_handle(&ctx, &req, res);
    }
    armed = false;
}

START_TEST(test_every_allocation_fails_in_turn)
{
    const struct alloc_case *c = &cases[_i];
    struct api_response want;
    fail_at = -1; /* a failed assertion of the previous case may have left it set */
    fail_after = false;
    run(c, &want); /* warm up once-built caches, so the counts below are per request */
    api_response_deinit(&want);

    long live_before = live;
    alloc_seen = failed = 0;
    run(c, &want);
    long n = alloc_seen;
    ck_assert_msg(live == live_before + (want.body != NULL), "%s %s: the dry run leaks",
                  c->method, c->path);
    ck_assert_msg(n > 0, "%s %s made no allocation", c->method, c->path);

    int saw_503 = 0;
    for (int mode = 0; mode < 2; mode++) {
        for (long i = 0; i < n; i++) {
            struct api_response res;
            long before = live;
            alloc_seen = failed = 0;
            fail_at = i;
            fail_after = mode == 1;
            run(c, &res);
            runs_total++;
            fail_at = -1;
            ck_assert_msg(failed > 0, "%s %s: allocation %ld never came", c->method, c->path, i);
            if (res.status == 503 && want.status != 503) {
                saw_503++;
                /* V2 answers its errors as the protocol does: {"error": "..."} as JSON */
                bool v2 = strncmp(c->path, "/v2/", 4) == 0;
                const char *want_type = v2 ? "application/json" : "application/problem+json";
                ck_assert_msg(res.content_type != NULL && strcmp(res.content_type, want_type) == 0,
                              "%s %s, allocation %ld failed: 503 as %s", c->method, c->path, i,
                              res.content_type ? res.content_type : "(no type)");
                if (res.body != NULL)
                    ck_assert_ptr_nonnull(strstr(res.body, v2 ? "\"error\"" : "/problems/unavailable"));
            } else {
                ck_assert_msg(res.status == want.status, "%s %s, allocation %ld failed%s: "
                              "status %d, want %d or 503: %.300s", c->method, c->path, i,
                              fail_after ? " (and all after)" : "", res.status, want.status,
                              res.body ? res.body : "");
                /* A batch reports an item's 503 inside its 200: the only other body allowed. */
                ck_assert_msg((res.body_len == want.body_len &&
                               memcmp(res.body, want.body, want.body_len) == 0) ||
                              (strncmp(c->path, "/v1/attention/batch", 19) == 0 &&
                               strstr(res.body, "\"status\":503") != NULL),
                              "%s %s, allocation %ld failed: status %d but another body: %.300s",
                              c->method, c->path, i, res.status, res.body ? res.body : "");
            }
            ck_assert_msg(live == before + (res.body != NULL), "%s %s, allocation %ld failed%s: "
                          "%ld block(s) leaked", c->method, c->path, i,
                          fail_after ? " (and all after)" : "", live - before - (res.body != NULL));
            api_response_deinit(&res);
        }
    }
    /* Every request that allocates must be able to report running out. */
    ck_assert_msg(saw_503 > 0 || want.status == 503, "%s %s: no failure ever gave a 503",
                  c->method, c->path);
    api_response_deinit(&want);
}
END_TEST

int main(void)
{
    api_global_init(); /* jansson allocates through api/ (api_json_alloc_init), so through us */
    Suite *s = suite_create("alloc");
    TCase *tc = tcase_create("Failures");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_every_allocation_fails_in_turn, 0,
                        (int)(sizeof cases / sizeof cases[0]));
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failures = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (runs_total > 0) /* counted only without fork (CK_FORK=no) */
        printf("alloc: %ld requests of %zu kinds ran with failing allocations\n", runs_total,
               sizeof cases / sizeof cases[0]);
    return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
