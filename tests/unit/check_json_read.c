/*
 * tests/unit/check_json_read.c — the strict JSON reader (api/json/read.c), called
 * directly, against the promises of api/json/read.h.
 *
 * Suites: Reader (values compared with jansson's, refusals with their line and
 * column, depth, a body without a NUL, numbers bit for bit strtod's), Contract (read.h
 * case by case: valid documents as jansson reads them, escapes to the bytes of their
 * code points, numbers at the edges against strtod and strtoll, the depth limit, and
 * every refusal at its line, column and byte, the same from every reader), Halves (a
 * body read on two threads: the one-thread reader's value or error), Packed (matrices
 * read straight into numbers: the records, and value for value the generic reading).
 *
 * Not here: the number reader's paths one token at a time (check_numparse.c); what an
 * endpoint answers for invalid JSON (check_attention.c).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/json/arena.h"
#include "api/json/read.h"
#include "api/json/test_hooks.h"
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

/* ---- read.h's promises, case by case ---- */

/* len bytes of text in a buffer of exactly that size: ASan reports a read past it. */
static char *exact_copy(const char *text, size_t len)
{
    char *copy = malloc(len > 0 ? len : 1);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, text, len);
    return copy;
}

/* The line and column of byte `position` as read.h defines them (lines end at '\n',
 * both 1-based, columns in bytes), counted here rather than taken from the reader. */
static void line_and_column(const char *text, size_t position, size_t *line, size_t *column)
{
    size_t line_start = 0;
    *line = 1;
    for (size_t i = 0; i < position; i++) {
        if (text[i] == '\n') {
            ++*line;
            line_start = i + 1;
        }
    }
    *column = position - line_start + 1;
}

/* b is the same error as a: the same words at the same byte. */
static void assert_same_error(const struct api_json_error *a, const struct api_json_error *b,
                              const char *what)
{
    ck_assert_msg(strcmp(a->text, b->text) == 0 && a->line == b->line &&
                      a->column == b->column && a->position == b->position &&
                      a->no_memory == b->no_memory,
                  "%s: \"%s\" at %zu (%zu:%zu), not \"%s\" at %zu (%zu:%zu)", what, b->text,
                  b->position, b->line, b->column, a->text, a->position, a->line, a->column);
}

/* The same JSON text, keys in document order (dumped by jansson). */
static void assert_same_value(const json_t *a, const json_t *b, const char *what)
{
    size_t flags = JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER;
    char *da = json_dumps(a, flags), *db = json_dumps(b, flags);
    ck_assert_msg(da != NULL && db != NULL && strcmp(da, db) == 0, "%s: %s, not %s", what,
                  db ? db : "(null)", da ? da : "(null)");
    api_json_free(da); /* jansson's allocations, in the arena scope when there is one */
    api_json_free(db);
}

/*
 * Every refusal read.h promises, each at the offending byte: its line, column and
 * byte position (a malformed number is reported where it begins, an escape at its
 * backslash, ill-formed UTF-8 at the first byte of the sequence, a duplicate key at
 * the key that repeats it). Bodies may hold NUL bytes: each has its length.
 */
