/*
 * core/stream.c — attn_forward_stream: attention by row blocks and key blocks with an
 * online softmax, no (n_q, n_k) matrix (stream.h says how and why).
 *
 * What it is: the answer's block, the per-thread scratch, one row block's pass over its
 * key blocks, the threads that take the row blocks, and a checking pass that names the
 * first fault in attn_forward's order when a block met a non-finite number.
 *
 * What it is not: a trace (attention.c keeps every step), or a validator of requests.
 * The cell arithmetic (scale, softcap, bias, ALiBi, mask, exp) is attention.c's and
 * variants.c's, written again in the same operations so the masked scores agree bit for
 * bit (row_max is exact); which keys a row sees is variants.c's own attn_vrow_of
 * (internal.h); only the bookkeeping of the sums is new.
 */
/* madvise and MADV_HUGEPAGE are not POSIX. */
#define _DEFAULT_SOURCE
#include "stream.h"

#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "memory.h"
#include "softmax_row.h"

/* The most threads a streamed pass uses, as attn_forward_threads. */
#define ATTN_STREAM_MAX_THREADS 16

_Static_assert(ATTN_STREAM_ROWS == ATTN_ROW_BLOCK, "a row block of attn_forward's size");

/*
 * The rows of a block's scratch: its 128 rows plus the zero rows that round its kernel
 * groups (stream_slots_of) up.
 */
#define ATTN_STREAM_SLOTS (ATTN_STREAM_ROWS + 4)

/* A slot holding no row. */
#define ATTN_STREAM_PAD SIZE_MAX

/* ---- the answer's block ---- */

/* Byte offsets: the doubles (output, six summary arrays), then argmax, then the flags. */
struct stream_layout {
    size_t argmax_off, flags_off, bytes;
};

static bool stream_layout_of(size_t n_rows, size_t d_v, struct stream_layout *l)
{
    int overflow = 0;
    size_t output = attn_cells(n_rows, d_v, &overflow);
    size_t summary = attn_cells(n_rows, 6, &overflow); /* row_sums ... lse */
    size_t argmax = attn_cells(n_rows, sizeof(size_t), &overflow);
    if (overflow || output > SIZE_MAX - summary)
        return false;
    /* A double's size is a multiple of size_t's alignment: argmax follows directly. */
    l->argmax_off = attn_cells(output + summary, sizeof(double), &overflow);
    if (overflow || argmax > SIZE_MAX - l->argmax_off)
        return false;
    l->flags_off = l->argmax_off + argmax;
    if (n_rows > SIZE_MAX - l->flags_off)
        return false;
    l->bytes = l->flags_off + n_rows;
    return true;
}

enum attn_status attn_stream_alloc(struct attn_stream *s, size_t n_rows, size_t d_v)
{
    struct stream_layout l;
    if (s == NULL)
        return ATTN_EINVAL;
    memset(s, 0, sizeof *s);
    if (n_rows == 0 || d_v == 0)
        return ATTN_EINVAL;
    if (!stream_layout_of(n_rows, d_v, &l))
        return ATTN_ENOMEM;
    unsigned char *block = attn_block_alloc(l.bytes, false, &s->block_bytes);
    if (block == NULL)
        return ATTN_ENOMEM;
    double *d = (double *)(void *)block;
    s->n_rows = n_rows;
    s->d_v = d_v;
    s->output = attn_matrix_view(d, n_rows, d_v); /* (n_rows, d_v) */
    d += n_rows * d_v;
    s->summary.row_sums = d;              /* each (n_rows) */
    s->summary.max_weight = d + n_rows;
    s->summary.entropy = d + 2 * n_rows;
    s->summary.row_max = d + 3 * n_rows;
    s->summary.row_sum = d + 4 * n_rows;
    s->summary.lse = d + 5 * n_rows;
    s->summary.argmax = (size_t *)(void *)(block + l.argmax_off);
    s->summary.fully_masked = block + l.flags_off;
    s->block = block;
    return ATTN_OK;
}

size_t attn_stream_answer_bytes(size_t n_rows, size_t d_v)
{
    struct stream_layout l;
    return n_rows > 0 && d_v > 0 && stream_layout_of(n_rows, d_v, &l) ? l.bytes : 0;
}

void attn_stream_free(struct attn_stream *s)
{
    if (s == NULL)
        return;
    attn_block_free(s->block, s->block_bytes);
    memset(s, 0, sizeof *s);
}

/* Zeroes the output and the summary: what a fault leaves. */
static void stream_zero(struct attn_stream *s)
{
    struct stream_layout l;
    if (stream_layout_of(s->n_rows, s->d_v, &l))
        memset(s->block, 0, l.bytes);
    s->summary.n_fully_masked = 0;
}

/* ---- one thread's scratch ---- */

/* Doubles of one thread's scratch for queries d_k wide and values d_v wide. */
static size_t stream_scratch_doubles(size_t d_k, size_t d_v, int *overflow)
{
    size_t q = attn_cells(ATTN_STREAM_SLOTS, d_k, overflow);
    size_t acc = attn_cells(ATTN_STREAM_SLOTS, d_v, overflow);
    size_t fixed = ATTN_STREAM_SLOTS * ATTN_STREAM_KEYS + ATTN_STREAM_KEYS + 6 * ATTN_STREAM_SLOTS;
    if (q > SIZE_MAX - fixed || acc > SIZE_MAX - fixed - q) {
        *overflow = 1;
        return 0;
    }
    return q + acc + fixed;
}

/*
 * A thread's working set: the row block's queries, a key block's scores (turned into
 * weights in place), one row's exponentials, the output accumulator and each row's
 * running state, all by slot (stream_slots_of).
 */
