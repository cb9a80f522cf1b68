/*
 * api/request/matrix.c — matrices, vectors and masks out of a request (see matrix.h).
 */
#include "api/request/matrix.h"
#include "api/request/test_hooks.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/i18n/lang.h"
#include "api/json/arena.h"
#include "api/json/numfmt.h"
#include "api/json/read.h"
#include "api/json/spare_threads.h"
#include "api/request/fields.h"

/* Hints for a value that is not a matrix at all, by the learner's likely intent. */
static void not_a_matrix_hint(struct api_error *err, const json_t *node,
                              const struct api_matrix_spec *spec)
{
    if (json_is_string(node))
        api_error_hint(err, "%s must hold numbers: Q, K and V are vectors of numbers, not "
                       "words; turn each token into a vector first", spec->name);
    else if (json_is_number(node))
        api_error_hint(err, "a single number is not a matrix: write [[%g]] for a 1x1 %s",
                       json_number_value(node), spec->name);
    else
        api_error_hint(err, "write %s as rows of numbers, e.g. [[1, 0], [0, 1]]", spec->name);
}

/* Whether x may stand in a cell of spec: any number, or for flags 0 or 1. */
static inline bool number_fits(double x, const struct api_matrix_spec *spec)
{
    return spec->cells != API_CELLS_FLAGS || x == 0.0 || x == 1.0;
}

bool api_non_finite_word(const json_t *cell, enum api_cells cells, double *out)
{
    if (cells < API_CELLS_NAN_WORDS)
        return false;
    if (json_is_null(cell)) {
        *out = cells == API_CELLS_LSE_WORDS ? -INFINITY : NAN;
        return true;
    }
    const char *s = json_string_value(cell);
    if (s == NULL)
        return false;
    if (strcmp(s, "NaN") == 0)
        *out = NAN;
    else if (strcmp(s, "Infinity") == 0)
        *out = INFINITY;
    else if (strcmp(s, "-Infinity") == 0)
        *out = -INFINITY;
    else
        return false;
    return true;
}

/* The value of one cell, or false when it is not a number (or, for flags, not 0/1/bool). */
static inline bool cell_value(const json_t *cell, const struct api_matrix_spec *spec, double *out)
{
    if (json_is_real(cell) || json_is_integer(cell)) {
        double x = json_number_value(cell);
        if (!number_fits(x, spec))
            return false;
        *out = x;
        return true;
    }
    if (spec->cells == API_CELLS_FLAGS && json_is_boolean(cell)) {
        *out = json_is_true(cell) ? 1.0 : 0.0;
        return true;
    }
    return api_non_finite_word(cell, spec->cells, out);
}

/*
 * Describes why the cell at ptr was refused. Kept off the per-cell path: the
 * pointer text is only built once a cell has failed.
 */
static void cell_error(const json_t *cell, const struct api_matrix_spec *spec, const char *ptr,
                       struct api_error *err)
{
    if (spec->cells == API_CELLS_FLAGS) {
        char shown[API_NUMBER_MAX] = "";
        if (json_is_number(cell))
            api_format_double(json_number_value(cell), shown);
        api_error_set(err, API_INVALID_VALUE, "the %s cell at %s is %s%s%s: %s cells are 0/1 "
                      "or true/false", spec->name, ptr, api_json_kind(cell), shown[0] ? " " : "",
                      shown, spec->name);
        api_error_at(err, "%s", ptr);
        /* 0 and -1e9 (or -inf) is PyTorch's float attn_mask, Hugging Face's extended mask:
           numbers added to the scores, which attnd takes as bias. */
        if (json_is_number(cell) && json_number_value(cell) < 0)
            api_error_hint(err, "0 and a large negative number (such as -1e9) is an additive "
                           "mask, added to the scores: send it as bias instead (same shape), "
                           "or send mask as 0/1");
        else
            api_error_hint(err, "1 (or true) means the query may attend to the key; 0 (or "
                           "false) blocks it (mask_semantics \"block\" flips this)");
        return;
    }
    api_error_set(err, API_NOT_A_NUMBER, "the cell at %s is %s, not a number: %s holds "
                  "numbers", ptr, api_json_kind(cell), spec->name);
    api_error_at(err, "%s", ptr);
    if (spec->cells >= API_CELLS_NAN_WORDS) {
        api_error_hint(err, "each cell of %s is a number, null, or one of the strings \"NaN\", "
                       "\"Infinity\" and \"-Infinity\"", spec->name);
    } else if (json_is_string(cell)) {
        const char *s = json_string_value(cell);
        char *end;
        strtod(s, &end);
        if (end != s && *end == '\0')
            api_error_hint(err, "\"%.40s\" is a string: write the number without quotes", s);
        else
            api_error_hint(err, "Q, K and V hold numbers, not words: \"%.40s\" must first be "
                           "turned into a vector", s);
    } else if (json_is_null(cell)) {
        api_error_hint(err, "JSON has no NaN or infinity: every cell needs a finite number");
    } else if (json_is_boolean(cell)) {
        api_error_hint(err, "booleans belong in a mask; here write 1 or 0");
    } else {
        api_error_hint(err, "each cell of %s is one number", spec->name);
    }
}