static const struct {
    const char *text;
    size_t len;
    const char *what; /* a substring of the error */
    size_t line, column, position;
} refusals[] = {
    /* empty, white space only, structure */
    { "", 0, "the end of the body", 1, 1, 0 },
    { "   ", 3, "the end of the body", 1, 4, 3 },
    { "\n\t\r\n", 4, "the end of the body", 3, 1, 4 },
    { "[", 1, "a value expected, not the end", 1, 2, 1 },
    { "[1", 2, "',' or ']' expected, not the end", 1, 3, 2 },
    { "{", 1, "a string key expected, not the end", 1, 2, 1 },
    { "{\"a\":1", 6, "',' or '}' expected, not the end", 1, 7, 6 },
    { "]", 1, "a value expected, not ']'", 1, 1, 0 },
    { "}", 1, "a value expected, not '}'", 1, 1, 0 },
    { "[1,]", 4, "a value expected", 1, 4, 3 },
    { "{,}", 3, "a string key expected", 1, 2, 1 },
    { "{\"a\"}", 5, "':' expected after a key, not '}'", 1, 5, 4 },
    { "{\"a\":}", 6, "a value expected", 1, 6, 5 },
    { "{'a':1}", 7, "a string key expected, not '''", 1, 2, 1 },
    { "tru", 3, "invalid literal", 1, 1, 0 },
    { "[nul]", 5, "invalid literal", 1, 2, 1 },
    { "True", 4, "a value expected, not 'T'", 1, 1, 0 },
    /* duplicate keys: refused where the key repeats */
    { "{\"a\":1,\"a\":2}", 13, "duplicate object key \"a\"", 1, 8, 7 },
    { "{\"a\":1,\"\\u0061\":2}", 18, "duplicate object key \"a\"", 1, 8, 7 },
    { "{\"q\":[1],\"k\":[2],\"q\":[3]}", 25, "duplicate object key \"q\"", 1, 18, 17 },
    { "{\"a\":1,\"b\":{\"c\":1,\"c\":2}}", 25, "duplicate object key \"c\"", 1, 19, 18 },
    { "[{\"x\":1},{\"x\":1,\"x\":2}]", 23, "duplicate object key \"x\"", 1, 17, 16 },
    { "{\"q\":[[1]],\"k\":[[1]],\"q\":[[2]]}", 31, "duplicate object key \"q\"", 1, 22, 21 },
    { "{\n  \"a\": 1,\n  \"a\": 2\n}", 22, "duplicate object key \"a\"", 3, 3, 14 },
    /* a byte-order mark is not white space, nor a value */
    { "\xef\xbb\xbf{\"q\":[[1]]}", 14, "a value expected, not byte 0xef", 1, 1, 0 },
    { "\xef\xbb\xbf", 3, "a value expected, not byte 0xef", 1, 1, 0 },
    { " \xef\xbb\xbf{}", 6, "a value expected, not byte 0xef", 1, 2, 1 },
    { "[1,\xef\xbb\xbf" "2]", 8, "a value expected, not byte 0xef", 1, 4, 3 },
    /* trailing data */
    { "{} x", 4, "extra data after the JSON value: 'x'", 1, 4, 3 },
    { "{}{}", 4, "extra data", 1, 3, 2 },
    { "[1]]", 4, "extra data", 1, 4, 3 },
    { "1 2", 3, "extra data", 1, 3, 2 },
    { "\"a\"\"b\"", 6, "extra data", 1, 4, 3 },
    { "null,", 5, "extra data", 1, 5, 4 },
    { "truex", 5, "extra data", 1, 5, 4 },
    { "{}\n\n  x", 7, "extra data", 3, 3, 6 },
    { "[1]\x00", 4, "extra data after the JSON value: byte 0x00", 1, 4, 3 },
    { "{}\x0c", 3, "byte 0x0c", 1, 3, 2 }, /* form feed: not JSON white space */
    { "{}\x0b", 3, "byte 0x0b", 1, 3, 2 }, /* vertical tab */
    { "{}\xc2\xa0", 4, "byte 0xc2", 1, 3, 2 }, /* no-break space */
    { "0x1F", 4, "extra data", 1, 2, 1 },
    { "1.5.2", 5, "extra data", 1, 4, 3 },
    /* invalid UTF-8, at the first byte of the bad sequence */
    { "\"\x80\"", 3, "invalid UTF-8", 1, 2, 1 },
    { "\"\xbf\"", 3, "invalid UTF-8", 1, 2, 1 },
    { "\"\xc0\x80\"", 4, "invalid UTF-8", 1, 2, 1 }, /* overlong NUL */
    { "\"\xc1\xbf\"", 4, "invalid UTF-8", 1, 2, 1 }, /* overlong U+007F */
    { "\"\xe0\x80\xaf\"", 5, "invalid UTF-8", 1, 2, 1 }, /* overlong '/', 3 bytes */
    { "\"\xe0\x9f\xbf\"", 5, "invalid UTF-8", 1, 2, 1 }, /* overlong U+07FF */
    { "\"\xf0\x80\x80\xaf\"", 6, "invalid UTF-8", 1, 2, 1 }, /* overlong '/', 4 bytes */
    { "\"\xf0\x8f\xbf\xbf\"", 6, "invalid UTF-8", 1, 2, 1 }, /* overlong U+FFFF */
    { "\"\xed\xa0\x80\"", 5, "invalid UTF-8", 1, 2, 1 }, /* U+D800, a surrogate */
    { "\"\xed\xbf\xbf\"", 5, "invalid UTF-8", 1, 2, 1 }, /* U+DFFF */
    { "\"\xed\xa0\xbd\xed\xb8\x80\"", 8, "invalid UTF-8", 1, 2, 1 }, /* a pair as CESU-8 */
    { "\"\xf4\x90\x80\x80\"", 6, "invalid UTF-8", 1, 2, 1 }, /* past U+10FFFF */
    { "\"\xf5\x80\x80\x80\"", 6, "invalid UTF-8", 1, 2, 1 },
    { "\"\xf8\x88\x80\x80\x80\"", 7, "invalid UTF-8", 1, 2, 1 }, /* a 5-byte form */
    { "\"\xfe\"", 3, "invalid UTF-8", 1, 2, 1 },
    { "\"\xff\"", 3, "invalid UTF-8", 1, 2, 1 },
    { "\"\xc3\"", 3, "invalid UTF-8", 1, 2, 1 }, /* cut by the closing quote */
    { "\"\xe2\x82\"", 4, "invalid UTF-8", 1, 2, 1 },
    { "\"\xe2\x82x\"", 5, "invalid UTF-8", 1, 2, 1 },
    { "\"\xf0\x9f\x98", 4, "invalid UTF-8", 1, 2, 1 }, /* cut by the end of the body */
    { "\"ab\xc3\xa9\xff\"", 7, "invalid UTF-8", 1, 6, 5 }, /* after a good one: columns are bytes */
    { "{\"\xff\":1}", 7, "invalid UTF-8", 1, 3, 2 }, /* in a key */
    { "[\xc3\xa9]", 4, "a value expected, not byte 0xc3", 1, 2, 1 }, /* outside a string */
    /* control characters must be escaped */
    { "\"\x00\"", 3, "control character 0x00", 1, 2, 1 },
    { "\"\x01\"", 3, "control character 0x01", 1, 2, 1 },
    { "\"\x1f\"", 3, "control character 0x1f", 1, 2, 1 },
    { "\"a\tb\"", 5, "control character 0x09", 1, 3, 2 },
    { "\"a\nb\"", 5, "control character 0x0a", 1, 3, 2 },
    { "\"\r\"", 3, "control character 0x0d", 1, 2, 1 },
    { "{\"a\x01\":1}", 8, "control character 0x01", 1, 4, 3 },
    /* escapes, at their backslash */
    { "\"\\u0000\"", 8, "\\u0000 is not allowed", 1, 2, 1 },
    { "[\"a\\u0000b\"]", 12, "\\u0000 is not allowed", 1, 4, 3 },
    { "\"\\ud800\"", 8, "high surrogate \\uD800 without its low half", 1, 2, 1 },
    { "\"\\uDBFF\"", 8, "high surrogate \\uDBFF without its low half", 1, 2, 1 },
    { "\"\\udc00\"", 8, "lone low surrogate \\uDC00", 1, 2, 1 },
    { "\"\\ud800\\u0041\"", 14, "without its low half", 1, 2, 1 },
    { "\"\\ud800\\ud800\"", 14, "without its low half", 1, 2, 1 },
    { "\"\\ud800\\ue000\"", 14, "without its low half", 1, 2, 1 }, /* above the low halves */
    { "\"\\ud800x\"", 9, "without its low half", 1, 2, 1 },
    { "\"\\ud83d\\ude00\\udc00\"", 20, "lone low surrogate", 1, 14, 13 },
    { "\"\\x\"", 4, "invalid escape '\\x'", 1, 2, 1 },
    { "\"\\U0041\"", 8, "invalid escape '\\U'", 1, 2, 1 },
    { "\"\\'\"", 4, "invalid escape '\\''", 1, 2, 1 },
    { "\"\\u12\"", 6, "four hex digits", 1, 2, 1 },
    { "\"\\u12G4\"", 8, "four hex digits", 1, 2, 1 },
    { "\"\\", 2, "unterminated string", 1, 2, 1 },
    { "\"abc", 4, "unterminated string", 1, 1, 0 },
    { "{\"a\":1,\"b", 9, "unterminated string", 1, 8, 7 },
    /* numbers by the grammar, reported where the number begins */
    { "01", 2, "no leading zeros", 1, 1, 0 },
    { "-01", 3, "no leading zeros", 1, 1, 0 },
    { "00", 2, "no leading zeros", 1, 1, 0 },
    { "[01]", 4, "no leading zeros", 1, 2, 1 },
    { "1.", 2, "a digit is expected after '.'", 1, 1, 0 },
    { "-1.", 3, "a digit is expected after '.'", 1, 1, 0 },
    { "1.e5", 4, "a digit is expected after '.'", 1, 1, 0 },
    { "{\"a\":2.}", 8, "a digit is expected after '.'", 1, 6, 5 },
    { ".5", 2, "a value expected, not '.'", 1, 1, 0 },
    { "+1", 2, "a value expected, not '+'", 1, 1, 0 },
    { "NaN", 3, "a value expected, not 'N'", 1, 1, 0 },
    { "nan", 3, "invalid literal", 1, 1, 0 },
    { "Infinity", 8, "a value expected, not 'I'", 1, 1, 0 },
    { "-Infinity", 9, "a digit is expected after '-'", 1, 1, 0 },
    { "-", 1, "a digit is expected after '-'", 1, 1, 0 },
    { "--1", 3, "a digit is expected after '-'", 1, 1, 0 },
    { "- 1", 3, "a digit is expected after '-'", 1, 1, 0 },
    { "[1,-]", 5, "a digit is expected after '-'", 1, 4, 3 },
    { "1e", 2, "a digit is expected in the exponent", 1, 1, 0 },
    { "1e+", 3, "a digit is expected in the exponent", 1, 1, 0 },
    { "1E-", 3, "a digit is expected in the exponent", 1, 1, 0 },
    { "[1ex]", 5, "a digit is expected in the exponent", 1, 2, 1 },
    { "[0x1]", 5, "',' or ']' expected, not 'x'", 1, 3, 2 },
    { "1e400", 5, "out of range", 1, 1, 0 },
    { "-1e400", 6, "out of range", 1, 1, 0 },
    { "1e309", 5, "out of range", 1, 1, 0 },
    { "1.7976931348623159e308", 22, "out of range", 1, 1, 0 },
    /* in a matrix: the same errors, whichever reader takes it */
    { "{\"q\":[[1,01]]}", 14, "no leading zeros", 1, 10, 9 },
    { "{\"q\":[[1,1e400]]}", 17, "out of range", 1, 10, 9 },
    { "{\"q\":[[1,2],[3,]]}", 18, "a value expected", 1, 16, 15 },
    { "{\"q\":[[1 2]]}", 13, "',' or ']' expected, not '2'", 1, 10, 9 },
    { "{\"q\":[[1,2],[3,4]]", 18, "',' or '}' expected, not the end", 1, 19, 18 },
    { "{\"q\":[[1,2],[3,4]", 17, "',' or ']' expected, not the end", 1, 18, 17 },
    { "{\"q\":[[1,2]]},", 14, "extra data", 1, 14, 13 },
    { "[[1,2],[3,-]]", 13, "a digit is expected after '-'", 1, 11, 10 },
    { "{\n\"q\": [[1, 0],\n      [0, .5]]}", 31, "a value expected, not '.'", 3, 11, 26 },
    /* lines and columns: lines end at '\n' alone, columns count bytes */
    { "{\r\n\"a\":01}", 10, "no leading zeros", 2, 5, 7 },
    { "[\"\xc3\xa9\", 01]", 10, "no leading zeros", 1, 8, 7 },
    { "[\n1,\n2,\nx]", 10, "a value expected, not 'x'", 4, 1, 8 },
};