struct stream_scratch {
    double *q;     /* (SLOTS, d_k) the block's queries, rotated with RoPE; 0 in a pad */
    double *s;     /* (SLOTS, KEYS) scores → scaled → capped → masked → e^(x − m)/l */
    double *e;     /* (KEYS) one row's e^(x − m) */
    double *acc;   /* (SLOTS, d_v) the output, kept divided by l */
    double *m;     /* (SLOTS) running max (the sink logit counted) */
    double *l;     /* (SLOTS) running Σ e^(x − m), the sink's term counted */
    double *lk;    /* (SLOTS) the same over the keys alone */
    double *t;     /* (SLOTS) running Σ −e ln e over the keys */
    double *top;   /* (SLOTS) the largest masked score so far */
    size_t *arg;   /* (SLOTS) the first key holding it */
    size_t row[ATTN_STREAM_SLOTS]; /* the answer row in each slot, or ATTN_STREAM_PAD */
    size_t n, fours, twos;         /* slots in all; [0, fours) by 4, then twos by 2, then 1 */
};

static bool stream_scratch_alloc(struct stream_scratch *w, size_t d_k, size_t d_v)
{
    int overflow = 0;
    size_t n = stream_scratch_doubles(d_k, d_v, &overflow);
    double *d = overflow || n > SIZE_MAX / sizeof(double) ? NULL : malloc(n * sizeof(double));
    if (d == NULL)
        return false;
    w->q = d;
    w->s = w->q + ATTN_STREAM_SLOTS * d_k;
    w->e = w->s + ATTN_STREAM_SLOTS * ATTN_STREAM_KEYS;
    w->acc = w->e + ATTN_STREAM_KEYS;
    w->m = w->acc + ATTN_STREAM_SLOTS * d_v;
    w->l = w->m + ATTN_STREAM_SLOTS;
    w->lk = w->l + ATTN_STREAM_SLOTS;
    w->t = w->lk + ATTN_STREAM_SLOTS;
    w->top = w->t + ATTN_STREAM_SLOTS;
    w->arg = (size_t *)(void *)(w->top + ATTN_STREAM_SLOTS); /* a double's room each */
    return true;
}

size_t attn_stream_bytes(size_t n_rows, size_t n_k, size_t d_k, size_t d_v, unsigned threads)
{
    struct stream_layout l;
    int overflow = 0;
    if (n_rows == 0 || n_k == 0 || d_k == 0 || d_v == 0 || !stream_layout_of(n_rows, d_v, &l))
        return 0;
    size_t blocks = (n_rows + ATTN_STREAM_ROWS - 1) / ATTN_STREAM_ROWS;
    size_t n = threads < 1 ? 1 : threads > ATTN_STREAM_MAX_THREADS ? ATTN_STREAM_MAX_THREADS
                                                                   : threads;
    n = n > blocks ? blocks : n;
    size_t scratch =
        attn_cells(stream_scratch_doubles(d_k, d_v, &overflow), sizeof(double), &overflow);
    scratch = attn_cells(scratch, n, &overflow);
    if (overflow || scratch > SIZE_MAX - l.bytes)
        return 0;
    return l.bytes + scratch;
}

/* ---- the rules of one row ---- */

/* One call's problem, variants and shared state. */
struct stream_ctx {
    const struct attn_problem *p;
    const struct attn_variants *v; /* never NULL: zeroed when none */
    const struct attn_matrix *k;   /* K, or K rotated */
    const size_t *rows;            /* NULL: answer row r is query r */
    size_t n_q, n_k, n_rows, n_blocks;
    bool may_skip;                 /* no skipped cell could be a fault (stream_may_skip) */
    bool normalized;               /* the accumulator kept divided by the row's sum */
    struct attn_stream *out;
    atomic_size_t next;            /* the next row block to take */
    atomic_bool failed;            /* a step before the output was not finite: all stop */
    atomic_bool output_bad;        /* an output cell was not finite (the others go on) */
};

static size_t stream_query(const struct stream_ctx *c, size_t r)
{
    return c->rows != NULL ? c->rows[r] : r;
}

/* Row i's rules: the keys it sees (variants.c's attn_vrow_of, so both paths read one
 * rule), its bias row, and `at` = i + n_k − n_q for ALiBi. */
struct stream_row {
    struct attn_vrow keys;
    const double *bias;
    double at;
};

static struct stream_row stream_row_of(const struct stream_ctx *c, size_t i)
{
    const struct attn_problem *p = c->p;
    struct stream_row r = { attn_vrow_of(p, c->v, c->n_q, c->n_k, i), NULL, 0.0 };
    r.at = r.keys.at;
    if (p->bias != NULL)
        r.bias = p->bias->data + i * p->bias->stride;
    return r;
}

static inline bool stream_finite(double x)
{
    return fabs(x) <= DBL_MAX;
}

/* Whether a row sees every key of [j0, j0 + n) by its span alone (no table, bias or
 * ALiBi to read): all among the sinks, or all in [from, end). */
static bool stream_row_sees_all(const struct attn_vrow *k, size_t j0, size_t n)
{
    size_t sinks, end;
    attn_vrow_ends(k, &sinks, &end);
    return (j0 >= k->sinks_from && j0 + n <= sinks) || (j0 >= k->from && j0 + n <= end);
}

/*
 * Row x of the key block [j0, j0 + n): scores → scaled → softcapped → masked in place,
 * as attention.c and variants.c compute each cell; cells band_only does not compute are
 * 0 in the steps before masked. *max gets the masked row's largest cell (-inf when it
 * sees none). False if a cell attn_forward checks is not finite.
 */
