/*
 * tests/check_api.c — the api layer without a network: api_handle and api_precheck
 * called as the server calls them, responses read back with jansson.
 *
 * Suites: Numbers (the shortest round-trip printer and numpy-style rounding),
 * Attention (the contract's example byte for byte, the seeds, every option),
 * Errors (a table of bad requests: status, problem type, pointer, hint), Routes
 * (404/405/406/415/413, health, readiness, version, spec, problem pages).
 */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/api.h"
#include "api/endpoints/attention_request.h"
#include "api/request/body.h"
#include "api/request/fields.h"
#include "api/request/matrix.h"
#include "api/json/arena.h"
#include "api/json/write.h"
#include "api/json/matrix_write.h"
#include "api/json/read.h"
#include "api/json/numparse.h"
#include "api/json/numfmt.h"
#include "api/json/spare_threads.h"
#include "core/multihead.h"

#define SEED000 "\"q\":[[1,0,1,0],[0,1,0,1]],\"k\":[[1,0,1,0],[1,1,1,1]],\"v\":[[10,0],[0,10]]"
#define SEED002_ONE "\"q\":[1,0],\"k\":[[1,0],[0,1],[0.8,0.2]],\"v\":[[10,0],[0,20],[8,4]],\"scale\":1"

static struct api_context test_context(void)
{
    struct api_context ctx = {
        .limits = api_default_limits(), .ready = true, .http_library = "0.9.75"};
    return ctx;
}

/* The answer to one request; the caller frees it with api_response_deinit. */
static struct api_response call_full(const struct api_context *ctx, const char *method,
                                     const char *path, const char *accept, const char *ctype,
                                     const char *body, const struct api_param *params,
                                     size_t n_params)
{
    struct api_request req = { method, path, params, n_params, accept, ctype,
                               body, body ? strlen(body) : 0, NULL };
    struct api_response res = { 0 };
    api_handle(ctx, &req, &res);
    return res;
}

static struct api_response call(const char *method, const char *path, const char *body)
{
    struct api_context ctx = test_context();
    return call_full(&ctx, method, path, NULL, "application/json", body, NULL, 0);
}

static json_t *parse(const struct api_response *res)
{
    json_error_t e;
    json_t *doc = json_loadb(res->body, res->body_len, 0, &e);
    ck_assert_msg(doc != NULL, "response is not JSON: %s (%.*s)", e.text, (int)res->body_len,
                  res->body);
    return doc;
}

/* A number at a path like "weights/1/0" inside doc. */
static double num_at(json_t *doc, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *node = doc;
    for (char *tok = strtok(buf, "/"); tok != NULL; tok = strtok(NULL, "/")) {
        if (json_is_array(node))
            node = json_array_get(node, strtoul(tok, NULL, 10));
        else
            node = json_object_get(node, tok);
        ck_assert_msg(node != NULL, "no %s in the response", path);
    }
    ck_assert_msg(json_is_number(node), "%s is not a number", path);
    return json_number_value(node);
}

static void assert_close(double got, double want, const char *what)
{
    ck_assert_msg(fabs(got - want) <= 1e-12 + 1e-12 * fabs(want), "%s: got %.17g, want %.17g",
                  what, got, want);
}

/* ------------------------------------------------------------------ Numbers */

static const struct {
    double x;
    const char *text;
} shortest[] = {
    { 0.1, "0.1" },
    { 1.0 / 3.0, "0.3333333333333333" },
    { 1e-7, "1e-07" },
    { 5.0, "5" },
    { -0.0, "-0" },
    { 0.0, "0" },
    { 1e300, "1e+300" },
    { 5e-324, "5e-324" },
    { 0.7310585786300049, "0.7310585786300049" },
    { 2.6894142136999513, "2.6894142136999513" },
    { 0.0001, "0.0001" },
    { 0.00001, "1e-05" },
    { 1e16, "1e+16" },
    { 1234567890123456.0, "1234567890123456" },
    { -1.5, "-1.5" },
    { 1.7976931348623157e308, "1.7976931348623157e+308" },
    { 123.456, "123.456" },
};

START_TEST(test_shortest_table)
{
    char buf[API_NUMBER_MAX];
    size_t n = api_format_double(shortest[_i].x, buf);
    ck_assert_str_eq(buf, shortest[_i].text);
    ck_assert_uint_eq(n, strlen(shortest[_i].text));
}
END_TEST

/* What is printed reads back as the same double, for doubles of every magnitude. */
START_TEST(test_shortest_round_trips)
{
    unsigned long long s = 0x9e3779b97f4a7c15ull;
    char buf[API_NUMBER_MAX];
    for (int i = 0; i < 200000; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        double x;
        memcpy(&x, &s, sizeof x);
        if (!isfinite(x))
            continue;
        api_format_double(x, buf);
        double back = strtod(buf, NULL);
        ck_assert_msg(memcmp(&back, &x, sizeof x) == 0, "%.17g printed as %s", x, buf);
    }
}
END_TEST

START_TEST(test_non_finite_is_null)
{
    char buf[API_NUMBER_MAX];
    api_format_double(INFINITY, buf);
    ck_assert_str_eq(buf, "null");
    api_format_double(NAN, buf);
    ck_assert_str_eq(buf, "null");
}
END_TEST

/* numpy.round: rint(x * 10^d) / 10^d (values checked against numpy 1.24). */
START_TEST(test_round_like_numpy)
{
    ck_assert(api_round_decimals(0.2689414213699951, 2) == 0.27);
    ck_assert(api_round_decimals(2.675, 2) == 2.68); /* numpy, unlike Python's round, gives 2.68 */
    ck_assert(api_round_decimals(0.125, 2) == 0.12); /* halves go to even */
    ck_assert(api_round_decimals(2.5, 0) == 2.0);
    ck_assert(api_round_decimals(1.5, 0) == 2.0);
    double neg = api_round_decimals(-0.001, 2);
    ck_assert(neg == 0.0 && signbit(neg));
    ck_assert(api_round_decimals(1e300, 15) == 1e300); /* no overflow to inf */
}
END_TEST

START_TEST(test_writer_escapes_and_commas)
{
    struct jw w;
    jw_init(&w, -1);
    jw_object_begin(&w);
    jw_key(&w, "s");
    jw_string(&w, "a\"b\\c\n\x01\xea\xb0\x80");
    jw_key(&w, "a");
    jw_array_begin(&w);
    jw_int(&w, 1);
    jw_null(&w);
    jw_bool(&w, true);
    jw_double(&w, 0.1);
    jw_array_end(&w);
    jw_key(&w, "e");
    jw_double_array(&w, NULL, 0);
    jw_object_end(&w);
    size_t len;
    char *out = jw_take(&w, &len);
    ck_assert_str_eq(out, "{\"s\":\"a\\\"b\\\\c\\n\\u0001\xea\xb0\x80\",\"a\":[1,null,true,0.1],"
                          "\"e\":[]}");
    ck_assert_uint_eq(len, strlen(out));
    free(out);
}
END_TEST

/*
 * Found by fuzzing: echoed client text that is not UTF-8 made the body invalid JSON.
 * Ill-formed bytes (a stray 0xFF, a cut sequence, an overlong form, a surrogate)
 * become U+FFFD; well-formed text of every length passes unchanged.
 */