/* Allocates rows x cols after checking the limit; err is set on failure. */
static bool alloc_matrix(size_t rows, size_t cols, const char *pointer,
                         const struct api_matrix_spec *spec, size_t max_cells,
                         struct attn_matrix *out, struct api_error *err)
{
    int overflow = 0;
    size_t cells = attn_cells(rows, cols, &overflow);
    if (overflow || cells > max_cells) {
        api_error_set(err, API_LIMIT_EXCEEDED, "%s has %zu x %zu = %zu cells; this server "
                      "computes at most %zu cells in one matrix", spec->name, rows, cols,
                      cells, max_cells);
        api_error_at(err, "%s", pointer);
        return false;
    }
    double *data = malloc(cells * sizeof *data);
    if (data == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s (%zu cells)", spec->name, cells);
        return false;
    }
    *out = attn_matrix_view(data, rows, cols);
    return true;
}

static bool read_vector(const json_t *node, const char *pointer, const struct api_matrix_spec *spec,
                        size_t max_cells, struct attn_matrix *out, struct api_error *err)
{
    size_t n = json_array_size(node);
    if (!alloc_matrix(1, n, pointer, spec, max_cells, out, err))
        return false;
    for (size_t j = 0; j < n; j++) {
        const json_t *cell = json_array_get(node, j);
        if (cell_value(cell, spec, &out->data[j]))
            continue;
        char ptr[96];
        snprintf(ptr, sizeof ptr, "%s/%zu", pointer, j);
        if (json_is_array(cell)) {
            api_error_set(err, API_NOT_A_MATRIX, "%s mixes numbers and rows: %s is an array "
                          "but %s/0 is not", spec->name, ptr, pointer);
            api_error_at(err, "%s", ptr);
            api_error_hint(err, "a vector holds numbers, a matrix holds rows: write every "
                           "element of %s as a row [...]", spec->name);
            return false;
        }
        cell_error(cell, spec, ptr, err);
        return false;
    }
    return true;
}

/* Checks row i of a matrix whose first row has `cols` cells; err names the row. */
static bool check_row(const json_t *row, size_t i, size_t cols, const char *pointer,
                      const struct api_matrix_spec *spec, struct api_error *err)
{
    if (!json_is_array(row)) {
        api_error_set(err, API_NOT_A_MATRIX, "row %zu of %s is %s, not an array of numbers",
                      i, spec->name, api_json_kind(row));
        api_error_at(err, "%s/%zu", pointer, i);
        api_error_hint(err, "every row of %s %s is an array: write [[...], [...]]", spec->name,
                       spec->shape);
        return false;
    }
    size_t len = json_array_size(row);
    if (len == 0) {
        api_error_set(err, API_NOT_A_MATRIX, "row %zu of %s is empty", i, spec->name);
        api_error_at(err, "%s/%zu", pointer, i);
        api_error_hint(err, "every row of %s needs at least one number", spec->name);
        return false;
    }
    if (len != cols) {
        api_error_set(err, API_NOT_A_MATRIX, "%s is ragged: row %zu has %zu numbers but row 0 "
                      "has %zu", spec->name, i, len, cols);
        api_error_at(err, "%s/%zu", pointer, i);
        api_error_hint(err, "every row of %s %s needs the same length (%zu): check row %zu for "
                       "a missing or extra number", spec->name, spec->shape, cols, i);
        return false;
    }
    return true;
}

/* Rows [from, to) of a matrix node into out, whose first row's length is out->cols;
 * ok is false and err says why at the first bad row or cell, in row-major order. */
struct row_run {
    const json_t *node;
    const char *pointer;
    const struct api_matrix_spec *spec;
    struct attn_matrix *out;
    size_t from, to;
    bool ok;
    struct api_error *err;
    enum api_lang lang; /* the request's: a helper thread says its messages in it too */
};

static void *read_rows(void *arg)
{
    struct row_run *run = arg;
    api_lang_set_current(run->lang);
    size_t cols = run->out->cols;
    for (size_t i = run->from; i < run->to; i++) {
        const json_t *row = json_array_get(run->node, i);
        if (!check_row(row, i, cols, run->pointer, run->spec, run->err)) {
            run->ok = false;
            return NULL;
        }
        for (size_t j = 0; j < cols; j++) {
            const json_t *cell = json_array_get(row, j);
            if (cell_value(cell, run->spec, &run->out->data[i * cols + j]))
                continue;
            char ptr[96];
            snprintf(ptr, sizeof ptr, "%s/%zu/%zu", run->pointer, i, j);
            cell_error(cell, run->spec, ptr, run->err);
            run->ok = false;
            return NULL;
        }
    }
    return NULL;
}

