/*
 * api/json/matrix_write.h — a matrix as JSON rows, on two threads when that pays.
 *
 * Writing numbers is most of a large response's time (shortest round-trip digits,
 * tens of nanoseconds each, over a million of them for n = 512 with every step).
 * When the request may borrow a spare thread (api/json/spare_threads.h: the server has
 * more than one worker and this request is the only one being handled), a matrix of
 * API_SPARE_MIN_CELLS or more is cut into pieces of a few rows, which the request's
 * thread and one helper thread take in turn, whoever is free first, each into a
 * buffer of its own unless it is the next piece of the answer; the pieces are put in
 * in order: taken over as pieces of the answer when the writer may segment (jw_adopt;
 * the server sends the pieces as they are), else copied. Under load every core
 * already has a request, so the split would only add a thread's cost: it is not made.
 *
 * The text is the same either way, byte for byte.
 *
 * Not here: what the rows mean (the endpoints' writers), the server's threads.
 */
#ifndef API_MATRIX_WRITE_H
#define API_MATRIX_WRITE_H

#include <stdbool.h>

#include "api/json/write.h"
#include "core/matrix.h"

/* A split matrix's pieces hold about this many cells (fewer rows when the matrix has
 * fewer than eight pieces' worth): small enough that the faster thread is never long
 * without one, large enough that taking one costs nothing. */
#define API_WRITE_PIECE_CELLS 16384

/*
 * Starts w for an answer of about `numbers` numbers. In one piece it is presized for
 * all of them (~24 bytes each). When it will come in pieces (segments_ok, and a
 * matrix that large would be split now), only for one piece of a split matrix: the
 * text before the first split; each later piece is sized after the one before it
 * (jw_adopt).
 */
void api_write_start(struct jw *w, int round, size_t numbers, bool segments_ok);

/* m as [[row 0], [row 1], ...]: rows × cols doubles, m->stride apart. */
void api_write_matrix(struct jw *w, const struct attn_matrix *m);

/*
 * Whether a and b hold the same bits in every cell (shapes included): then their
 * text is the same too, and a writer may repeat a's (jw_repeat) instead of
 * formatting b. Masked equals scaled whenever nothing is masked or biased.
 */
bool api_matrix_same_bits(const struct attn_matrix *a, const struct attn_matrix *b);

#endif
