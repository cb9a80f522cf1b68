/*
 * tests/unit/check_attention.c — POST /v1/attention over api_handle, without a network:
 * the contract's example byte for byte, the seeds, every option, and every way a
 * request can be wrong.
 *
 * Suites: Attention (seed 000 exactly, seed 002's vectors and text example, rounding,
 * masks, bias, huge scores, null as absent), Errors (a table of bad requests: status,
 * problem type, pointer, hint; the invalid JSON's position, overflow, cell limits).
 *
 * Not here: renderings (check_render.c), large requests on two threads
 * (check_two_threads.c), admission (check_admission.c).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tests/unit/api_fixture.h"

/* ---------------------------------------------------------------- Attention */

/* The contract's example response, byte for byte (DESIGN.md, POST /v1/attention), with
 * the tie its first row is ("Teaching what the notes teach"). */
START_TEST(test_seed000_exact_bytes)
{
    static const char want[] =
        "{\"d_k\":4,\"scale\":0.5,\"mask_semantics\":\"keep\","
        "\"shapes\":{\"q\":[2,4],\"k\":[2,4],\"v\":[2,2],\"mask\":null,\"bias\":null,"
        "\"weights\":[2,2],\"output\":[2,2]},"
        "\"steps\":["
        "{\"step\":1,\"name\":\"scores\",\"op\":\"Q @ K^T\",\"operands\":[[2,4],[4,2]],\"shape\":[2,2]},"
        "{\"step\":2,\"name\":\"scaled\",\"op\":\"scores * scale\",\"shape\":[2,2]},"
        "{\"step\":3,\"name\":\"masked\",\"op\":\"scaled + bias, -inf where mask is 0\",\"shape\":[2,2]},"
        "{\"step\":4,\"name\":\"weights\",\"op\":\"softmax(masked, axis=-1)\",\"shape\":[2,2]},"
        "{\"step\":5,\"name\":\"output\",\"op\":\"weights @ V\",\"operands\":[[2,2],[2,2]],\"shape\":[2,2]}],"
        "\"scores\":[[2,2],[0,2]],\"scaled\":[[1,1],[0,1]],\"masked\":[[1,1],[0,1]],"
        "\"weights\":[[0.5,0.5],[0.2689414213699951,0.7310585786300049]],"
        "\"output\":[[5,5],[2.6894142136999513,7.310585786300049]],"
        "\"summary\":{\"row_sums\":[1,1],\"argmax\":[0,1],\"max_weight\":[0.5,0.7310585786300049],"
        "\"entropy\":[0.6931471805599453,0.5822031088882179],\"fully_masked_rows\":[],"
        "\"tied_keys\":[[0,1],[1]]},"
        /* Row 0 scores 2 against both keys: the note's own example is a tie. */
        "\"warnings\":[{\"code\":\"tie\",\"row\":0,\"keys\":[0,1],\"message\":\"query 0 "
        "ties keys 0 and 1 for the largest weight: no key wins, and argmax names only the "
        "lowest index\"}]}\n";
    struct api_response res = call("POST", "/v1/attention", "{" SEED000 "}");
    ck_assert_int_eq(res.status, 200);
    ck_assert_str_eq(res.content_type, "application/json");
    ck_assert_uint_eq(res.body_len, strlen(want));
    ck_assert_str_eq(res.body, want);
    api_response_deinit(&res);
}
END_TEST