START_TEST(test_writer_replaces_ill_formed_utf8)
{
    struct jw w;
    jw_init(&w, -1);
    jw_array_begin(&w);
    jw_string(&w, "a\xff" "b");
    jw_string(&w, "\xea\xb0");             /* a 3-byte sequence cut after 2 */
    jw_string(&w, "\xc0\xaf");             /* overlong '/' */
    jw_string(&w, "\xed\xa0\x80");         /* a surrogate */
    jw_string(&w, "\xc3\xa9\xea\xb0\x80\xf0\x9f\x98\x80"); /* é 가 😀 */
    jw_array_end(&w);
    size_t len;
    char *out = jw_take(&w, &len);
    ck_assert_str_eq(out, "[\"a\\ufffdb\",\"\\ufffd\\ufffd\",\"\\ufffd\\ufffd\","
                          "\"\\ufffd\\ufffd\\ufffd\",\"\xc3\xa9\xea\xb0\x80\xf0\x9f\x98\x80\"]");
    free(out);

    /* Over the API: an Accept header and a long path with bytes that are not UTF-8. */
    struct api_context ctx = test_context();
    struct api_response res = call_full(&ctx, "GET", "/readyz", "ap\xff\xfeplication/json", NULL,
                                        NULL, NULL, 0);
    ck_assert_int_eq(res.status, 406);
    json_decref(parse(&res));
    api_response_deinit(&res);
    char path[160];
    memset(path, 'a', sizeof path);
    memcpy(path, "/\xea\xb0\x80", 4);
    for (size_t i = 4; i + 3 < sizeof path; i += 3)
        memcpy(path + i, "\xea\xb0\x80", 3); /* the 100-byte cut lands inside a character */
    path[sizeof path - 1] = '\0';
    res = call_full(&ctx, "GET", path, NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(res.status, 404);
    json_decref(parse(&res));
    api_response_deinit(&res);
}
END_TEST

/* A deterministic stream of test inputs (splitmix64). */
static uint64_t next_random(uint64_t *state);

/*
 * Appends one random piece of text to in and what a JSON reader must decode from the
 * writer's string to want: well-formed characters of every length (control bytes,
 * quotes and backslashes included) decode to themselves, each byte of an ill-formed
 * sequence to U+FFFD.
 */
static void random_text_piece(uint64_t *state, char *in, size_t *n_in, char *want, size_t *n_want)
{
    static const struct { const char *bytes; size_t len; size_t replaced; } pieces[] = {
        { "\xc3\xa9", 2, 0 }, { "\xea\xb0\x80", 3, 0 }, { "\xf0\x9f\x98\x80", 4, 0 },
        { "\xff", 1, 1 }, { "\x80", 1, 1 }, { "\xc0\xaf", 2, 2 },
        { "\xed\xa0\x80", 3, 3 }, { "\xea\xb0x", 3, 2 }, /* cut: 'x' ends it */
    };
    uint64_t r = next_random(state);
    if (r % 3 != 0) { /* one ASCII byte, control bytes and NUL included */
        char c = (char)(r >> 8 & 0x7F);
        in[(*n_in)++] = c;
        want[(*n_want)++] = c;
        return;
    }
    size_t i = (size_t)(r >> 8) % (sizeof pieces / sizeof pieces[0]);
    memcpy(in + *n_in, pieces[i].bytes, pieces[i].len);
    *n_in += pieces[i].len;
    if (pieces[i].replaced == 0) {
        memcpy(want + *n_want, pieces[i].bytes, pieces[i].len);
        *n_want += pieces[i].len;
        return;
    }
    for (size_t k = 0; k < pieces[i].replaced; k++, *n_want += 3)
        memcpy(want + *n_want, "\xef\xbf\xbd", 3);
    if (pieces[i].bytes[pieces[i].len - 1] == 'x')
        want[(*n_want)++] = 'x';
}

/*
 * The writer's strings, read back by jansson, are the text they were given (with
 * U+FFFD for ill-formed bytes), for strings long enough to cross the writer's
 * reservation slices with multi-byte sequences astride their edges, as keys and as
 * values, one after another in a buffer that grows.
 */
START_TEST(test_writer_strings_read_back)
{
    enum { MAX_PIECES = 12000, TEXTS = 60 };
    char *in = malloc(MAX_PIECES * 4), *want = malloc(MAX_PIECES * 9);
    ck_assert(in != NULL && want != NULL);
    uint64_t state = 7;
    for (int t = 0; t < TEXTS; t++) {
        size_t pieces = (size_t)(next_random(&state) % MAX_PIECES), n_in = 0, n_want = 0;
        for (size_t i = 0; i < pieces; i++)
            random_text_piece(&state, in, &n_in, want, &n_want);
        struct jw w;
        jw_init(&w, -1);
        jw_array_begin(&w);
        jw_string_n(&w, in, n_in);
        jw_object_begin(&w);
        in[n_in] = '\0';
        jw_key(&w, in); /* a key stops at the first NUL: compare up to it */
        jw_null(&w);
        jw_object_end(&w);
        jw_array_end(&w);
        size_t len;
        char *out = jw_take(&w, &len);
        ck_assert_ptr_nonnull(out);
        json_error_t err;
        json_t *doc = json_loadb(out, len, JSON_ALLOW_NUL, &err);
        ck_assert_msg(doc != NULL, "text %d: %s at %d", t, err.text, err.position);
        json_t *value = json_array_get(doc, 0);
        ck_assert_uint_eq(json_string_length(value), n_want);
        ck_assert(memcmp(json_string_value(value), want, n_want) == 0);
        const char *key = json_object_iter_key(json_object_iter(json_array_get(doc, 1)));
        /* the key is the text's prefix up to the first NUL: its decoding is want's
         * prefix up to the first NUL (NUL is one ASCII piece, so they end together) */
        size_t n_key = strnlen(want, n_want);
        char *key_want = malloc(n_key + 1);
        ck_assert_ptr_nonnull(key_want);
        memcpy(key_want, want, n_key);
        key_want[n_key] = '\0';
        ck_assert_str_eq(key, key_want);
        free(key_want);
        json_decref(doc);
        free(out);
    }
    free(in);
    free(want);
}
END_TEST

/* JW_KEY writes what jw_key does: the same names, commas and nesting. */
START_TEST(test_writer_literal_keys)
{
    struct jw a, b;
    jw_init(&a, -1);
    jw_init(&b, -1);
    jw_object_begin(&a);
    jw_object_begin(&b);
    JW_KEY(&a, "d_k");
    jw_key(&b, "d_k");
    jw_int(&a, 4);
    jw_int(&b, 4);
    JW_KEY(&a, "shapes");
    jw_key(&b, "shapes");
    jw_object_begin(&a);
    jw_object_begin(&b);
    JW_KEY(&a, "");
    jw_key(&b, "");
    jw_null(&a);
    jw_null(&b);
    JW_KEY(&a, "mask_semantics");
    jw_key(&b, "mask_semantics");
    jw_string(&a, "keep");
    jw_string(&b, "keep");
    jw_object_end(&a);
    jw_object_end(&b);
    jw_object_end(&a);
    jw_object_end(&b);
    size_t la, lb;
    char *ta = jw_take(&a, &la), *tb = jw_take(&b, &lb);
    ck_assert_str_eq(ta, "{\"d_k\":4,\"shapes\":{\"\":null,\"mask_semantics\":\"keep\"}}");
    ck_assert_str_eq(ta, tb);
    ck_assert_uint_eq(la, lb);
    free(ta);
    free(tb);
}
END_TEST

/* api_field_pointer writes what snprintf("%s/%s") would, cut the same way. */
START_TEST(test_field_pointer_is_snprintf)
{
    static const char *const prefixes[] = { "", "/items/2", "/heads/11/inputs" };
    static const char *const fields[] = { "q", "mask_semantics", "" };
    for (size_t p = 0; p < 3; p++)
        for (size_t f = 0; f < 3; f++)
            for (size_t size = 1; size <= 32; size++) {
                char got[32], want[32];
                memset(got, '#', sizeof got);
                memset(want, '#', sizeof want);
                api_field_pointer(got, size, prefixes[p], fields[f]);
                snprintf(want, size, "%s/%s", prefixes[p], fields[f]);
                ck_assert_msg(memcmp(got, want, sizeof got) == 0, "%s + %s in %zu bytes: %.*s",
                              prefixes[p], fields[f], size, (int)size, got);
            }
}
END_TEST

/* ---------------------------------------------------------------- Attention */

/* The contract's example response, byte for byte (DESIGN.md, POST /v1/attention). */
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
        "\"entropy\":[0.6931471805599453,0.5822031088882179],\"fully_masked_rows\":[]},"
        "\"warnings\":[]}";
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

/* ------------------------------------------------------------------- Routes */

START_TEST(test_not_found_lists_endpoints)
{
    struct api_response res = call("GET", "/v2/nothing", NULL);
    ck_assert_int_eq(res.status, 404);
    ck_assert_str_eq(res.content_type, "application/problem+json");
    ck_assert_ptr_nonnull(strstr(res.body, "/v1/attention"));
    ck_assert_ptr_nonnull(strstr(res.body, "/problems/not-found"));
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_method_not_allowed_sends_allow)
{
    struct api_response res = call("GET", "/v1/attention", NULL);
    ck_assert_int_eq(res.status, 405);
    ck_assert_uint_eq(res.n_headers, 1);
    ck_assert_str_eq(res.headers[0].name, "Allow");
    ck_assert_str_eq(res.headers[0].value, "POST, OPTIONS");
    api_response_deinit(&res);
    res = call("DELETE", "/healthz", NULL);
    ck_assert_int_eq(res.status, 405);
    ck_assert_str_eq(res.headers[0].value, "GET, HEAD, OPTIONS");
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_content_types)
{
    static const struct { const char *ctype; int status; } cases[] = {
        { "application/json", 200 }, { "application/json; charset=utf-8", 200 },
        { "text/plain", 200 }, { "application/x-www-form-urlencoded", 200 }, { NULL, 200 },
        { "APPLICATION/JSON", 200 }, { "application/xml", 415 }, { "multipart/form-data", 415 },
    };
    struct api_context ctx = test_context();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct api_response res = call_full(&ctx, "POST", "/v1/attention", NULL, cases[i].ctype,
                                            "{" SEED000 "}", NULL, 0);
        ck_assert_msg(res.status == cases[i].status, "%s: %d", cases[i].ctype, res.status);
        if (res.status == 415)
            ck_assert_ptr_nonnull(strstr(res.body, "/problems/unsupported-media-type"));
        api_response_deinit(&res);
    }
}
END_TEST

START_TEST(test_accept_negotiation)
{
    static const struct { const char *accept; int status; } cases[] = {
        { NULL, 200 }, { "*/*", 200 }, { "application/json", 200 },
        { "text/html, application/json;q=0.9", 200 }, { "application/*", 200 },
        { "image/png", 406 }, { "application/json;q=0", 406 }, { "text/csv", 406 },
    };
    struct api_context ctx = test_context();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct api_response res = call_full(&ctx, "POST", "/v1/attention", cases[i].accept,
                                            NULL, "{" SEED000 "}", NULL, 0);
        ck_assert_msg(res.status == cases[i].status, "%s: %d", cases[i].accept, res.status);
        api_response_deinit(&res);
    }
    /* ?format wins over Accept */
    struct api_param json = { "format", "json" }, bogus = { "format", "xml" };
    struct api_response res = call_full(&ctx, "POST", "/v1/attention", "image/png", NULL,
                                        "{" SEED000 "}", &json, 1);
    ck_assert_int_eq(res.status, 200);
    api_response_deinit(&res);
    res = call_full(&ctx, "POST", "/v1/attention", NULL, NULL, "{" SEED000 "}", &bogus, 1);
    ck_assert_int_eq(res.status, 422);
    ck_assert_ptr_nonnull(strstr(res.body, "\"parameter\":\"format\""));
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_precheck_refuses_early)
{
    struct api_context ctx = test_context();
    ctx.limits.max_body = 100;
    struct api_request req = { "POST", "/v1/attention", NULL, 0, NULL, "application/json",
                               NULL, 0, NULL };
    struct api_response res = { 0 };
    ck_assert(api_precheck(&ctx, &req, 101, &res));
    ck_assert_int_eq(res.status, 413);
    ck_assert_ptr_nonnull(strstr(res.body, "/problems/too-large"));
    api_response_deinit(&res);
    ck_assert(!api_precheck(&ctx, &req, 100, &res));
    ck_assert(!api_precheck(&ctx, &req, -1, &res));
    req.content_type = "application/xml";
    ck_assert(api_precheck(&ctx, &req, 10, &res));
    ck_assert_int_eq(res.status, 415);
    api_response_deinit(&res);
    /* A GET is answered in full by the precheck: there is no body to wait for. */
    struct api_request get = { "GET", "/healthz", NULL, 0, NULL, NULL, NULL, 0, NULL };
    ck_assert(api_precheck(&ctx, &get, -1, &res));
    ck_assert_int_eq(res.status, 200);
    ck_assert_str_eq(res.body, "{\"status\":\"ok\"}");
    api_response_deinit(&res);
    /* A body over the limit that arrived without a declared length */
    struct api_request big = { "POST", "/v1/attention", NULL, 0, NULL, NULL,
                               "{" SEED000 "}                                              ",
                               200, NULL };
    api_handle(&ctx, &big, &res);
    ck_assert_int_eq(res.status, 413);
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_health_readiness_version)
{
    struct api_context ctx = test_context();
    struct api_response res = call_full(&ctx, "GET", "/readyz", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(res.status, 200);
    api_response_deinit(&res);
    ctx.ready = false;
    res = call_full(&ctx, "GET", "/readyz", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(res.status, 503);
    ck_assert_ptr_nonnull(strstr(res.body, "/problems/unavailable"));
    api_response_deinit(&res);
    res = call_full(&ctx, "HEAD", "/version", NULL, NULL, NULL, NULL, 0);
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "name")), "attnd");
    ck_assert_ptr_nonnull(json_string_value(json_object_get(doc, "version")));
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "blas")), "OpenBLAS"));
    json_t *libs = json_object_get(doc, "libraries");
    ck_assert_str_eq(json_string_value(json_object_get(libs, "microhttpd")), "0.9.75");
    ck_assert_str_eq(json_string_value(json_object_get(libs, "jansson")), jansson_version_str());
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_spec_is_served)
{
    struct api_response res = call("GET", "/openapi.yaml", NULL);
    ck_assert_int_eq(res.status, 200);
    ck_assert_str_eq(res.content_type, "application/yaml");
    ck_assert_ptr_nonnull(strstr(res.body, "openapi: 3.1"));
    ck_assert_ptr_nonnull(strstr(res.body, "/v1/attention"));
    api_response_deinit(&res);
    res = call("GET", "/openapi.json", NULL);
    ck_assert_int_eq(res.status, 200);
    json_t *doc = parse(&res);
    ck_assert_ptr_nonnull(json_object_get(json_object_get(doc, "paths"), "/v1/attention"));
    json_decref(doc);
    api_response_deinit(&res);
}
END_TEST

static const char *const problem_slugs[] = {
    "invalid-json", "not-found", "method-not-allowed", "too-large", "not-acceptable",
    "unsupported-media-type", "missing-field", "not-a-matrix", "not-a-number", "shape-mismatch",
    "unknown-field", "invalid-value", "numeric-overflow", "limit-exceeded", "unavailable",
};

