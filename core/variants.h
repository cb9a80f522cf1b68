/*
 * core/variants.h — the attention of today's models, each variant its own step:
 * rotary embeddings (RoPE), a soft cap on the logits, ALiBi, a sliding window with
 * sink tokens, a sink logit, and dropout.
 *
 * The order of the steps (DESIGN.md, "Attention variants"):
 *
 *   q_rope, k_rope  → scores → scaled → softcapped → masked → weights → dropout_keep,
 *   dropped → output
 *
 *   q_rope     (n_q, d_k)  Q with its first r columns rotated by position
 *   k_rope     (n_k, d_k)  K the same way
 *   scores     (n_q, n_k)  Q' @ K'ᵀ
 *   scaled     (n_q, n_k)  scores * scale
 *   softcapped (n_q, n_k)  c·tanh(scaled / c)
 *   masked     (n_q, n_k)  x + bias − m·|i + off − j|, −inf where a rule blocks: the
 *                          mask, causal (keys j < prefix pass it), the window (keys
 *                          j < sink_tokens pass it), the documents and the chunk
 *   weights    (n_q, n_k)  softmax along the row, with the sink logit in the sum
 *   keep       (n_q, n_k)  1 where the generator's u ≥ p, else 0
 *   dropped    (n_q, n_k)  weights · keep / (1 − p)
 *   output     (n_q, d_v)  dropped (or weights) @ V
 *
 * with off = n_k − n_q (bottom-right aligned, as causal is). With documents, i and j are
 * positions inside query i's document (counted from its first query and key) and
 * off = lk − lq is that document's: causal, top-left causal, the prefix, the window, the
 * sink tokens, the chunk and ALiBi all read those positions. A step whose variant is
 * off is not computed and has no matrix. With every variant off, attn_forward_variants
 * is attn_forward, bit for bit.
 *
 * attn_reference_variants (variants_ref.c) is the same contract in naive loops, kept
 * for tests and to validate benchmarks.
 *
 * Not here: JSON, HTTP, reading requests (api/ validates before calling).
 * Dimension letters as in attention.h.
 */
#ifndef ATTN_VARIANTS_H
#define ATTN_VARIANTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attention.h"

enum attn_rope_layout {
    ATTN_ROPE_HALF = 0,    /* c pairs with c + r/2: Hugging Face llama, GPT-NeoX (rotate_half) */
    ATTN_ROPE_INTERLEAVED, /* 2c pairs with 2c + 1: Meta's llama, GPT-J (complex numbers) */
};

/*
 * Rotary embedding: column pair c (c < r/2) of a row at position pos turns by
 * θ_c = pos · base^(−2c/r). The angles' cosines and sines are tabulated once per
 * problem by attn_rope_prepare (a row's table serves all its pairs, and multi-head's
 * heads share one table) rather than once per cell.
 */
struct attn_rope {
    double base;                  /* > 0 */
    enum attn_rope_layout layout;
    size_t rotated;               /* r: even, 2 <= r <= d_k; columns r.. pass unchanged */
    const double *positions_q;    /* (n_q), borrowed; NULL: off + i */
    const double *positions_k;    /* (n_k), borrowed; NULL: j */
    /* Set by attn_rope_prepare, freed by attn_rope_release: */
    size_t n_q, n_k;
    double *cos_q, *sin_q;        /* (n_q, r/2) */
    double *cos_k, *sin_k;        /* (n_k, r/2) */
};

/*
 * Tabulates the rotation for n_q queries and n_k keys. ATTN_EINVAL for a base that
 * is not finite and > 0, or r odd, 0 or over INT_MAX; ATTN_ENOMEM when the tables
 * cannot be had (nothing is then held). The tables belong to `rope` until
 * attn_rope_release, which is a no-op on a rope never prepared (zeroed) or released.
 */
enum attn_status attn_rope_prepare(struct attn_rope *rope, size_t n_q, size_t n_k);
void attn_rope_release(struct attn_rope *rope);

