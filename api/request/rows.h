/*
 * api/request/rows.h — `rows`: the query rows an answer is for (DESIGN.md, "Row
 * statistics, rows, and any length"), read the same way by /v1/attention, its batch and
 * /v1/multihead.
 *
 * Not here: what an endpoint refuses beside rows (each says why), or how it answers them.
 */
#ifndef API_REQUEST_ROWS_H
#define API_REQUEST_ROWS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/http/problem.h"

/*
 * node (at pointer ptr): a non-empty list of integers 0 <= i < n_q, the rows of the matrix
 * named `queries` ("q", or x's on /v1/multihead), any order, repeats
 * allowed, into *rows (allocated here; the caller owns it, also when a later entry is
 * refused) and *n_rows. A 422 at ptr for a non-list or an empty one, at ptr/i for an
 * entry that is not such an integer; 503 when no memory holds the list.
 */
bool api_read_rows(const json_t *node, const char *ptr, const char *queries, size_t n_q,
                   size_t **rows, size_t *n_rows, struct api_error *err);

/* Where query `row` is answered: its first place in rows, or row itself when rows is
 * NULL; n_rows when rows does not list it. */
size_t api_rows_place(const size_t *rows, size_t n_rows, size_t row);

/*
 * explain works on one row of the answer: with rows, it must be listed. A 422 at
 * pointer (explain's row) when it is not, naming the rows listed.
 */
bool api_rows_check_explain(const size_t *rows, size_t n_rows, size_t row, const char *pointer,
                            struct api_error *err);

/* The refusal of rows beside `field`, which works on one row already (explain, pitfall). */
bool api_rows_refuse_beside(const char *ptr, const char *field, struct api_error *err);

#endif