/*
 * Loop: api_json_read refuses each body where the table says; the matrix reader
 * (api_json_read_body, in an arena scope so that it packs) and the two-thread readers
 * refuse it with the same words at the same byte, as read.h promises.
 */
START_TEST(test_reader_refusal_positions)
{
    size_t len = refusals[_i].len;
    char *text = exact_copy(refusals[_i].text, len);
    struct api_json_error err;
    json_t *v = api_json_read(text, len, &err);
    ck_assert_msg(v == NULL, "case %d was read", _i);
    ck_assert_msg(strstr(err.text, refusals[_i].what) != NULL, "case %d: \"%s\", not \"%s\"", _i,
                  err.text, refusals[_i].what);
    ck_assert_msg(err.line == refusals[_i].line && err.column == refusals[_i].column &&
                      err.position == refusals[_i].position,
                  "case %d (\"%s\"): line %zu column %zu byte %zu, not %zu %zu %zu", _i, err.text,
                  err.line, err.column, err.position, refusals[_i].line, refusals[_i].column,
                  refusals[_i].position);
    size_t line, column;
    line_and_column(text, err.position, &line, &column);
    ck_assert_uint_eq(err.line, line);
    ck_assert_uint_eq(err.column, column);
    ck_assert(!err.no_memory);

    struct api_json_error other;
    ck_assert_ptr_null(api_json_read_halves(text, len, &other));
    assert_same_error(&err, &other, "api_json_read_halves");
    struct api_json_arena arena;
    api_json_arena_begin(&arena);
    ck_assert_ptr_null(api_json_read_body(text, len, &other, 1));
    assert_same_error(&err, &other, "api_json_read_body");
    ck_assert_ptr_null(api_json_read_body_halves(text, len, &other));
    assert_same_error(&err, &other, "api_json_read_body_halves");
    api_json_arena_end(&arena);
    free(text);
}
END_TEST