START_TEST(test_problem_pages)
{
    char path[96];
    snprintf(path, sizeof path, "/problems/%s", problem_slugs[_i]);
    struct api_response res = call("GET", path, NULL);
    ck_assert_int_eq(res.status, 200);
    ck_assert_str_eq(res.content_type, "text/html; charset=utf-8");
    ck_assert_ptr_nonnull(strstr(res.body, "<!doctype html>"));
    ck_assert_ptr_nonnull(strstr(res.body, problem_slugs[_i]));
    api_response_deinit(&res);
}
END_TEST

START_TEST(test_unknown_problem_page)
{
    struct api_response res = call("GET", "/problems/no-such-thing", NULL);
    ck_assert_int_eq(res.status, 404);
    ck_assert_str_eq(res.content_type, "application/problem+json");
    api_response_deinit(&res);
}
END_TEST

/* ------------------------------------------------------------------- Reader */

/* What api/json/read.c builds, compared with jansson's reading of the same text. */
START_TEST(test_reader_values)
{
    static const char text[] =
        " {\"a\": [1, -2, 2.5, -0.125e3, 1E2, 0, 123456789012345678901, 1e-400],\n"
        "  \"s\": \"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/ \\b\\f\\n\\r\\t \xea\xb0\x80\",\n"
        "  \"t\": true, \"f\": false, \"n\": null, \"o\": {}, \"e\": []} ";
    struct api_json_error err;
    json_t *ours = api_json_read(text, sizeof text - 1, &err);
    ck_assert_msg(ours != NULL, "%s at %zu", err.text, err.position);
    /* jansson refuses the 21-digit integer ("too big"), so it reads the string alone. */
    json_error_t jerr;
    json_t *theirs = json_loads("{\"s\": \"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/ "
                                "\\b\\f\\n\\r\\t \xea\xb0\x80\"}", 0, &jerr);
    ck_assert_msg(theirs != NULL, "%s", jerr.text);
    json_t *a = json_object_get(ours, "a");
    ck_assert(json_is_integer(json_array_get(a, 0)) && json_integer_value(json_array_get(a, 1)) == -2);
    ck_assert(json_real_value(json_array_get(a, 3)) == -125.0);
    ck_assert(json_real_value(json_array_get(a, 6)) == 123456789012345678901.0);
    ck_assert(json_real_value(json_array_get(a, 7)) == 0.0); /* underflow rounds to 0 */
    ck_assert_str_eq(json_string_value(json_object_get(ours, "s")),
                     json_string_value(json_object_get(theirs, "s")));
    ck_assert(json_is_true(json_object_get(ours, "t")) && json_is_null(json_object_get(ours, "n")));
    ck_assert_uint_eq(json_object_size(ours), 7);
    json_decref(ours);
    json_decref(theirs);
}
END_TEST

static const struct {
    const char *text;
    const char *what; /* a substring of the error */
    size_t line, column;
} reader_bad[] = {
    { "[1,]", "a value expected", 1, 4 },
    { "{\"a\":1,}", "a string key expected", 1, 8 },
    { "[01]", "leading zeros", 1, 2 },
    { "[1.]", "after '.'", 1, 2 },
    { "[.5]", "a value expected", 1, 2 },
    { "[-]", "after '-'", 1, 2 },
    { "[1e]", "exponent", 1, 2 },
    { "[1e400]", "out of range", 1, 2 },
    { "[1 2]", "',' or ']' expected", 1, 4 },
    { "{\"a\" 1}", "':' expected", 1, 6 },
    { "{a:1}", "a string key expected", 1, 2 },
    { "[nul]", "invalid literal", 1, 2 },
    { "{\"a\":1,\"a\":2}", "duplicate object key \"a\"", 1, 8 },
    { "{} x", "extra data", 1, 4 },
    { "\"abc", "unterminated string", 1, 1 },
    { "[\"a\x01\"]", "control character", 1, 4 },
    { "[\"\\u0000\"]", "\\u0000", 1, 3 },
    { "[\"\\ud800\"]", "high surrogate", 1, 3 },
    { "[\"\\udc00\"]", "lone low surrogate", 1, 3 },
    { "[\"\\x\"]", "invalid escape", 1, 3 },
    { "[\"\\u12G4\"]", "four hex digits", 1, 3 },
    { "[\"\xc3\x28\"]", "invalid UTF-8", 1, 3 },
    { "[\"\xc0\xaf\"]", "invalid UTF-8", 1, 3 },
    { "[\"\xed\xa0\x80\"]", "invalid UTF-8", 1, 3 },
    { "{\n  \"q\": [[1, 0]],\n  \"k\": [[1 0]]\n}", "',' or ']' expected", 3, 12 },
    { "", "the end of the body", 1, 1 },
};

START_TEST(test_reader_refuses)
{
    struct api_json_error err;
    json_t *v = api_json_read(reader_bad[_i].text, strlen(reader_bad[_i].text), &err);
    ck_assert_msg(v == NULL, "case %d was read", _i);
    ck_assert_msg(strstr(err.text, reader_bad[_i].what) != NULL, "case %d: \"%s\"", _i, err.text);
    ck_assert_msg(err.line == reader_bad[_i].line && err.column == reader_bad[_i].column,
                  "case %d: line %zu column %zu", _i, err.line, err.column);
    ck_assert(!err.no_memory);
}
END_TEST

/* Nesting is bounded, so a body of brackets cannot exhaust the stack. */
START_TEST(test_reader_depth)
{
    char deep[2 * (API_JSON_MAX_DEPTH + 1) + 1];
    for (int i = 0; i <= API_JSON_MAX_DEPTH; i++) {
        deep[i] = '[';
        deep[2 * (API_JSON_MAX_DEPTH + 1) - 1 - i] = ']';
    }
    struct api_json_error err;
    ck_assert_ptr_null(api_json_read(deep, 2 * (API_JSON_MAX_DEPTH + 1), &err));
    ck_assert_ptr_nonnull(strstr(err.text, "nesting deeper"));
    json_t *ok = api_json_read(deep + 1, 2 * API_JSON_MAX_DEPTH, &err);
    ck_assert_ptr_nonnull(ok);
    json_decref(ok);
}
END_TEST

/* The body is not NUL-terminated: a number at its very end is read within its bounds. */
START_TEST(test_reader_unterminated_buffer)
{
    char body[] = { '1', '2', '.', '5', '9' };
    struct api_json_error err;
    json_t *v = api_json_read(body, 4, &err);
    ck_assert_ptr_nonnull(v);
    ck_assert(json_real_value(v) == 12.5);
    json_decref(v);
}
END_TEST

/* A deterministic stream of test inputs (splitmix64). */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* One number token of JSON's grammar: printed doubles and arbitrary digit strings. */
static void random_number_token(uint64_t *state, char *out, size_t size)
{
    uint64_t r = next_random(state);
    double x;
    switch (r % 4) {
    case 0: /* any finite double, shortest-ish and full precision */
        do {
            uint64_t bits = next_random(state);
            memcpy(&x, &bits, sizeof x);
        } while (!isfinite(x));
        snprintf(out, size, (r >> 8) % 2 ? "%.17g" : "%.16g", x);
        break;
    case 1: /* values like attention's: |x| < 10, 15 to 17 digits */
        x = ((double)(next_random(state) >> 11) / 9007199254740992.0 - 0.5) * 20.0;
        snprintf(out, size, "%.*g", 15 + (int)((r >> 8) % 3), x);
        break;
    default: { /* digit strings of 1 to 40 digits, a point anywhere, any exponent */
        size_t n = 0, digits = 1 + (r >> 8) % 40, point = (r >> 16) % (digits + 1);
        if ((r >> 24) & 1)
            out[n++] = '-';
        for (size_t i = 0; i < digits; i++) {
            if (i == point && i > 0)
                out[n++] = '.';
            out[n++] = (char)('0' + next_random(state) % 10);
        }
        if (out[(out[0] == '-') ? 1 : 0] == '0' && digits > 1 && point != 1)
            out[(out[0] == '-') ? 1 : 0] = '7'; /* JSON has no leading zeros */
        if ((r >> 32) & 1)
            n += (size_t)snprintf(out + n, size - n, "e%d", (int)((r >> 40) % 700) - 350);
        out[n] = '\0';
    }
    }
}

/* The reader's numbers are strtod's, bit for bit (fast_float rounds as glibc does),
 * by Eisel–Lemire on the gathered digits or by the fallback for what it leaves. */
START_TEST(test_reader_numbers_match_strtod)
{
    static const char *const hard[] = {
        "2.2250738585072011e-308", "2.2250738585072012e-308", "4.9406564584124654e-324",
        "2.4703282292062327e-324", "2.4703282292062328e-324", "1.7976931348623157e308",
        "1.7976931348623158e308", "9007199254740993", "9007199254740993.0",
        "9007199254740992.5", "0.1", "1e23", "8.98846567431158e307", "-0.0", "-0e5",
        "7.2057594037927933e16", "123456789012345678901234567890", "1e-400",
        "0.30000000000000004", "0.3000000000000000444089209850062616169452667236328125",
        /* around the 19 digits a 64-bit significand holds, and leading zeros beyond it */
        "9999999999999999999", "18446744073709551615", "18446744073709551616",
        "1.8446744073709551615e19", "0.00000000000000000000012345678901234567",
        "-0.000000000000000000000000000000000000000000000000000000001", "0e999999999999",
        "1e-99999999999", "12345678901234567890e-20", "0.1234567890123456789",
    };
    enum { N = 60000 };
    size_t cap = (size_t)N * 64 + 4096, len = 0;
    char *text = malloc(cap);
    char (*tokens)[64] = malloc(sizeof *tokens * (N + sizeof hard / sizeof hard[0]));
    ck_assert(text != NULL && tokens != NULL);
    size_t n = 0;
    for (size_t i = 0; i < sizeof hard / sizeof hard[0]; i++)
        snprintf(tokens[n++], sizeof tokens[0], "%s", hard[i]);
    uint64_t state = 2026;
    while (n < N) {
        random_number_token(&state, tokens[n], sizeof tokens[0]);
        if (isfinite(strtod(tokens[n], NULL))) /* beyond a double is refused: not here */
            n++;
    }
    text[len++] = '[';
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(text + len, cap - len, i ? ",%s" : "%s", tokens[i]);
    text[len++] = ']';
    struct api_json_error err;
    json_t *a = api_json_read(text, len, &err);
    ck_assert_msg(a != NULL, "%s at %zu", err.text, err.position);
    ck_assert_uint_eq(json_array_size(a), n);
    for (size_t i = 0; i < n; i++) {
        double want = strtod(tokens[i], NULL), got = json_number_value(json_array_get(a, i));
        if (json_is_integer(json_array_get(a, i))) /* an integer token: its value */
            ck_assert_msg(got == want, "%s: %.17g, not %.17g", tokens[i], got, want);
        else
            ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "%s: %a, not %a", tokens[i],
                          got, want);
    }
    json_decref(a);
    free(tokens);
    free(text);
}
END_TEST

/*
 * api_read_json_number is api_read_json_number_bytewise, field for field and error for
 * error, for every kind of token (printed doubles, digit runs with and without a
 * point or an exponent, each malformed shape) followed by each kind of byte, with the
 * buffer ending 0 to 40 bytes after the token: the vector path reads 32 bytes at once
 * and must leave to the bytewise walk whatever it cannot see the end of. Each buffer
 * is allocated to its exact length, so ASan catches a read past it. The AVX2 path
 * (api_read_json_number_avx2) is compared the same way. (Where the CPU has neither,
 * both calls take the same path as the walk.)
 */