static bool stream_row_mask(const struct stream_ctx *c, const struct stream_row *r, double *x,
                            size_t j0, size_t n, double *max)
{
    const struct attn_variants *v = c->v;
    bool band_only = attn_variants_banded(v), ok;
    bool plain = r->keys.allow == NULL && r->bias == NULL && !v->alibi;
    if (plain && v->softcap == 0 && stream_row_sees_all(&r->keys, j0, n))
        return attn_row_scale_max(x, x, n, c->p->scale, max); /* masked = scaled: one pass */
    for (size_t j = 0; band_only && j < n; j++)
        if (!attn_vrow_in_band(&r->keys, j0 + j))
            x[j] = 0.0;
    ok = attn_row_scale(x, x, n, c->p->scale);
    if (v->softcap > 0)
        attn_row_softcap(x, x, n, v->softcap);
    if (plain) {
        /* masked = the capped score where seen: finite when scaled was (softcap keeps it
         * so), so the scale's check covers it; only the hidden cells change. */
        const struct attn_vrow *k = &r->keys;
        size_t sinks, end;
        attn_vrow_ends(k, &sinks, &end);
        if (!stream_row_sees_all(k, j0, n))
            for (size_t j = 0; j < n; j++) {
                size_t g = j0 + j;
                x[j] = (g >= k->sinks_from && g < sinks) || (g >= k->from && g < end)
                           ? x[j]
                           : -INFINITY;
            }
        *max = attn_row_max(x, n);
        return ok;
    }
    for (size_t j = 0; j < n; j++) {
        if (!attn_vrow_sees(&r->keys, j0 + j)) {
            x[j] = -INFINITY;
            continue;
        }
        double y = r->bias != NULL ? x[j] + r->bias[j0 + j] : x[j];
        if (v->alibi)
            y -= v->alibi_slope * fabs(r->at - (double)(j0 + j));
        x[j] = y;
        ok &= stream_finite(y);
    }
    *max = attn_row_max(x, n);
    return ok;
}

/* ---- one row block ---- */

/* Query i's row of Q, rotated when RoPE runs, into dst (d_k). */
static void stream_query_row(const struct stream_ctx *c, size_t i, double *dst)
{
    const struct attn_matrix *q = c->p->q;
    const double *src = q->data + i * q->stride;
    const struct attn_rope *rope = c->v->rope;
    memcpy(dst, src, q->cols * sizeof *dst);
    if (rope == NULL)
        return;
    size_t half = rope->rotated / 2;
    bool interleaved = rope->layout == ATTN_ROPE_INTERLEAVED;
    const double *cs = rope->cos_q + i * half, *sn = rope->sin_q + i * half;
    for (size_t k = 0; k < half; k++) {
        size_t a = interleaved ? 2 * k : k, b = interleaved ? 2 * k + 1 : k + half;
        dst[a] = src[a] * cs[k] - src[b] * sn[k];
        dst[b] = src[b] * cs[k] + src[a] * sn[k];
    }
}

/*
 * The kernel attn_forward's score product gives query i: OpenBLAS computes a full group
 * of four rows of a call (4), a remaining pair (2) or a last row (1) with different
 * kernels, whose last bits differ; the same kernel gives the same bits wherever the row
 * sits and whatever the other rows are (BLAS on one thread, as the server runs it).
 * attn_forward's calls are its 128-row blocks. Four is the row unroll of OpenBLAS's
 * Haswell and Zen kernels (0.3.21); kernels of another unroll (SkylakeX's is 16) may
 * give a listed row other last bits than attn_forward (every row in order keeps its
 * call, see stream_scores).
 */
static int stream_kernel_of(const struct stream_ctx *c, size_t i)
{
    size_t first = i / ATTN_STREAM_ROWS * ATTN_STREAM_ROWS;
    size_t m = c->n_q - first < ATTN_STREAM_ROWS ? c->n_q - first : ATTN_STREAM_ROWS;
    size_t at = i - first, fours = m / 4 * 4;
    if (at < fours)
        return 4;
    return (m % 4) >= 2 && at - fours < 2 ? 2 : 1;
}

/*
 * The slots of answer rows [r0, r1): first the rows attn_forward gives the four-row
 * kernel, padded to a multiple of four with empty slots; then those of the pair kernel,
 * padded to pairs; then the single rows. The scores are then one call for the first
 * part, one per pair and one per single row: every row gets attn_forward's kernel, so
 * its masked scores (and row_max) have attn_forward's bits. With rows == NULL the slots
 * are the rows in order, no pad.
 */
static void stream_slots_of(const struct stream_ctx *c, struct stream_scratch *w, size_t r0,
                            size_t r1)
{
    w->n = 0;
    for (int kernel = 4; kernel >= 1; kernel /= 2) {
        for (size_t r = r0; r < r1; r++)
            if (stream_kernel_of(c, stream_query(c, r)) == kernel)
                w->row[w->n++] = r;
        while (w->n % (size_t)kernel != 0)
            w->row[w->n++] = ATTN_STREAM_PAD;
        if (kernel == 4)
            w->fours = w->n;
        if (kernel == 2)
            w->twos = w->n - w->fours;
    }
}

/* The slots' queries into the scratch, rotated with RoPE; a pad is 0. */
static void stream_gather(const struct stream_ctx *c, struct stream_scratch *w)
{
    size_t d_k = c->p->q->cols;
    for (size_t b = 0; b < w->n; b++) {
        if (w->row[b] == ATTN_STREAM_PAD)
            memset(w->q + b * d_k, 0, d_k * sizeof(double));
        else
            stream_query_row(c, stream_query(c, w->row[b]), w->q + b * d_k);
    }
}

