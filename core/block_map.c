/*
 * core/block_map.c — the visible matrix's rows and the block map (block_map.h), from a
 * row's spans (variants.c's attn_vrow_of, the rule every pass reads).
 */
#include "block_map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A row's visible keys without the cell table: up to two ranges, disjoint and in order. */
struct vis_spans {
    size_t a[2], b[2];
};

static struct vis_spans vis_spans_of(const struct attn_vrow *r)
{
    size_t s1, w1;
    attn_vrow_ends(r, &s1, &w1);
    struct vis_spans s = { { r->sinks_from, r->from }, { s1 > r->sinks_from ? s1 : r->sinks_from,
                                                         w1 > r->from ? w1 : r->from } };
    if (s.b[0] > s.a[0] && s.b[0] >= s.a[1] && s.b[1] > s.a[1]) { /* they meet: one range */
        s.a[1] = s.a[0];
        s.b[1] = s.b[0] > s.b[1] ? s.b[0] : s.b[1];
        s.b[0] = s.a[0];
    }
    return s;
}

void attn_visible_row(const struct attn_problem *p, const struct attn_variants *v, size_t n_q,
                      size_t n_k, size_t i, unsigned char *out)
{
    struct attn_vrow r = attn_vrow_of(p, v, n_q, n_k, i);
    struct vis_spans s = vis_spans_of(&r);
    memset(out, 0, n_k);
    for (int k = 0; k < 2; k++)
        for (size_t j = s.a[k]; j < s.b[k]; j++)
            out[j] = r.allow == NULL || r.allow[j] != 0;
}

/* Adds row r's visible keys to count[t], tile t of width bk. */
static void vis_count_row(const struct attn_vrow *r, size_t bk, size_t *count)
{
    struct vis_spans s = vis_spans_of(r);
    for (int k = 0; k < 2; k++) {
        if (r->allow != NULL) {
            for (size_t j = s.a[k]; j < s.b[k]; j++)
                count[j / bk] += r->allow[j] != 0;
            continue;
        }
        for (size_t j = s.a[k]; j < s.b[k];) { /* tile by tile: the overlap's width */
            size_t end = (j / bk + 1) * bk;
            end = end < s.b[k] ? end : s.b[k];
            count[j / bk] += end - j;
            j = end;
        }
    }
}

enum attn_status attn_block_map(struct attn_block_map *out, const struct attn_problem *p,
                                const struct attn_variants *v, size_t n_q, size_t n_k,
                                size_t block_q, size_t block_k)
{
    if (out == NULL)
        return ATTN_EINVAL;
    memset(out, 0, sizeof *out);
    if (p == NULL || v == NULL || n_q == 0 || n_k == 0 || block_q == 0 || block_k == 0 ||
        !attn_rules_ok(v, n_q, n_k) ||
        (p->mask.kind == ATTN_MASK_CELLS && p->mask.allow == NULL))
        return ATTN_EINVAL;
    size_t rows = attn_tiles_along(n_q, block_q), cols = attn_tiles_along(n_k, block_k);
    if (rows > SIZE_MAX / cols)
        return ATTN_ENOMEM;
    unsigned char *tiles = malloc(rows * cols);
    size_t *count = malloc(cols * sizeof *count);
    if (tiles == NULL || count == NULL) {
        free(tiles);
        free(count);
        return ATTN_ENOMEM;
    }
    size_t empty = 0;
    for (size_t tr = 0; tr < rows; tr++) {
        size_t i0 = tr * block_q, i1 = n_q - i0 > block_q ? i0 + block_q : n_q;
        memset(count, 0, cols * sizeof *count);
        for (size_t i = i0; i < i1; i++) {
            struct attn_vrow r = attn_vrow_of(p, v, n_q, n_k, i);
            vis_count_row(&r, block_k, count);
        }
        for (size_t tc = 0; tc < cols; tc++) {
            size_t j0 = tc * block_k, width = n_k - j0 > block_k ? block_k : n_k - j0;
            size_t cells = (i1 - i0) * width;
            enum attn_tile kind = count[tc] == 0       ? ATTN_TILE_EMPTY
                                  : count[tc] == cells ? ATTN_TILE_FULL
                                                       : ATTN_TILE_PARTIAL;
            tiles[tr * cols + tc] = (unsigned char)kind;
            empty += kind == ATTN_TILE_EMPTY;
        }
    }
    free(count);
    *out = (struct attn_block_map){ block_q, block_k, rows, cols, tiles, empty };
    return ATTN_OK;
}

double attn_block_map_sparsity(const struct attn_block_map *m)
{
    return (double)m->empty / ((double)m->rows * (double)m->cols);
}

void attn_block_map_free(struct attn_block_map *m)
{
    if (m == NULL)
        return;
    free(m->tiles);
    memset(m, 0, sizeof *m);
}

size_t attn_tiles_along(size_t n, size_t block)
{
    return n / block + (n % block != 0);
}
