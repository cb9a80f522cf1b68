/*
 * tests/unit/check_json_read.c — the strict JSON reader (api/json/read.c), called
 * directly, against the promises of api/json/read.h.
 *
 * Suites: Reader (values compared with jansson's, every refusal with its line and
 * column, depth, a body without a NUL, numbers bit for bit strtod's), Halves (a body
 * read on two threads: the one-thread reader's value or error), Packed (matrices read
 * straight into numbers: the records, and the generic reader's values).
 *
 * Not here: the number reader's paths one token at a time (check_numparse.c); what an
 * endpoint answers for invalid JSON (check_attention.c).
 */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/json/arena.h"
#include "api/json/read.h"
#include "tests/unit/api_fixture.h"

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

static Suite *json_read_suite(void)
{
    Suite *s = suite_create("json_read");

    TCase *reader = tcase_create("Reader");
    tcase_add_test(reader, test_reader_values);
    tcase_add_loop_test(reader, test_reader_refuses, 0, sizeof reader_bad / sizeof reader_bad[0]);
    tcase_add_test(reader, test_reader_depth);
    tcase_add_test(reader, test_reader_unterminated_buffer);
    tcase_add_test(reader, test_reader_numbers_match_strtod);
    tcase_add_test(reader, test_reader_digit_runs);
    suite_add_tcase(s, reader);

    TCase *halves = tcase_create("Halves");
    tcase_add_loop_test(halves, test_reader_halves_agree, 0, 40);
    suite_add_tcase(s, halves);

    TCase *packed = tcase_create("Packed");
    tcase_add_test(packed, test_packed_matrix_records);
    suite_add_tcase(s, packed);
    return s;
}

int main(void)
{
    return run_api_suite(json_read_suite());
}
