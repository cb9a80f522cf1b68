/*
 * tests/unit/check_errors.c — how attnd tells a learner what is wrong, over api_handle:
 * every unknown field at once, unknown query parameters, a "did you mean" only when
 * the name is close, numbers beyond a double, an additive mask pointed to bias, and
 * answers that end with a newline.
 *
 * Suites: Fields (unknown members and close names), Query (unknown parameters on
 * every route), Hints (1e400, the additive mask), Lines (the final newline).
 *
 * Not here: the problem table's own rows (check_attention.c's Errors), languages
 * (check_lang.c).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/http/problem.h"
#include "api/request/fields.h"
#include "tests/unit/api_fixture.h"

/* errors[i]'s member `name` as a string ("" when absent). */
static const char *error_str(json_t *doc, size_t i, const char *name)
{
    const char *s = json_string_value(json_object_get(
        json_array_get(json_object_get(doc, "errors"), i), name));
    return s != NULL ? s : "";
}

static const char *member_str(json_t *doc, const char *name)
{
    const char *s = json_string_value(json_object_get(doc, name));
    return s != NULL ? s : "";
}

/* ---------------------------------------------------------------- Fields */

/* The case: {"Q", "K", "V"} was three tries, one field a try. */
START_TEST(test_every_unknown_field_at_once)
{
    struct api_response res = call("POST", "/v1/attention", "{\"Q\":[[1]],\"K\":[[1]],\"V\":[[1]]}");
    ck_assert_int_eq(res.status, 422);
    json_t *doc = parse(&res);
    ck_assert_str_eq(member_str(doc, "type"), "/problems/unknown-field");
    ck_assert_uint_eq(json_array_size(json_object_get(doc, "errors")), 3);
    static const char *const pointers[] = { "/Q", "/K", "/V" };
    static const char *const meant[] = { "\"q\"", "\"k\"", "\"v\"" };
    for (size_t i = 0; i < 3; i++) {
        ck_assert_str_eq(error_str(doc, i, "pointer"), pointers[i]);
        ck_assert_msg(strstr(error_str(doc, i, "hint"), meant[i]) != NULL, "errors[%zu]: %s", i,
                      error_str(doc, i, "hint"));
    }
    ck_assert_ptr_nonnull(strstr(member_str(doc, "detail"), "\"Q\", \"K\", \"V\""));
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* More than fit: the first 1 + API_ERROR_MORE are listed, in the body's order. */
START_TEST(test_many_unknown_fields_capped)
{
    char body[512] = "{" SEED000;
    for (int i = 0; i < 12; i++)
        snprintf(body + strlen(body), sizeof body - strlen(body), ",\"x%d\":1", i);
    strcat(body, "}");
    struct api_response res = call("POST", "/v1/attention", body);
    ck_assert_int_eq(res.status, 422);
    json_t *doc = parse(&res);
    ck_assert_uint_eq(json_array_size(json_object_get(doc, "errors")), 1 + API_ERROR_MORE);
    ck_assert_str_eq(error_str(doc, 0, "pointer"), "/x0");
    ck_assert_str_eq(error_str(doc, API_ERROR_MORE, "pointer"), "/x7");
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* In a batch, every culprit's pointer is absolute. */
START_TEST(test_batch_item_unknown_fields)
{
    struct api_response res = call("POST", "/v1/attention/batch",
                                   "{\"items\":[{" SEED000 "},{\"Q\":[[1]],\"k\":[[1]],\"v\":[[1]],"
                                   "\"scael\":1}]}");
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    json_t *body = json_object_get(json_array_get(json_object_get(doc, "results"), 1), "body");
    ck_assert_uint_eq(json_array_size(json_object_get(body, "errors")), 2);
    ck_assert_str_eq(error_str(body, 0, "pointer"), "/items/1/Q");
    ck_assert_str_eq(error_str(body, 1, "pointer"), "/items/1/scael");
    ck_assert_ptr_nonnull(strstr(error_str(body, 1, "hint"), "\"scale\""));
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* A far name gets the list, not a wrong guess (epsilon is not alibi, dtype not scale). */
START_TEST(test_far_name_lists_the_fields)
{
    static const char *const bodies[] = { "{" SEED000 ",\"epsilon\":0.1}",
                                          "{" SEED000 ",\"dtype\":\"float32\"}" };
    for (size_t i = 0; i < 2; i++) {
        struct api_response res = call("POST", "/v1/attention", bodies[i]);
        ck_assert_int_eq(res.status, 422);
        json_t *doc = parse(&res);
        const char *hint = error_str(doc, 0, "hint");
        ck_assert_msg(strstr(hint, "did you mean") == NULL, "%s", hint);
        ck_assert_msg(strstr(hint, "q, k, v, mask, mask_semantics, bias, scale") != NULL, "%s",
                      hint);
        json_decref(doc);
        api_response_deinit(&res);
    }
}
END_TEST

/* The contract's rule: close means an edit distance of at most max(1, length / 3). */
static const struct { const char *word, *want; } close_cases[] = {
    { "fromat", "format" },  /* a swap is one edit */
    { "maks", "mask" },
    { "scael", "scale" },
    { "rounds", "round" },
    { "Mask", "mask" },      /* case is not an edit */
    { "bais", "bias" },
    { "lables", "labels" },
    { "dropout", NULL },     /* nearest is far: no guess */
    { "dtype", NULL },
    { "zz", NULL },          /* length 2 allows 1: q, k and v are 2 away */
    { "mk", "k" },           /* ... and "mk" is k with one letter more */
    { "includ", "include" },
    { "xyz", NULL },
};

START_TEST(test_close_name_table)
{
    static const char *const names[] = { "q", "k", "v", "mask", "mask_semantics", "bias",
                                         "scale", "include", "labels", "round", "format" };
    const char *got = api_close_name(close_cases[_i].word, names, sizeof names / sizeof names[0]);
    if (close_cases[_i].want == NULL)
        ck_assert_msg(got == NULL, "%s: got %s", close_cases[_i].word, got);
    else
        ck_assert_msg(got != NULL && strcmp(got, close_cases[_i].want) == 0, "%s: got %s",
                      close_cases[_i].word, got ? got : "(none)");
}
END_TEST

/* The V2 models' input and output names: a guess only when close, as for fields. */
START_TEST(test_v2_names_close_or_listed)
{
    static const struct { const char *body, *pointer, *hint; } cases[] = {
        { "{\"inputs\":[{\"name\":\"q\",\"shape\":[1,1],\"datatype\":\"FP64\",\"data\":[1]}]}",
          "/inputs/0/name", "did you mean Q?" },
        { "{\"inputs\":[{\"name\":\"QUERY\",\"shape\":[1,1],\"datatype\":\"FP64\",\"data\":[1]}]}",
          "/inputs/0/name", "no input is close" },
        { "{\"inputs\":[{\"name\":\"Q\",\"shape\":[1,1],\"datatype\":\"FP64\",\"data\":[1]},"
          "{\"name\":\"K\",\"shape\":[1,1],\"datatype\":\"FP64\",\"data\":[1]},"
          "{\"name\":\"V\",\"shape\":[1,1],\"datatype\":\"FP64\",\"data\":[1]}],"
          "\"outputs\":[{\"name\":\"WEIGHT\"}]}", "/outputs/0/name", "did you mean WEIGHTS?" },
        { "{\"inputs\":[{\"name\":\"Q\",\"shape\":[1,1],\"datatype\":\"FP64\",\"data\":[1]},"
          "{\"name\":\"K\",\"shape\":[1,1],\"datatype\":\"FP64\",\"data\":[1]},"
          "{\"name\":\"V\",\"shape\":[1,1],\"datatype\":\"FP64\",\"data\":[1]}],"
          "\"outputs\":[{\"name\":\"ATTN\"}]}", "/outputs/0/name", "no output is close" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct api_response res = call("POST", "/v2/models/attention/infer", cases[i].body);
        ck_assert_int_eq(res.status, 400);
        json_t *doc = parse(&res);
        ck_assert_str_eq(error_str(doc, 0, "pointer"), cases[i].pointer);
        ck_assert_msg(strstr(error_str(doc, 0, "hint"), cases[i].hint) != NULL, "case %zu: %s", i,
                      error_str(doc, 0, "hint"));
        json_decref(doc);
        api_response_deinit(&res);
    }
}
END_TEST

/* ---------------------------------------------------------------- Query */

static const struct {
    const char *method, *path, *body, *name, *value;
    const char *hint; /* a piece of the hint */
} query_cases[] = {
    { "POST", "/v1/attention", "{" SEED000 "}", "fromat", "text", "did you mean \"format\"" },
    { "POST", "/v1/multihead", "{}", "lnag", "ko", "did you mean \"lang\"" },
    { "POST", "/v1/attention/batch", "{}", "verbose", "1", "the parameters are format, lang" },
    { "GET", "/healthz", NULL, "pretty", "1", "the parameters are format, lang" },
    { "GET", "/version", NULL, "formt", "json", "did you mean \"format\"" },
    { "GET", "/v1/shapes", NULL, "nkv", "3", "did you mean \"n_kv\"" },
    { "GET", "/v1/shapes", NULL, "d_mdoel", "3", "did you mean \"d_model\"" },
    { "GET", "/v2/health/live", NULL, "x", "1", "the parameters are format, lang" },
};

START_TEST(test_unknown_query_parameter)
{
    struct api_context ctx = test_context();
    struct api_param params[2] = { { query_cases[_i].name, query_cases[_i].value } };
    size_t n = 1;
    if (strcmp(query_cases[_i].path, "/v1/shapes") == 0) {
        params[1] = params[0];
        params[0] = (struct api_param){ "n", "10" };
        n = 2;
    }
    struct api_response res = call_full(&ctx, query_cases[_i].method, query_cases[_i].path,
                                        NULL, "application/json", query_cases[_i].body, params, n);
    bool v2 = strncmp(query_cases[_i].path, "/v2", 3) == 0;
    ck_assert_int_eq(res.status, v2 ? 400 : 422);
    json_t *doc = parse(&res);
    ck_assert_str_eq(member_str(doc, "type"), "/problems/unknown-field");
    ck_assert_str_eq(member_str(doc, "parameter"), query_cases[_i].name);
    ck_assert_msg(strstr(member_str(doc, "hint"), query_cases[_i].hint) != NULL, "case %d: %s",
                  _i, member_str(doc, "hint"));
    ck_assert_ptr_null(json_object_get(doc, "errors"));
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* format and lang are known everywhere; the sizes only on /v1/shapes. */
START_TEST(test_known_query_parameters_pass)
{
    struct api_context ctx = test_context();
    struct api_param shapes[] = { { "n", "10" }, { "d_model", "512" }, { "heads", "8" },
                                  { "format", "json" }, { "lang", "en" } };
    struct api_response res = call_full(&ctx, "GET", "/v1/shapes", NULL, NULL, NULL, shapes, 5);
    ck_assert_int_eq(res.status, 200);
    api_response_deinit(&res);
    struct api_param sizes[] = { { "n", "10" } };
    res = call_full(&ctx, "GET", "/healthz", NULL, NULL, NULL, sizes, 1);
    ck_assert_int_eq(res.status, 422);
    api_response_deinit(&res);
}
END_TEST

/* ---------------------------------------------------------------- Hints */

/* A number beyond a double says so, not "check the brackets and commas". */
START_TEST(test_number_beyond_double)
{
    static const char *const bodies[] = {
        "{\"q\":[[1e400]],\"k\":[[1]],\"v\":[[1]]}",
        "{\"q\":[[1]],\"k\":[[-2.5e309]],\"v\":[[1]]}",
        "{\"q\":[[1]],\"k\":[[1]],\"v\":[[1]],\"scale\":1e999}",
    };
    for (size_t i = 0; i < 3; i++) {
        struct api_response res = call("POST", "/v1/attention", bodies[i]);
        ck_assert_int_eq(res.status, 400);
        json_t *doc = parse(&res);
        ck_assert_ptr_nonnull(strstr(member_str(doc, "detail"), "does not fit in a double"));
        const char *hint = error_str(doc, 0, "hint");
        ck_assert_msg(strstr(hint, "1.8e308") != NULL && strstr(hint, "brackets") == NULL,
                      "%s", hint);
        json_decref(doc);
        api_response_deinit(&res);
    }
    /* A real syntax error keeps the brackets hint. */
    struct api_response res = call("POST", "/v1/attention", "{\"q\":[[1,]]}");
    json_t *doc = parse(&res);
    ck_assert_ptr_nonnull(strstr(error_str(doc, 0, "hint"), "brackets"));
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* 0 / -1e9 is an additive mask: pointed to bias, at the first negative cell. */
START_TEST(test_additive_mask_points_to_bias)
{
    struct api_response res = call("POST", "/v1/attention",
                                   "{" SEED000 ",\"mask\":[[0,-1e9],[0,0]]}");
    ck_assert_int_eq(res.status, 422);
    json_t *doc = parse(&res);
    ck_assert_str_eq(member_str(doc, "type"), "/problems/invalid-value");
    ck_assert_str_eq(error_str(doc, 0, "pointer"), "/mask/0/1");
    ck_assert_ptr_nonnull(strstr(error_str(doc, 0, "hint"), "send it as bias"));
    json_decref(doc);
    api_response_deinit(&res);

    /* A 2 is a wrong flag, not an additive mask. */
    res = call("POST", "/v1/attention", "{" SEED000 ",\"mask\":[[1,2],[1,1]]}");
    doc = parse(&res);
    ck_assert_str_eq(error_str(doc, 0, "pointer"), "/mask/0/1");
    ck_assert_ptr_null(strstr(error_str(doc, 0, "hint"), "bias"));
    json_decref(doc);
    api_response_deinit(&res);

    /* And the same numbers as bias compute: the blocked key gets weight 0. */
    res = call("POST", "/v1/attention", "{" SEED000 ",\"bias\":[[0,-1e9],[0,0]]}");
    ck_assert_int_eq(res.status, 200);
    doc = parse(&res);
    assert_close(num_at(doc, "weights/0/0"), 1.0, "weights[0][0]");
    assert_close(num_at(doc, "weights/0/1"), 0.0, "weights[0][1]");
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* ---------------------------------------------------------------- Lines */

/* One newline ends every JSON answer, 200 or problem, and nothing else does. */
START_TEST(test_json_ends_with_one_newline)
{
    static const struct { const char *method, *path, *body; int status; } cases[] = {
        { "POST", "/v1/attention", "{" SEED000 "}", 200 },
        { "POST", "/v1/attention", "{\"q\":1}", 422 },
        { "POST", "/v1/attention", "{", 400 },
        { "POST", "/v1/attention/batch", "{\"items\":[{" SEED000 "}]}", 200 },
        { "GET", "/healthz", NULL, 200 },
        { "GET", "/readyz", NULL, 200 },
        { "GET", "/version", NULL, 200 },
        { "GET", "/nowhere", NULL, 404 },
        { "GET", "/v2", NULL, 200 },
        { "GET", "/v2/models/nope", NULL, 404 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct api_response res = call(cases[i].method, cases[i].path, cases[i].body);
        ck_assert_int_eq(res.status, cases[i].status);
        ck_assert_msg(res.body_len >= 2 && res.body[res.body_len - 1] == '\n' &&
                      res.body[res.body_len - 2] == '}', "%s %s: %.*s", cases[i].method,
                      cases[i].path, (int)res.body_len, res.body);
        json_decref(parse(&res));
        api_response_deinit(&res);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("errors");
    TCase *fields = tcase_create("Fields");
    tcase_add_test(fields, test_every_unknown_field_at_once);
    tcase_add_test(fields, test_many_unknown_fields_capped);
    tcase_add_test(fields, test_batch_item_unknown_fields);
    tcase_add_test(fields, test_far_name_lists_the_fields);
    tcase_add_test(fields, test_v2_names_close_or_listed);
    tcase_add_loop_test(fields, test_close_name_table, 0,
                        sizeof close_cases / sizeof close_cases[0]);
    suite_add_tcase(s, fields);
    TCase *query = tcase_create("Query");
    tcase_add_loop_test(query, test_unknown_query_parameter, 0,
                        sizeof query_cases / sizeof query_cases[0]);
    tcase_add_test(query, test_known_query_parameters_pass);
    suite_add_tcase(s, query);
    TCase *hints = tcase_create("Hints");
    tcase_add_test(hints, test_number_beyond_double);
    tcase_add_test(hints, test_additive_mask_points_to_bias);
    suite_add_tcase(s, hints);
    TCase *lines = tcase_create("Lines");
    tcase_add_test(lines, test_json_ends_with_one_newline);
    suite_add_tcase(s, lines);
    return run_api_suite(s);
}
