/*
 * tests/unit/check_masks.c — the masks of training (top-left causal, documents, the
 * prefix, the chunk) and the block map (core/variants.h, core/block_map.h).
 *
 * One Check suite, "masks", with the test cases
 *   Examples   the published pictures: FlashAttention's bottom-right causal for
 *              seqlen_q != seqlen_k (its README), SDPA's top-left, packed documents,
 *              Llama 4's chunks, a prefix-LM; block maps counted by hand;
 *   Random     every rule alone and together on random problems (n_q != n_k, documents
 *              of unequal query and key lengths, fully masked rows) against naive_sees,
 *              a loop written here from DESIGN.md's words: which cells are visible,
 *              the fast path against the reference and the streamed path, band_only
 *              against the full pass, the block map against tiles counted cell by cell.
 */
#include <check.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "core/block_map.h"
#include "core/stream.h"
#include "core/variants.h"
#include "tests/unit/suite_run.h"

enum { MAX_DOCS = 6 };

/* The rules as a request states them, before core's starts are made. */
struct rules {
    int causal; /* 0 none, 1 bottom-right, 2 top-left */
    size_t prefix, chunk;
    size_t n_docs, lq[MAX_DOCS], lk[MAX_DOCS];
    bool window, has_left, has_right;
    size_t left, right, sinks;
    const unsigned char *allow; /* (n_q, n_k) or NULL */
};

static long long floor_div(long long a, long long b)
{
    return (long long)floor((double)a / (double)b);
}

/*
 * DESIGN.md, "Masks of today's training": query i of document d sees only d's keys;
 * inside it positions count from the document's start, off = lk − lq; causal j ≤ i + off
 * (top-left j ≤ i) unless j < prefix; the window [i + off − left, i + off + right]
 * unless j < sinks; the chunk ⌊(i + off)/C⌋ = ⌊j/C⌋; and the cell table.
 */
static bool naive_sees(const struct rules *R, size_t n_q, size_t n_k, size_t i, size_t j)
{
    size_t q0 = 0, k0 = 0, lq = n_q, lk = n_k;
    if (R->allow != NULL && !R->allow[i * n_k + j])
        return false;
    if (R->n_docs > 0) {
        size_t d = 0;
        while (i >= q0 + R->lq[d]) {
            q0 += R->lq[d];
            k0 += R->lk[d];
            d++;
        }
        lq = R->lq[d];
        lk = R->lk[d];
        if (j < k0 || j >= k0 + lk)
            return false;
    }
    long long qi = (long long)i - (long long)q0, kj = (long long)j - (long long)k0;
    long long off = (long long)lk - (long long)lq;
    bool exempt = kj < (long long)R->prefix;
    if (R->causal == 1 && !exempt && kj > qi + off)
        return false;
    if (R->causal == 2 && !exempt && kj > qi)
        return false;
    if (R->window && kj >= (long long)R->sinks) {
        if (R->has_left && kj < qi + off - (long long)R->left)
            return false;
        if (R->has_right && kj > qi + off + (long long)R->right)
            return false;
    }
    if (R->chunk > 0 && floor_div(qi + off, (long long)R->chunk) != floor_div(kj, (long long)R->chunk))
        return false;
    return true;
}

/* core's form of the rules: the mask in p, the rest in v, starts in the caller's arrays. */
static void rules_to_core(const struct rules *R, size_t n_q, size_t n_k, struct attn_problem *p,
                          struct attn_variants *v, size_t *starts_q, size_t *starts_k)
{
    p->mask.kind = R->allow != NULL ? ATTN_MASK_CELLS
                   : R->causal != 0 ? ATTN_MASK_CAUSAL
                                    : ATTN_MASK_NONE;
    p->mask.allow = R->allow;
    p->mask.rows = n_q;
    v->top_left = R->causal == 2;
    v->prefix = R->prefix;
    v->chunk = R->chunk;
    v->window = R->window;
    v->has_left = R->has_left;
    v->has_right = R->has_right;
    v->left = R->left;
    v->right = R->right;
    v->sink_tokens = R->sinks;
    if (R->n_docs > 0) {
        starts_q[0] = starts_k[0] = 0;
        for (size_t d = 0; d < R->n_docs; d++) {
            starts_q[d + 1] = starts_q[d] + R->lq[d];
            starts_k[d + 1] = starts_k[d] + R->lk[d];
        }
        v->doc_q = starts_q;
        v->doc_k = starts_k;
        v->n_docs = R->n_docs;
    }
    (void)n_k;
}

