/*
 * tests/fuzz/fuzz_nonfinite.c — libFuzzer harness for the core's forward passes (plain and
 * with variants, fast path and reference) on extreme finite numbers: ±1e308, ±DBL_MAX,
 * subnormals, products that overflow (1e200·1e200), sums that do (1e308 + 1e308),
 * exponents at exp's edges. Issue 32's crash lived here: an +inf score reached the
 * variants' row softmax, and the argmax scan left the row.
 *
 * Every input is a problem; whatever it holds, the pass must not crash, leak or read out
 * of bounds (ASan, UBSan), and its answer must be one the API can print: ATTN_OK with
 * every weight in [0, 1], rows summing to at most 1, an argmax inside its row (or none
 * for a fully masked row, or one whose whole weight a sink logit took) and a finite
 * output; or ATTN_EOVERFLOW naming a cell inside the faulting step's matrix. The fast
 * path and the reference are not required to agree on the status: their sums run in
 * different orders, so a value at the edge of the range may overflow in one and not the
 * other (fuzz_variants compares them on tame numbers).
 *
 * Layout: 6 header bytes (n_q, n_k, d_k, d_v, the variant bits, the window's sides and
 * sinks), then one byte per number: below 0xF0 an entry of PALETTE, from 0xF0 up the next
 * 8 bytes as a double (a non-finite one read as 0: JSON carries none). Missing bytes are 0.
 *
 * Not here: the JSON around it (fuzz_api.c, fuzz_variants.c drive the readers).
 */
#include <float.h>
#include <stdbool.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "core/ties.h"
#include "core/variants.h"

static const double PALETTE[] = {
    0.0, -0.0, 1.0, -1.0, 1e308, -1e308, DBL_MAX, -DBL_MAX,
    1e200, -1e200, 1e154, -1e154, 5e-324, -5e-324, DBL_MIN, 1e-310,
    1e-300, 0.5, 2.0, 1e10, -1e10, 700.0, -700.0, 710.0,
    -745.0, 1.34e154, 3.0, 1e300, -1e300, 1e-320, 1e100, -1e100,
};
#define PALETTE_N (sizeof PALETTE / sizeof PALETTE[0])

/* The input, read front to back. */
struct cursor {
    const uint8_t *p;
    size_t left;
};

static uint8_t next_byte(struct cursor *c)
{
    if (c->left == 0)
        return 0;
    c->left--;
    return *c->p++;
}

static double next_number(struct cursor *c)
{
    uint8_t b = next_byte(c);
    if (b < 0xF0)
        return PALETTE[b % PALETTE_N];
    double x = 0;
    uint8_t raw[sizeof x] = { 0 };
    for (size_t i = 0; i < sizeof raw; i++)
        raw[i] = next_byte(c);
    memcpy(&x, raw, sizeof x);
    return isfinite(x) ? x : 0.0;
}

/* The rows and columns of the step a fault names. */
static void fault_bounds(int step, size_t n_q, size_t n_k, size_t d_k, size_t d_v, size_t *rows,
                         size_t *cols)
{
    *rows = step == ATTN_STEP_K_ROPE ? n_k : n_q;
    *cols = step == ATTN_STEP_OUTPUT ? d_v
            : (step == ATTN_STEP_Q_ROPE || step == ATTN_STEP_K_ROPE) ? d_k
                                                                      : n_k;
}

/* What the API relies on, whichever path produced the trace. */
static void check_trace(const struct attn_vtrace *t, enum attn_status st, size_t d_k, size_t d_v,
                        bool summarized)
{
    const struct attn_trace *b = &t->base;
    size_t n_q = b->n_q, n_k = b->n_k;
    if (st == ATTN_EOVERFLOW) {
        size_t rows, cols;
        fault_bounds(t->fault_step, n_q, n_k, d_k, d_v, &rows, &cols);
        if (b->fault.row >= rows || b->fault.col >= cols)
            abort();
        return;
    }
    if (st != ATTN_OK)
        abort();
    for (size_t i = 0; i < n_q; i++) {
        const double *w = b->weights.data + i * n_k;
        double sum = 0;
        for (size_t j = 0; j < n_k; j++) {
            if (!(w[j] >= 0.0 && w[j] <= 1.0))
                abort();
            sum += w[j];
        }
        if (sum > 1.0 + 1e-12)
            abort();
        /* none for a fully masked row or one whose every weight the sink took (sum 0),
           else a key of the row */
        size_t argmax = b->summary.argmax[i];
        bool none_expected = b->summary.fully_masked[i] || sum == 0;
        if (summarized && (none_expected ? argmax != ATTN_NO_INDEX : argmax >= n_k))
            abort();
        if (attn_row_ties(w, n_k, NULL) > n_k)
            abort();
        for (size_t j = 0; j < d_v; j++)
            if (!isfinite(b->output.data[i * b->output.stride + j]))
                abort();
    }
}