/* S rows [from, from + m) = their queries · K[j0, j0 + n)ᵀ, S's rows KEYS apart. */
static void stream_scores_of(const struct stream_ctx *c, struct stream_scratch *w, size_t from,
                             size_t m, size_t j0, size_t n)
{
    const struct attn_matrix *k = c->k;
    size_t d_k = c->p->q->cols;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m, (blasint)n, (blasint)d_k,
                1.0, w->q + from * d_k, (blasint)d_k, k->data + j0 * k->stride,
                (blasint)k->stride, 0.0, w->s + from * ATTN_STREAM_KEYS, ATTN_STREAM_KEYS);
}

/*
 * The scores of every slot for keys [j0, j0 + n), each slot by its kernel's calls. Every
 * row in order is attn_forward's block: one call of its rows, the very call it makes.
 */
static void stream_scores(const struct stream_ctx *c, struct stream_scratch *w, size_t j0,
                          size_t n)
{
    if (c->rows == NULL) {
        stream_scores_of(c, w, 0, w->n, j0, n);
        return;
    }
    if (w->fours > 0)
        stream_scores_of(c, w, 0, w->fours, j0, n);
    for (size_t b = w->fours; b < w->fours + w->twos; b += 2)
        stream_scores_of(c, w, b, 2, j0, n);
    for (size_t b = w->fours + w->twos; b < w->n; b++)
        stream_scores_of(c, w, b, 1, j0, n);
}

/* The keys some row of the slots may see: [sinks_lo, sinks) and [lo, hi). */
struct stream_span {
    size_t sinks_lo, sinks, lo, hi;
};

static struct stream_span stream_span_of(const struct stream_ctx *c, const struct stream_scratch *w)
{
    struct stream_span s = { c->n_k, 0, c->n_k, 0 };
    if (!c->may_skip)
        return (struct stream_span){ 0, 0, 0, c->n_k };
    for (size_t b = 0; b < w->n; b++) {
        if (w->row[b] == ATTN_STREAM_PAD)
            continue;
        struct attn_vrow row = attn_vrow_of(c->p, c->v, c->n_q, c->n_k, stream_query(c, w->row[b]));
        size_t sinks, end;
        attn_vrow_ends(&row, &sinks, &end);
        if (sinks > row.sinks_from) {
            s.sinks_lo = row.sinks_from < s.sinks_lo ? row.sinks_from : s.sinks_lo;
            s.sinks = sinks > s.sinks ? sinks : s.sinks;
        }
        if (row.from < end) {
            s.lo = row.from < s.lo ? row.from : s.lo;
            s.hi = end > s.hi ? end : s.hi;
        }
    }
    return s;
}

static bool stream_span_meets(const struct stream_span *s, size_t j0, size_t j1)
{
    return (j0 < s->sinks && s->sinks_lo < j1) || (j0 < s->hi && s->lo < j1);
}

/* Key block [*j0, *j1) narrowed to the keys some row of the slots sees in it (the block
 * must meet the span): a document or a diagonal that ends inside a block costs its
 * keys, not the block's. */
static void stream_span_clip(const struct stream_span *s, size_t *j0, size_t *j1)
{
    size_t a = *j1, b = *j0;
    if (*j0 < s->sinks && s->sinks_lo < *j1) {
        a = s->sinks_lo > *j0 ? s->sinks_lo : *j0;
        b = s->sinks < *j1 ? s->sinks : *j1;
    }
    if (*j0 < s->hi && s->lo < *j1) {
        size_t lo = s->lo > *j0 ? s->lo : *j0, hi = s->hi < *j1 ? s->hi : *j1;
        a = lo < a ? lo : a;
        b = hi > b ? hi : b;
    }
    *j0 = a;
    *j1 = b;
}

/*
 * Slot b's online step over masked row x of keys [j0, j0 + n), bmax its largest cell:
 * the running max, the first key of the max score, the sums and the entropy's sum
 * rescaled to a new max, the accumulator rescaled to it, and x turned into e^(x − m).
 * The accumulator stays a sum of e·V, divided by the row's sum once at the end
 * (stream_row_finish), as FlashAttention 2 does: a pass over x a block saved. That sum
 * may overflow where the output does not (V near DBL_MAX / n_k); the pass is then run
 * again normalized (stream_pass), the accumulator divided by the sum at every block.
 */
