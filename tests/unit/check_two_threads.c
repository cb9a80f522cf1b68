/*
 * tests/unit/check_two_threads.c — large requests on one thread and on two, over
 * api_handle: the same bytes whether the body is read in halves, a matrix in halves
 * of rows, the forward pass and the writing split (api/json/spare_threads.c lends
 * the second thread), and only while no other request is in progress.
 *
 * Suites: Split writing.
 *
 * Not here: the reader's halves on their own (check_json_read.c), the writer's pieces
 * (check_json_write.c).
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/api.h"
#include "api/endpoints/attention/attention.h"
#include "api/endpoints/attention/test_hooks.h"
#include "api/json/matrix_write.h"
#include "api/json/read.h"
#include "api/json/segments.h"
#include "api/json/test_hooks.h"
#include "api/request/matrix.h"
#include "api/request/test_hooks.h"
#include "tests/unit/api_fixture.h"

/* An attention request whose scores are N × N, N of 182 or more: past
 * API_SPARE_MIN_CELLS. */
static char *attention_body_of(int N, const char *extra)
{
    enum { D = 8 };
    size_t cap = (size_t)3 * N * D * 32 + 256, len = 0;
    char *body = malloc(cap);
    ck_assert_ptr_nonnull(body);
    uint64_t state = 7;
    len += (size_t)snprintf(body + len, cap - len, "{%s", extra);
    const char *names[] = { "q", "k", "v" };
    for (int m = 0; m < 3; m++) {
        len += (size_t)snprintf(body + len, cap - len, "%s\"%s\":[", m ? "," : "", names[m]);
        for (int i = 0; i < N; i++) {
            body[len++] = i ? ',' : '[';
            if (i)
                body[len++] = '[';
            for (int j = 0; j < D; j++) {
                double x = (double)(next_random(&state) >> 11) / 9007199254740992.0 - 0.5;
                len += (size_t)snprintf(body + len, cap - len, "%s%.17g", j ? "," : "", x);
            }
            body[len++] = ']';
        }
        body[len++] = ']';
    }
    snprintf(body + len, cap - len, "}");
    return body;
}

static char *big_attention_body(const char *extra)
{
    return attention_body_of(192, extra);
}

/* The text of the value of the first member `key` of an answer (an array), and its length. */
static const char *array_value(const char *text, const char *key, size_t *len)
{
    char name[32];
    snprintf(name, sizeof name, "\"%s\":[", key);
    const char *at = strstr(text, name);
    ck_assert_msg(at != NULL, "no %s", key);
    at += strlen(name) - 1;
    size_t depth = 0, i = 0;
    do { /* numbers and nulls only: no strings to skip */
        depth += at[i] == '[';
        depth -= at[i] == ']';
        i++;
    } while (depth > 0 && at[i] != '\0');
    ck_assert_uint_eq(depth, 0);
    *len = i;
    return at;
}

/* The pieces of `parts` (or its one buffer), joined, are one.body's bytes. */
static void assert_pieces_join_to(const struct api_response *parts, const struct api_response *one,
                                  unsigned long aside)
{
    ck_assert_int_eq(parts->status, 200);
    ck_assert_uint_eq(parts->body_len, one->body_len);
    size_t at = 0;
    if (parts->segments == NULL) {
        ck_assert_uint_eq(aside, 0);
        ck_assert_ptr_nonnull(parts->body);
        ck_assert(memcmp(parts->body, one->body, one->body_len) == 0);
        at = one->body_len;
    } else {
        ck_assert_ptr_null(parts->body);
        ck_assert_uint_ge(parts->segments->n, aside);
        ck_assert_uint_eq(parts->segments->total, one->body_len);
        for (size_t i = 0; i < parts->segments->n; i++) {
            const struct api_segment *g = &parts->segments->seg[i];
            ck_assert(at + g->len <= one->body_len);
            ck_assert_msg(memcmp(one->body + at, g->data, g->len) == 0, "piece %zu differs", i);
            at += g->len;
        }
    }
    ck_assert_uint_eq(at, one->body_len);
}

/*
 * Not split (one thread), `whole` is one buffer, but for a masked step that repeats
 * scaled's text, which is sent again from where that lies (jw_repeat): a borrowed
 * piece of exactly masked's length between two owned ones.
 */