/* ---- the published examples ---- */

/* The rows of `want` ("1101" strings) against attn_visible_row and naive_sees. */
static void expect_picture(const struct rules *R, size_t n_q, size_t n_k, const char *const *want)
{
    struct attn_problem p = { 0 };
    struct attn_variants v = { 0 };
    size_t sq[MAX_DOCS + 1], sk[MAX_DOCS + 1];
    rules_to_core(R, n_q, n_k, &p, &v, sq, sk);
    unsigned char row[64];
    for (size_t i = 0; i < n_q; i++) {
        attn_visible_row(&p, &v, n_q, n_k, i, row);
        for (size_t j = 0; j < n_k; j++) {
            int w = want[i][j] == '1';
            ck_assert_msg(row[j] == w, "row %zu key %zu: got %d, want %d", i, j, row[j], w);
            ck_assert_msg(naive_sees(R, n_q, n_k, i, j) == w, "naive row %zu key %zu", i, j);
            ck_assert_msg(attn_key_visible(&p, &v, n_q, n_k, i, j) == w, "contract %zu %zu", i, j);
        }
    }
}

/* FlashAttention's README (2.1): causal with seqlen_q = 2, seqlen_k = 5 aligns bottom-right,
 * and with seqlen_q = 5, seqlen_k = 2 leaves the first three rows empty. */
START_TEST(test_flash_bottom_right)
{
    struct rules R = { .causal = 1 };
    expect_picture(&R, 2, 5, (const char *const[]){ "11110", "11111" });
    expect_picture(&R, 5, 2, (const char *const[]){ "00", "00", "00", "10", "11" });
}
END_TEST

/* SDPA's is_causal: torch.ones(L, S).tril(diagonal=0), top-left. */
START_TEST(test_sdpa_top_left)
{
    struct rules R = { .causal = 2 };
    expect_picture(&R, 2, 5, (const char *const[]){ "10000", "11000" });
    expect_picture(&R, 5, 2, (const char *const[]){ "10", "11", "11", "11", "11" });
}
END_TEST

/* Three packed documents of 2, 3 and 1 tokens, causal inside each. */
START_TEST(test_documents_packed)
{
    struct rules R = { .causal = 1, .n_docs = 3, .lq = { 2, 3, 1 }, .lk = { 2, 3, 1 } };
    expect_picture(&R, 6, 6, (const char *const[]){ "100000", "110000", "001000", "001100",
                                                    "001110", "000001" });
    /* varlen: queries 1 + 2, keys 3 + 2; each document bottom-right on its own. */
    struct rules V = { .causal = 1, .n_docs = 2, .lq = { 1, 2 }, .lk = { 3, 2 } };
    expect_picture(&V, 3, 5, (const char *const[]){ "11100", "00010", "00011" });
}
END_TEST

/* Llama 4's chunked attention, C = 3, causal: query i sees [3⌊i/3⌋, i]. */
START_TEST(test_chunk_llama4)
{
    struct rules R = { .causal = 1, .chunk = 3 };
    expect_picture(&R, 7, 7, (const char *const[]){ "1000000", "1100000", "1110000", "0001000",
                                                    "0001100", "0001110", "0000001" });
}
END_TEST

/* A prefix-LM of 3: the prefix sees itself both ways, the rest is causal. */
START_TEST(test_prefix_lm)
{
    struct rules R = { .causal = 1, .prefix = 3 };
    expect_picture(&R, 5, 5, (const char *const[]){ "11100", "11100", "11100", "11110",
                                                    "11111" });
    struct rules none = { .prefix = 3 }; /* without causal it changes nothing */
    expect_picture(&none, 2, 2, (const char *const[]){ "11", "11" });
}
END_TEST