static void stream_row_online(const struct stream_ctx *c, struct stream_scratch *w, size_t b,
                              double *x, size_t j0, size_t n, double bmax)
{
    double *acc = w->acc + b * c->out->d_v;
    if (bmax > w->top[b]) { /* strictly: an earlier block keeps a tie */
        w->top[b] = bmax;
        /* the argmax only the summary reads */
        w->arg[b] = c->p->skip_summary ? 0 : j0 + attn_row_first_of(x, n, bmax);
    }
    if (bmax == -INFINITY) { /* nothing seen here: weights 0, the state unchanged */
        memset(x, 0, n * sizeof *x);
        return;
    }
    double m_old = w->m[b], m = bmax > m_old ? bmax : m_old;
    double rescale = exp(m_old - m); /* 0 when m_old is -inf */
    /* The entropy's sum needs x beside e; without it, e replaces x in place. */
    double *e = c->p->skip_summary ? x : w->e;
    double sum = attn_row_exp(x, m, e, n);
    if (!c->p->skip_summary) {
        /* T' = c·(T + (m − m_old)·l_keys): each old e ln e shifted by the new max. */
        double t = w->lk[b] > 0 ? rescale * (w->t[b] + (m - m_old) * w->lk[b]) : 0.0;
        for (size_t j = 0; j < n; j++)
            if (e[j] > 0) /* −e ln e = e·(m − x); e = 0 adds nothing */
                t += e[j] * (m - x[j]);
        w->t[b] = t;
        memcpy(x, e, n * sizeof *x);
    }
    double l = rescale * w->l[b] + sum;
    if (c->normalized) { /* acc and the weights divided by the sum so far */
        double inv = 1.0 / l, keep = rescale * w->l[b] * inv;
        for (size_t k = 0; k < c->out->d_v; k++)
            acc[k] *= keep;
        for (size_t j = 0; j < n; j++) /* a product: a division per weight cost a tenth */
            x[j] *= inv;
    } else if (rescale != 1.0) {
        for (size_t k = 0; k < c->out->d_v; k++)
            acc[k] *= rescale;
    }
    w->lk[b] = rescale * w->lk[b] + sum;
    w->l[b] = l;
    w->m[b] = m;
}

/* Answer row r's output and summary from slot b's final state (stream.h). */
static void stream_row_finish(const struct stream_ctx *c, struct stream_scratch *w, size_t b,
                              size_t r)
{
    struct attn_summary *s = &c->out->summary;
    const struct attn_variants *v = c->v;
    size_t d_v = c->out->d_v;
    bool blocked = w->top[b] == -INFINITY;
    double *out = c->out->output.data + r * d_v, *acc = w->acc + b * d_v;
    /* A fully masked row's accumulator holds 0·V: 0, or NaN where V is not finite, as
     * attn_forward's output (its sum is 0, or the sink's alone). */
    for (size_t k = 0; k < d_v; k++)
        out[k] = blocked || c->normalized ? acc[k] : acc[k] / w->l[b];
    s->fully_masked[r] = blocked;
    s->row_sums[r] = s->max_weight[r] = s->entropy[r] = 0.0;
    /* skip_summary leaves argmax 0, as attn_forward does */
    s->argmax[r] = blocked && !c->p->skip_summary ? ATTN_NO_INDEX : 0;
    if (blocked) { /* the sink's softmax alone, or nothing */
        s->row_max[r] = s->lse[r] = v->sink ? v->sink_logit : -INFINITY;
        s->row_sum[r] = v->sink ? 1.0 : 0.0;
        return;
    }
    double l = w->l[b];
    s->row_max[r] = w->m[b];
    s->row_sum[r] = l;
    s->lse[r] = w->m[b] + log(l);
    if (c->p->skip_summary)
        return;
    double heaviest = exp(w->top[b] - w->m[b]) / l, keys = w->lk[b] / l;
    s->max_weight[r] = heaviest;
    s->argmax[r] = heaviest > 0 ? w->arg[b] : ATTN_NO_INDEX; /* 0: the sink took all */
    s->row_sums[r] = keys;
    s->entropy[r] = keys * log(l) + w->t[b] / l;
}

/* Starts rows [r0, r1): slots, queries, state empty (a sink at m = z, l = 1), output 0. */
static void stream_block_start(const struct stream_ctx *c, struct stream_scratch *w, size_t r0,
                               size_t r1)
{
    const struct attn_variants *v = c->v;
    stream_slots_of(c, w, r0, r1);
    stream_gather(c, w);
    for (size_t b = 0; b < w->n; b++) {
        w->m[b] = v->sink ? v->sink_logit : -INFINITY;
        w->l[b] = v->sink ? 1.0 : 0.0;
        w->lk[b] = w->t[b] = 0.0;
        w->top[b] = -INFINITY;
        w->arg[b] = ATTN_NO_INDEX;
    }
    memset(w->acc, 0, w->n * c->out->d_v * sizeof(double));
}

/*
 * Every key block of answer rows [r0, r1) (skipping those no row sees, when allowed),
 * then their outputs and summaries. False when a cell before the output was not finite;
 * a non-finite output cell sets output_bad instead. *n_blocked counts fully masked rows.
 */
static bool stream_block(struct stream_ctx *c, struct stream_scratch *w, size_t r0, size_t r1,
                         size_t *n_blocked)
{
    size_t d_v = c->out->d_v;
    const struct attn_matrix *val = c->p->v;
    stream_block_start(c, w, r0, r1);
    struct stream_span span = stream_span_of(c, w);
    for (size_t block = 0; block < c->n_k; block += ATTN_STREAM_KEYS) {
        size_t j0 = block, j1 = c->n_k - block < ATTN_STREAM_KEYS ? c->n_k : block + ATTN_STREAM_KEYS;
        if (!stream_span_meets(&span, j0, j1))
            continue;
        stream_span_clip(&span, &j0, &j1);
        size_t n = j1 - j0;
        stream_scores(c, w, j0, n);
        for (size_t b = 0; b < w->n; b++) {
            double *x = w->s + b * ATTN_STREAM_KEYS;
            if (w->row[b] == ATTN_STREAM_PAD) {
                memset(x, 0, n * sizeof *x);
                continue;
            }
            struct stream_row row = stream_row_of(c, stream_query(c, w->row[b]));
            double bmax;
            if (!stream_row_mask(c, &row, x, j0, n, &bmax))
                return false;
            stream_row_online(c, w, b, x, j0, n, bmax);
        }
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)w->n, (blasint)d_v,
                    (blasint)n, 1.0, w->s, ATTN_STREAM_KEYS, val->data + j0 * val->stride,
                    (blasint)val->stride, 1.0, w->acc, (blasint)d_v);
    }
    bool finite = true;
    for (size_t b = 0; b < w->n; b++) {
        if (w->row[b] == ATTN_STREAM_PAD)
            continue;
        stream_row_finish(c, w, b, w->row[b]);
        *n_blocked += c->out->summary.fully_masked[w->row[b]];
        for (size_t k = 0; k < d_v; k++)
            finite &= stream_finite(c->out->output.data[w->row[b] * d_v + k]);
    }
    if (!finite)
        atomic_store(&c->output_bad, true);
    return true;
}

