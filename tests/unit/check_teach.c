/*
 * tests/unit/check_teach.c — what attnd teaches beyond the matrices, as the notes teach
 * it: ties (core/ties.c, api/endpoints/teach/ties.c), one row explained (api/endpoints/teach/explain.c),
 * the learner's mistakes (core/pitfall.c)
 * and the sentences with numbered holes
 * (api/i18n/fill.c).
 *
 * Suites: Ties (which keys share a row's largest weight, against hand-made rows and the
 * notes' examples over api_handle), Fill (holes, order, cutting).
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include <jansson.h>

#include "api/i18n/fill.h"
#include "core/pitfall.h"
#include "core/ties.h"
#include "tests/unit/api_fixture.h"

/* ---------------------------------------------------------------- Ties */

START_TEST(test_row_ties)
{
    size_t keys[4];
    const double three[] = { 1.0 / 3, 1.0 / 3, 1.0 / 3 };
    ck_assert_uint_eq(attn_row_ties(three, 3, keys), 3);
    ck_assert_uint_eq(keys[0], 0);
    ck_assert_uint_eq(keys[2], 2);

    /* softmax(0, 2) of the first note's second row: 0.73 wins alone. */
    const double seed_row1[] = { 1 / (1 + exp(1.0)), exp(1.0) / (1 + exp(1.0)) };
    ck_assert_uint_eq(attn_row_ties(seed_row1, 2, keys), 1);
    ck_assert_uint_eq(keys[0], 1);

    /* Within 1e-9 relative ties, 1e-8 does not. */
    const double close[] = { 0.5, 0.5 * (1 - 5e-10), 0.5 * (1 - 1e-8), 0.1 };
    ck_assert_uint_eq(attn_row_ties(close, 4, keys), 2);
    ck_assert_uint_eq(keys[1], 1);

    /* A fully masked row (all 0) ties nothing. */
    const double zero[] = { 0, 0, 0 };
    ck_assert_uint_eq(attn_row_ties(zero, 3, NULL), 0);
    ck_assert(!attn_weight_ties(0, 0));
}
END_TEST

/* The second note's Q3 over api_handle: three keys tie, the warning says so. */
START_TEST(test_note_tie_answer)
{
    struct api_response res = call("POST", "/v1/attention",
        "{\"q\":[[0.5,0.5]],\"k\":[[1,0],[0,1],[0.8,0.2]],\"v\":[[10,0],[0,20],[8,4]],"
        "\"scale\":1,\"include\":[\"summary\"]}");
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    json_t *tied = json_array_get(json_object_get(json_object_get(doc, "summary"), "tied_keys"), 0);
    ck_assert_uint_eq(json_array_size(tied), 3);
    json_t *warn = json_array_get(json_object_get(doc, "warnings"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(warn, "code")), "tie");
    ck_assert_str_eq(json_string_value(json_object_get(warn, "message")),
                     "query 0 ties keys 0, 1 and 2 for the largest weight: no key wins, and "
                     "argmax names only the lowest index");
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* Twelve tied keys: the message names eight and counts the rest; "keys" lists all. */
START_TEST(test_long_tie_is_cut)
{
    struct api_response res = call("POST", "/v1/attention",
        "{\"q\":[[0,0]],\"k\":[[1,0],[1,0],[1,0],[1,0],[1,0],[1,0],[1,0],[1,0],[1,0],[1,0],"
        "[1,0],[1,0]],\"v\":[[1],[1],[1],[1],[1],[1],[1],[1],[1],[1],[1],[1]],"
        "\"include\":[]}");
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    json_t *warn = json_array_get(json_object_get(doc, "warnings"), 0);
    ck_assert_uint_eq(json_array_size(json_object_get(warn, "keys")), 12);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(warn, "message")),
                                 "keys 0, 1, 2, 3, 4, 5, 6, 7 and 4 more for"));
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* ---------------------------------------------------------------- Explain */