/* Valid documents of every shape, which jansson (an independent reader) reads too. */
static const char *const valid_documents[] = {
    "{\"a\":{\"b\":[1,[2,[3,{}]],{\"c\":null}]},\"d\":[[],[[]],{\"e\":{\"f\":\"g\"}}],"
    "\"t\":true,\"f\":false}",
    " \t\r\n{ \t\r\n\"a\" \t\r\n: \t\r\n[ \t\r\n1 \t\r\n, \t\r\n{ } \t\r\n] \t\r\n} \t\r\n",
    "{\"a\":{\"a\":{\"a\":1}},\"b\":[{\"a\":1},{\"a\":2}]}", /* one key at several levels */
    "{\"a\":1,\"A\":2,\"\\u00e9\":3,\"e\\u0301\":4,\"\":5}", /* keys that only look alike */
    "{\"z\":1,\"y\":2,\"x\":3,\"w\":[3,2,1]}",              /* document order is kept */
    "42", "-1.5e3", "\"s\"", "true", "false", "null", "[]", "{}", " 0 ", "-0",
    "[-0.0,0e0,1E+2,1e-2,0.5,-7]",
    "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]",
    "[\"\\u00e9\\u20AC\\ud83d\\ude00\\uD834\\uDD1E\\udbff\\udfff\\ud800\\udc00\"]",
    "[\"\\u0001\\u001F\\u007f\\u0080\\u07FF\\u0800\\uFFFF\"]",
    /* the first and last characters of each UTF-8 length, and DEL, unescaped */
    "[\"\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf\xf0\x90\x80\x80"
    "\xf4\x8f\xbf\xbf\x7f\"]",
    "\"\xef\xbb\xbf\"", /* a byte-order mark inside a string is a character */
    "{\"\\u0071\":[[1,2],[3,4]],\"k\\n\":[[1.5]]}",
    "[[1,2],[3,4],[5,6]]", "[[1,2],[3]]", "[[]]", "[[1,\"a\"]]", "[[[1]]]", "[[1,2],3]",
};

/* Loop: each valid document reads as jansson reads it (the same values, types and key
 * order), on one thread and in two halves. */