/* Documents [4, 4] causal in tiles of 4: two partial diagonal tiles, two empty; and
 * top-left causal on 8 in tiles of 4 by 2: below the diagonal full. */
START_TEST(test_block_map_by_hand)
{
    struct attn_problem p = { .mask = { .kind = ATTN_MASK_CAUSAL } };
    size_t sq[] = { 0, 4, 8 }, sk[] = { 0, 4, 8 };
    struct attn_variants v = { .doc_q = sq, .doc_k = sk, .n_docs = 2 };
    struct attn_block_map m;
    ck_assert_int_eq(attn_block_map(&m, &p, &v, 8, 8, 4, 4), ATTN_OK);
    const unsigned char docs[] = { 1, 0, 0, 1 };
    ck_assert_uint_eq(m.rows, 2);
    ck_assert_uint_eq(m.cols, 2);
    ck_assert_mem_eq(m.tiles, docs, 4);
    ck_assert_double_eq(attn_block_map_sparsity(&m), 0.5);
    attn_block_map_free(&m);
    struct attn_variants tl = { .top_left = true };
    ck_assert_int_eq(attn_block_map(&m, &p, &tl, 8, 8, 4, 2), ATTN_OK);
    /* rows 0-3: keys 0-1 partial (row 0 sees only key 0), 2-3 partial, 4-7 empty;
     * rows 4-7: keys 0-3 full, 4-5 partial, 6-7 partial. */
    const unsigned char causal[] = { 1, 1, 0, 0, 2, 2, 1, 1 };
    ck_assert_uint_eq(m.cols, 4);
    ck_assert_mem_eq(m.tiles, causal, 8);
    ck_assert_uint_eq(m.empty, 2);
    attn_block_map_free(&m);
    /* A last tile smaller than the block: 5 keys in tiles of 4, no mask: both full. */
    struct attn_problem open = { 0 };
    struct attn_variants none = { 0 };
    ck_assert_int_eq(attn_block_map(&m, &open, &none, 3, 5, 4, 4), ATTN_OK);
    ck_assert_uint_eq(m.rows, 1);
    ck_assert_uint_eq(m.cols, 2);
    ck_assert_int_eq(m.tiles[0], ATTN_TILE_FULL);
    ck_assert_int_eq(m.tiles[1], ATTN_TILE_FULL);
    attn_block_map_free(&m);
    ck_assert_int_eq(attn_block_map(&m, &open, &none, 3, 5, 0, 4), ATTN_EINVAL);
    ck_assert_ptr_null(m.tiles);
}
END_TEST

START_TEST(test_rules_rejected)
{
    size_t sq[] = { 0, 2, 4 }, sk[] = { 0, 3, 5 }, gap[] = { 0, 0, 5 };
    struct attn_variants ok = { .doc_q = sq, .doc_k = sk, .n_docs = 2 };
    ck_assert(attn_rules_ok(&ok, 4, 5));
    ck_assert(!attn_rules_ok(&ok, 5, 5)); /* the queries add up to 4 */
    struct attn_variants empty = { .doc_q = sq, .doc_k = gap, .n_docs = 2 };
    ck_assert(!attn_rules_ok(&empty, 4, 5)); /* a document of no keys */
    struct attn_variants prefix = { .prefix = 6 };
    ck_assert(!attn_rules_ok(&prefix, 4, 5));
    prefix.prefix = 5;
    ck_assert(attn_rules_ok(&prefix, 4, 5));
}
END_TEST

/* ---- random problems ---- */

static uint64_t rng_state = 0x5eed0f3au;

static uint64_t rnd_u(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state >> 33;
}

static double rnd(void)
{
    return (double)rnd_u() * 0x1.0p-31 * 4 - 2;
}

