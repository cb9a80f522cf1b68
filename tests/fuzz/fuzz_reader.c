/*
 * tests/fuzz/fuzz_reader.c — libFuzzer harness for the two-thread JSON reader
 * (api_json_read_halves in api/json/read.h) against the one-thread reader.
 *
 * The input is a request body, any bytes. Both readers read it, inside an arena
 * scope as api_handle reads bodies (so the second thread's nodes are merged into
 * it). What must hold, beyond "no crash, leak, race or undefined behaviour":
 *   - both accept it or both refuse it;
 *   - refused: the same message at the same byte, line and column; the message is its
 *     sentence (json/read.h's `what`) with the holes filled, and the sentence and each
 *     hole's phrase have a Korean row (what request/body.c says in Korean);
 *   - accepted: the same value with the keys in the same order.
 * The halves are tried whatever the body's size (the server waits for 64 KiB), so
 * short inputs reach every cut: between members, inside an array, none at all.
 * Third, the request reader (api_json_read_body_halves: halves, and matrices of
 * numbers read straight into numbers, a cut matrix joined across the cut) against
 * the one-thread reader: the same acceptance and errors, and the same value once
 * every number is written as its double and every packed matrix as its numbers.
 *
 * Fourth, at every byte that may start a number, the number reader against its
 * bytewise walk (api/json/numparse.h): the vector path must read what the walk reads.
 *
 * Not here: what the fields mean (fuzz_api.c), numbers' digits (the unit tests).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/api.h"
#include "api/i18n/fill.h"
#include "api/i18n/lang.h"
#include "api/json/arena.h"
#include "api/json/numparse.h"
#include "api/json/read.h"
#include "api/json/test_hooks.h"

/* v as text with every number as its double and a packed matrix as its numbers, so
 * that a document read with packing compares with one read as nodes. */
static void canonical(const json_t *v, FILE *out)
{
    const struct api_json_packed *packed = api_json_packed_find(v);
    if (packed != NULL) {
        fputc('[', out);
        for (size_t i = 0; i < packed->rows; i++) {
            fputs(i ? ",[" : "[", out);
            for (size_t j = 0; j < packed->cols; j++)
                fprintf(out, "%s%.17g", j ? "," : "", packed->cells[i * packed->cols + j]);
            fputc(']', out);
        }
        fputc(']', out);
        return;
    }
    const char *key;
    const json_t *item;
    size_t i;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        fputc('{', out);
        i = 0;
        json_object_foreach((json_t *)v, key, item) {
            fprintf(out, "%s\"%s\":", i++ ? "," : "", key); /* keys: compared as bytes */
            canonical(item, out);
        }
        fputc('}', out);
        return;
    case JSON_ARRAY:
        fputc('[', out);
        json_array_foreach(v, i, item) {
            if (i)
                fputc(',', out);
            canonical(item, out);
        }
        fputc(']', out);
        return;
    case JSON_INTEGER:
    case JSON_REAL:
        fprintf(out, "%.17g", json_number_value(v));
        return;
    case JSON_STRING:
        fputc('"', out);
        fwrite(json_string_value(v), 1, json_string_length(v), out);
        fputc('"', out);
        return;
    default:
        fputs(json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null", out);
    }
}

static char *canonical_text(const json_t *v)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (out == NULL)
        abort();
    canonical(v, out);
    fclose(out);
    return text;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* At every byte that may start a number: the number reader (its vector path, on a CPU
 * with AVX-512 VBMI2 or AVX2), its AVX2 path and the bytewise reader give the same
 * answer, field for field. */
static void numbers_agree(const char *text, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        if (text[i] != '-' && (unsigned char)(text[i] - '0') >= 10)
            continue;
        struct api_json_number a, b;
        memset(&b, 0, sizeof b);
        enum api_number_syntax sb = api_read_json_number_bytewise(text + i, text + size, &b);
        for (int path = 0; path < 2; path++) { /* the CPU's path, then AVX2's */
            memset(&a, 0, sizeof a);
            enum api_number_syntax sa = path == 0
                                            ? api_read_json_number(text + i, text + size, &a)
                                            : api_read_json_number_avx2(text + i, text + size, &a);
            if (sa != sb || (sa == API_NUMBER_OK &&
                             (a.end != b.end || a.is_integer != b.is_integer ||
                              (a.is_integer && a.integer != b.integer) ||
                              memcmp(&a.real, &b.real, sizeof a.real) != 0))) {
                fprintf(stderr, "the number readers differ at byte %zu (path %d)\n", i, path);
                abort();
            }
        }
    }
}

/* From the start, as if just past a row's '[': the row reader on every path this CPU
 * has reads the same numbers (the same bits, count and end) as its bytewise walk, in
 * room for three numbers a call, so that going on after a full buffer is fuzzed too. */