/* Seed 002's one query, unscaled: vectors in, vectors out, shapes without the leading 1. */
START_TEST(test_seed002_one_query_vector)
{
    struct api_response res = call("POST", "/v1/attention", "{" SEED002_ONE "}");
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    ck_assert_int_eq(json_array_size(json_object_get(doc, "scores")), 3);
    assert_close(num_at(doc, "scores/0"), 1.0, "scores[0]");
    assert_close(num_at(doc, "scores/1"), 0.0, "scores[1]");
    assert_close(num_at(doc, "scores/2"), 0.8, "scores[2]");
    double e0 = exp(1.0), e1 = exp(0.0), e2 = exp(0.8), z = e0 + e1 + e2;
    assert_close(num_at(doc, "weights/0"), e0 / z, "weights[0]");
    assert_close(num_at(doc, "output/0"), (10 * e0 + 8 * e2) / z, "output[0]");
    assert_close(num_at(doc, "output/1"), (20 * e1 + 4 * e2) / z, "output[1]");
    ck_assert_int_eq((int)num_at(doc, "shapes/q/0"), 2);
    ck_assert_int_eq(json_array_size(json_object_get(json_object_get(doc, "shapes"), "q")), 1);
    json_t *step1 = json_array_get(json_object_get(doc, "steps"), 0);
    char *ops = json_dumps(json_object_get(step1, "operands"), JSON_COMPACT);
    ck_assert_str_eq(ops, "[[2],[2,3]]");
    free(ops);
    char *shape = json_dumps(json_object_get(step1, "shape"), JSON_COMPACT);
    ck_assert_str_eq(shape, "[3]");
    free(shape);
    /* Summary values are scalars for a vector q. */
    ck_assert_int_eq((int)num_at(doc, "summary/argmax"), 0);
    assert_close(num_at(doc, "summary/row_sums"), 1.0, "row_sums");
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* Seed 002's text example: scores [1, 0] → weights ≈ [0.73, 0.27], output [7.3, 5.4]. */
START_TEST(test_seed002_text_example_rounded)
{
    struct api_response res = call("POST", "/v1/attention",
        "{\"q\":[1,0],\"k\":[[1,0],[0,1]],\"v\":[[10,0],[0,20]],\"scale\":1,\"round\":2,"
        "\"include\":[\"weights\",\"output\"]}");
    ck_assert_int_eq(res.status, 200);
    ck_assert_ptr_nonnull(strstr(res.body, "\"weights\":[0.73,0.27]"));
    ck_assert_ptr_nonnull(strstr(res.body, "\"output\":[7.31,5.38]"));
    ck_assert_ptr_null(strstr(res.body, "\"scores\":["));
    ck_assert_ptr_null(strstr(res.body, "\"summary\":{"));
    api_response_deinit(&res);
}
END_TEST

/* Seed 000 rounded as the seed prints it: weights to 2, then output to 1 decimal. */
START_TEST(test_seed000_round)
{
    struct api_response res = call("POST", "/v1/attention", "{" SEED000 ",\"round\":1}");
    ck_assert_int_eq(res.status, 200);
    ck_assert_ptr_nonnull(strstr(res.body, "\"output\":[[5,5],[2.7,7.3]]"));
    ck_assert_ptr_nonnull(strstr(res.body, "\"scale\":0.5"));
    api_response_deinit(&res);
    res = call("POST", "/v1/attention", "{" SEED000 ",\"round\":2}");
    ck_assert_ptr_nonnull(strstr(res.body, "\"weights\":[[0.5,0.5],[0.27,0.73]]"));
    api_response_deinit(&res);
}
END_TEST

/* Three queries: each row of the weights sums to 1 (the seed's pitfall: not the whole sum). */
START_TEST(test_seed002_three_queries)
{
    struct api_response res = call("POST", "/v1/attention",
        "{\"q\":[[1,0],[0,1],[0.5,0.5]],\"k\":[[1,0],[0,1],[0.8,0.2]],"
        "\"v\":[[10,0],[0,20],[8,4]],\"scale\":1,"
        "\"labels\":{\"queries\":[\"Q1\",\"Q2\",\"Q3\"],\"keys\":[\"사과\",\"사람\",\"과일\"]}}");
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    for (int i = 0; i < 3; i++) {
        char p[32];
        snprintf(p, sizeof p, "summary/row_sums/%d", i);
        assert_close(num_at(doc, p), 1.0, p);
    }
    ck_assert_int_eq((int)num_at(doc, "summary/argmax/0"), 0);
    ck_assert_int_eq((int)num_at(doc, "summary/argmax/1"), 1);
    ck_assert_ptr_nonnull(strstr(res.body, "\"keys\":[\"사과\",\"사람\",\"과일\"]"));
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_causal_mask_blocks_with_null)
{
    struct api_response res = call("POST", "/v1/attention",
        "{\"q\":[[1,0],[0,1]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":\"causal\"}");
    ck_assert_int_eq(res.status, 200);
    ck_assert_ptr_nonnull(strstr(res.body, "\"mask\":\"causal\""));
    ck_assert_ptr_nonnull(strstr(res.body, "\"weights\":[[1,0],"));
    json_t *doc = parse(&res);
    json_t *masked = json_object_get(doc, "masked");
    ck_assert(json_is_null(json_array_get(json_array_get(masked, 0), 1)));
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_fully_masked_row_warns)
{
    struct api_response res = call("POST", "/v1/attention",
        "{\"q\":[[1,0],[0,1]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],"
        "\"mask\":[[true,false],[false,false]]}");
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    json_t *warn = json_array_get(json_object_get(doc, "warnings"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(warn, "code")), "row_fully_masked");
    ck_assert_int_eq(json_integer_value(json_object_get(warn, "row")), 1);
    ck_assert_ptr_nonnull(strstr(res.body, "\"fully_masked_rows\":[1]"));
    ck_assert_ptr_nonnull(strstr(res.body, "\"argmax\":[0,null]"));
    ck_assert_ptr_nonnull(strstr(res.body, "\"output\":[[1],[0]]"));
    ck_assert_ptr_null(strstr(res.body, "NaN"));
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* Block semantics flip the cells (PyTorch's attn_mask=True means blocked) and are echoed. */
START_TEST(test_block_semantics_and_key_padding)
{
    struct api_response keep = call("POST", "/v1/attention",
        "{\"q\":[[1,0],[0,1]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":[1,0]}");
    struct api_response block = call("POST", "/v1/attention",
        "{\"q\":[[1,0],[0,1]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":[0,1],"
        "\"mask_semantics\":\"block\"}");
    ck_assert_int_eq(keep.status, 200);
    ck_assert_int_eq(block.status, 200);
    ck_assert_ptr_nonnull(strstr(keep.body, "\"output\":[[1],[1]]"));
    ck_assert_ptr_nonnull(strstr(block.body, "\"output\":[[1],[1]]"));
    ck_assert_ptr_nonnull(strstr(block.body, "\"mask_semantics\":\"block\""));
    ck_assert_ptr_nonnull(strstr(keep.body, "\"mask\":[2]"));
    api_response_deinit(&keep);
    api_response_deinit(&block);
}
END_TEST

START_TEST(test_bias_added_before_softmax)
{
    struct api_response res = call("POST", "/v1/attention",
        "{\"q\":[[0,0]],\"k\":[[1,0],[0,1]],\"v\":[[1],[0]],\"bias\":[[0.6931471805599453,0]],"
        "\"include\":[\"weights\"]}");
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    assert_close(num_at(doc, "weights/0/0"), 2.0 / 3.0, "weights with ln 2 bias");
    ck_assert_ptr_nonnull(strstr(res.body, "\"bias\":[1,2]"));
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* Softmax subtracts each row's max: scores of ±1e300 still give exact weights. */
START_TEST(test_huge_scores_softmax)
{
    struct api_response res = call("POST", "/v1/attention",
        "{\"q\":[[1e300]],\"k\":[[1],[-1]],\"v\":[[1],[2]],\"scale\":1,\"include\":[\"weights\"]}");
    ck_assert_int_eq(res.status, 200);
    ck_assert_ptr_nonnull(strstr(res.body, "\"weights\":[[1,0]]"));
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_null_means_absent)
{
    struct api_response res = call("POST", "/v1/attention",
        "{" SEED000 ",\"mask\":null,\"scale\":null,\"include\":null,\"labels\":null,\"round\":null}");
    ck_assert_int_eq(res.status, 200);
    ck_assert_ptr_nonnull(strstr(res.body, "\"scale\":0.5"));
    api_response_deinit(&res);
}
END_TEST

/* ------------------------------------------------------------------- Errors */

static const struct bad_case {
    const char *body;
    int status;
    const char *type;
    const char *pointer; /* NULL: no errors[] expected */
    const char *hint;    /* a substring the hint must contain, or NULL */
} bad_cases[] = {
    /* invalid-json */
    { "", 400, "invalid-json", "", NULL },
    { "   ", 400, "invalid-json", "", NULL },
    { "{\"q\": [[1,0]],", 400, "invalid-json", "", NULL },
    { "\xEF\xBB\xBF{\"q\":[[1]],\"k\":[[1]],\"v\":[[1]]}", 400, "invalid-json", "", "BOM" },
    { "{\"q\":[[1]],\"q\":[[2]],\"k\":[[1]],\"v\":[[1]]}", 400, "invalid-json", "", NULL },
    { "{'q': [[1]]}", 400, "invalid-json", "", NULL },
    /* not an object */
    { "[1,2]", 422, "invalid-value", "", NULL },
    { "\"q\"", 422, "invalid-value", "", NULL },
    { "42", 422, "invalid-value", "", NULL },
    /* missing-field */
    { "{\"k\":[[1]],\"v\":[[1]]}", 422, "missing-field", "/q", NULL },
    { "{\"q\":[[1]],\"v\":[[1]]}", 422, "missing-field", "/k", NULL },
    { "{\"q\":[[1]],\"k\":[[1]]}", 422, "missing-field", "/v", NULL },
    { "{\"q\":[[1]],\"k\":null,\"v\":[[1]]}", 422, "missing-field", "/k", NULL },
    /* unknown-field, with the nearest known one */
    { "{" SEED000 ",\"maks\":\"causal\"}", 422, "unknown-field", "/maks", "\"mask\"" },
    { "{\"q\":[[1]],\"keys\":[[1]],\"v\":[[1]]}", 422, "unknown-field", "/keys", "\"k\"" },
    { "{" SEED000 ",\"attn_mask\":[[1,1],[1,1]]}", 422, "unknown-field", "/attn_mask", "\"mask\"" },
    { "{" SEED000 ",\"scael\":1}", 422, "unknown-field", "/scael", "\"scale\"" },
    { "{" SEED000 ",\"labels\":{\"querys\":[\"a\",\"b\"]}}", 422, "unknown-field",
      "/labels/querys", "\"queries\"" },
    { "{" SEED000 ",\"a/b\":1}", 422, "unknown-field", "/a~1b", NULL },
    /* not-a-matrix */
    { "{\"q\":\"hello\",\"k\":[[1]],\"v\":[[1]]}", 422, "not-a-matrix", "/q", "not words" },
    { "{\"q\":[[1]],\"k\":[],\"v\":[[1]]}", 422, "not-a-matrix", "/k", NULL },
    { "{\"q\":[[1,0]],\"k\":[1,0],\"v\":[[1]]}", 422, "not-a-matrix", "/k", "[[...]]" },
    { "{\"q\":[[1,0,1,0]],\"k\":[[1,0,1,0],[1,1,1]],\"v\":[[1],[2]]}", 422, "not-a-matrix",
      "/k/1", "same length" },
    { "{\"q\":[[1]],\"k\":[[1],5],\"v\":[[1],[2]]}", 422, "not-a-matrix", "/k/1", NULL },
    { "{\"q\":[[1]],\"k\":[[1]],\"v\":[[]]}", 422, "not-a-matrix", "/v/0", NULL },
    { "{\"q\":[1,[0]],\"k\":[[1,0]],\"v\":[[1]]}", 422, "not-a-matrix", "/q/1", NULL },
    { "{\"q\":7,\"k\":[[1]],\"v\":[[1]]}", 422, "not-a-matrix", "/q", "[[7]]" },
    /* not-a-number */
    { "{\"q\":[[1,\"0.5\"]],\"k\":[[1,0]],\"v\":[[1]]}", 422, "not-a-number", "/q/0/1",
      "without quotes" },
    { "{\"q\":[[1,0]],\"k\":[[1,0],[\"cat\",0]],\"v\":[[1],[2]]}", 422, "not-a-number",
      "/k/1/0", "not words" },
    { "{\"q\":[[1,null]],\"k\":[[1,0]],\"v\":[[1]]}", 422, "not-a-number", "/q/0/1", "NaN" },
    { "{\"q\":[[1,0]],\"k\":[[1,0]],\"v\":[[true]]}", 422, "not-a-number", "/v/0/0", NULL },
    { "{" SEED000 ",\"bias\":[[0,\"x\"],[0,0]]}", 422, "not-a-number", "/bias/0/1", NULL },
    /* shape-mismatch, with the seeds' pitfalls */
    { "{\"q\":[[1,0,1,0],[0,1,0,1]],\"k\":[[1,1],[0,1],[1,1],[0,1]],\"v\":[[1],[2],[3],[4]]}",
      422, "shape-mismatch", "/k", "k looks transposed" },
    { "{\"q\":[[1,0,1,0]],\"k\":[[1,0,1]],\"v\":[[1]]}", 422, "shape-mismatch", "/k", NULL },
    { "{\"q\":[1,0],\"k\":[[1,0],[0,1],[0.8,0.2]],\"v\":[[10,0],[0,20]]}", 422, "shape-mismatch",
      "/v", "one row per key" },
    { "{\"q\":[[1,0]],\"k\":[[1,0],[0,1],[1,1]],\"v\":[[1,2,3]]}", 422, "shape-mismatch", "/v",
      "v looks transposed" },
    { "{\"q\":[[1,0],[0,1],[1,1]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],"
      "\"mask\":[[1,1,1],[1,1,1]]}", 422, "shape-mismatch", "/mask", "mask looks transposed" },
    { "{" SEED000 ",\"mask\":[1,1,1]}", 422, "shape-mismatch", "/mask", NULL },
    { "{" SEED000 ",\"bias\":[[0,0]]}", 422, "shape-mismatch", "/bias", NULL },
    { "{" SEED000 ",\"labels\":{\"queries\":[\"a\"]}}", 422, "shape-mismatch",
      "/labels/queries", NULL },
    /* invalid-value */
    { "{" SEED000 ",\"scale\":\"big\"}", 422, "invalid-value", "/scale", NULL },
    { "{" SEED000 ",\"scale\":0}", 422, "invalid-value", "/scale", NULL },
    { "{" SEED000 ",\"scale\":-1}", 422, "invalid-value", "/scale", NULL },
    { "{" SEED000 ",\"round\":1.5}", 422, "invalid-value", "/round", NULL },
    { "{" SEED000 ",\"round\":16}", 422, "invalid-value", "/round", NULL },
    { "{" SEED000 ",\"round\":\"2\"}", 422, "invalid-value", "/round", NULL },
    { "{" SEED000 ",\"mask\":[[1,2],[1,1]]}", 422, "invalid-value", "/mask/0/1", NULL },
    { "{" SEED000 ",\"mask\":[[1,\"yes\"],[1,1]]}", 422, "invalid-value", "/mask/0/1", NULL },
    { "{" SEED000 ",\"mask\":\"casual\"}", 422, "invalid-value", "/mask", "causal" },
    { "{" SEED000 ",\"mask_semantics\":\"blocked\"}", 422, "invalid-value", "/mask_semantics",
      "\"block\"" },
    { "{" SEED000 ",\"include\":[\"weights\",\"weight\"]}", 422, "invalid-value", "/include/1",
      "\"weights\"" },
    { "{" SEED000 ",\"include\":\"weights\"}", 422, "invalid-value", "/include", NULL },
    { "{" SEED000 ",\"labels\":[\"a\"]}", 422, "invalid-value", "/labels", NULL },
    { "{" SEED000 ",\"labels\":{\"keys\":[\"a\",2]}}", 422, "invalid-value", "/labels/keys/1",
      NULL },
    /* numeric-overflow, naming step and cell */
    { "{\"q\":[[1],[1e200]],\"k\":[[1],[1e200]],\"v\":[[1],[1]]}", 422, "numeric-overflow",
      "/q/1", NULL },
    { "{" SEED000 ",\"scale\":1e308}", 422, "numeric-overflow", "/scale", NULL },
    { "{\"q\":[[1]],\"k\":[[1],[1]],\"v\":[[1],[1]],\"scale\":1,\"bias\":[[1.7e308,0]],"
      "\"round\":0}", 200, NULL, NULL, NULL },
    { "{\"q\":[[1e308]],\"k\":[[1],[1]],\"v\":[[1],[1]],\"scale\":1,\"bias\":[[1.7e308,0]]}",
      422, "numeric-overflow", "/bias", NULL },
};

START_TEST(test_bad_request_table)
{
    const struct bad_case *c = &bad_cases[_i];
    struct api_response res = call("POST", "/v1/attention", c->body);
    ck_assert_msg(res.status == c->status, "case %d: status %d, want %d: %s", _i, res.status,
                  c->status, res.body);
    if (c->type == NULL) {
        api_response_deinit(&res);
        return;
    }
    ck_assert_str_eq(res.content_type, "application/problem+json");
    json_t *doc = parse(&res);
    char type[96];
    snprintf(type, sizeof type, "/problems/%s", c->type);
    ck_assert_msg(strcmp(json_string_value(json_object_get(doc, "type")), type) == 0,
                  "case %d: %s", _i, res.body);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "status")), c->status);
    ck_assert_ptr_nonnull(json_string_value(json_object_get(doc, "title")));
    ck_assert_ptr_nonnull(json_string_value(json_object_get(doc, "detail")));
    json_t *err = json_array_get(json_object_get(doc, "errors"), 0);
    ck_assert_msg(err != NULL, "case %d: no errors[]: %s", _i, res.body);
    ck_assert_msg(strcmp(json_string_value(json_object_get(err, "pointer")), c->pointer) == 0,
                  "case %d: pointer %s, want %s", _i,
                  json_string_value(json_object_get(err, "pointer")), c->pointer);
    if (c->hint != NULL) {
        const char *hint = json_string_value(json_object_get(err, "hint"));
        ck_assert_msg(hint != NULL && strstr(hint, c->hint) != NULL,
                      "case %d: hint \"%s\" lacks \"%s\"", _i, hint ? hint : "(none)", c->hint);
    }
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_invalid_json_position)
{
    struct api_response res = call("POST", "/v1/attention", "{\n  \"q\": [[1, 0]],\n  \"k\": [[1 0]]\n}");
    ck_assert_int_eq(res.status, 400);
    ck_assert_ptr_nonnull(strstr(res.body, "line 3, column"));
    ck_assert_ptr_nonnull(strstr(res.body, "(byte "));
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_overflow_names_step_and_cell)
{
    struct api_response res = call("POST", "/v1/attention",
        "{\"q\":[[1],[1e200]],\"k\":[[1],[1e200]],\"v\":[[1],[1]]}");
    ck_assert_int_eq(res.status, 422);
    ck_assert_ptr_nonnull(strstr(res.body, "\"step\":\"scores\",\"cell\":[1,1]"));
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_limit_exceeded_before_allocating)
{
    struct api_context ctx = test_context();
    ctx.limits.max_cells = 3;
    struct api_response res = call_full(&ctx, "POST", "/v1/attention", NULL, NULL,
        "{\"q\":[[1],[2]],\"k\":[[1],[2]],\"v\":[[1],[2]]}", NULL, 0);
    ck_assert_int_eq(res.status, 422);
    ck_assert_ptr_nonnull(strstr(res.body, "/problems/limit-exceeded"));
    ck_assert_ptr_nonnull(strstr(res.body, "4 cells"));
    ck_assert_ptr_nonnull(strstr(res.body, "at most 3"));
    api_response_deinit(&res);
    /* an input matrix itself over the limit is refused before it is copied */
    res = call_full(&ctx, "POST", "/v1/attention", NULL, NULL,
        "{\"q\":[[1,2,3,4]],\"k\":[[1]],\"v\":[[1]]}", NULL, 0);
    ck_assert_int_eq(res.status, 422);
    ck_assert_ptr_nonnull(strstr(res.body, "\"pointer\":\"/q\""));
    api_response_deinit(&res);
}
END_TEST

static Suite *attention_suite(void)
{
    Suite *s = suite_create("attention");

    TCase *attention = tcase_create("Attention");
    tcase_add_test(attention, test_seed000_exact_bytes);
    tcase_add_test(attention, test_seed002_one_query_vector);
    tcase_add_test(attention, test_seed002_text_example_rounded);
    tcase_add_test(attention, test_seed000_round);
    tcase_add_test(attention, test_seed002_three_queries);
    tcase_add_test(attention, test_causal_mask_blocks_with_null);
    tcase_add_test(attention, test_fully_masked_row_warns);
    tcase_add_test(attention, test_block_semantics_and_key_padding);
    tcase_add_test(attention, test_bias_added_before_softmax);
    tcase_add_test(attention, test_huge_scores_softmax);
    tcase_add_test(attention, test_null_means_absent);
    suite_add_tcase(s, attention);

    TCase *errors = tcase_create("Errors");
    tcase_add_loop_test(errors, test_bad_request_table, 0, sizeof bad_cases / sizeof bad_cases[0]);
    tcase_add_test(errors, test_invalid_json_position);
    tcase_add_test(errors, test_overflow_names_step_and_cell);
    tcase_add_test(errors, test_limit_exceeded_before_allocating);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return run_api_suite(attention_suite());
}