/* n split into k lengths >= 1 (k <= n). */
static void split(size_t n, size_t k, size_t *len)
{
    size_t left = n;
    for (size_t d = 0; d < k; d++) {
        size_t room = left - (k - d - 1); /* leave one for each document after */
        len[d] = d + 1 == k ? left : 1 + (size_t)rnd_u() % room;
        if (len[d] > room)
            len[d] = room;
        left -= len[d];
    }
}

/* Round r's rules: each rule on in some rounds, alone and together. */
static struct rules random_rules(int r, size_t n_q, size_t n_k, unsigned char *allow)
{
    struct rules R = { 0 };
    R.causal = (int)(rnd_u() % 3);
    if (r % 5 == 1)
        R.prefix = (size_t)rnd_u() % (n_k + 1);
    if (r % 4 == 2)
        R.chunk = 1 + (size_t)rnd_u() % 6;
    if (r % 3 == 0) {
        size_t most = n_q < n_k ? n_q : n_k;
        R.n_docs = 1 + (size_t)rnd_u() % (most < MAX_DOCS ? most : MAX_DOCS);
        split(n_q, R.n_docs, R.lq);
        split(n_k, R.n_docs, R.lk);
    }
    if (r % 7 == 3 || r % 7 == 5) {
        R.window = true;
        R.has_left = rnd_u() % 4 != 0;
        R.has_right = rnd_u() % 3 == 0;
        R.left = (size_t)rnd_u() % 5;
        R.right = (size_t)rnd_u() % 3;
        R.sinks = (size_t)rnd_u() % 3;
    }
    if (r % 11 == 4) {
        for (size_t c = 0; c < n_q * n_k; c++)
            allow[c] = rnd_u() % 4 != 0;
        R.allow = allow;
        R.causal = 0; /* one mask field: a table or causal, never both */
    }
    return R;
}

static int near(double got, double want, double tol)
{
    return got == want || fabs(got - want) <= tol + tol * fabs(want);
}

/* The visible cells of every path against the loop, and the answers of every path
 * against the reference. */