/* ---- threads ---- */

/* One thread's part: its scratch, and the fully masked rows of the blocks it took. */
struct stream_share {
    struct stream_ctx *c;
    struct stream_scratch w;
    size_t n_blocked;
};

static void *stream_share_run(void *arg)
{
    struct stream_share *sh = arg;
    struct stream_ctx *c = sh->c;
    while (!atomic_load_explicit(&c->failed, memory_order_relaxed)) {
        size_t b = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
        if (b >= c->n_blocks)
            break;
        size_t r0 = b * ATTN_STREAM_ROWS;
        size_t r1 = c->n_rows - r0 > ATTN_STREAM_ROWS ? r0 + ATTN_STREAM_ROWS : c->n_rows;
        if (!stream_block(c, &sh->w, r0, r1, &sh->n_blocked))
            atomic_store(&c->failed, true);
    }
    return NULL;
}

/* ---- the first fault, in attn_forward's order ---- */

/* The first non-finite cell of rows (n, cols) at m, row-major; false when none. */
static bool stream_first_bad(const double *m, size_t n, size_t cols, size_t stride, size_t *row,
                             size_t *col)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < cols; j++)
            if (!stream_finite(m[i * stride + j])) {
                *row = i;
                *col = j;
                return true;
            }
    return false;
}

/* Records the fault and clears the answer. */
static enum attn_status stream_fault(struct stream_ctx *c, int step, size_t row, size_t col)
{
    stream_zero(c->out);
    c->out->fault.step = (enum attn_step)step;
    c->out->fault.row = row;
    c->out->fault.col = col;
    c->out->fault_step = step;
    return ATTN_EOVERFLOW;
}

/*
 * Whether cell j of a row is non-finite at `step` (scores, scaled, softcapped or masked),
 * x holding the row's scores of keys [j0, j0 + n); x is overwritten. The first such j,
 * or n.
 */
static size_t stream_bad_at_step(const struct stream_ctx *c, const struct stream_row *r,
                                 double *x, size_t j0, size_t n, int step)
{
    const struct attn_variants *v = c->v;
    for (size_t j = 0; attn_variants_banded(v) && j < n; j++)
        if (!attn_vrow_in_band(&r->keys, j0 + j))
            x[j] = 0.0;
    if (step != ATTN_STEP_SCORES)
        (void)attn_row_scale(x, x, n, c->p->scale);
    if (step != ATTN_STEP_SCORES && step != ATTN_STEP_SCALED && v->softcap > 0)
        attn_row_softcap(x, x, n, v->softcap);
    for (size_t j = 0; j < n; j++) {
        if (step != ATTN_STEP_MASKED) {
            if (!stream_finite(x[j]))
                return j;
            continue;
        }
        if (!attn_vrow_sees(&r->keys, j0 + j))
            continue;
        double y = r->bias != NULL ? x[j] + r->bias[j0 + j] : x[j];
        if (v->alibi)
            y -= v->alibi_slope * fabs(r->at - (double)(j0 + j));
        if (!stream_finite(y))
            return j;
    }
    return n;
}

/* The first fault of `step` over every answer row and key, in row order; false if none. */
static bool stream_step_fault(struct stream_ctx *c, struct stream_scratch *w, int step,
                              size_t *row, size_t *col)
{
    for (size_t r0 = 0; r0 < c->n_rows; r0 += ATTN_STREAM_ROWS) {
        size_t r1 = c->n_rows - r0 > ATTN_STREAM_ROWS ? r0 + ATTN_STREAM_ROWS : c->n_rows;
        size_t first[ATTN_STREAM_SLOTS], best = ATTN_STREAM_PAD;
        stream_slots_of(c, w, r0, r1);
        stream_gather(c, w);
        for (size_t b = 0; b < w->n; b++)
            first[b] = SIZE_MAX;
        for (size_t j0 = 0; j0 < c->n_k; j0 += ATTN_STREAM_KEYS) {
            size_t n = c->n_k - j0 < ATTN_STREAM_KEYS ? c->n_k - j0 : ATTN_STREAM_KEYS;
            stream_scores(c, w, j0, n);
            for (size_t b = 0; b < w->n; b++) {
                if (w->row[b] == ATTN_STREAM_PAD || first[b] != SIZE_MAX)
                    continue;
                struct stream_row rr = stream_row_of(c, stream_query(c, w->row[b]));
                size_t j = stream_bad_at_step(c, &rr, w->s + b * ATTN_STREAM_KEYS, j0, n, step);
                if (j < n)
                    first[b] = j0 + j;
            }
        }
        /* The first answer row with a fault; its slot's first key. */
        for (size_t b = 0; b < w->n; b++)
            if (first[b] != SIZE_MAX && (best == ATTN_STREAM_PAD || w->row[b] < w->row[best]))
                best = b;
        if (best != ATTN_STREAM_PAD) {
            *row = stream_query(c, w->row[best]);
            *col = first[best];
            return true;
        }
    }
    return false;
}

