/*
 * tests/unit/check_json_write.c — the JSON writer (api/json/write.c), its pieces
 * (api/json/segments.c) and the matrix writer (api/json/matrix_write.c), called
 * directly.
 *
 * Suites: Writer (escapes, commas, integers as printf writes them, ill-formed UTF-8
 * replaced, long strings read back by jansson, literal keys), Pieces (adopted pieces,
 * repeated text, a matrix written on two threads).
 *
 * Not here: how numbers are printed (check_numfmt.c), what an endpoint writes
 * (check_attention.c and the others).
 */
#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/api.h"
#include "api/json/matrix_write.h"
#include "api/json/segments.h"
#include "api/json/spare_threads.h"
#include "api/json/spare_threads.h"
#include "api/json/test_hooks.h"
#include "api/json/write.h"
#include "core/matrix.h"
#include "tests/unit/api_fixture.h"

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

/* Admission's estimate counts the threads a run may find free later; the run's own
 * count follows what is in progress now. */
START_TEST(test_spare_threads_most_for)
{
    api_spare_threads_set(4);
    api_spare_threads_request_begin();
    api_spare_threads_request_begin(); /* two requests in progress: nothing lent now */
    ck_assert_uint_eq(api_spare_threads_for(API_SPARE_MIN_CELLS), 1);
    ck_assert_uint_eq(api_spare_threads_most_for(API_SPARE_MIN_CELLS), 4);
    ck_assert_uint_eq(api_spare_threads_most_for(API_SPARE_MIN_CELLS - 1), 1);
    api_spare_threads_request_end();
    ck_assert_uint_eq(api_spare_threads_for(API_SPARE_MIN_CELLS), 4); /* alone again */
    api_spare_threads_request_end();
    api_spare_threads_set(1);
    ck_assert_uint_eq(api_spare_threads_most_for(API_SPARE_MIN_CELLS), 1);
}
END_TEST

static Suite *json_write_suite(void)
{
    Suite *s = suite_create("json_write");

    TCase *writer = tcase_create("Writer");
    tcase_add_test(writer, test_writer_escapes_and_commas);
    tcase_add_test(writer, test_writer_integers);
    tcase_add_test(writer, test_writer_replaces_ill_formed_utf8);
    tcase_add_test(writer, test_writer_strings_read_back);
    tcase_add_test(writer, test_writer_literal_keys);
    suite_add_tcase(s, writer);

    TCase *pieces = tcase_create("Pieces");
    tcase_add_test(pieces, test_matrix_blocks_on_two_threads);
    tcase_add_test(pieces, test_writer_pieces);
    tcase_add_test(pieces, test_writer_repeat);
    tcase_add_test(pieces, test_spare_threads_most_for);
    suite_add_tcase(s, pieces);
    return s;
}

int main(void)
{
    return run_api_suite(json_write_suite());
}