START_TEST(test_random_rules)
{
    for (int r = 0; r < 400; r++) {
        size_t n_q = 1 + (size_t)rnd_u() % 24, n_k = 1 + (size_t)rnd_u() % 30, d = 4;
        double *q = malloc(n_q * d * sizeof *q), *k = malloc(n_k * d * sizeof *k);
        double *val = malloc(n_k * 2 * sizeof *val);
        unsigned char *allow = malloc(n_q * n_k), *row = malloc(n_k);
        for (size_t c = 0; c < n_q * d; c++)
            q[c] = rnd();
        for (size_t c = 0; c < n_k * d; c++)
            k[c] = rnd();
        for (size_t c = 0; c < n_k * 2; c++)
            val[c] = rnd();
        struct attn_matrix qm = attn_matrix_view(q, n_q, d), km = attn_matrix_view(k, n_k, d);
        struct attn_matrix vm = attn_matrix_view(val, n_k, 2);
        struct rules R = random_rules(r, n_q, n_k, allow);
        struct attn_problem p = { .q = &qm, .k = &km, .v = &vm, .scale = 0.5 };
        struct attn_variants v = { .alibi = r % 2 == 0, .alibi_slope = 0.25,
                                   .sink = r % 6 == 1, .sink_logit = 0.3 };
        size_t sq[MAX_DOCS + 1], sk[MAX_DOCS + 1];
        rules_to_core(&R, n_q, n_k, &p, &v, sq, sk);
        ck_assert(attn_rules_ok(&v, n_q, n_k));

        struct attn_vtrace fast, ref, band;
        ck_assert_int_eq(attn_vtrace_alloc(&fast, n_q, n_k, d, 2, &v), ATTN_OK);
        ck_assert_int_eq(attn_vtrace_alloc(&ref, n_q, n_k, d, 2, &v), ATTN_OK);
        ck_assert_int_eq(attn_vtrace_alloc(&band, n_q, n_k, d, 2, &v), ATTN_OK);
        ck_assert_int_eq(attn_forward_variants(&fast, &p, &v), ATTN_OK);
        ck_assert_int_eq(attn_reference_variants(&ref, &p, &v), ATTN_OK);
        struct attn_variants vb = v;
        vb.band_only = true;
        ck_assert_int_eq(attn_forward_variants(&band, &p, &vb), ATTN_OK);
        struct attn_stream st;
        ck_assert_int_eq(attn_stream_alloc(&st, n_q, 2), ATTN_OK);
        ck_assert_int_eq(attn_forward_stream(&st, &p, &v, NULL, n_q, 1), ATTN_OK);

        for (size_t i = 0; i < n_q; i++) {
            bool any = false;
            attn_visible_row(&p, &v, n_q, n_k, i, row);
            for (size_t j = 0; j < n_k; j++) {
                bool want = naive_sees(&R, n_q, n_k, i, j);
                size_t c = i * n_k + j;
                any |= want;
                ck_assert_msg(row[j] == want && attn_key_visible(&p, &v, n_q, n_k, i, j) == want,
                              "round %d (%zu, %zu): visible %d, want %d", r, i, j, row[j], want);
                ck_assert_msg((fast.base.masked.data[c] != -INFINITY) == want &&
                                  (ref.base.masked.data[c] != -INFINITY) == want &&
                                  (band.base.masked.data[c] != -INFINITY) == want,
                              "round %d (%zu, %zu): masked %g / %g / %g, want %d", r, i, j,
                              fast.base.masked.data[c], ref.base.masked.data[c],
                              band.base.masked.data[c], want);
                ck_assert_msg(near(fast.base.weights.data[c], ref.base.weights.data[c], 1e-12) &&
                                  near(band.base.weights.data[c], fast.base.weights.data[c], 1e-12),
                              "round %d weight (%zu, %zu)", r, i, j);
            }
            ck_assert_int_eq(fast.base.summary.fully_masked[i], !any);
            ck_assert_int_eq(st.summary.fully_masked[i], !any);
            ck_assert_msg(fast.base.summary.lse[i] == ref.base.summary.lse[i] ||
                              near(fast.base.summary.lse[i], ref.base.summary.lse[i], 1e-12),
                          "round %d lse %zu", r, i);
            ck_assert_msg(st.summary.lse[i] == fast.base.summary.lse[i] ||
                              near(st.summary.lse[i], fast.base.summary.lse[i], 1e-12),
                          "round %d streamed lse %zu", r, i);
            for (size_t c = 0; c < 2; c++) {
                double want = ref.base.output.data[i * 2 + c];
                ck_assert_msg(near(fast.base.output.data[i * 2 + c], want, 1e-12) &&
                                  near(band.base.output.data[i * 2 + c], want, 1e-12) &&
                                  near(st.output.data[i * 2 + c], want, 1e-12),
                              "round %d output (%zu, %zu)", r, i, c);
            }
        }
        attn_stream_free(&st);
        attn_vtrace_free(&fast);
        attn_vtrace_free(&ref);
        attn_vtrace_free(&band);
        free(q);
        free(k);
        free(val);
        free(allow);
        free(row);
    }
}
END_TEST

/* The block map against tiles counted cell by cell with naive_sees. */
START_TEST(test_random_block_map)
{
    for (int r = 0; r < 300; r++) {
        size_t n_q = 1 + (size_t)rnd_u() % 40, n_k = 1 + (size_t)rnd_u() % 40;
        size_t bq = 1 + (size_t)rnd_u() % 9, bk = 1 + (size_t)rnd_u() % 9;
        unsigned char *allow = malloc(n_q * n_k);
        struct rules R = random_rules(r, n_q, n_k, allow);
        struct attn_problem p = { 0 };
        struct attn_variants v = { 0 };
        size_t sq[MAX_DOCS + 1], sk[MAX_DOCS + 1];
        rules_to_core(&R, n_q, n_k, &p, &v, sq, sk);
        struct attn_block_map m;
        ck_assert_int_eq(attn_block_map(&m, &p, &v, n_q, n_k, bq, bk), ATTN_OK);
        ck_assert_uint_eq(m.rows, (n_q + bq - 1) / bq);
        ck_assert_uint_eq(m.cols, (n_k + bk - 1) / bk);
        size_t empty = 0;
        for (size_t tr = 0; tr < m.rows; tr++)
            for (size_t tc = 0; tc < m.cols; tc++) {
                size_t seen = 0, cells = 0;
                for (size_t i = tr * bq; i < n_q && i < (tr + 1) * bq; i++)
                    for (size_t j = tc * bk; j < n_k && j < (tc + 1) * bk; j++) {
                        cells++;
                        seen += naive_sees(&R, n_q, n_k, i, j);
                    }
                int want = seen == 0 ? 0 : seen == cells ? 2 : 1;
                empty += want == 0;
                ck_assert_msg(m.tiles[tr * m.cols + tc] == want, "round %d tile (%zu, %zu): %d, "
                              "want %d", r, tr, tc, m.tiles[tr * m.cols + tc], want);
            }
        ck_assert_uint_eq(m.empty, empty);
        attn_block_map_free(&m);
        free(allow);
    }
}
END_TEST

