/*
 * core/stream.h — attention that builds no (n_q, n_k) matrix: the output and the
 * summary of each listed query row, with a working set of the inputs, the answer and a
 * fixed block per thread whatever n_q and n_k.
 *
 * How (FlashAttention's online softmax): queries in blocks of ATTN_STREAM_ROWS rows (the
 * row blocks of attn_forward, so a pass over every row starts its BLAS calls where
 * attn_forward does), gathered into a scratch block; inside a row block the keys in
 * blocks of ATTN_STREAM_KEYS. For each key block, one cblas_dgemm(NoTrans, Trans) gives
 * the scores, the row functions of attn_forward scale, cap, bias and mask them cell for
 * cell as it does (so row_max is its max, bit for bit), and each row keeps a running max
 * m, the running sum l of e^(x − m) and the output accumulator, rescaled by e^(m_old −
 * m_new) when the max grows. As FlashAttention 2 does, the accumulator is the sum of
 * e^(x − m)·V (the block's e^(x − m) through one cblas_dgemm with beta = 1 after the
 * rescale), divided by l once at the end: a pass over the block a row saved. That sum
 * can overflow where weights · V does not (values near DBL_MAX / n_k); then the pass
 * runs once more with the accumulator kept divided by the running l, whose entries stay
 * within the values' range, so it overflows only where weights · V does.
 *
 * Why these sizes: 128 rows are attn_forward's blocks (ATTN_ROW_BLOCK), and they make
 * the key block's products large enough for BLAS's kernels (OpenBLAS packs the keys
 * again for every call: 128 rows measured faster than 64); 512 keys keep a row block's
 * scores at 512 KiB, within a core's L2 (1 MiB on the machines measured) while the
 * second product reads them (256 and 1024 keys were no faster: docs/design.md,
 * "Streaming"). A causal row block stops after its
 * last visible key block, and a window's skips the key blocks no row of it sees: half the work of a
 * causal problem, most of a narrow window's. Skipping is only done when no skipped cell
 * could have been a fault of attn_forward (every input finite and no score able to
 * overflow); otherwise every key block is computed, as attn_forward computes every cell.
 *
 * The summary comes from the accumulators: max_weight = e^(s − m)/l for the row's max
 * score s, entropy H = (l_keys/l)·ln l + T/l with T = Σ e·(m − x) over the keys (the
 * −e·ln e of each e = e^(x − m)), rescaled with the sums as T' = c·(T + (m_new −
 * m_old)·l_keys) (every term >= 0: no cancellation), only without skip_summary; argmax
 * the first key of the max score (attention.h). A sink logit z starts each row at m = z,
 * l = 1: in the sums, never in the output.
 *
 * Not here: JSON, HTTP. Dimension letters as in attention.h.
 */
#ifndef ATTN_STREAM_H
#define ATTN_STREAM_H

#include <stddef.h>

#include "attention.h"
#include "variants.h"

#define ATTN_STREAM_ROWS 128 /* attn_forward's ATTN_ROW_BLOCK (stream.c checks) */
#ifndef ATTN_STREAM_KEYS /* a build may try another size */
#define ATTN_STREAM_KEYS 512
#endif

/* The answer of a streamed pass: the output and the summary of the listed rows. */
struct attn_stream {
    size_t n_rows, d_v;
    struct attn_matrix output;   /* (n_rows, d_v) */
    struct attn_summary summary; /* n_rows entries, incl. row_max, row_sum, lse */
    struct attn_fault fault;     /* row = the real query index */
    int fault_step;              /* fault's step, a variant's (variants.h) included */
    void *block;
    size_t block_bytes;          /* the block's capacity (core/memory.h) */
};

/*
 * Allocates the answer's block (not zero-filled: a pass writes every cell). ATTN_EINVAL
 * for a zero size, ATTN_ENOMEM when memory or a size_t runs out; both leave *s zeroed.
 */
enum attn_status attn_stream_alloc(struct attn_stream *s, size_t n_rows, size_t d_v);

/* Frees the block and zeroes *s; safe on a zeroed answer, twice is a no-op. */
void attn_stream_free(struct attn_stream *s);

/*
 * What a streamed pass holds at once beyond its inputs: the answer's block plus the
 * scratch of each thread (threads < 1 counts one; more than can run are not counted),
 * for admission; 0 on overflow or a zero size. With RoPE the rotated keys (n_k·d_k
 * doubles) and the tables of attn_rope_prepare are counted with the inputs.
 */
size_t attn_stream_bytes(size_t n_rows, size_t n_k, size_t d_k, size_t d_v, unsigned threads);

/*
 * rows == NULL: every query 0..n_q-1 in order (n_rows must be n_q); else rows[r] (each
 * < n_q, any order, repeats allowed) is answer row r. v may be NULL (no variants) or
 * any variants but dropout (ATTN_EINVAL: dropout needs its weights). threads as in
 * attn_forward_threads (at most 16); the bits do not depend on it.
 *
 * Agrees with attn_forward (and attn_forward_variants) on the same problem: fully_masked
 * and argmax exactly, the rest to 1e-12 relative (an output cell whose mean nearly
 * cancels to 1e-13 of max |V|). row_max is exact too where OpenBLAS runs its Haswell or
 * Zen kernels on one thread, as the server runs it (each row gets the kernel
 * attn_forward's call gives it, docs/design.md "Streaming"); other kernels (SkylakeX's)
 * may score a key block's cell a bit apart from the whole row's.
 *
 * ATTN_EINVAL, with `out` untouched, for attn_forward's reasons, a variant that
 * attn_forward_variants rejects, dropout, a row index >= n_q, or `out` not allocated for
 * (n_rows, d_v). ATTN_ENOMEM when the scratch (or RoPE's rotated keys) cannot be had.
 * ATTN_EOVERFLOW when a step yields a non-finite number: fault (and fault_step) say
 * where as attn_forward would, in step order, then answer row, then key (for rows ==
 * NULL exactly its row-major order; fault.row is the real query index); the output and
 * the summary are then zero.
 */
enum attn_status attn_forward_stream(struct attn_stream *out, const struct attn_problem *p,
                                     const struct attn_variants *v, const size_t *rows,
                                     size_t n_rows, unsigned threads);

#endif