/* The variants the header asks for, their numbers from the input. */
static void read_variants(struct cursor *c, uint8_t bits, uint8_t sides, struct attn_variants *v,
                          struct attn_rope *rope, size_t d_k)
{
    memset(v, 0, sizeof *v);
    if ((bits & 1) && d_k >= 2) {
        double base = fabs(next_number(c));
        rope->base = base > 0 ? base : 10000.0;
        rope->layout = (bits & 0x80) ? ATTN_ROPE_INTERLEAVED : ATTN_ROPE_HALF;
        rope->rotated = d_k - d_k % 2;
        v->rope = rope;
    }
    if (bits & 2) {
        double cap = fabs(next_number(c));
        v->softcap = cap > 0 ? cap : 0;
    }
    if (bits & 4) {
        v->alibi = true;
        v->alibi_slope = next_number(c);
    }
    if (bits & 8) {
        v->window = true;
        v->has_left = sides & 1;
        v->has_right = sides & 2;
        v->left = (sides >> 2) & 3;
        v->right = (sides >> 4) & 3;
        v->sink_tokens = (sides >> 6) & 3;
        v->band_only = bits & 0x40;
    }
    if (bits & 16) {
        v->sink = true;
        v->sink_logit = next_number(c);
    }
    if (bits & 32) {
        v->dropout = true;
        v->dropout_p = next_byte(c) / 256.0;
        v->dropout_seed = next_byte(c);
    }
}

typedef enum attn_status (*pass_fn)(struct attn_vtrace *, const struct attn_problem *,
                                    const struct attn_variants *);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cursor c = { data, size };
    size_t n_q = 1 + next_byte(&c) % 4, n_k = 1 + next_byte(&c) % 4;
    size_t d_k = 1 + next_byte(&c) % 4, d_v = 1 + next_byte(&c) % 3;
    uint8_t bits = next_byte(&c), sides = next_byte(&c);
    double q[4 * 4], k[4 * 4], vals[4 * 3], bias[4 * 4];
    unsigned char allow[4 * 4];

    for (size_t i = 0; i < n_q * d_k; i++)
        q[i] = next_number(&c);
    for (size_t i = 0; i < n_k * d_k; i++)
        k[i] = next_number(&c);
    for (size_t i = 0; i < n_k * d_v; i++)
        vals[i] = next_number(&c);
    struct attn_matrix mq = attn_matrix_view(q, n_q, d_k), mk = attn_matrix_view(k, n_k, d_k);
    struct attn_matrix mv = attn_matrix_view(vals, n_k, d_v), mb = attn_matrix_view(bias, n_q, n_k);
    double scale = fabs(next_number(&c));
    struct attn_problem p = { .q = &mq, .k = &mk, .v = &mv,
                              .scale = scale > 0 ? scale : 1.0 / sqrt((double)d_k) };
    uint8_t extra = next_byte(&c);
    if (extra & 1) {
        for (size_t i = 0; i < n_q * n_k; i++)
            bias[i] = next_number(&c);
        p.bias = &mb;
    }
    if (extra & 2) {
        p.mask.kind = ATTN_MASK_CAUSAL;
    } else if (extra & 4) {
        for (size_t i = 0; i < n_q * n_k; i++)
            allow[i] = (next_byte(&c) & 3) != 0;
        p.mask.kind = ATTN_MASK_CELLS;
        p.mask.allow = allow;
        p.mask.rows = n_q;
    }
    p.skip_summary = (extra & 8) != 0;

    struct attn_rope rope = { 0 };
    struct attn_variants v;
    read_variants(&c, bits, sides, &v, &rope, d_k);
    if (v.rope != NULL && attn_rope_prepare(&rope, n_q, n_k) != ATTN_OK)
        v.rope = NULL; /* a base whose tables cannot be made: the reader refuses it */
    const pass_fn passes[] = { attn_forward_variants, attn_reference_variants };
    for (size_t i = 0; i < 2; i++) {
        struct attn_vtrace t;
        if (attn_vtrace_alloc(&t, n_q, n_k, d_k, d_v, &v) != ATTN_OK)
            abort();
        enum attn_status st = passes[i](&t, &p, &v);
        check_trace(&t, st, d_k, d_v, !p.skip_summary);
        attn_vtrace_free(&t);
    }
    attn_rope_release(&rope);
    return 0;
}