START_TEST(test_reader_reads_what_jansson_reads)
{
    size_t len = strlen(valid_documents[_i]);
    char *text = exact_copy(valid_documents[_i], len);
    struct api_json_error err;
    json_t *ours = api_json_read(text, len, &err);
    ck_assert_msg(ours != NULL, "document %d: %s at %zu", _i, err.text, err.position);
    json_error_t jerr;
    json_t *theirs = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    ck_assert_msg(theirs != NULL, "document %d: jansson: %s", _i, jerr.text);
    ck_assert(json_equal(ours, theirs));
    assert_same_value(theirs, ours, "api_json_read");
    json_t *halves = api_json_read_halves(text, len, &err);
    ck_assert_ptr_nonnull(halves);
    assert_same_value(theirs, halves, "api_json_read_halves");
    json_decref(halves);
    json_decref(ours);
    json_decref(theirs);
    free(text);
}
END_TEST

/* Escapes decode to the UTF-8 of their code points (surrogate pairs to one), byte for
 * byte, in values and in keys. */
START_TEST(test_reader_string_escapes)
{
    static const struct {
        const char *json, *bytes;
        size_t len;
    } cases[] = {
        { "\"\\u00e9\"", "\xc3\xa9", 2 },
        { "\"\\u20AC\"", "\xe2\x82\xac", 3 },
        { "\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80", 4 }, /* U+1F600 */
        { "\"\\uD834\\uDD1E\"", "\xf0\x9d\x84\x9e", 4 }, /* U+1D11E */
        { "\"\\ud800\\udc00\"", "\xf0\x90\x80\x80", 4 }, /* U+10000, the first pair */
        { "\"\\udbff\\udfff\"", "\xf4\x8f\xbf\xbf", 4 }, /* U+10FFFF, the last */
        { "\"\\u0001\\u001f\\u007f\"", "\x01\x1f\x7f", 3 },
        { "\"\\u0080\\u07ff\\u0800\\uffff\"", "\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf", 10 },
        { "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t", 8 },
        { "\"a\\u0062c\"", "abc", 3 },
        { "\"\"", "", 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].json);
        char *text = exact_copy(cases[i].json, n);
        struct api_json_error err;
        json_t *s = api_json_read(text, n, &err);
        ck_assert_msg(s != NULL, "%s: %s", cases[i].json, err.text);
        ck_assert_uint_eq(json_string_length(s), cases[i].len);
        ck_assert_msg(memcmp(json_string_value(s), cases[i].bytes, cases[i].len) == 0, "%s",
                      cases[i].json);
        json_decref(s);
        free(text);

        char object[96]; /* the same string as a key */
        int k = snprintf(object, sizeof object, "{%s:0}", cases[i].json);
        json_t *o = api_json_read(object, (size_t)k, &err);
        ck_assert_msg(o != NULL, "%s: %s", object, err.text);
        const char *key = json_object_iter_key(json_object_iter(o));
        ck_assert_uint_eq(strlen(key), cases[i].len);
        ck_assert(memcmp(key, cases[i].bytes, cases[i].len) == 0);
        json_decref(o);
    }

    /* Past the reader's inline buffer: 300 pairs and 300 plain bytes, as a value and a key. */
    enum { REPEAT = 300 };
    char *text = malloc(2 * REPEAT * 13 + 16), *want = malloc(REPEAT * 5);
    ck_assert(text != NULL && want != NULL);
    size_t n = 0, w = 0;
    text[n++] = '{';
    for (int pass = 0; pass < 2; pass++) {
        text[n++] = '"';
        for (int i = 0; i < REPEAT; i++) {
            memcpy(text + n, "\\ud83d\\ude00x", 13);
            n += 13;
            if (pass == 0) {
                memcpy(want + w, "\xf0\x9f\x98\x80x", 5);
                w += 5;
            }
        }
        text[n++] = '"';
        text[n++] = pass == 0 ? ':' : '}';
    }
    struct api_json_error err;
    json_t *o = api_json_read(text, n, &err);
    ck_assert_msg(o != NULL, "%s at %zu", err.text, err.position);
    const char *key = json_object_iter_key(json_object_iter(o));
    const json_t *value = json_object_iter_value(json_object_iter(o));
    ck_assert_uint_eq(strlen(key), w);
    ck_assert(memcmp(key, want, w) == 0);
    ck_assert_uint_eq(json_string_length(value), w);
    ck_assert(memcmp(json_string_value(value), want, w) == 0);
    json_decref(o);
    free(text);
    free(want);
}
END_TEST

/* Whether tok is an integer by JSON's grammar (no fraction, no exponent) within
 * ±INT64_MAX: read.c keeps those exact, beyond 2^53 too. */
static bool short_integer_token(const char *tok)
{
    const char *magnitude = tok + (tok[0] == '-');
    size_t digits = strspn(magnitude, "0123456789");
    if (magnitude[digits] != '\0' || digits > 19)
        return false;
    errno = 0;
    unsigned long long m = strtoull(magnitude, NULL, 10);
    return errno == 0 && m <= (unsigned long long)INT64_MAX;
}

/*
 * Numbers at the edges of a double and of an integer, bare, in an array and in an
 * object, against strtod and strtoll on the same text: a real is strtod's value bit
 * for bit; an integer is strtoll's, exact; an integer token within ±INT64_MAX is an
 * integer (so 2^53 + 1 and 2^63 - 1 stay themselves); a number strtod cannot hold is refused where
 * it begins.
 */