START_TEST(test_reader_vector_path_agrees)
{
    static const char *const shapes[] = {
        "0", "-0", "7", "-7", "0.5", "-0.25", "10", "123456789012345678", "1234567890123456789",
        "12345678901234567890", "0.1234567890123456789", "0.12345678901234567890",
        "-0.22034050321745702", "0.8015213612137668", "9999999999999999999", "1e5", "1E5",
        "-1.5e-7", "2.5E+300", "1.7976931348623157e308", "4.9406564584124654e-324",
        "-", "-a", "01", "-01", "00.5", "1.", "-1.", "1.e3", "1e", "1e+", "1E-", ".5", "--1",
        "0.", "0x1", "1.2.3", "1..2", "+1", "0.0000000000000000000000001",
        "123456789012345678901234567890.5",
    };
    static const char *const afters[] = { "", ",", "]", " ", "}", "x", ".", "e", "5", "-" };
    enum { RANDOM = 3000 };
    size_t n_shapes = sizeof shapes / sizeof shapes[0];
    uint64_t state = 31;
    size_t compared = 0;
    for (size_t i = 0; i < n_shapes + RANDOM; i++) {
        char token[96];
        if (i < n_shapes)
            snprintf(token, sizeof token, "%s", shapes[i]);
        else
            random_number_token(&state, token, sizeof token);
        for (size_t a = 0; a < sizeof afters / sizeof afters[0]; a++) {
            for (size_t pad = 0; pad <= 40; pad += (i < n_shapes ? 1 : 7)) {
                size_t tlen = strlen(token), alen = strlen(afters[a]);
                size_t len = tlen + (pad < alen ? pad : alen) + (pad > alen ? pad - alen : 0);
                char *buf = malloc(len > 0 ? len : 1);
                ck_assert_ptr_nonnull(buf);
                memcpy(buf, token, tlen);
                for (size_t k = tlen; k < len; k++) /* the byte after, then filler digits */
                    buf[k] = k - tlen < alen ? afters[a][k - tlen] : (char)('0' + k % 10);
                struct api_json_number bytes;
                memset(&bytes, 0xA5, sizeof bytes);
                enum api_number_syntax sb = api_read_json_number_bytewise(buf, buf + len, &bytes);
                for (int path = 0; path < 2; path++) { /* the CPU's path, then AVX2's */
                    struct api_json_number vec;
                    memset(&vec, 0xA5, sizeof vec);
                    enum api_number_syntax sv = path == 0
                                                    ? api_read_json_number(buf, buf + len, &vec)
                                                    : api_read_json_number_avx2(buf, buf + len, &vec);
                    ck_assert_msg(sv == sb, "path %d, \"%.*s\": %d, bytewise %d", path, (int)len,
                                  buf, sv, sb);
                    if (sv == API_NUMBER_OK) {
                        ck_assert_msg(vec.end == bytes.end && vec.is_integer == bytes.is_integer &&
                                          (!vec.is_integer || vec.integer == bytes.integer) &&
                                          memcmp(&vec.real, &bytes.real, sizeof vec.real) == 0,
                                      "path %d, \"%.*s\": end %td %a, bytewise end %td %a", path,
                                      (int)len, buf, vec.end - buf, vec.real, bytes.end - buf,
                                      bytes.real);
                    }
                    compared++;
                }
                free(buf);
            }
        }
    }
    ck_assert_uint_gt(compared, 60000);
}
END_TEST

/*
 * The value a row stores for a number: what scan_number_rows stored before the row
 * reader, from api_read_json_number_bytewise (an integer's conversion, else `real`);
 * false where the row must be refused (bad syntax, not finite).
 */
static bool row_value_by_number(const char *p, const char *end, double *x, const char **past)
{
    struct api_json_number num;
    if (api_read_json_number_bytewise(p, end, &num) != API_NUMBER_OK)
        return false;
    *x = num.is_integer ? (double)num.integer : num.real;
    *past = num.end;
    return num.is_integer || isfinite(*x);
}

/*
 * api_read_number_row, on every path this CPU has (bytewise, AVX2, AVX-512 VBMI2
 * narrowed to what runs), reads a row of random tokens with random white space as
 * the number reader reads each token: the same bits, the same count, `next` past the
 * ']'; with room for fewer numbers than the row holds, calls that go on from `next`
 * read the same. Each row is allocated to its exact length (ASan sees a read past it).
 */
START_TEST(test_number_row_reads_as_the_number_reader)
{
    static const char *const spaces[] = { "", "", "", " ", "\n  ", "\t", "\r\n" };
    enum { ROWS = 400, MOST = 40 };
    uint64_t state = 77;
    size_t compared = 0;
    for (int row = 0; row < ROWS; row++) {
        char text[MOST * 128 + 8];
        double want[MOST];
        size_t len = 0, n = 1 + next_random(&state) % MOST;
        for (size_t i = 0; i < n; i++) {
            char token[96];
            const char *past;
            do
                random_number_token(&state, token, sizeof token);
            while (!row_value_by_number(token, token + strlen(token), &want[i], &past));
            len += (size_t)sprintf(text + len, "%s%s%s%s", spaces[next_random(&state) % 7], token,
                                   spaces[next_random(&state) % 7], i + 1 < n ? "," : "]");
        }
        char *buf = malloc(len);
        ck_assert_ptr_nonnull(buf);
        memcpy(buf, text, len);
        for (int path = API_NUMBER_PATH_BYTEWISE; path <= API_NUMBER_PATH_AVX512VBMI2; path++) {
            size_t room = path == API_NUMBER_PATH_BYTEWISE ? n : 1 + next_random(&state) % n;
            double got[MOST];
            size_t count = 0;
            const char *p = buf;
            struct api_number_row r;
            do {
                size_t free_room = n - count < room ? n - count : room;
                r = api_read_number_row_by((enum api_number_path)path, p, buf + len, got + count,
                                           free_room);
                ck_assert_msg(r.next != NULL, "path %d refused \"%.*s\"", path, (int)len, buf);
                ck_assert_uint_le(r.count, free_room);
                count += r.count;
                p = r.next;
            } while (r.more && count < n);
            ck_assert_msg(!r.more && count == n && p == buf + len,
                          "path %d, room %zu: %zu of %zu numbers, more %d, next at %td of %zu",
                          path, room, count, n, r.more, p - buf, len);
            for (size_t i = 0; i < n; i++)
                ck_assert_msg(memcmp(&got[i], &want[i], sizeof got[i]) == 0,
                              "path %d, number %zu of \"%.*s\": %a, want %a", path, i, (int)len,
                              buf, got[i], want[i]);
            compared++;
        }
        free(buf);
    }
    ck_assert_uint_eq(compared, 3 * ROWS);
}
END_TEST

/* What a row of numbers must refuse, and the values it must give, on every path. */
START_TEST(test_number_row_refuses_and_converts)
{
    static const char *const refused[] = {
        "]", " ]", "1,]", "1 2]", "1,,2]", "1", "1,", "[1]]", "\"1\"]", "1e400]",
        "-1e400, 2]", "01]", "1.]", "-]", "1;2]", "1,null]", "true]", "1}", "0.5,",
        "0.12345678901234567890123456789,0.5", "0.1234567890123456,-0.7 x]",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        size_t len = strlen(refused[i]);
        char *buf = malloc(len > 0 ? len : 1);
        ck_assert_ptr_nonnull(buf);
        memcpy(buf, refused[i], len);
        for (int path = API_NUMBER_PATH_BYTEWISE; path <= API_NUMBER_PATH_AVX512VBMI2; path++) {
            double out[8];
            struct api_number_row r =
                api_read_number_row_by((enum api_number_path)path, buf, buf + len, out, 8);
            ck_assert_msg(r.next == NULL, "path %d read \"%s\"", path, refused[i]);
        }
        free(buf);
    }
    /* "-0" is the integer 0 (json_number_value's +0.0), "-0.0" a real -0.0; integers of
     * up to 18 digits are converted, longer ones read as reals, rounded. */
    static const char row[] = "-0, -0.0 ,5,\t123456789012345678 ,12345678901234567890, 1e2]";
    const double want[] = { 0.0, -0.0, 5.0, 123456789012345678.0, 12345678901234567890.0, 100.0 };
    for (int path = API_NUMBER_PATH_BYTEWISE; path <= API_NUMBER_PATH_AVX512VBMI2; path++) {
        double out[6];
        struct api_number_row r = api_read_number_row_by((enum api_number_path)path, row,
                                                         row + sizeof row - 1, out, 6);
        ck_assert_ptr_eq(r.next, row + sizeof row - 1);
        ck_assert_uint_eq(r.count, 6);
        ck_assert(!r.more);
        for (int i = 0; i < 6; i++)
            ck_assert_msg(memcmp(&out[i], &want[i], sizeof out[i]) == 0, "path %d, %d: %a, want %a",
                          path, i, out[i], want[i]);
    }
}
END_TEST

/* A run of digits ends where it ends, whatever its length and alignment. */
START_TEST(test_reader_digit_runs)
{
    for (int digits = 1; digits <= 24; digits++) {
        for (int tail = 0; tail < 3; tail++) {
            char text[64];
            int n = 0;
            text[n++] = '[';
            for (int i = 0; i < digits; i++)
                text[n++] = (char)('1' + i % 9);
            const char *after[] = { "]", ".5]", "e2]" };
            n += snprintf(text + n, sizeof text - (size_t)n, "%s", after[tail]);
            struct api_json_error err;
            json_t *a = api_json_read(text, (size_t)n, &err);
            ck_assert_msg(a != NULL, "%s: %s", text, err.text);
            text[n - 1] = '\0';
            ck_assert_msg(json_number_value(json_array_get(a, 0)) == strtod(text + 1, NULL), "%s",
                          text);
            json_decref(a);
        }
    }
    struct api_json_error err;
    ck_assert_ptr_null(api_json_read("[12345678x9]", 12, &err));
    ck_assert_uint_eq(err.column, 10);
}
END_TEST

/* ---- reading in two halves ---- */

/* A growing text for the bodies below. */
struct text {
    char *buf;
    size_t len, cap;
};

static void text_put(struct text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->buf = realloc(t->buf, t->cap);
        ck_assert_ptr_nonnull(t->buf);
    }
    memcpy(t->buf + t->len, s, n + 1);
    t->len += n;
}

/*
 * A body past API_JSON_SPLIT_BYTES shaped by `seed`: a handful of members, among them
 * matrices, vectors, an empty array, nested objects and strings that hold brackets,
 * braces, commas, quotes and backslashes (which the cut-finder must step over), in an
 * order and with sizes that put the middle in a matrix, between members, or in a
 * member whose value cannot be cut.
 */