/*
 * After a block failed or an output cell was not finite: the fault attn_forward (or
 * attn_forward_variants) reports, step by step: the rotated queries (the listed rows)
 * and keys, then each (n_rows, n_k) step, then the output. When no block failed every
 * cell before the output was finite (a non-finite rotated query or key makes its
 * scores non-finite), so the output is all that is left to scan.
 */
static enum attn_status stream_find_fault(struct stream_ctx *c, struct stream_scratch *w)
{
    size_t row, col, d_k = c->p->q->cols;
    bool failed = atomic_load(&c->failed);
    if (failed && c->v->rope != NULL) {
        for (size_t r = 0; r < c->n_rows; r++) {
            stream_query_row(c, stream_query(c, r), w->q);
            if (stream_first_bad(w->q, 1, d_k, d_k, &row, &col))
                return stream_fault(c, ATTN_STEP_Q_ROPE, stream_query(c, r), col);
        }
        if (stream_first_bad(c->k->data, c->n_k, d_k, c->k->stride, &row, &col))
            return stream_fault(c, ATTN_STEP_K_ROPE, row, col);
    }
    const int steps[] = { ATTN_STEP_SCORES, ATTN_STEP_SCALED, ATTN_STEP_SOFTCAPPED,
                          ATTN_STEP_MASKED };
    for (size_t s = 0; failed && s < sizeof steps / sizeof steps[0]; s++) {
        if (steps[s] == ATTN_STEP_SOFTCAPPED && !(c->v->softcap > 0))
            continue;
        if (stream_step_fault(c, w, steps[s], &row, &col))
            return stream_fault(c, steps[s], row, col);
    }
    if (stream_first_bad(c->out->output.data, c->n_rows, c->out->d_v, c->out->d_v, &row, &col))
        return stream_fault(c, ATTN_STEP_OUTPUT, stream_query(c, row), col);
    /* Unreachable: every cell a block checks is checked above. Say something true. */
    return stream_fault(c, ATTN_STEP_WEIGHTS, stream_query(c, 0), 0);
}

/* ---- checks and the call ---- */

/* The largest |x| over rows (n, cols) at m; +inf (or NaN) when a cell is not finite. */
static double stream_max_abs(const double *m, size_t n, size_t cols, size_t stride)
{
    double big = 0.0;
    bool finite = true;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < cols; j++) {
            double a = fabs(m[i * stride + j]);
            finite &= a <= DBL_MAX;
            big = a > big ? a : big;
        }
    return finite ? big : INFINITY;
}

/*
 * Whether key blocks no row sees may be skipped: attn_forward computes every score (and
 * mixes every value, 0·inf being NaN), so only when every listed query, key and value is
 * finite and no score can overflow: |q·k|·scale <= d_k·max|q|·max|k|·scale, with room for
 * the dot product's rounding.
 */
static bool stream_may_skip(const struct stream_ctx *c)
{
    const struct attn_matrix *q = c->p->q, *k = c->k, *v = c->p->v;
    double q_big = 0.0;
    if (c->p->mask.kind != ATTN_MASK_CAUSAL && !c->v->window && c->v->chunk == 0 &&
        c->v->doc_q == NULL)
        return false; /* every row sees every key block: nothing to skip, no scan */
    for (size_t r = 0; r < c->n_rows; r++) {
        double a = stream_max_abs(q->data + stream_query(c, r) * q->stride, 1, q->cols, q->stride);
        q_big = a > q_big ? a : q_big;
    }
    double k_big = stream_max_abs(k->data, k->rows, k->cols, k->stride);
    double v_big = stream_max_abs(v->data, v->rows, v->cols, v->stride);
    /* A rotated query is at most twice its largest entry (|a cos − b sin| <= |a| + |b|). */
    double bound = (double)q->cols * (c->v->rope != NULL ? 2 * q_big : q_big) *
                   k_big;
    double scale = c->p->scale > 1 ? c->p->scale : 1.0;
    return v_big <= DBL_MAX && bound <= DBL_MAX / 4 && bound * scale <= DBL_MAX / 4;
}

/* attn_forward_variants's checks of the variants a streamed pass runs; not dropout. */
static enum attn_status stream_check_variants(const struct attn_problem *p,
                                              const struct attn_variants *v)
{
    const struct attn_rope *r = v->rope;
    if (r != NULL && (r->cos_q == NULL || r->n_q != p->q->rows || r->n_k != p->k->rows ||
                      r->rotated > p->q->cols))
        return ATTN_EINVAL;
    if (!(v->softcap >= 0) || !isfinite(v->softcap) || (v->alibi && !isfinite(v->alibi_slope)) ||
        (v->sink && !isfinite(v->sink_logit)) || v->dropout)
        return ATTN_EINVAL;
    return attn_rules_ok(v, p->q->rows, p->k->rows) ? ATTN_OK : ATTN_EINVAL;
}

static enum attn_status stream_check(const struct attn_stream *out, const struct attn_problem *p,
                                     const struct attn_variants *v, const size_t *rows,
                                     size_t n_rows)
{
    if (out == NULL || out->block == NULL || p == NULL || p->q == NULL || p->k == NULL ||
        p->v == NULL)
        return ATTN_EINVAL;
    /* attn_forward's rules, on a trace that only has the sizes. */
    struct attn_trace sizes = { .n_q = p->q->rows, .n_k = p->k->rows, .d_v = p->v->cols,
                                .block = out->block };
    enum attn_status st = attn_check_problem(&sizes, p);
    if (st != ATTN_OK || (st = stream_check_variants(p, v)) != ATTN_OK)
        return st;
    if (out->n_rows != n_rows || out->d_v != p->v->cols || (rows == NULL && n_rows != p->q->rows))
        return ATTN_EINVAL;
    for (size_t r = 0; rows != NULL && r < n_rows; r++)
        if (rows[r] >= p->q->rows)
            return ATTN_EINVAL;
    return ATTN_OK;
}