/* Which variants a problem runs; zeroed means none. Borrowed pointers. */
struct attn_variants {
    const struct attn_rope *rope; /* prepared for (n_q, n_k); NULL: no rotation */
    double softcap;               /* c > 0; 0: no cap */
    bool alibi;
    double alibi_slope;           /* m: the bias −m·|i + off − j| */
    bool window;
    bool has_left, has_right;     /* false: unbounded on that side */
    size_t left, right;           /* key j visible iff i + off − left <= j <= i + off + right */
    size_t sink_tokens;           /* keys j < sink_tokens pass the window */
    bool sink;
    double sink_logit;            /* z: a raw logit in every row's softmax, carrying no value */
    bool dropout;
    double dropout_p;             /* in [0, 1) */
    uint64_t dropout_seed;
    uint64_t dropout_first;       /* the generator's index of cell (0, 0): multihead h·n_q·n_k */
    /*
     * The masks of training (DESIGN.md, "Masks of today's training"), rules a key must
     * pass as it passes the window. top_left (with mask CAUSAL): key j visible iff
     * j <= i, not j <= i + off (PyTorch SDPA's is_causal). prefix: keys j < prefix pass
     * causal (a prefix-LM). chunk (C >= 1): key j visible iff floor((i + off)/C) =
     * floor(j/C) (Llama 4). doc_q and doc_k: n_docs + 1 ascending starts each (0 ...
     * n_q, 0 ... n_k, every document at least one query and one key): query i of
     * document d sees only d's keys, at positions counted from d's start.
     */
    bool top_left;
    size_t prefix;
    size_t chunk;
    const size_t *doc_q, *doc_k;
    size_t n_docs;
    /* With a window, documents or a chunk: the cells they hide (outside the window and
     * the sink tokens, another document, another chunk) are not computed, so scores,
     * scaled and softcapped hold 0 there (and cannot overflow): for a caller that shows
     * none of those three steps. What is cheaper about a mask that hides most keys. */
    bool band_only;
};

/* Whether any variant runs (a zeroed struct: none). */
bool attn_variants_any(const struct attn_variants *v);

/* Whether band_only applies: only the keys a row's window, documents and chunk show are
 * computed (the tiles they leave empty are not multiplied). */
static inline bool attn_variants_banded(const struct attn_variants *v)
{
    return v->band_only && (v->window || v->chunk > 0 || v->doc_q != NULL);
}

/*
 * The ALiBi paper's slopes for h heads (Press et al., 2022, and its reference code):
 * for h a power of two, m_i = 2^(−8i/h), i = 1..h; otherwise the slopes of the
 * largest power of two n below h, then every other slope of 2n's, from its first,
 * until there are h. out has h entries; h >= 1.
 */
void attn_alibi_slopes(size_t h, double *out);

/* The variants' own steps, numbered after the five of attention.h. */
enum {
    ATTN_STEP_Q_ROPE = ATTN_STEP_OUTPUT + 1,
    ATTN_STEP_K_ROPE,
    ATTN_STEP_SOFTCAPPED,
    ATTN_STEP_DROPOUT_KEEP,
    ATTN_STEP_DROPPED,
};

/* "q_rope", "k_rope", "softcapped", "dropout_keep", "dropped", or attn_step_name's. */
const char *attn_variant_step_name(int step);

/*
 * Every step of a forward pass with variants: the five of attn_trace, and those of
 * the variants that run (a step that does not run has a zeroed matrix, no data).
 * Everything lives in `base.block` and `block`; attn_vtrace_free frees both.
 */
struct attn_vtrace {
    struct attn_trace base;        /* scores, scaled, masked, weights, output, summary */
    struct attn_matrix q_rope;     /* (n_q, d_k) when rope */
    struct attn_matrix k_rope;     /* (n_k, d_k) when rope */
    struct attn_matrix softcapped; /* (n_q, n_k) when softcap */
    struct attn_matrix keep;       /* (n_q, n_k) of 0/1 when dropout */
    struct attn_matrix dropped;    /* (n_q, n_k) when dropout */
    double *sink_weight;           /* (n_q) when sink: the weight the sink took */
    int fault_step;                /* the step of base.fault, variants' steps included */
    void *block;
};

/*
 * Allocates, zero-filled, the steps of these sizes for the variants in v. ATTN_EINVAL
 * for a zero size, ATTN_ENOMEM when memory (or a size_t) runs out; either leaves *t
 * zeroed.
 */