static char *halves_body(uint64_t seed, size_t *len)
{
    static const char *const strings[] = {
        "\"plain\"", "\"[[1, 2], {\\\"x\\\": 3}]\"", "\"a \\\\\\\" b, c\"", "\"}, \\\"k\\\": [\"",
        "\"\\\\\"", "\"caf\\u00e9 ]]]\"",
    };
    struct text t = { 0 };
    uint64_t state = seed;
    char num[64];
    size_t members = 2 + next_random(&state) % 6;
    text_put(&t, next_random(&state) % 2 ? " {" : "{\n");
    for (size_t m = 0; m < members; m++) {
        char key[48];
        snprintf(key, sizeof key, "%s\"k%zu%s\": ", m ? ", " : "", m,
                 next_random(&state) % 3 == 0 ? "\\\"[{" : "");
        text_put(&t, key);
        switch (next_random(&state) % 6) {
        case 0:
        case 1: { /* a matrix of up to 300 × 40 */
            size_t rows = 1 + next_random(&state) % 300, cols = 1 + next_random(&state) % 40;
            text_put(&t, "[");
            for (size_t i = 0; i < rows; i++) {
                text_put(&t, i ? ",\n [" : "[");
                for (size_t j = 0; j < cols; j++) {
                    random_number_token(&state, num, sizeof num);
                    if (!isfinite(strtod(num, NULL)))
                        snprintf(num, sizeof num, "%zu", j);
                    text_put(&t, j ? ", " : "");
                    text_put(&t, num);
                }
                text_put(&t, "]");
            }
            text_put(&t, "]");
            break;
        }
        case 2: { /* a vector, or an array of strings */
            size_t n = next_random(&state) % 2000;
            bool strs = next_random(&state) % 2;
            text_put(&t, "[");
            for (size_t j = 0; j < n; j++) {
                text_put(&t, j ? "," : "");
                if (strs)
                    text_put(&t, strings[next_random(&state) % 6]);
                else
                    snprintf(num, sizeof num, "%zu.5", j), text_put(&t, num);
            }
            text_put(&t, "]");
            break;
        }
        case 3: /* an object, nested, with strings */
            text_put(&t, "{\"a\": {\"b\": [true, false, null, ");
            text_put(&t, strings[next_random(&state) % 6]);
            text_put(&t, "]}, \"c\": []}");
            break;
        case 4:
            text_put(&t, strings[next_random(&state) % 6]);
            break;
        default:
            text_put(&t, next_random(&state) % 2 ? "[]" : "-12.5e-3");
        }
    }
    text_put(&t, "}\n");
    *len = t.len;
    return t.buf;
}

/* Both readers agree on text: the same value with its keys in the same order, or the
 * same error at the same place. */
static void expect_halves_agree(const char *text, size_t len, const char *what)
{
    struct api_json_error e1, e2;
    json_t *one = api_json_read(text, len, &e1);
    json_t *two = api_json_read_halves(text, len, &e2);
    ck_assert_msg((one == NULL) == (two == NULL), "%s: one reader failed", what);
    if (one == NULL) {
        ck_assert_msg(strcmp(e1.text, e2.text) == 0 && e1.position == e2.position &&
                          e1.line == e2.line && e1.column == e2.column,
                      "%s: \"%s\" at %zu, not \"%s\" at %zu", what, e2.text, e2.position, e1.text,
                      e1.position);
        return;
    }
    char *d1 = json_dumps(one, JSON_COMPACT | JSON_PRESERVE_ORDER);
    char *d2 = json_dumps(two, JSON_COMPACT | JSON_PRESERVE_ORDER);
    ck_assert_msg(d1 != NULL && d2 != NULL && strcmp(d1, d2) == 0, "%s: values differ", what);
    api_json_free(d1); /* jansson's allocation, in the arena scope when there is one */
    api_json_free(d2);
    json_decref(one);
    json_decref(two);
}

/*
 * Loop: a body read on two threads is the one-thread reader's value; and broken
 * versions of it (a byte changed near the middle, a key repeated across the cut, cut
 * short, extra data) get its errors, byte for byte. Odd _i run inside an arena scope,
 * so the second thread's nodes are merged into it (ASan and valgrind see the rest).
 */
START_TEST(test_reader_halves_agree)
{
    size_t len;
    char *body = halves_body(0xa11 + (uint64_t)_i, &len);
    struct api_json_arena arena;
    if (_i % 2)
        api_json_arena_begin(&arena);
    unsigned long before = api_json_halves_read();
    expect_halves_agree(body, len, "whole");
    ck_assert_msg(api_json_halves_read() > before, "body %d was not read in halves", _i);

    static const char bytes[] = { ',', ']', '[', '"', '}', '{', ':', 'x', ' ', '\\' };
    uint64_t state = (uint64_t)_i;
    for (int k = 0; k < 12; k++) {
        size_t span = len / 2 < 64 ? len / 2 : 64; /* bytes either side of the middle */
        size_t at = len / 2 - span + next_random(&state) % (2 * span);
        char saved = body[at];
        body[at] = bytes[next_random(&state) % sizeof bytes];
        expect_halves_agree(body, len, "a byte changed");
        body[at] = saved;
    }
    char *last_key = NULL;
    for (char *p = strstr(body, "\"k"); p != NULL; p = strstr(p + 1, "\"k"))
        last_key = p;
    if (last_key != NULL) { /* the last member named as the first: a key in both halves */
        char saved = last_key[2];
        last_key[2] = '0';
        expect_halves_agree(body, len, "a repeated key");
        last_key[2] = saved;
    }
    expect_halves_agree(body, len - len / 3, "cut short");
    body[len - 1] = 'x'; /* after the closing brace */
    expect_halves_agree(body, len, "extra data");
    if (_i % 2)
        api_json_arena_end(&arena);
    free(body);
}
END_TEST

/* ------------------------------------------------------------------- Arena */

START_TEST(test_arena_allocations_are_distinct_and_aligned)
{
    struct api_json_arena arena;
    api_json_arena_begin(&arena);
    enum { N = 20000 };
    static unsigned char *blocks[N];
    for (size_t i = 0; i < N; i++) {
        size_t size = 1 + i % 97;
        blocks[i] = api_json_malloc(size);
        ck_assert_ptr_nonnull(blocks[i]);
        ck_assert_uint_eq((uintptr_t)blocks[i] % _Alignof(max_align_t), 0);
        memset(blocks[i], (int)(i & 0xff), size);
    }
    /* A bump allocator: the second block follows the first, rounded to the alignment. */
    ck_assert_ptr_eq(blocks[1], blocks[0] + _Alignof(max_align_t));
    for (size_t i = 0; i < N; i++) /* no block was overwritten by a later one */
        for (size_t j = 0; j < 1 + i % 97; j++)
            ck_assert_uint_eq(blocks[i][j], i & 0xff);
    /* Big blocks have allocations of their own: one freed inside the scope is freed
     * then (ASan and valgrind would report a double free at the end otherwise), one
     * still held is freed with the arena (they would report the leak). */
    unsigned char *big = api_json_malloc(20u * 1024 * 1024);
    unsigned char *kept = api_json_malloc(API_JSON_BIG);
    ck_assert(big != NULL && kept != NULL);
    memset(big, 1, 20u * 1024 * 1024);
    memset(kept, 2, API_JSON_BIG);
    ck_assert(api_json_arena_has(big) && api_json_arena_has(kept));
    api_json_free(big);
    ck_assert(api_json_arena_has(kept));
    api_json_arena_end(&arena);
}
END_TEST

/* A value made before a scope and released inside it is freed (ASan and valgrind
 * would report the leak), and the scope ends where it began, even nested. */
START_TEST(test_arena_scopes_nest)
{
    json_t *older = json_string("made before the scope");
    struct api_json_arena outer, inner;
    api_json_arena_begin(&outer);
    json_t *kept = json_pack("{s:[f,f]}", "a", 1.5, 2.5);
    api_json_arena_begin(&inner);
    json_t *doc = json_loads("[1, 2.5, \"x\"]", 0, NULL);
    ck_assert_ptr_nonnull(doc);
    json_decref(older); /* freed with free(): it is no arena's */
    json_decref(kept);  /* the outer arena's: released with it */
    json_decref(doc);
    api_json_arena_end(&inner);
    json_t *after = json_real(3.0); /* back in the outer arena */
    ck_assert(json_real_value(after) == 3.0);
    api_json_arena_end(&outer);
    json_t *plain = json_array(); /* outside any scope: malloc'd, freed by free() */
    ck_assert_ptr_nonnull(plain);
    json_decref(plain);
    /* A request document outside api_handle's arena: api_release_body frees it all
     * (ASan and valgrind would report a leak); inside one, the arena does. */
    struct api_error err;
    static const char text[] = "{\"q\": [[1, 2.5]]}";
    json_t *body = api_parse_body(text, sizeof text - 1, &err);
    ck_assert_ptr_nonnull(body);
    ck_assert(!api_json_arena_has(body));
    api_release_body(body);
    api_json_arena_begin(&outer);
    body = api_parse_body(text, sizeof text - 1, &err);
    ck_assert(api_json_arena_has(body));
    api_release_body(body);
    api_json_arena_end(&outer);
}
END_TEST

/* ------------------------------------------------------------------- Split writing */

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

static const char *array_value(const char *text, const char *key, size_t *len);

/* The same request answered with one thread and with two: the same bytes, and the
 * second did split its writing and (attention) its forward pass (only one request is
 * in flight here). */
static void assert_split_changes_nothing(const char *path, const char *body)
{
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
    if (strcmp(path, "/v1/attention") == 0) /* the forward pass ran on two threads too */
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
    ck_assert_int_eq(parts.status, 200);
    ck_assert_uint_eq(parts.body_len, one.body_len);
    size_t at = 0;
    if (parts.segments == NULL) {
        ck_assert_uint_eq(aside, 0);
        ck_assert_ptr_nonnull(parts.body);
        ck_assert(memcmp(parts.body, one.body, one.body_len) == 0);
        at = one.body_len;
    } else {
        ck_assert_ptr_null(parts.body);
        ck_assert_uint_ge(parts.segments->n, aside);
        ck_assert_uint_eq(parts.segments->total, one.body_len);
        for (size_t i = 0; i < parts.segments->n; i++) {
            const struct api_segment *g = &parts.segments->seg[i];
            ck_assert(at + g->len <= one.body_len);
            ck_assert_msg(memcmp(one.body + at, g->data, g->len) == 0, "piece %zu differs", i);
            at += g->len;
        }
    }
    ck_assert_uint_eq(at, one.body_len);
    /* Not split (one thread): the text is one buffer, but for a masked step that
     * repeats scaled's text, which is sent again from where that lies (jw_repeat). */
    bool attention = strcmp(path, "/v1/attention") == 0, repeated = true; /* multihead: */
    size_t masked_len = 0, scaled_len = 0;                               /* no mask */
    if (attention) {
        const char *scaled = array_value(one.body, "scaled", &scaled_len);
        const char *masked = array_value(one.body, "masked", &masked_len);
        repeated = scaled_len == masked_len && memcmp(scaled, masked, masked_len) == 0;
    }
    unsigned long splits = api_write_splits();
    struct api_response whole = call_full(&ctx, "POST", path, NULL, "application/json", body,
                                          NULL, 0);
    ck_assert_uint_eq(api_write_splits(), splits);
    ck_assert_uint_eq(whole.body_len, one.body_len);
    if (!repeated) {
        ck_assert_ptr_null(whole.segments);
        ck_assert(memcmp(whole.body, one.body, one.body_len) == 0);
    } else {
        ck_assert_ptr_nonnull(whole.segments);
        size_t owned = 0, borrowed = 0;
        at = 0;
        for (size_t i = 0; i < whole.segments->n; i++) {
            const struct api_segment *g = &whole.segments->seg[i];
            ck_assert(memcmp(one.body + at, g->data, g->len) == 0);
            at += g->len;
            if (g->base == NULL)
                borrowed += g->len;
            else
                owned++;
        }
        ck_assert_uint_eq(at, one.body_len);
        ck_assert_uint_gt(borrowed, 0);
        if (attention) { /* one masked step */
            ck_assert_uint_eq(borrowed, masked_len);
            ck_assert_uint_eq(owned, 2); /* the text before the repeat, and after it */
        }
    }
    api_response_deinit(&whole);
    api_response_deinit(&parts);
    api_response_deinit(&one);
    api_response_deinit(&two);
}