static void assert_repeat_borrowed(const struct api_response *whole, const struct api_response *one,
                                   bool attention)
{
    bool repeated = true; /* multihead: no mask */
    size_t masked_len = 0, scaled_len = 0;
    if (attention) {
        const char *scaled = array_value(one->body, "scaled", &scaled_len);
        const char *masked = array_value(one->body, "masked", &masked_len);
        repeated = scaled_len == masked_len && memcmp(scaled, masked, masked_len) == 0;
    }
    ck_assert_uint_eq(whole->body_len, one->body_len);
    if (!repeated) {
        ck_assert_ptr_null(whole->segments);
        ck_assert(memcmp(whole->body, one->body, one->body_len) == 0);
        return;
    }
    ck_assert_ptr_nonnull(whole->segments);
    size_t owned = 0, borrowed = 0, at = 0;
    for (size_t i = 0; i < whole->segments->n; i++) {
        const struct api_segment *g = &whole->segments->seg[i];
        ck_assert(memcmp(one->body + at, g->data, g->len) == 0);
        at += g->len;
        if (g->base == NULL)
            borrowed += g->len;
        else
            owned++;
    }
    ck_assert_uint_eq(at, one->body_len);
    ck_assert_uint_gt(borrowed, 0);
    if (attention) { /* one masked step */
        ck_assert_uint_eq(borrowed, masked_len);
        ck_assert_uint_eq(owned, 2); /* the text before the repeat, and after it */
    }
}

/* The same request answered with one thread and with two: the same bytes, and the
 * second did split its writing and (attention) its forward pass (only one request is
 * in flight here). */
static void assert_split_changes_nothing(const char *path, const char *body)
{
    bool attention = strcmp(path, "/v1/attention") == 0;
    api_set_threads(1);
    unsigned long before = api_write_splits();
    unsigned long runs_before = api_attention_threaded_runs();
    struct api_response one = call("POST", path, body);
    ck_assert_uint_eq(api_write_splits(), before);
    ck_assert_uint_eq(api_attention_threaded_runs(), runs_before);
    api_set_threads(2);
    struct api_response two = call("POST", path, body);
    api_set_threads(1);
    ck_assert_int_eq(one.status, 200);
    ck_assert_int_eq(two.status, 200);
    ck_assert_msg(api_write_splits() > before, "nothing was split");
    if (attention) /* the forward pass ran on two threads too */
        ck_assert_uint_gt(api_attention_threaded_runs(), runs_before);
    ck_assert_uint_eq(one.body_len, two.body_len);
    ck_assert(memcmp(one.body, two.body, one.body_len) == 0);

    /* As the server asks for it: in pieces, which joined are the same bytes. The
     * pieces the helper wrote aside are pieces of the answer; a helper that started
     * too late to take any (under valgrind, say) leaves the answer in one buffer. */
    struct api_context ctx = test_context();
    ctx.segments_ok = true;
    api_set_threads(2);
    unsigned long aside = api_write_pieces_aside();
    struct api_response parts = call_full(&ctx, "POST", path, NULL, "application/json", body,
                                          NULL, 0);
    aside = api_write_pieces_aside() - aside;
    api_set_threads(1);
    assert_pieces_join_to(&parts, &one, aside);

    unsigned long splits = api_write_splits();
    struct api_response whole = call_full(&ctx, "POST", path, NULL, "application/json", body,
                                          NULL, 0);
    ck_assert_uint_eq(api_write_splits(), splits);
    assert_repeat_borrowed(&whole, &one, attention);
    api_response_deinit(&whole);
    api_response_deinit(&parts);
    api_response_deinit(&one);
    api_response_deinit(&two);
}

/* An answer's text, NUL-terminated, whether it came in one body or in pieces. */
static char *response_text(const struct api_response *res)
{
    char *text = malloc(res->body_len + 1);
    ck_assert_ptr_nonnull(text);
    if (res->segments == NULL) {
        memcpy(text, res->body, res->body_len);
    } else {
        size_t at = 0;
        for (size_t i = 0; i < res->segments->n; i++) {
            memcpy(text + at, res->segments->seg[i].data, res->segments->seg[i].len);
            at += res->segments->seg[i].len;
        }
        ck_assert_uint_eq(at, res->body_len);
    }
    text[res->body_len] = '\0';
    return text;
}