static void rows_agree(const char *text, size_t size)
{
    enum { ROOM = 3, MOST = 64 };
    double want[MOST], got[MOST];
    struct api_number_row w = { text, 0, true }, g;
    size_t wn = 0;
    while (w.more && wn + ROOM <= MOST) {
        w = api_read_number_row_by(API_NUMBER_PATH_BYTEWISE, w.next, text + size, want + wn, ROOM);
        wn += w.count;
        if (w.next == NULL)
            break;
    }
    for (int path = API_NUMBER_PATH_AVX2; path <= API_NUMBER_PATH_AVX512VBMI2; path++) {
        size_t gn = 0;
        g = (struct api_number_row){ text, 0, true };
        while (g.more && gn + ROOM <= MOST) {
            g = api_read_number_row_by((enum api_number_path)path, g.next, text + size, got + gn, ROOM);
            gn += g.count;
            if (g.next == NULL)
                break;
        }
        if (g.next != w.next || g.more != w.more || (w.next != NULL && (gn != wn ||
                                                     memcmp(got, want, wn * sizeof *got) != 0))) {
            fprintf(stderr, "the row readers differ (path %d)\n", path);
            abort();
        }
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    api_global_init(); /* jansson's allocations through the arena, as in the server */
    return 0;
}

/* e's text is its sentence filled in English, and every part of it has its Korean. */
static void error_in_parts(const struct api_json_error *e)
{
    if (e->what == NULL || e->n_holes > 2)
        abort();
    char parts[2][128], text[sizeof e->text];
    const char *args[2];
    for (unsigned i = 0; i < e->n_holes; i++) {
        const char *d = e->holes[i].data;
        api_fill(parts[i], sizeof parts[i], e->holes[i].phrase, &d, 1);
        args[i] = parts[i];
        if (strcmp(e->holes[i].phrase, "{1}") != 0 &&
            api_tr_in(API_LANG_KO, e->holes[i].phrase) == e->holes[i].phrase)
            abort();
    }
    api_fill(text, sizeof text, e->what, args, e->n_holes);
    if (strcmp(text, e->text) != 0) {
        fprintf(stderr, "the text \"%s\" is not its parts \"%s\"\n", e->text, text);
        abort();
    }
    if (api_tr_in(API_LANG_KO, e->what) == e->what) {
        fprintf(stderr, "no Korean for the reader's \"%s\"\n", e->what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly `size` bytes: a read past the body is an ASan report. */
    char *text = malloc(size ? size : 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);

    struct api_json_arena arena;
    api_json_arena_begin(&arena);
    struct api_json_error e1, e2;
    json_t *one = api_json_read(text, size, &e1);
    json_t *two = api_json_read_halves(text, size, &e2);
    if ((one == NULL) != (two == NULL)) {
        fprintf(stderr, "one reader accepted the body, the other did not\n");
        abort();
    }
    if (one == NULL) {
        if (strcmp(e1.text, e2.text) != 0 || e1.position != e2.position ||
            e1.line != e2.line || e1.column != e2.column || e1.no_memory != e2.no_memory) {
            fprintf(stderr, "errors differ: \"%s\" at %zu, \"%s\" at %zu\n", e1.text,
                    e1.position, e2.text, e2.position);
            abort();
        }
        error_in_parts(&e1);
    } else {
        char *d1 = json_dumps(one, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
        char *d2 = json_dumps(two, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
        if (d1 == NULL || d2 == NULL || strcmp(d1, d2) != 0) {
            fprintf(stderr, "values differ\n");
            abort();
        }
        api_json_free(d1);
        api_json_free(d2);
    }
    struct api_json_error e3;
    json_t *three = api_json_read_body_halves(text, size, &e3);
    if ((one == NULL) != (three == NULL)) {
        fprintf(stderr, "the request reader and the one-thread reader disagree on the body\n");
        abort();
    }
    if (one == NULL) {
        if (strcmp(e1.text, e3.text) != 0 || e1.position != e3.position) {
            fprintf(stderr, "errors differ: \"%s\" at %zu, \"%s\" at %zu\n", e1.text,
                    e1.position, e3.text, e3.position);
            abort();
        }
    } else {
        char *c1 = canonical_text(one), *c3 = canonical_text(three);
        if (strcmp(c1, c3) != 0) {
            fprintf(stderr, "values differ with matrices packed:\n%s\n%s\n", c1, c3);
            abort();
        }
        free(c1);
        free(c3);
    }
    json_decref(one);
    json_decref(two);
    json_decref(three);
    api_json_arena_end(&arena);
    rows_agree(text, size);
    numbers_agree(text, size);
    free(text);
    return 0;
}
