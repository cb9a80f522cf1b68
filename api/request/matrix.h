/*
 * api/request/matrix.h — reading a matrix field (q, k, v, a mask, a bias, a weight)
 * strictly: every mistake a problem naming the cell or row by JSON pointer, with the
 * seeds' hints for the likely intent (a scalar where a matrix goes, a ragged row).
 *
 * Ownership: a matrix read here owns its data (malloc'd); api_matrix_free releases it.
 */
#ifndef API_REQUEST_MATRIX_H
#define API_REQUEST_MATRIX_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/http/problem.h"
#include "core/matrix.h"

/* What a cell holds: numbers, or flags, or (a kernel's answer) numbers and the words
 * JSON has no number for. */
enum api_cells {
    API_CELLS_NUMBERS = 0,
    API_CELLS_FLAGS = 1,   /* a mask: true/false or 0/1 only, read as 1.0 / 0.0 */
    API_CELLS_NAN_WORDS,   /* "NaN", "Infinity", "-Infinity" too, and null as NaN (what
                              JSON.stringify writes for each of them) */
    API_CELLS_LSE_WORDS,   /* the same, but null is −inf: a fully masked row's lse, as
                              attnd's answers write it */
};

/*
 * What JSON cannot write as a number, in a kernel's answer (cells NAN_WORDS or LSE_WORDS):
 * null, or NaN and the infinities as strings (the words JavaScript and Python's json
 * module print), into *out. False for anything else, and for every cell of the other
 * kinds.
 */
bool api_non_finite_word(const json_t *cell, enum api_cells cells, double *out);

/* How a matrix field reads: its name for messages and what the shape means. */
struct api_matrix_spec {
    const char *name;      /* "q" */
    const char *shape;     /* "(n_q, d_k)" */
    bool allow_vector;     /* a flat array is one row (q, a key-padding mask, ...) */
    enum api_cells cells;
};

/*
 * Reads a matrix (an array of equal-length non-empty arrays of numbers), or a
 * vector when spec->allow_vector. The cell count is checked against max_cells
 * before anything is allocated. On success out->data is malloc'd (contiguous)
 * and *is_vector tells which form was sent. On failure out is zeroed. A large
 * matrix of a request alone on the server is read in two halves of rows at once
 * (api/json/spare_threads.h); what is read, or the error reported, is the same. A
 * matrix that api_json_read_body read into numbers (json/read.h) is copied from
 * them: this is the one reader of such values.
 */
bool api_read_matrix(const json_t *node, const char *pointer, const struct api_matrix_spec *spec,
                     size_t max_cells, struct attn_matrix *out, bool *is_vector,
                     struct api_error *err);

void api_matrix_free(struct attn_matrix *m);

#endif