/*
 * Asks for path with body_all and with body_alone (which includes masked but not
 * scaled, so masked is formatted on its own) and checks that masked is the same
 * text in both, and that in the first it is scaled's text (nothing was masked):
 * with one thread and with two (the text then lies in pieces).
 */
static void assert_masked_repeats_scaled(const char *path, const char *body_all,
                                         const char *body_alone)
{
    for (unsigned threads = 1; threads <= 2; threads++) {
        struct api_context ctx = test_context();
        ctx.segments_ok = true;
        api_set_threads(threads);
        struct api_response all = call_full(&ctx, "POST", path, NULL, "application/json",
                                            body_all, NULL, 0);
        struct api_response alone = call_full(&ctx, "POST", path, NULL, "application/json",
                                              body_alone, NULL, 0);
        api_set_threads(1);
        ck_assert_int_eq(all.status, 200);
        ck_assert_int_eq(alone.status, 200);
        char *all_text = response_text(&all), *alone_text = response_text(&alone);
        size_t n_masked, n_alone, n_scaled;
        const char *masked = array_value(all_text, "masked", &n_masked);
        const char *masked_alone = array_value(alone_text, "masked", &n_alone);
        const char *scaled = array_value(all_text, "scaled", &n_scaled);
        ck_assert_uint_gt(n_masked, 1000);
        ck_assert_uint_eq(n_masked, n_alone);
        ck_assert_msg(memcmp(masked, masked_alone, n_masked) == 0, "%s, %u thread(s)", path,
                      threads);
        ck_assert_uint_eq(n_masked, n_scaled);
        ck_assert(memcmp(masked, scaled, n_masked) == 0);
        free(all_text);
        free(alone_text);
        api_response_deinit(&all);
        api_response_deinit(&alone);
    }
}

/* With nothing masked or biased, masked is scaled's text again (jw_repeat). */
START_TEST(test_masked_repeats_scaled)
{
    char *body = big_attention_body("");
    char *alone = big_attention_body("\"include\":[\"masked\"],");
    assert_masked_repeats_scaled("/v1/attention", body, alone);
    free(body);
    free(alone);
    assert_masked_repeats_scaled("/v1/multihead",
                                 "{\"heads\": 2, \"random\": {\"seed\": 4, \"n\": 200, "
                                 "\"d_model\": 16}, \"include\": [\"scaled\", \"masked\"]}",
                                 "{\"heads\": 2, \"random\": {\"seed\": 4, \"n\": 200, "
                                 "\"d_model\": 16}, \"include\": [\"masked\"]}");
}
END_TEST

START_TEST(test_split_writing_attention)
{
    char *body = big_attention_body("");
    assert_split_changes_nothing("/v1/attention", body);
    free(body);
    body = big_attention_body("\"round\":3,\"mask\":\"causal\",");
    assert_split_changes_nothing("/v1/attention", body);
    free(body);
    body = attention_body_of(197, ""); /* pieces of 25 rows, the last of 22 */
    assert_split_changes_nothing("/v1/attention", body);
    free(body);
}
END_TEST

/*
 * A body whose q (512 x 64 = 32768 cells, enough to be read in two halves of rows)
 * has `bad` written in place of the cells at (row, col) of each of the n pairs, or
 * a row one number short when col is -1. k and v are small.
 */