/* K rotated by RoPE into *k (n_k, d_k), allocated here; false when memory runs out. */
static bool stream_rotate_keys(const struct attn_problem *p, const struct attn_rope *rope,
                               struct attn_matrix *k)
{
    size_t n_k = p->k->rows, d_k = p->k->cols, half = rope->rotated / 2;
    int overflow = 0;
    size_t cells = attn_cells(n_k, d_k, &overflow);
    double *d = overflow || cells > SIZE_MAX / sizeof(double) ? NULL : malloc(cells * sizeof *d);
    if (d == NULL)
        return false;
    bool interleaved = rope->layout == ATTN_ROPE_INTERLEAVED;
    for (size_t j = 0; j < n_k; j++) {
        const double *src = p->k->data + j * p->k->stride;
        double *dst = d + j * d_k;
        const double *cs = rope->cos_k + j * half, *sn = rope->sin_k + j * half;
        memcpy(dst, src, d_k * sizeof *dst);
        for (size_t c = 0; c < half; c++) {
            size_t a = interleaved ? 2 * c : c, b = interleaved ? 2 * c + 1 : c + half;
            dst[a] = src[a] * cs[c] - src[b] * sn[c];
            dst[b] = src[b] * cs[c] + src[a] * sn[c];
        }
    }
    *k = attn_matrix_view(d, n_k, d_k);
    return true;
}

/* Runs the row blocks on n_shares threads (share 0 here); the threads' scratch is theirs. */
static void stream_run_shares(struct stream_share *shares, size_t n_shares)
{
    pthread_t ids[ATTN_STREAM_MAX_THREADS];
    bool started[ATTN_STREAM_MAX_THREADS] = { false };
    /* pthreads, not C11 threads: the sanitizers follow pthread_create only. */
    for (size_t i = 1; i < n_shares; i++)
        started[i] = pthread_create(&ids[i], NULL, stream_share_run, &shares[i]) == 0;
    stream_share_run(&shares[0]);
    for (size_t i = 1; i < n_shares; i++)
        if (started[i])
            pthread_join(ids[i], NULL);
}

/* The pass proper, once the arguments are checked and K is what the scores read. */
static enum attn_status stream_pass(struct stream_ctx *c, unsigned threads)
{
    struct stream_share shares[ATTN_STREAM_MAX_THREADS];
    size_t n_shares = threads < 1 ? 1 : threads > ATTN_STREAM_MAX_THREADS ? ATTN_STREAM_MAX_THREADS
                                                                          : threads;
    n_shares = n_shares > c->n_blocks ? c->n_blocks : n_shares;
    for (size_t i = 0; i < n_shares; i++) {
        shares[i] = (struct stream_share){ .c = c };
        if (!stream_scratch_alloc(&shares[i].w, c->p->q->cols, c->out->d_v)) {
            for (size_t k = 0; k < i; k++)
                free(shares[k].w.q);
            return ATTN_ENOMEM;
        }
    }
    stream_run_shares(shares, n_shares);
    if (!atomic_load(&c->failed) && atomic_load(&c->output_bad)) {
        /* An output cell overflowed: the unnormalized sums may have, where the output
         * would not. Once more normalized; a fault still there is the output's own. */
        c->normalized = true;
        atomic_store(&c->next, 0);
        atomic_store(&c->output_bad, false);
        for (size_t i = 0; i < n_shares; i++)
            shares[i].n_blocked = 0;
        stream_run_shares(shares, n_shares);
    }
    enum attn_status st = ATTN_OK;
    if (atomic_load(&c->failed) || atomic_load(&c->output_bad)) {
        st = stream_find_fault(c, &shares[0].w);
    } else {
        c->out->summary.n_fully_masked = 0;
        for (size_t i = 0; i < n_shares; i++)
            c->out->summary.n_fully_masked += shares[i].n_blocked;
    }
    for (size_t i = 0; i < n_shares; i++)
        free(shares[i].w.q);
    return st;
}

enum attn_status attn_forward_stream(struct attn_stream *out, const struct attn_problem *p,
                                     const struct attn_variants *v, const size_t *rows,
                                     size_t n_rows, unsigned threads)
{
    static const struct attn_variants none;
    v = v != NULL ? v : &none;
    enum attn_status st = stream_check(out, p, v, rows, n_rows);
    if (st != ATTN_OK)
        return st;
    struct attn_matrix rotated = { 0 };
    if (v->rope != NULL && !stream_rotate_keys(p, v->rope, &rotated))
        return ATTN_ENOMEM;
    struct stream_ctx c = { .p = p, .v = v, .k = v->rope != NULL ? &rotated : p->k,
                            .rows = rows, .n_q = p->q->rows, .n_k = p->k->rows,
                            .n_rows = n_rows, .out = out,
                            .n_blocks = (n_rows + ATTN_STREAM_ROWS - 1) / ATTN_STREAM_ROWS };
    atomic_init(&c.next, 0);
    atomic_init(&c.failed, false);
    atomic_init(&c.output_bad, false);
    out->fault = (struct attn_fault){ ATTN_STEP_NONE, 0, 0 };
    out->fault_step = ATTN_STEP_NONE;
    c.may_skip = stream_may_skip(&c);
    st = stream_pass(&c, threads);
    free(rotated.data);
    return st;
}