START_TEST(test_reader_number_edges)
{
    static const char *const tokens[] = {
        "0", "-0", "0.0", "-0.0", "0e0", "-0E-0", "0.000", "1", "-1", "1e308", "-1e308",
        "1.7976931348623157e308", "-1.7976931348623157e308", "1.7976931348623158e308",
        "5e-324", "-5e-324", "4.9406564584124654e-324", "2.4703282292062328e-324",
        "2.4703282292062327e-324", "2.2250738585072014e-308", "2.2250738585072011e-308",
        "1e-400", "-1e-400", "9007199254740992", "9007199254740993", "-9007199254740993",
        "9007199254740993.0", "9007199254740993e0", "123456789012345678", "-123456789012345678",
        "999999999999999999", "1000000000000000000", "9223372036854775807",
        "-9223372036854775808", "9223372036854775808", "18446744073709551616",
        "123456789012345678901234567890", "1E+2", "1e-2", "0.1", "123.456e-7", "1e0",
        "1E00000000000000000001", "1e309", "-1e309", "1.7976931348623159e308", "1e400",
        NULL, /* 1 and 309 zeros: past the largest double, written as an integer */
    };
    static const char *const shapes[][2] = { { "", "" }, { "[", "]" }, { "{\"x\": ", "}" } };
    char huge[311];
    memset(huge, '0', sizeof huge - 1);
    huge[0] = '1';
    huge[sizeof huge - 1] = '\0';
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
        const char *tok = tokens[i] != NULL ? tokens[i] : huge;
        char *end;
        double want = strtod(tok, &end);
        ck_assert(*end == '\0');
        for (size_t s = 0; s < 3; s++) {
            char buf[400];
            int n = snprintf(buf, sizeof buf, "%s%s%s", shapes[s][0], tok, shapes[s][1]);
            char *text = exact_copy(buf, (size_t)n);
            struct api_json_error err;
            json_t *doc = api_json_read(text, (size_t)n, &err);
            if (!isfinite(want)) {
                ck_assert_msg(doc == NULL, "%s was read", buf);
                ck_assert_ptr_nonnull(strstr(err.text, "out of range"));
                ck_assert_uint_eq(err.position, strlen(shapes[s][0]));
                free(text);
                continue;
            }
            ck_assert_msg(doc != NULL, "%s: %s", buf, err.text);
            const json_t *x = s == 0 ? doc : s == 1 ? json_array_get(doc, 0)
                                                   : json_object_get(doc, "x");
            ck_assert_ptr_nonnull(x);
            if (short_integer_token(tok))
                ck_assert_msg(json_is_integer(x), "%s is not an integer", tok);
            if (json_is_integer(x)) {
                errno = 0;
                long long exact = strtoll(tok, NULL, 10);
                ck_assert_msg(errno == 0 && json_integer_value(x) == exact, "%s: %lld", tok,
                              (long long)json_integer_value(x));
            } else {
                double got = json_real_value(x);
                ck_assert_msg(json_is_real(x) && memcmp(&got, &want, sizeof got) == 0,
                              "%s: %a, not %a", tok, got, want);
            }
            json_decref(doc);
            free(text);
        }
    }
}
END_TEST

/* n levels of `open` around `inner`, each closed by `close`, in an exact buffer. */
static char *nested(size_t n, const char *open, const char *inner, const char *close,
                    size_t *len)
{
    size_t lo = strlen(open), li = strlen(inner), lc = strlen(close);
    *len = n * (lo + lc) + li;
    char *text = malloc(*len);
    ck_assert_ptr_nonnull(text);
    for (size_t i = 0; i < n; i++) {
        memcpy(text + i * lo, open, lo);
        memcpy(text + n * lo + li + i * lc, close, lc);
    }
    memcpy(text + n * lo, inner, li);
    return text;
}

/*
 * API_JSON_MAX_DEPTH levels are read and one more is refused, at the bracket that
 * opens it, by every reader: arrays, objects, one bracket a line, a matrix whose rows
 * are the deepest level (the matrix reader's edge), and a body far deeper than the
 * limit (the stack is not the limit).
 */