static char *matrix_rows_body(const int (*cells)[2], size_t n, const char *bad)
{
    enum { N = 512, D = 64 };
    size_t cap = (size_t)N * D * 24 + 4096, len = 0;
    char *body = malloc(cap);
    ck_assert_ptr_nonnull(body);
    uint64_t state = 11;
    len += (size_t)snprintf(body + len, cap - len, "{\"q\":[");
    for (int i = 0; i < N; i++) {
        len += (size_t)snprintf(body + len, cap - len, "%s[", i ? "," : "");
        for (int j = 0; j < D; j++) {
            bool is_bad = false, short_row = false;
            for (size_t c = 0; c < n; c++) {
                is_bad |= cells[c][0] == i && cells[c][1] == j;
                short_row |= cells[c][0] == i && cells[c][1] == -1 && j == D - 1;
            }
            if (short_row)
                break;
            double x = (double)(next_random(&state) >> 11) / 9007199254740992.0 - 0.5;
            if (is_bad)
                len += (size_t)snprintf(body + len, cap - len, "%s%s", j ? "," : "", bad);
            else
                len += (size_t)snprintf(body + len, cap - len, "%s%.17g", j ? "," : "", x);
        }
        body[len++] = ']';
    }
    len += (size_t)snprintf(body + len, cap - len, "],\"k\":[");
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < D; j++)
            len += (size_t)snprintf(body + len, cap - len, "%s%d%s", j ? "," : i ? ",[" : "[",
                                    (i + j) % 3 - 1, j == D - 1 ? "]" : "");
    snprintf(body + len, cap - len, "],\"v\":[[1],[2]],\"include\":[\"output\"]}");
    return body;
}

/* body answered with one thread and with two: the same bytes (an answer or an error);
 * with two, q was read in two halves of rows. Returns the errors[0] pointer, if any. */
static char *rows_split_same_answer(const char *body)
{
    api_set_threads(1);
    unsigned long before = api_read_matrix_splits();
    struct api_response one = call("POST", "/v1/attention", body);
    ck_assert_uint_eq(api_read_matrix_splits(), before);
    api_set_threads(2);
    struct api_response two = call("POST", "/v1/attention", body);
    api_set_threads(1);
    ck_assert_uint_gt(api_read_matrix_splits(), before);
    ck_assert_int_eq(one.status, two.status);
    ck_assert_uint_eq(one.body_len, two.body_len);
    ck_assert(memcmp(one.body, two.body, one.body_len) == 0);
    char *pointer = NULL;
    if (two.status != 200) {
        json_t *doc = parse(&two);
        json_t *err = json_array_get(json_object_get(doc, "errors"), 0);
        pointer = strdup(json_string_value(json_object_get(err, "pointer")));
        json_decref(doc);
    }
    api_response_deinit(&one);
    api_response_deinit(&two);
    return pointer;
}

/* A large matrix read in two halves of rows: the same values, and the error of the
 * first bad row or cell in row-major order, whichever half it is in. (Read as jansson
 * nodes: a good matrix read straight into numbers has no rows to split.) */
START_TEST(test_matrix_rows_split)
{
    api_json_packing_set(false);
    char *good = matrix_rows_body(NULL, 0, "");
    ck_assert_ptr_null(rows_split_same_answer(good));
    free(good);
    static const struct {
        int cells[2][2];
        size_t n;
        const char *bad, *pointer;
    } cases[] = {
        { { { 400, 7 } }, 1, "\"x\"", "/q/400/7" },      /* in the second half */
        { { { 10, 3 }, { 400, 7 } }, 2, "null", "/q/10/3" }, /* in both: the first */
        { { { 300, -1 } }, 1, "", "/q/300" },             /* a short row, second half */
        { { { 255, 63 }, { 256, 0 } }, 2, "true", "/q/255/63" }, /* either side of the cut */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *body = matrix_rows_body(cases[c].cells, cases[c].n, cases[c].bad);
        char *pointer = rows_split_same_answer(body);
        ck_assert_ptr_nonnull(pointer);
        ck_assert_str_eq(pointer, cases[c].pointer);
        free(pointer);
        free(body);
    }
    api_json_packing_set(true);
}
END_TEST

/*
 * The same bodies read in two halves with q cut in the middle, q read straight into
 * numbers on both sides of the cut: the answer or error of the one-thread reading
 * with jansson nodes, byte for byte; and the good body was read in halves with q, k
 * and v packed. A body whose halves disagree (a bad cell or a short row on one side)
 * is read again by one thread.
 */
