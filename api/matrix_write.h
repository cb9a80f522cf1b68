/*
 * api/matrix_write.h — a matrix as JSON rows, on two threads when that pays.
 *
 * Writing numbers is most of a large response's time (shortest round-trip digits,
 * tens of nanoseconds each, over a million of them for n = 512 with every step).
 * When the server has cores to spare — it was started with more than one worker and
 * this request is the only one being handled — a large matrix's rows are split in
 * blocks, and each block in two: the second half is written by a short-lived thread
 * into a buffer of its own, spliced in after the first half. Under load every core already has a request, so
 * the split would only add a thread's cost: it is not made.
 *
 * The text is the same either way, byte for byte.
 *
 * The same rule lends the threads to a large forward pass (api_request_threads).
 *
 * Not here: what the rows mean (the endpoints' writers), the server's threads.
 */
#ifndef API_MATRIX_WRITE_H
#define API_MATRIX_WRITE_H

#include <stdbool.h>
#include <stddef.h>

#include "api/jsonw.h"
#include "core/matrix.h"

/* Matrices of fewer cells are written on the calling thread alone. */
#define API_SPLIT_MIN_CELLS 32768
/* Larger ones are split block by block, blocks of about this many cells. */
#define API_SPLIT_BLOCK_CELLS 262144

/* m as [[row 0], [row 1], ...]: rows × cols doubles, m->stride apart. */
void api_write_matrix(struct jw *w, const struct attn_matrix *m);

/*
 * How many threads one request may write with (the server's worker count; 1, the
 * default, never splits). Set once, before serving.
 */
void api_write_set_threads(unsigned threads);

/*
 * How many threads the current request may use for work over `cells` cells (a
 * matrix to write, a forward pass's n_q × n_k): the count set above while this is
 * the only request in flight and cells >= API_SPLIT_MIN_CELLS, else 1.
 */
unsigned api_request_threads(size_t cells);

/* api_handle's bracket around each request: splits happen only while one is in flight. */
void api_write_request_begin(void);
void api_write_request_end(void);

/* How many matrices were split so far (for tests). */
unsigned long api_write_splits(void);

#endif