/* Seed 000's second row, as the first note works it: e^1 ≈ 2.72, sum 3.72, 0.27/0.73. */
START_TEST(test_explain_seed000_row1)
{
    struct api_response res = call("POST", "/v1/attention", "{" SEED000 ",\"explain\":{\"row\":1}}");
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    assert_close(num_at(doc, "explain/keys/0/dot"), 0, "dot 0");
    assert_close(num_at(doc, "explain/keys/1/dot"), 2, "dot 1");
    assert_close(num_at(doc, "explain/keys/1/scaled"), 1, "2 / 2");
    assert_close(num_at(doc, "explain/keys/0/exp_unshifted"), 1, "e^0");
    assert_close(num_at(doc, "explain/keys/1/exp_unshifted"), exp(1.0), "e^1");
    assert_close(num_at(doc, "explain/exp_unshifted_sum"), 1 + exp(1.0), "sum");
    ck_assert(fabs(num_at(doc, "explain/exp_unshifted_sum") - 3.72) < 0.005);
    assert_close(num_at(doc, "explain/keys/0/weight"), 1 / (1 + exp(1.0)), "weight 0");
    ck_assert(fabs(num_at(doc, "explain/keys/1/weight") - 0.73) < 0.005);
    assert_close(num_at(doc, "explain/output/value/0"), 10 / (1 + exp(1.0)), "output 0");
    ck_assert(fabs(num_at(doc, "explain/output/value/1") - 7.3) < 0.05);
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

/* ---------------------------------------------------------------- Pitfalls */

/* The learner's softmaxes against the formula, cell by cell. */
START_TEST(test_wrong_softmaxes)
{
    double in[6] = { 1, 2, 0, 0, -INFINITY, 1000 }; /* (2, 3) */
    double out[6];
    struct attn_matrix m = attn_matrix_view(in, 2, 3), o = attn_matrix_view(out, 2, 3);
    attn_softmax_columns(&o, &m);
    assert_close(out[0], exp(1.0) / (exp(1.0) + 1), "column 0, row 0");
    assert_close(out[3], 1 / (exp(1.0) + 1), "column 0, row 1");
    assert_close(out[1], 1, "column 1: the blocked cell takes nothing");
    assert_close(out[4], 0, "column 1, blocked");
    assert_close(out[2] + out[5], 1, "column 2 sums to 1");
    attn_softmax_rows_unshifted(&o, &m);
    assert_close(out[0], exp(1.0) / (exp(1.0) + exp(2.0) + 1), "row 0 is finite");
    ck_assert(isnan(out[5]));     /* e^1000 / inf */
    assert_close(out[3], 0, "1 / inf");
    assert_close(out[4], 0, "e^-inf / inf");
    double allblocked[2] = { -INFINITY, -INFINITY }, w[2];
    struct attn_matrix b = attn_matrix_view(allblocked, 1, 2), bw = attn_matrix_view(w, 1, 2);
    attn_softmax_rows_unshifted(&bw, &b);
    ck_assert(isnan(w[0]) && isnan(w[1])); /* 0 / 0, as numpy */
    attn_softmax_columns(&bw, &b);
    ck_assert(isnan(w[0]) && isnan(w[1])); /* -inf - -inf */
}
END_TEST

START_TEST(test_plain_products)
{
    double a[6] = { 1, 2, 3, 4, 5, 6 }, t[6], p[4];
    struct attn_matrix ma = attn_matrix_view(a, 2, 3), mt = attn_matrix_view(t, 3, 2);
    attn_transpose(&mt, &ma);
    ck_assert(t[0] == 1 && t[1] == 4 && t[2] == 2 && t[5] == 6);
    struct attn_matrix mp = attn_matrix_view(p, 2, 2);
    attn_matmul_plain(&mp, &ma, &mt); /* A·Aᵀ */
    ck_assert(p[0] == 14 && p[1] == 32 && p[2] == 32 && p[3] == 77);
}
END_TEST

/* ---------------------------------------------------------------- Fill */

START_TEST(test_fill)
{
    char buf[64];
    const char *args[] = { "Q3", "k0 and k1", "2" };
    ck_assert_uint_eq(api_fill(buf, sizeof buf, "query {1} ties {2}", args, 3), 23);
    ck_assert_str_eq(buf, "query Q3 ties k0 and k1");
    /* Holes in another order, a hole past the arguments and stray braces stay. */
    api_fill(buf, sizeof buf, "{2}: {1} {4} {x} {", args, 3);
    ck_assert_str_eq(buf, "k0 and k1: Q3 {4} {x} {");
    /* Cut when full, always terminated. */
    char small[6];
    ck_assert_uint_eq(api_fill(small, sizeof small, "ab{2}cd", args, 3), 5);
    ck_assert_str_eq(small, "abk0 ");
}
END_TEST

static Suite *teach_suite(void)
{
    Suite *s = suite_create("teach");
    TCase *ties = tcase_create("Ties");
    tcase_add_test(ties, test_row_ties);
    tcase_add_test(ties, test_note_tie_answer);
    tcase_add_test(ties, test_long_tie_is_cut);
    suite_add_tcase(s, ties);
    TCase *explain = tcase_create("Explain");
    tcase_add_test(explain, test_explain_seed000_row1);
    suite_add_tcase(s, explain);
    TCase *pitfalls = tcase_create("Pitfalls");
    tcase_add_test(pitfalls, test_wrong_softmaxes);
    tcase_add_test(pitfalls, test_plain_products);
    suite_add_tcase(s, pitfalls);
    TCase *fill = tcase_create("Fill");
    tcase_add_test(fill, test_fill);
    suite_add_tcase(s, fill);
    return s;
}

int main(void)
{
    return run_api_suite(teach_suite());
}