START_TEST(test_reader_depth_limit)
{
    static const struct {
        const char *open, *inner, *close;
        size_t levels;    /* of open around inner */
        size_t inner_depth; /* the levels inner adds */
    } cases[] = {
        { "[", "", "]", 0, 0 },
        { "{\"a\":", "1", "}", 0, 0 },
        { "[\n", "", "]", 0, 0 },
        { "[{\"a\":", "1", "}]", 0, 0 },
        { "[", "[[1,2],[3,4]]", "]", 0, 2 },
    };
    const size_t max = API_JSON_MAX_DEPTH;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t per = c == 3 ? 2 : 1; /* "[{\"a\":" opens two levels */
        for (size_t extra = 0; extra <= 1; extra++) {
            size_t levels = (max - cases[c].inner_depth) / per + extra, len;
            size_t depth = levels * per + cases[c].inner_depth;
            char *text = nested(levels, cases[c].open, cases[c].inner, cases[c].close, &len);
            struct api_json_error err, other;
            json_t *v = api_json_read(text, len, &err);
            struct api_json_arena arena;
            api_json_arena_begin(&arena);
            unsigned long packed = api_json_matrices_packed();
            json_t *p = api_json_read_body(text, len, &other, 1);
            if (depth <= max) {
                ck_assert_msg(v != NULL && p != NULL, "case %zu, depth %zu: %s", c, depth,
                              err.text);
                if (c == 4) /* the rows at the deepest level: still read into numbers */
                    ck_assert_uint_eq(api_json_matrices_packed(), packed + 1);
            } else {
                ck_assert_msg(v == NULL && p == NULL, "case %zu, depth %zu was read", c, depth);
                ck_assert_ptr_nonnull(strstr(err.text, "nesting deeper than 512 levels"));
                /* at the bracket that opens level max + 1 */
                size_t at = 0, level = 0;
                for (; at < len; at++)
                    if ((text[at] == '[' || text[at] == '{') && ++level == max + 1)
                        break;
                ck_assert_uint_eq(err.position, at);
                size_t line, column;
                line_and_column(text, at, &line, &column);
                ck_assert_uint_eq(err.line, line);
                ck_assert_uint_eq(err.column, column);
                assert_same_error(&err, &other, "api_json_read_body");
            }
            json_decref(p);
            api_json_arena_end(&arena);
            json_decref(v);
            free(text);
        }
    }
    size_t len;
    char *deep = nested(100000, "[", "", "]", &len);
    struct api_json_error err;
    ck_assert_ptr_null(api_json_read(deep, len, &err));
    ck_assert_uint_eq(err.position, max);
    ck_assert_uint_eq(err.column, max + 1);
    free(deep);
}
END_TEST

/* ---- matrices read straight into numbers, against the generic reading ---- */

/* Appends random white space (none most often) to t. */
static void put_space(struct text *t, uint64_t *state)
{
    static const char *const spaces[] = { "", "", "", " ", "\n", "\t", "\r\n  " };
    text_put(t, spaces[next_random(state) % 7]);
}

/* A matrix of rows × cols random number tokens, random white space around each. */
static void put_matrix(struct text *t, uint64_t *state, size_t rows, size_t cols)
{
    static const char *const edges[] = { "-0", "-0.0", "9007199254740993" };
    char num[64];
    text_put(t, "[");
    for (size_t i = 0; i < rows; i++) {
        put_space(t, state);
        text_put(t, i ? ",[" : "[");
        for (size_t j = 0; j < cols; j++) {
            do
                random_number_token(state, num, sizeof num);
            while (!isfinite(strtod(num, NULL)));
            if (next_random(state) % 16 == 0) /* the edges */
                snprintf(num, sizeof num, "%s", edges[next_random(state) % 3]);
            put_space(t, state);
            text_put(t, j ? "," : "");
            put_space(t, state);
            text_put(t, num);
        }
        put_space(t, state);
        text_put(t, "]");
    }
    put_space(t, state);
    text_put(t, "]");
}

/*
 * A body shaped by seed: matrices of many sizes (as values, inside objects, inside
 * arrays of items, wrapped in arrays) among arrays that are almost matrices (ragged,
 * a string, null or a nested array in a row, an empty row, a vector). *matrices is
 * how many true matrices it holds.
 */
static char *packing_body(uint64_t seed, size_t *len, size_t *matrices)
{
    static const char *const almost[] = {
        "[[1,2],[3]]", "[[1,\"a\"]]", "[[1,null]]", "[[1,[2]]]", "[[]]", "[]", "[1,2]",
        "[[1,2],3]", "[[true]]", "[[1e5,2],{}]", "[[1,2],[3,4],[]]",
    };
    struct text t = { 0 };
    uint64_t state = seed;
    *matrices = 0;
    text_put(&t, "{");
    size_t members = 6 + next_random(&state) % 6;
    for (size_t m = 0; m < members; m++) {
        char key[32];
        snprintf(key, sizeof key, "%s\"m%zu\":", m ? "," : "", m);
        text_put(&t, key);
        put_space(&t, &state);
        size_t rows = 1 + next_random(&state) % 40, cols = 1 + next_random(&state) % 30;
        switch (next_random(&state) % 5) {
        case 0:
        case 1:
            put_matrix(&t, &state, rows, cols);
            ++*matrices;
            break;
        case 2: /* as a batch holds them */
            text_put(&t, "{\"items\":[{\"q\":");
            put_matrix(&t, &state, rows, cols);
            text_put(&t, "},");
            put_matrix(&t, &state, cols, rows);
            text_put(&t, "]}");
            *matrices += 2;
            break;
        case 3:
            text_put(&t, "[[");
            put_matrix(&t, &state, rows, cols);
            text_put(&t, "]]");
            ++*matrices;
            break;
        default:
            text_put(&t, almost[next_random(&state) % (sizeof almost / sizeof almost[0])]);
        }
    }
    text_put(&t, "}");
    *len = t.len;
    return t.buf;
}

/*
 * p, read with matrices packed, is g, read as nodes: a packed matrix's cells are g's
 * numbers bit for bit, row by row (the document holds as many empty rows); anything
 * else the same value, keys in the same order. Counts the packed matrices in *packed.
 */