/* What the writer makes of a document with adopted pieces, copied or taken over. */
static char *write_with_pieces(bool may_segment, struct api_segments **pieces, size_t *len)
{
    struct jw w;
    jw_init(&w, -1);
    w.may_segment = may_segment;
    jw_object_begin(&w);
    jw_key(&w, "a");
    jw_array_begin(&w);
    jw_int(&w, 1);
    for (int k = 0; k < 3; k++) {
        struct jw other;
        jw_init(&other, -1);
        jw_array_begin(&other); /* "[2,3" and the like: adopted after its '[' */
        jw_int(&other, 2 + 2 * k);
        jw_int(&other, 3 + 2 * k);
        jw_adopt(&w, &other, 1);
        jw_deinit(&other);
        if (k == 1)
            jw_string(&w, "x");
    }
    jw_array_end(&w);
    jw_object_end(&w);
    *pieces = jw_take_segments(&w);
    return *pieces != NULL ? NULL : jw_take(&w, len);
}

START_TEST(test_writer_pieces)
{
    const char *want = "{\"a\":[1,2,3,4,5,\"x\",6,7]}";
    struct api_segments *pieces = NULL;
    size_t len = 0;
    char *copied = write_with_pieces(false, &pieces, &len);
    ck_assert_ptr_null(pieces);
    ck_assert_str_eq(copied, want);
    free(copied);

    ck_assert_ptr_null(write_with_pieces(true, &pieces, &len));
    ck_assert_ptr_nonnull(pieces);
    ck_assert_uint_eq(pieces->total, strlen(want));
    char joined[64] = "";
    for (size_t i = 0; i < pieces->n; i++)
        strncat(joined, pieces->seg[i].data, pieces->seg[i].len);
    ck_assert_str_eq(joined, want);
    ck_assert_uint_ge(pieces->n, 6); /* three adopted, and the text around them */
    api_segments_free(pieces);

    /* jw_take joins the pieces itself. */
    struct jw w;
    jw_init(&w, -1);
    w.may_segment = true;
    jw_array_begin(&w);
    struct jw other;
    jw_init(&other, -1);
    jw_array_begin(&other);
    jw_int(&other, 9);
    jw_adopt(&w, &other, 1);
    jw_deinit(&other);
    jw_array_end(&w);
    char *text = jw_take(&w, &len);
    ck_assert_str_eq(text, "[9]");
    ck_assert_uint_eq(len, 3);
    free(text);
    jw_deinit(&w);
}
END_TEST

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
 * jw_repeat copies the text between two marks, wherever it lies: in the writer's
 * buffer, in pieces taken over by jw_adopt, or across both.
 */
START_TEST(test_writer_repeat)
{
    enum { VALUES = 5 };
    struct jw w;
    jw_init(&w, -1);
    w.may_segment = true;
    jw_object_begin(&w);
    size_t from[VALUES], to[VALUES], again_from[VALUES], again_to[VALUES];
    for (int k = 0; k < VALUES; k++) {
        char key[8];
        snprintf(key, sizeof key, "v%d", k);
        jw_key(&w, key);
        from[k] = jw_offset(&w);
        if (k % 2 == 1) { /* odd values come as adopted pieces */
            struct jw other;
            jw_init(&other, -1);
            jw_array_begin(&other);
            for (int i = 0; i <= k * 40; i++)
                jw_double(&other, 1.0 / (i + k + 1));
            jw_array_end(&other);
            jw_adopt(&w, &other, 0);
            jw_deinit(&other);
        } else {
            jw_array_begin(&w);
            for (int i = 0; i <= k * 40; i++)
                jw_double(&w, 1.0 / (i + k + 1));
            jw_array_end(&w);
        }
        to[k] = jw_offset(&w);
    }
    for (int k = 0; k < VALUES; k++) { /* v0..v4 again; then v1..v3 as one span */
        char key[8];
        snprintf(key, sizeof key, "r%d", k);
        jw_key(&w, key);
        again_from[k] = jw_offset(&w);
        jw_repeat(&w, from[k], to[k]);
        again_to[k] = jw_offset(&w);
    }
    jw_key(&w, "span");
    size_t span_from = jw_offset(&w);
    jw_array_begin(&w);
    jw_repeat(&w, from[1], to[1]);
    jw_repeat(&w, from[2], to[3]); /* v2, the key of v3 and v3: not one value, but bytes */
    jw_array_end(&w);
    jw_object_end(&w);
    size_t len;
    char *text = jw_take(&w, &len);
    ck_assert_ptr_nonnull(text);
    for (int k = 0; k < VALUES; k++) {
        ck_assert_uint_eq(again_to[k] - again_from[k], to[k] - from[k]);
        ck_assert_msg(memcmp(text + again_from[k], text + from[k], to[k] - from[k]) == 0,
                      "value %d differs", k);
    }
    /* "[" v1 "," v2 ",\"v3\":" v3 "]" */
    size_t at = span_from + 1;
    ck_assert(memcmp(text + at, text + from[1], to[1] - from[1]) == 0);
    at += to[1] - from[1];
    ck_assert_int_eq(text[at], ',');
    ck_assert(memcmp(text + at + 1, text + from[2], to[3] - from[2]) == 0);
    ck_assert_int_eq(text[at + 1 + to[3] - from[2]], ']');
    free(text);

    /* A mark past the text is refused, not read. */
    jw_init(&w, -1);
    jw_array_begin(&w);
    jw_repeat(&w, 0, 100);
    ck_assert(w.failed);
    jw_deinit(&w);
}
END_TEST

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

/*
 * Matrices read straight into numbers (api_json_read_body) against the same bodies
 * read as jansson nodes: byte for byte the same answers, good and bad, on every
 * endpoint that takes matrices, in JSON and as text; and the good ones were packed.
 */
static const struct {
    const char *path, *accept, *body;
    size_t max_cells; /* 0: the default */
} packed_bodies[] = {
    { "/v1/attention", NULL, "{" SEED000 "}", 0 },
    { "/v1/attention", "text/plain", "{" SEED000 "}", 0 },
    { "/v1/attention", NULL, "{ \"q\" : [ [ 1 , -0 ] ,\n[ 0.5e1,-2E-1 ] ] , \"k\":[[1,0],[0,1],[3,3]],"
      "\"v\":[[1],[2],[123456789012345678901]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],"
      "\"mask\":[[1,0]],\"bias\":[[0.5,-1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":[[1,2]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":[[0.5,1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":[[true,1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0],[0,1]],\"v\":[[1],[2]],\"mask\":[1,0]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0],[1]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0],[1,0,2]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,\"0\"]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,null]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,[0]]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,1e400]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,01]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,2,]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,2]],\"k\":[[1,0]],\"v\":[[1]]", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,2]],\"k\":[[1,0]],\"v\":[[1]],\"q\":[[1,2]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[]],\"k\":[[1,0]],\"v\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,2],[3,4]],\"k\":[[1,0]],\"v\":[[1]]}", 3 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0]],\"v\":[[1]],\"include\":[[1]]}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0]],\"v\":[[1]],"
      "\"labels\":{\"queries\":[[1]]}}", 0 },
    { "/v1/attention", NULL, "{\"q\":[[1,0]],\"k\":[[1,0]],\"v\":[[1]],\"extra\":[[1]]}", 0 },
    { "/v1/attention/batch", NULL, "{\"items\":[{" SEED000 "},{\"q\":[[1,0]],\"k\":[[1,0]],"
      "\"v\":[[1,2],[3]]},[[1]]]}", 0 },
    { "/v1/multihead", NULL, "{\"heads\":1,\"x\":[[1,2],[3,4]],\"w_q\":[[1,0],[0,1]],"
      "\"w_k\":[[1,0],[0,1]],\"w_v\":[[1,0],[0,1]],\"w_o\":[[1,0],[0,1]]}", 0 },
    { "/v1/multihead", NULL, "{\"heads\":1,\"x\":[[1,2],[3,4]],\"random\":{\"seed\":5},"
      "\"include\":[\"x\"]}", 0 },
};

START_TEST(test_packed_matrices_same_answers)
{
    struct api_context ctx = test_context();
    if (packed_bodies[_i].max_cells != 0)
        ctx.limits.max_cells = packed_bodies[_i].max_cells;
    const char *path = packed_bodies[_i].path, *accept = packed_bodies[_i].accept;
    const char *body = packed_bodies[_i].body;
    api_json_packing_set(false);
    unsigned long before = api_json_matrices_packed();
    struct api_response nodes = call_full(&ctx, "POST", path, accept, "application/json", body,
                                          NULL, 0);
    ck_assert_uint_eq(api_json_matrices_packed(), before);
    api_json_packing_set(true);
    struct api_response packed = call_full(&ctx, "POST", path, accept, "application/json", body,
                                           NULL, 0);
    ck_assert_int_eq(packed.status, nodes.status);
    ck_assert_msg(packed.body_len == nodes.body_len &&
                      memcmp(packed.body, nodes.body, nodes.body_len) == 0,
                  "%s %s: packed %.*s\nnodes %.*s", path, body, (int)packed.body_len,
                  packed.body, (int)nodes.body_len, nodes.body);
    if (_i == 0) /* seed 000's Q, K and V */
        ck_assert_uint_eq(api_json_matrices_packed(), before + 3);
    api_response_deinit(&nodes);
    api_response_deinit(&packed);
}
END_TEST

/* The reader's side: what is packed and what is not, and the numbers kept. */
START_TEST(test_packed_matrix_records)
{
    static const char text[] = "{\"a\":[[1, -0,2.5],[1e2,-3,4]],\"b\":[[1],[2,3]],\"c\":[[\"x\"]],"
                               "\"d\":[1,2],\"e\":{\"f\":[[7]]},\"g\":[[[1]]],\"h\":[]}";
    struct api_json_arena arena;
    api_json_arena_begin(&arena);
    struct api_json_error err;
    json_t *doc = api_json_read_body(text, sizeof text - 1, &err, 1);
    ck_assert_ptr_nonnull(doc);
    const struct api_json_packed *a = api_json_packed_find(json_object_get(doc, "a"));
    ck_assert_ptr_nonnull(a);
    ck_assert_uint_eq(a->rows, 2);
    ck_assert_uint_eq(a->cols, 3);
    const double want[] = { 1, 0, 2.5, 100, -3, 4 };
    for (size_t i = 0; i < 6; i++)
        ck_assert(a->cells[i] == want[i]);
    ck_assert(!signbit(a->cells[1])); /* -0 is the integer 0, as json_integer reads it */
    ck_assert_uint_eq(a->text_len, strlen("[[1, -0,2.5],[1e2,-3,4]]"));
    ck_assert(memcmp(a->text, "[[1, -0,2.5],[1e2,-3,4]]", a->text_len) == 0);
    /* The document holds an array of as many empty rows. */
    ck_assert_uint_eq(json_array_size(json_object_get(doc, "a")), 2);
    ck_assert(json_is_array(json_array_get(json_object_get(doc, "a"), 1)));
    ck_assert_ptr_nonnull(api_json_packed_find(json_object_get(json_object_get(doc, "e"), "f")));
    ck_assert_ptr_nonnull(api_json_packed_find(json_array_get(json_object_get(doc, "g"), 0)));
    const char *plain[] = { "b", "c", "d", "g", "h" };
    for (size_t i = 0; i < 5; i++) {
        const json_t *v = json_object_get(doc, plain[i]);
        ck_assert_ptr_nonnull(v);
        ck_assert_ptr_null(api_json_packed_find(v));
    }
    ck_assert_uint_eq(json_array_size(json_array_get(json_object_get(doc, "b"), 1)), 2);
    json_decref(doc);
    api_json_arena_end(&arena);

    /* Outside an arena scope nothing is packed. */
    doc = api_json_read_body(text, sizeof text - 1, &err, 1);
    ck_assert_ptr_nonnull(doc);
    ck_assert_uint_eq(json_array_size(json_array_get(json_object_get(doc, "a"), 0)), 3);
    json_decref(doc);
}
END_TEST

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