START_TEST(test_packed_matrix_cut_in_halves)
{
    static const struct {
        int cells[2][2];
        size_t n;
        const char *bad;
    } cases[] = {
        { { { 0, 0 } }, 0, "" },                          /* good */
        { { { 400, 7 } }, 1, "\"x\"" },                   /* second half */
        { { { 10, 3 } }, 1, "true" },                     /* first half */
        { { { 300, -1 } }, 1, "" },                       /* a short row, second half */
        { { { 5, -1 } }, 1, "" },                         /* a short row, first half */
        { { { 255, 63 }, { 256, 0 } }, 2, "1e999" },      /* either side of the cut */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *body = matrix_rows_body(cases[c].cells, cases[c].n, cases[c].bad);
        api_set_threads(1);
        api_json_packing_set(false);
        struct api_response nodes = call("POST", "/v1/attention", body);
        api_json_packing_set(true);
        api_set_threads(2);
        unsigned long halves = api_json_halves_read(), packed = api_json_matrices_packed();
        struct api_response two = call("POST", "/v1/attention", body);
        api_set_threads(1);
        if (c == 0) {
            ck_assert_int_eq(two.status, 200);
            ck_assert_uint_eq(api_json_halves_read(), halves + 1);
            ck_assert_uint_eq(api_json_matrices_packed(), packed + 3);
        }
        ck_assert_int_eq(two.status, nodes.status);
        ck_assert_msg(two.body_len == nodes.body_len &&
                          memcmp(two.body, nodes.body, nodes.body_len) == 0,
                      "case %zu: %.300s\nagainst %.300s", c, two.body, nodes.body);
        api_response_deinit(&nodes);
        api_response_deinit(&two);
        free(body);
    }
}
END_TEST

/*
 * Threads are lent to a request only while no other is in progress as the server
 * counts them (api_request_began to api_request_ended, around a request's whole life,
 * not only api_handle): beside a request still being received or sent, a large body
 * is read, computed and written on its own thread, and answered with the same bytes.
 */
START_TEST(test_threads_lent_only_to_a_request_alone)
{
    char *body = attention_body_of(300, ""); /* 90,000 cells, past API_SPARE_MIN_CELLS */
    ck_assert_uint_ge(strlen(body), API_JSON_SPLIT_BYTES);
    api_set_threads(2);
    api_request_began(); /* this request */
    unsigned long halves = api_json_halves_read(), splits = api_write_splits();
    unsigned long runs = api_attention_threaded_runs();
    struct api_response alone = call("POST", "/v1/attention", body);
    ck_assert_uint_eq(api_json_halves_read(), halves + 1);
    ck_assert_uint_gt(api_write_splits(), splits);
    ck_assert_uint_gt(api_attention_threaded_runs(), runs);

    api_request_began(); /* another, its body still arriving */
    halves = api_json_halves_read(), splits = api_write_splits();
    runs = api_attention_threaded_runs();
    struct api_response beside = call("POST", "/v1/attention", body);
    ck_assert_uint_eq(api_json_halves_read(), halves);
    ck_assert_uint_eq(api_write_splits(), splits);
    ck_assert_uint_eq(api_attention_threaded_runs(), runs);
    api_request_ended();

    api_request_ended();
    api_set_threads(1);
    ck_assert_int_eq(alone.status, 200);
    ck_assert_int_eq(beside.status, 200);
    ck_assert_uint_eq(alone.body_len, beside.body_len);
    ck_assert(memcmp(alone.body, beside.body, alone.body_len) == 0);
    api_response_deinit(&alone);
    api_response_deinit(&beside);
    free(body);
}
END_TEST

START_TEST(test_split_writing_multihead)
{
    assert_split_changes_nothing("/v1/multihead", "{\"heads\": 2, \"random\": {\"seed\": 4, "
                                 "\"n\": 200, \"d_model\": 16}}");
}
END_TEST

static Suite *two_threads_suite(void)
{
    Suite *s = suite_create("two_threads");

    TCase *split = tcase_create("Split writing");
    tcase_add_test(split, test_split_writing_attention);
    tcase_add_test(split, test_matrix_rows_split);
    tcase_add_test(split, test_packed_matrix_cut_in_halves);
    tcase_add_test(split, test_threads_lent_only_to_a_request_alone);
    tcase_add_test(split, test_split_writing_multihead);
    tcase_add_test(split, test_masked_repeats_scaled);
    suite_add_tcase(s, split);
    return s;
}

int main(void)
{
    return run_api_suite(two_threads_suite());
}