enum attn_status attn_vtrace_alloc(struct attn_vtrace *t, size_t n_q, size_t n_k, size_t d_k,
                                   size_t d_v, const struct attn_variants *v);

/*
 * Only the variants' own steps, base left zeroed: for a caller whose five steps live
 * elsewhere (multi-head's head traces), lent to base for each pass. The same errors.
 */
enum attn_status attn_vtrace_alloc_steps(struct attn_vtrace *t, size_t n_q, size_t n_k,
                                         size_t d_k, const struct attn_variants *v);

/* What attn_vtrace_alloc would allocate, in bytes; 0 when a size overflows. */
size_t attn_vtrace_bytes(size_t n_q, size_t n_k, size_t d_k, size_t d_v,
                         const struct attn_variants *v);

/* Frees both blocks and zeroes *t; safe on a zeroed trace. */
void attn_vtrace_free(struct attn_vtrace *t);

/*
 * dst's variant steps (allocated here by attn_vtrace_alloc_steps for n_rows rows, src's
 * n_k and d_k, and v; base left zeroed, as that allocation leaves it: the five steps are
 * attn_trace_select_rows's to copy) = src's listed query rows (each < n_q): q_rope,
 * softcapped, keep, dropped and sink_weight by row, k_rope whole; fault_step copied. A
 * step v has but src lacks stays zero. Errors as attn_trace_select_rows's. src and dst
 * are distinct; free dst with attn_vtrace_free.
 */
enum attn_status attn_vtrace_select_rows(struct attn_vtrace *dst, const struct attn_vtrace *src,
                                         const size_t *rows, size_t n_rows, size_t n_q,
                                         size_t n_k, size_t d_k, const struct attn_variants *v);

/*
 * Runs every step into out (allocated for p's sizes and these variants). With no
 * variant this is attn_forward into out->base. ATTN_EOVERFLOW sets out->base.fault
 * (and out->fault_step, which can name a variant's step) at the first step, in the
 * order above, that yields a non-finite number; the later steps are then zero.
 * ATTN_EINVAL for attn_forward's reasons, or a variant inconsistent with the trace
 * or the problem (rope not prepared for these sizes, r > d_k, softcap < 0 or not
 * finite, p outside [0, 1), a slope or sink logit not finite).
 */
enum attn_status attn_forward_variants(struct attn_vtrace *out, const struct attn_problem *p,
                                       const struct attn_variants *v);

/* The same contract in plain loops, with libm's cos, sin, tanh and exp: the reference. */
enum attn_status attn_reference_variants(struct attn_vtrace *out, const struct attn_problem *p,
                                         const struct attn_variants *v);

/* ---- shared by variants.c and variants_ref.c: the contract's rules, not its passes ---- */

/* Query i's document: its first query q0 and key k0, its keys lk and off = lk − lq; with
 * no documents the whole problem (0, 0, n_k, n_k − n_q). */
struct attn_doc {
    size_t q0, k0, lk;
    long long off;
};
struct attn_doc attn_doc_of(const struct attn_variants *v, size_t n_q, size_t n_k, size_t i);

/* Whether every rule (the mask, causal or the prefix, the window or a sink token, the
 * documents, the chunk) lets query i see key j: the contract, one cell at a time. */
bool attn_key_visible(const struct attn_problem *p, const struct attn_variants *v, size_t n_q,
                      size_t n_k, size_t i, size_t j);

/* Whether v's training masks fit n_q queries and n_k keys (the documents add up, each
 * at least 1; prefix <= n_k). */
bool attn_rules_ok(const struct attn_variants *v, size_t n_q, size_t n_k);

/* ATTN_OK when v fits p and t (see attn_forward_variants). */
enum attn_status attn_check_variants(const struct attn_vtrace *t, const struct attn_problem *p,
                                     const struct attn_variants *v);

/* With no variant on, the passes run the plain ones on t->base: this sets t->fault_step
 * from the plain pass's fault (ATTN_EOVERFLOW) or to none, and returns st. */
enum attn_status attn_vtrace_plain(struct attn_vtrace *t, enum attn_status st);

/* Records a fault at step (any numbering above), zeroing every later step. */
enum attn_status attn_vtrace_fault(struct attn_vtrace *t, const struct attn_variants *v,
                                   int step, size_t row, size_t col);

#endif