/*
 * A matrix of many pieces (9 rows of 131,072 cells: pieces of one row, more than may
 * be taken ahead of the answer) on two threads: the same text as on one, whether
 * the pieces written aside are copied in or taken over (a piece of the answer at
 * least for each), and it was split.
 */
START_TEST(test_matrix_blocks_on_two_threads)
{
    enum { ROWS = 9, COLS = 131072 };
    double *data = malloc(sizeof *data * ROWS * COLS);
    ck_assert_ptr_nonnull(data);
    for (size_t i = 0; i < (size_t)ROWS * COLS; i++)
        data[i] = (double)(i % 11) - 5 + (i % 3 ? 0.5 : 0);
    struct attn_matrix m = attn_matrix_view(data, ROWS, COLS);
    char *texts[3];
    size_t lens[3];
    for (int mode = 0; mode < 3; mode++) { /* one thread; two, copied; two, in pieces */
        api_set_threads(mode == 0 ? 1 : 2);
        api_spare_threads_request_begin();
        unsigned long before = api_write_splits(), aside = api_write_pieces_aside();
        struct jw w;
        api_write_start(&w, -1, (size_t)ROWS * COLS, mode == 2);
        api_write_matrix(&w, &m);
        api_spare_threads_request_end();
        api_set_threads(1);
        ck_assert_uint_eq(api_write_splits(), before + (mode == 0 ? 0 : 1));
        aside = api_write_pieces_aside() - aside;
        ck_assert_uint_le(aside, ROWS);
        if (mode < 2 || aside == 0) /* no piece aside: the helper had not begun yet */
            ck_assert_ptr_null(w.done);
        else
            ck_assert_uint_ge(w.done->n, aside);
        texts[mode] = jw_take(&w, &lens[mode]);
        ck_assert_ptr_nonnull(texts[mode]);
        jw_deinit(&w);
    }
    for (int mode = 1; mode < 3; mode++) {
        ck_assert_uint_eq(lens[mode], lens[0]);
        ck_assert(memcmp(texts[mode], texts[0], lens[0]) == 0);
    }
    ck_assert(texts[0][0] == '[' && texts[0][1] == '[' && texts[0][lens[0] - 1] == ']');
    for (int mode = 0; mode < 3; mode++)
        free(texts[mode]);
    free(data);
}
END_TEST

START_TEST(test_split_writing_multihead)
{
    assert_split_changes_nothing("/v1/multihead", "{\"heads\": 2, \"random\": {\"seed\": 4, "
                                 "\"n\": 200, \"d_model\": 16}}");
}
END_TEST

/* jw_int writes what printf's %lld does, for the edges and a spread of values. */
START_TEST(test_writer_integers)
{
    long long xs[64] = { 0, 1, -1, 9, 10, -10, 99, 100, 1000000007, LLONG_MAX, LLONG_MIN,
                         LLONG_MIN + 1 };
    uint64_t state = 99;
    for (size_t i = 12; i < 64; i++) /* every magnitude: a random value shifted down */
        xs[i] = (long long)next_random(&state) >> (i % 63);
    struct jw w;
    jw_init(&w, -1);
    jw_array_begin(&w);
    char want[64 * 24] = "[";
    for (size_t i = 0; i < 64; i++) {
        jw_int(&w, xs[i]);
        size_t n = strlen(want);
        snprintf(want + n, sizeof want - n, "%s%lld", i ? "," : "", xs[i]);
    }
    jw_array_end(&w);
    strcat(want, "]");
    size_t len;
    char *got = jw_take(&w, &len);
    ck_assert_str_eq(got, want);
    free(got);
}
END_TEST

/* ------------------------------------------------------------------ Admission */

/* What api_context.admit saw, and what it answers. */
struct admit_probe {
    bool answer;
    unsigned calls;
    size_t bytes;
};

static enum api_admission admit_probe(void *cls, size_t bytes)
{
    struct admit_probe *p = cls;
    p->calls++;
    p->bytes = bytes;
    return p->answer ? API_ADMIT_YES : API_ADMIT_NO;
}

static struct api_response call_admitting(struct admit_probe *probe, const char *path,
                                          const char *body)
{
    struct api_context ctx = test_context();
    ctx.admit = admit_probe;
    ctx.admit_cls = probe;
    return call_full(&ctx, "POST", path, NULL, "application/json", body, NULL, 0);
}

static const char *header_value(const struct api_response *res, const char *name)
{
    for (size_t i = 0; i < res->n_headers; i++)
        if (strcmp(res->headers[i].name, name) == 0)
            return res->headers[i].value;
    return NULL;
}

/*
 * Seed 000 (2 queries, 2 keys, d_v 2, every part by default): asked once, for the body,
 * the trace's block and 24 bytes a number written.
 */
START_TEST(test_admission_asks_for_the_working_set)
{
    const char *body = "{" SEED000 "}";
    struct admit_probe probe = { true, 0, 0 };
    struct api_response res = call_admitting(&probe, "/v1/attention", body);
    ck_assert_int_eq(res.status, 200);
    ck_assert_uint_eq(probe.calls, 1);
    size_t numbers = 4 * 4 + 4 + 5 * 2; /* four 2x2 steps, the 2x2 output, 5 summary rows */
    size_t trace = attn_trace_bytes_keep(2, 2, 2, ATTN_KEEP_ALL);
    ck_assert_uint_ge(trace, sizeof(double) * (4 * 4 + 4 + 3 * 2));
    ck_assert_uint_eq(probe.bytes, strlen(body) + trace + 24 * numbers);
    api_response_deinit(&res);

    /* Weights alone: three 2x2 steps fewer in the trace, and 4 numbers written. */
    const char *weights = "{" SEED000 ",\"include\":[\"weights\"]}";
    probe = (struct admit_probe){ true, 0, 0 };
    res = call_admitting(&probe, "/v1/attention", weights);
    ck_assert_int_eq(res.status, 200);
    size_t shared = attn_trace_bytes_keep(2, 2, 2, ATTN_KEEP(ATTN_STEP_WEIGHTS) |
                                                       ATTN_KEEP(ATTN_STEP_OUTPUT));
    ck_assert_uint_eq(trace - shared, 3 * 4 * sizeof(double));
    ck_assert_uint_eq(probe.bytes, strlen(weights) + shared + 24 * 4);
    api_response_deinit(&res);

    /* A batch asks once for its valid items together; the invalid one costs nothing. */
    const char *batch = "{\"items\":[{" SEED000 "},{\"q\":[[1]]},{" SEED000 "}]}";
    probe = (struct admit_probe){ true, 0, 0 };
    res = call_admitting(&probe, "/v1/attention/batch", batch);
    ck_assert_int_eq(res.status, 200);
    ck_assert_uint_eq(probe.calls, 1);
    ck_assert_uint_eq(probe.bytes, strlen(batch) + 2 * (trace + 24 * numbers));
    api_response_deinit(&res);

    /* A request that fails validation never asks. */
    probe = (struct admit_probe){ true, 0, 0 };
    res = call_admitting(&probe, "/v1/attention", "{\"q\":[[1,2]],\"k\":[[1]],\"v\":[[1]]}");
    ck_assert_int_eq(res.status, 422);
    ck_assert_uint_eq(probe.calls, 0);
    api_response_deinit(&res);
}
END_TEST

static void assert_refused(struct api_response *res)
{
    ck_assert_int_eq(res->status, 503);
    ck_assert_str_eq(res->content_type, "application/problem+json");
    const char *retry = header_value(res, "Retry-After");
    ck_assert_ptr_nonnull(retry);
    ck_assert_str_eq(retry, "1");
    json_t *doc = parse(res);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "type")), "/problems/unavailable");
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "detail")),
                                 "memory budget"));
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(doc, "hint")),
                                 "--max-memory"));
    json_decref(doc);
}