static void assert_packed_is_generic(const json_t *p, const json_t *g, size_t *packed)
{
    const struct api_json_packed *rec = api_json_packed_find(p);
    if (rec != NULL) {
        ck_assert(json_is_array(g));
        ck_assert_uint_eq(json_array_size(p), rec->rows);
        ck_assert_uint_eq(json_array_size(g), rec->rows);
        for (size_t i = 0; i < rec->rows; i++) {
            const json_t *row = json_array_get(g, i);
            ck_assert_uint_eq(json_array_size(json_array_get(p, i)), 0);
            ck_assert_uint_eq(json_array_size(row), rec->cols);
            for (size_t j = 0; j < rec->cols; j++) {
                double want = json_number_value(json_array_get(row, j));
                double got = rec->cells[i * rec->cols + j];
                ck_assert_msg(json_is_number(json_array_get(row, j)) &&
                                  memcmp(&got, &want, sizeof got) == 0,
                              "cell (%zu, %zu): %a, not %a", i, j, got, want);
            }
        }
        ++*packed;
        return;
    }
    ck_assert_int_eq(json_typeof(p), json_typeof(g));
    switch (json_typeof(g)) {
    case JSON_OBJECT: {
        ck_assert_uint_eq(json_object_size(p), json_object_size(g));
        void *ip = json_object_iter((json_t *)p), *ig = json_object_iter((json_t *)g);
        for (; ig != NULL; ip = json_object_iter_next((json_t *)p, ip),
                           ig = json_object_iter_next((json_t *)g, ig)) {
            ck_assert_str_eq(json_object_iter_key(ip), json_object_iter_key(ig));
            assert_packed_is_generic(json_object_iter_value(ip), json_object_iter_value(ig),
                                     packed);
        }
        break;
    }
    case JSON_ARRAY:
        ck_assert_uint_eq(json_array_size(p), json_array_size(g));
        for (size_t i = 0; i < json_array_size(g); i++)
            assert_packed_is_generic(json_array_get(p, i), json_array_get(g, i), packed);
        break;
    case JSON_INTEGER:
        ck_assert(json_integer_value(p) == json_integer_value(g));
        break;
    case JSON_REAL: {
        double a = json_real_value(p), b = json_real_value(g);
        ck_assert(memcmp(&a, &b, sizeof a) == 0);
        break;
    }
    case JSON_STRING:
        ck_assert_uint_eq(json_string_length(p), json_string_length(g));
        ck_assert(memcmp(json_string_value(p), json_string_value(g), json_string_length(g)) == 0);
        break;
    default: /* true, false, null: the type says it all */
        break;
    }
}

/*
 * Loop: the matrix fast path (api_json_read_body inside an arena scope, on one thread
 * and in two halves) agrees value for value with the generic reader (api_json_read)
 * on the same body, every true matrix was read into numbers, and nothing else was.
 */
START_TEST(test_packed_values_match_generic)
{
    size_t len, matrices;
    char *body = packing_body(0x9ac4 + (uint64_t)_i, &len, &matrices);
    char *text = exact_copy(body, len);
    free(body);
    struct api_json_error err;
    json_t *generic = api_json_read(text, len, &err);
    ck_assert_msg(generic != NULL, "body %d: %s at %zu", _i, err.text, err.position);
    for (int halves = 0; halves <= 1; halves++) {
        struct api_json_arena arena;
        api_json_arena_begin(&arena);
        unsigned long before = api_json_matrices_packed();
        json_t *packed = halves ? api_json_read_body_halves(text, len, &err)
                                : api_json_read_body(text, len, &err, 1);
        ck_assert_msg(packed != NULL, "body %d: %s", _i, err.text);
        size_t found = 0;
        assert_packed_is_generic(packed, generic, &found);
        ck_assert_uint_eq(found, matrices);
        ck_assert_uint_eq(api_json_matrices_packed() - before, matrices);
        json_decref(packed);
        api_json_arena_end(&arena);
    }
    json_decref(generic);
    free(text);
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

    TCase *contract = tcase_create("Contract");
    tcase_add_loop_test(contract, test_reader_reads_what_jansson_reads, 0,
                        sizeof valid_documents / sizeof valid_documents[0]);
    tcase_add_test(contract, test_reader_string_escapes);
    tcase_add_test(contract, test_reader_number_edges);
    tcase_add_test(contract, test_reader_depth_limit);
    tcase_add_loop_test(contract, test_reader_refusal_positions, 0,
                        sizeof refusals / sizeof refusals[0]);
    suite_add_tcase(s, contract);

    TCase *halves = tcase_create("Halves");
    tcase_add_loop_test(halves, test_reader_halves_agree, 0, 40);
    suite_add_tcase(s, halves);

    TCase *packed = tcase_create("Packed");
    tcase_add_test(packed, test_packed_matrix_records);
    tcase_add_loop_test(packed, test_packed_values_match_generic, 0, 8);
    suite_add_tcase(s, packed);
    return s;
}

int main(void)
{
    return run_api_suite(json_read_suite());
}