/* Documents longer than a streamed key block: the blocks of other documents are skipped,
 * the answer the full pass's. */
START_TEST(test_stream_skips_documents)
{
    enum { N = 1300, D = 8, DOCS = 3 };
    double *q = malloc(N * D * sizeof *q), *k = malloc(N * D * sizeof *k);
    double *val = malloc(N * 2 * sizeof *val);
    for (size_t c = 0; c < N * D; c++) {
        q[c] = rnd();
        k[c] = rnd();
    }
    for (size_t c = 0; c < N * 2; c++)
        val[c] = rnd();
    struct attn_matrix qm = attn_matrix_view(q, N, D), km = attn_matrix_view(k, N, D);
    struct attn_matrix vm = attn_matrix_view(val, N, 2);
    struct attn_problem p = { .q = &qm, .k = &km, .v = &vm, .scale = 0.3,
                              .mask = { .kind = ATTN_MASK_CAUSAL } };
    size_t starts[] = { 0, 600, 1250, N };
    struct attn_variants v = { .doc_q = starts, .doc_k = starts, .n_docs = DOCS, .chunk = 700 };
    struct attn_vtrace full;
    struct attn_stream st;
    ck_assert_int_eq(attn_vtrace_alloc(&full, N, N, D, 2, &v), ATTN_OK);
    ck_assert_int_eq(attn_forward_variants(&full, &p, &v), ATTN_OK);
    ck_assert_int_eq(attn_stream_alloc(&st, N, 2), ATTN_OK);
    ck_assert_int_eq(attn_forward_stream(&st, &p, &v, NULL, N, 2), ATTN_OK);
    for (size_t c = 0; c < N * 2; c++)
        ck_assert_msg(near(st.output.data[c], full.base.output.data[c], 1e-12), "cell %zu", c);
    for (size_t i = 0; i < N; i++)
        ck_assert(near(st.summary.lse[i], full.base.summary.lse[i], 1e-12));
    attn_stream_free(&st);
    attn_vtrace_free(&full);
    free(q);
    free(k);
    free(val);
}
END_TEST

static Suite *masks_suite(void)
{
    Suite *s = suite_create("masks");
    TCase *ex = tcase_create("Examples"), *rnd_case = tcase_create("Random");
    tcase_add_test(ex, test_flash_bottom_right);
    tcase_add_test(ex, test_sdpa_top_left);
    tcase_add_test(ex, test_documents_packed);
    tcase_add_test(ex, test_chunk_llama4);
    tcase_add_test(ex, test_prefix_lm);
    tcase_add_test(ex, test_block_map_by_hand);
    tcase_add_test(ex, test_rules_rejected);
    tcase_add_test(rnd_case, test_random_rules);
    tcase_add_test(rnd_case, test_random_block_map);
    tcase_add_test(rnd_case, test_stream_skips_documents);
    tcase_set_timeout(rnd_case, 60);
    suite_add_tcase(s, ex);
    suite_add_tcase(s, rnd_case);
    return s;
}

int main(void)
{
    return suite_run(masks_suite());
}