START_TEST(test_admission_refused_is_503_with_retry_after)
{
    static const char *const cases[][2] = {
        { "/v1/attention", "{" SEED000 "}" },
        { "/v1/attention/batch", "{\"items\":[{" SEED000 "}]}" },
        { "/v1/multihead", "{\"heads\":2,\"random\":{\"seed\":1,\"n\":3,\"d_model\":4}}" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct admit_probe probe = { false, 0, 0 };
        struct api_response res = call_admitting(&probe, cases[i][0], cases[i][1]);
        ck_assert_uint_eq(probe.calls, 1);
        assert_refused(&res);
        api_response_deinit(&res);
    }
    /*
     * The multi-head estimate holds the inputs and every head's trace as doubles, and
     * writes 24 bytes for each number of the included parts: n = 3, d_model = 4,
     * h = 2 (d_k = 2): x (3, 4) and four (4, 4) weights are 76 cells; by default the
     * answer has q, k, v, head_outputs, concat, output (3 x 4 each: 72 numbers), four
     * per-head steps of (2, 3, 3) (72), weights_mean (3, 3) (9) and a summary of five
     * values per head and row (30): 183 numbers.
     */
    struct admit_probe probe = { true, 0, 0 };
    const char *mh = "{\"heads\":2,\"random\":{\"seed\":1,\"n\":3,\"d_model\":4}}";
    struct api_response res = call_admitting(&probe, "/v1/multihead", mh);
    ck_assert_int_eq(res.status, 200);
    ck_assert_uint_eq(probe.bytes,
                      strlen(mh) + 8 * (76 + attn_mh_trace_cells(3, 3, 4, 2, 2)) + 24 * 183);
    ck_assert_uint_ge(attn_mh_trace_cells(3, 3, 4, 2, 2), 2 * attn_trace_cells(3, 3, 2));
    api_response_deinit(&res);
    /* The server's own refusal of a body says the same. */
    api_respond_over_budget(&res, 5000000);
    assert_refused(&res);
    ck_assert_ptr_nonnull(strstr(res.body, "5.0 MB"));
    api_response_deinit(&res);
}
END_TEST

/* Admission that sends work elsewhere: the bytes it was asked for, and how often. */
static enum api_admission admit_elsewhere(void *cls, size_t bytes)
{
    struct admit_probe *p = cls;
    p->calls++;
    p->bytes = bytes;
    return API_ADMIT_ELSEWHERE;
}

START_TEST(test_admission_elsewhere_defers_with_no_answer)
{
    static const char *const cases[][3] = {
        { "/v1/attention", "{" SEED000 "}", NULL },
        { "/v1/attention", "{" SEED000 "}", "text/plain" },
        { "/v1/attention/batch", "{\"items\":[{" SEED000 "}]}", NULL },
        { "/v1/multihead", "{\"heads\":2,\"random\":{\"seed\":1,\"n\":3,\"d_model\":4}}",
          "image/svg+xml" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct admit_probe probe = { false, 0, 0 };
        struct api_context ctx = test_context();
        ctx.admit = admit_elsewhere;
        ctx.admit_cls = &probe;
        struct api_response res = call_full(&ctx, "POST", cases[i][0], cases[i][2],
                                            "application/json", cases[i][1], NULL, 0);
        ck_assert_msg(res.deferred, "%s: deferred", cases[i][0]);
        ck_assert_int_eq(res.status, 0);
        ck_assert_ptr_null(res.body);
        ck_assert_ptr_null(res.segments);
        ck_assert_uint_eq(res.n_headers, 0);
        ck_assert_uint_eq(probe.calls, 1);
        api_response_deinit(&res);
        /* The same request, admitted where it was sent, is answered in full. */
        struct admit_probe yes = { true, 0, 0 };
        ctx.admit = admit_probe;
        ctx.admit_cls = &yes;
        res = call_full(&ctx, "POST", cases[i][0], cases[i][2], "application/json", cases[i][1],
                        NULL, 0);
        ck_assert_int_eq(res.status, 200);
        ck_assert(!res.deferred);
        ck_assert_uint_eq(yes.bytes, probe.bytes); /* the same estimate both times */
        api_response_deinit(&res);
    }
    /* A request refused by its own limit is a 422 before the server is asked at all. */
    struct admit_probe probe = { false, 0, 0 };
    struct api_context ctx = test_context();
    ctx.limits.max_request_bytes = 1;
    ctx.admit = admit_elsewhere;
    ctx.admit_cls = &probe;
    struct api_response res = call_full(&ctx, "POST", "/v1/attention", NULL, "application/json",
                                        "{" SEED000 "}", NULL, 0);
    ck_assert_int_eq(res.status, 422);
    ck_assert(!res.deferred);
    ck_assert_uint_eq(probe.calls, 0);
    api_response_deinit(&res);
}
END_TEST

/* The request limit: status, type and errors[0].pointer of one call under max_request_bytes. */
static void assert_request_limit(size_t limit, const char *path, const char *body, int status,
                                 const char *pointer)
{
    struct admit_probe probe = { true, 0, 0 };
    struct api_context ctx = test_context();
    ctx.limits.max_request_bytes = limit;
    ctx.admit = admit_probe;
    ctx.admit_cls = &probe;
    struct api_response res = call_full(&ctx, "POST", path, NULL, "application/json", body,
                                        NULL, 0);
    ck_assert_msg(res.status == status, "%s %s: %d, not %d: %s", path, body, res.status, status,
                  res.body);
    if (status == 422) {
        json_t *doc = parse(&res);
        ck_assert_str_eq(json_string_value(json_object_get(doc, "type")),
                         "/problems/limit-exceeded");
        const json_t *e0 = json_array_get(json_object_get(doc, "errors"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(e0, "pointer")), pointer);
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(e0, "hint")),
                                     "--max-request-bytes"));
        json_decref(doc);
        ck_assert_uint_eq(probe.calls, 0); /* refused before the budget is even asked */
    }
    api_response_deinit(&res);
}

/* The estimate the budget is asked for, which the limit compares with. */
static size_t working_set_of(const char *path, const char *body)
{
    struct admit_probe probe = { true, 0, 0 };
    struct api_response res = call_admitting(&probe, path, body);
    ck_assert_int_eq(res.status, 200);
    api_response_deinit(&res);
    return probe.bytes;
}

START_TEST(test_request_limit_is_the_working_set)
{
    const char *body = "{" SEED000 "}";
    size_t need = working_set_of("/v1/attention", body);
    assert_request_limit(need, "/v1/attention", body, 200, NULL); /* the limit itself is served */
    assert_request_limit(need - 1, "/v1/attention", body, 422, "/q"); /* n_q = n_k: q */
    /* More keys than queries: k drives the (n_q, n_k) steps. */
    const char *keys = "{\"q\":[[1]],\"k\":[[1],[2],[3]],\"v\":[[1],[2],[3]]}";
    assert_request_limit(working_set_of("/v1/attention", keys) - 1, "/v1/attention", keys, 422,
                         "/k");
    /* A wide v: the output (n_q, d_v) outweighs the (n_q, n_k) steps. */
    const char *wide = "{\"q\":[[1]],\"k\":[[1]],\"v\":[[1,2,3,4,5,6,7,8]]}";
    assert_request_limit(working_set_of("/v1/attention", wide) - 1, "/v1/attention", wide, 422,
                         "/v");
}
END_TEST

START_TEST(test_request_limit_sums_a_batch)
{
    const char *one = "{\"items\":[{" SEED000 "}]}";
    const char *two = "{\"items\":[{" SEED000 "},{" SEED000 "}]}";
    size_t need_one = working_set_of("/v1/attention/batch", one);
    size_t need_two = working_set_of("/v1/attention/batch", two);
    ck_assert_uint_gt(need_two, need_one);
    /* Each item fits alone; together they pass the limit at the second. */
    assert_request_limit(need_two, "/v1/attention/batch", two, 200, NULL);
    assert_request_limit(need_two - 1, "/v1/attention/batch", two, 422, "/items/1");
    /* An item that is over the limit by itself is named down to its field. */
    assert_request_limit(need_one - strlen(one) - 1, "/v1/attention/batch", one, 422,
                         "/items/0/q");
}
END_TEST

START_TEST(test_request_limit_on_multihead_sizes)
{
    /* The 55-byte request whose answer alone is 700 MB: refused by its sizes, before
     * random fills any input, at the default limit. */
    const char *big = "{\"heads\":1,\"random\":{\"seed\":1,\"n\":2048,\"d_model\":1024}}";
    ck_assert_uint_eq(strlen(big), 55);
    assert_request_limit(api_default_limits().max_request_bytes, "/v1/multihead", big, 422,
                         "/random/n");
    const char *n1536 = "{\"heads\":1,\"random\":{\"seed\":1,\"n\":1536,\"d_model\":1536}}";
    assert_request_limit(api_default_limits().max_request_bytes, "/v1/multihead", n1536, 422,
                         "/random/n");
    /* Few rows, wide model: the weights (d_model, d_model) drive it. */
    const char *wide = "{\"heads\":2,\"random\":{\"seed\":1,\"n\":4,\"d_model\":1024}}";
    size_t need = working_set_of("/v1/multihead", wide);
    assert_request_limit(need, "/v1/multihead", wide, 200, NULL);
    assert_request_limit(need - 1, "/v1/multihead", wide, 422, "/random/d_model");
    /* The limit counts what include asks for: output alone needs less. */
    const char *out = "{\"heads\":2,\"random\":{\"seed\":1,\"n\":4,\"d_model\":1024},"
                      "\"include\":[\"output\"]}";
    ck_assert_uint_lt(working_set_of("/v1/multihead", out), need);
    /* Cross-attention with more keys than queries: x_kv's rows drive the maps. */
    const char *cross = "{\"heads\":1,\"x_q\":[[1,0]],\"x_kv\":[[1,0],[0,1],[1,1],[2,2],[3,3],"
                        "[4,4],[5,5],[6,6]],\"random\":{\"seed\":1}}";
    assert_request_limit(working_set_of("/v1/multihead", cross) - 1, "/v1/multihead", cross,
                         422, "/x_kv");
}
END_TEST

static Suite *api_suite(void)
{
    Suite *s = suite_create("api");

    TCase *numbers = tcase_create("Numbers");
    tcase_add_loop_test(numbers, test_shortest_table, 0, sizeof shortest / sizeof shortest[0]);
    tcase_add_test(numbers, test_shortest_round_trips);
    tcase_add_test(numbers, test_non_finite_is_null);
    tcase_add_test(numbers, test_round_like_numpy);
    tcase_add_test(numbers, test_writer_escapes_and_commas);
    tcase_add_test(numbers, test_writer_integers);
    tcase_add_test(numbers, test_writer_replaces_ill_formed_utf8);
    tcase_add_test(numbers, test_writer_strings_read_back);
    tcase_add_test(numbers, test_field_pointer_is_snprintf);
    tcase_add_test(numbers, test_writer_literal_keys);
    suite_add_tcase(s, numbers);

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

    TCase *routes = tcase_create("Routes");
    tcase_add_test(routes, test_not_found_lists_endpoints);
    tcase_add_test(routes, test_method_not_allowed_sends_allow);
    tcase_add_test(routes, test_content_types);
    tcase_add_test(routes, test_accept_negotiation);
    tcase_add_test(routes, test_precheck_refuses_early);
    tcase_add_test(routes, test_health_readiness_version);
    tcase_add_test(routes, test_spec_is_served);
    tcase_add_loop_test(routes, test_problem_pages, 0,
                        sizeof problem_slugs / sizeof problem_slugs[0]);
    tcase_add_test(routes, test_unknown_problem_page);
    suite_add_tcase(s, routes);

    TCase *reader = tcase_create("Reader");
    tcase_add_test(reader, test_reader_values);
    tcase_add_loop_test(reader, test_reader_refuses, 0, sizeof reader_bad / sizeof reader_bad[0]);
    tcase_add_test(reader, test_reader_depth);
    tcase_add_test(reader, test_reader_unterminated_buffer);
    tcase_add_test(reader, test_reader_numbers_match_strtod);
    tcase_add_test(reader, test_number_row_reads_as_the_number_reader);
    tcase_add_test(reader, test_number_row_refuses_and_converts);
    tcase_add_test(reader, test_reader_digit_runs);
    tcase_add_test(reader, test_reader_vector_path_agrees);
    tcase_add_loop_test(reader, test_reader_halves_agree, 0, 40);
    tcase_add_test(reader, test_arena_allocations_are_distinct_and_aligned);
    tcase_add_test(reader, test_arena_scopes_nest);
    tcase_add_loop_test(reader, test_packed_matrices_same_answers, 0,
                        sizeof packed_bodies / sizeof packed_bodies[0]);
    tcase_add_test(reader, test_packed_matrix_records);
    suite_add_tcase(s, reader);

    TCase *split = tcase_create("Split writing");
    tcase_add_test(split, test_split_writing_attention);
    tcase_add_test(split, test_matrix_rows_split);
    tcase_add_test(split, test_packed_matrix_cut_in_halves);
    tcase_add_test(split, test_matrix_blocks_on_two_threads);
    tcase_add_test(split, test_threads_lent_only_to_a_request_alone);
    tcase_add_test(split, test_split_writing_multihead);
    tcase_add_test(split, test_writer_pieces);
    tcase_add_test(split, test_writer_repeat);
    tcase_add_test(split, test_masked_repeats_scaled);
    suite_add_tcase(s, split);

    TCase *admission = tcase_create("Admission");
    tcase_add_test(admission, test_admission_asks_for_the_working_set);
    tcase_add_test(admission, test_admission_refused_is_503_with_retry_after);
    tcase_add_test(admission, test_admission_elsewhere_defers_with_no_answer);
    tcase_add_test(admission, test_request_limit_is_the_working_set);
    tcase_add_test(admission, test_request_limit_sums_a_batch);
    tcase_add_test(admission, test_request_limit_on_multihead_sizes);
    suite_add_tcase(s, admission);
    return s;
}

int main(void)
{
    api_global_init(); /* as the server: one BLAS thread, jansson through api/'s allocator */
    SRunner *sr = srunner_create(api_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