static atomic_ulong matrix_splits;

unsigned long api_read_matrix_splits(void)
{
    return atomic_load(&matrix_splits);
}

/*
 * run's rows, the second half on another thread when the request may borrow one (a
 * large matrix: this is the one-thread stretch between reading a body in halves and
 * the forward pass). Errors as on one thread: the first half's first, else the
 * second's. False on error.
 */
static bool read_rows_on_two_threads(struct row_run *run)
{
    size_t rows = run->to - run->from;
    struct api_error second_err;
    memset(&second_err, 0, sizeof second_err);
    struct row_run second = *run;
    second.from = run->from + rows / 2;
    second.err = &second_err;
    pthread_t t;
    /* pthreads, not C11 threads: the sanitizers follow pthread_create only. */
    if (rows < 2 || api_spare_threads_for(rows * run->out->cols) < 2 ||
        pthread_create(&t, NULL, read_rows, &second) != 0) {
        read_rows(run);
        return run->ok;
    }
    run->to = second.from;
    read_rows(run);
    pthread_join(t, NULL);
    atomic_fetch_add(&matrix_splits, 1);
    if (run->ok && !second.ok)
        *run->err = second_err;
    return run->ok && second.ok;
}

/*
 * A matrix that api_json_read_body read into numbers (json/read.h): its rows x cols
 * cells, checked as read_rows checks them. Should a cell be refused (a mask's 2),
 * its text is read again as a document and goes the general way, so that the error
 * is read_rows' own, word for word. False on error.
 */
static bool read_packed(const struct api_json_packed *packed, const char *pointer,
                        const struct api_matrix_spec *spec, size_t max_cells,
                        struct attn_matrix *out, bool *is_vector, struct api_error *err)
{
    if (!alloc_matrix(packed->rows, packed->cols, pointer, spec, max_cells, out, err))
        return false;
    size_t cells = packed->rows * packed->cols;
    memcpy(out->data, packed->cells, cells * sizeof *out->data);
    bool ok = true;
    for (size_t i = 0; spec->cells == API_CELLS_FLAGS && ok && i < cells; i++)
        ok = number_fits(out->data[i], spec);
    if (ok)
        return true;
    api_matrix_free(out);
    struct api_json_error jerr;
    json_t *doc = api_json_read(packed->text, packed->text_len, &jerr);
    if (doc == NULL) { /* it read once: only memory can fail it now */
        api_error_set(err, API_UNAVAILABLE, "no memory to read %s", spec->name);
        return false;
    }
    ok = api_read_matrix(doc, pointer, spec, max_cells, out, is_vector, err);
    json_decref(doc);
    return ok;
}

bool api_read_matrix(const json_t *node, const char *pointer, const struct api_matrix_spec *spec,
                     size_t max_cells, struct attn_matrix *out, bool *is_vector,
                     struct api_error *err)
{
    memset(out, 0, sizeof *out);
    *is_vector = false;
    const struct api_json_packed *packed = api_json_packed_find(node);
    if (packed != NULL)
        return read_packed(packed, pointer, spec, max_cells, out, is_vector, err);
    if (!json_is_array(node) || json_array_size(node) == 0) {
        if (json_is_array(node))
            api_error_set(err, API_NOT_A_MATRIX, "%s is empty: it must be a matrix %s",
                          spec->name, spec->shape);
        else
            api_error_set(err, API_NOT_A_MATRIX, "%s is %s, not a matrix %s", spec->name,
                          api_json_kind(node), spec->shape);
        api_error_at(err, "%s", pointer);
        not_a_matrix_hint(err, node, spec);
        return false;
    }
    const json_t *first = json_array_get(node, 0);
    if (!json_is_array(first)) {
        if (spec->allow_vector) {
            *is_vector = true;
            if (read_vector(node, pointer, spec, max_cells, out, err))
                return true;
            api_matrix_free(out);
            return false;
        }
        api_error_set(err, API_NOT_A_MATRIX, "%s is a flat list, not a matrix %s", spec->name,
                      spec->shape);
        api_error_at(err, "%s", pointer);
        api_error_hint(err, "%s needs rows: for a single row write [[...]] (with the extra "
                       "brackets)", spec->name);
        return false;
    }

    size_t rows = json_array_size(node), cols = json_array_size(first);
    if (cols == 0) {
        check_row(first, 0, 1, pointer, spec, err);
        return false;
    }
    if (!alloc_matrix(rows, cols, pointer, spec, max_cells, out, err))
        return false;
    struct row_run run = { node, pointer, spec, out, 0, rows, true, err, api_lang_current() };
    if (!read_rows_on_two_threads(&run)) {
        api_matrix_free(out);
        return false;
    }
    return true;
}

void api_matrix_free(struct attn_matrix *m)
{
    free(m->data);
    memset(m, 0, sizeof *m);
}
