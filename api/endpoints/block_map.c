/*
 * api/endpoints/block_map.c — `visible` and `block_map` as JSON (see block_map.h).
 */
#include "api/endpoints/block_map.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/i18n/lang.h"
#include "api/json/numfmt.h"

bool api_shown_prepare(struct api_shown *s, const struct api_visibility *vis, bool visible,
                       bool block_map, size_t block_q, size_t block_k, struct api_error *err)
{
    memset(s, 0, sizeof *s);
    if (visible && (s->row = malloc(vis->n_k)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "visible");
        return false;
    }
    if (!block_map)
        return true;
    enum attn_status st = attn_block_map(&s->map, vis->p, vis->v, vis->n_q, vis->n_k, block_q,
                                         block_k);
    if (st != ATTN_OK) { /* the rules were checked by the parse: only memory is left */
        api_shown_release(s);
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "block_map");
        return false;
    }
    return true;
}

void api_shown_release(struct api_shown *s)
{
    free(s->row);
    attn_block_map_free(&s->map);
    s->row = NULL;
}

void api_write_visible(struct jw *w, const struct api_visibility *vis, const struct api_shown *s,
                       bool as_vector)
{
    if (!as_vector)
        jw_array_begin(w);
    for (size_t r = 0; r < vis->n_rows; r++) {
        size_t i = vis->rows != NULL ? vis->rows[r] : r;
        attn_visible_row(vis->p, vis->v, vis->n_q, vis->n_k, i, s->row);
        jw_array_begin(w);
        for (size_t j = 0; j < vis->n_k; j++)
            jw_int(w, s->row[j]);
        jw_array_end(w);
    }
    if (!as_vector)
        jw_array_end(w);
}

void api_write_block_map(struct jw *w, const struct api_shown *s)
{
    const struct attn_block_map *m = &s->map;
    jw_object_begin(w);
    JW_KEY(w, "block");
    jw_array_begin(w);
    jw_int(w, (long long)m->block_q);
    jw_int(w, (long long)m->block_k);
    jw_array_end(w);
    JW_KEY(w, "tiles");
    jw_array_begin(w);
    for (size_t tr = 0; tr < m->rows; tr++) {
        jw_array_begin(w);
        for (size_t tc = 0; tc < m->cols; tc++)
            jw_int(w, m->tiles[tr * m->cols + tc]);
        jw_array_end(w);
    }
    jw_array_end(w);
    JW_KEY(w, "sparsity");
    jw_double(w, attn_block_map_sparsity(m));
    jw_object_end(w);
}

size_t api_block_map_tiles(size_t n_q, size_t n_k, size_t block_q, size_t block_k)
{
    size_t rows = attn_tiles_along(n_q, block_q), cols = attn_tiles_along(n_k, block_k);
    return rows > SIZE_MAX / cols ? SIZE_MAX : rows * cols;
}

/* The steps' words, as the JSON's steps list writes them (attention/json.c). */
#define VISIBLE_OP "visible = 1 where every rule lets query i see key j, else 0"
#define BLOCK_MAP_OP "block_map = each tile of visible: 2 full, 1 partial, 0 empty"

void api_text_visible(struct api_buf *b, const struct api_visibility *vis,
                      const struct api_labels *queries, const struct api_labels *keys)
{
    /* The matrix printer reads doubles: (n_rows, n_k) of them, counted by admission. */
    double *m = malloc(vis->n_rows * vis->n_k * sizeof *m);
    unsigned char *row = malloc(vis->n_k);
    if (m == NULL || row == NULL) {
        b->failed = true; /* the page cannot be complete: a 503, not a page without it */
        free(m);
        free(row);
        return;
    }
    for (size_t r = 0; r < vis->n_rows; r++) {
        size_t i = vis->rows != NULL ? vis->rows[r] : r;
        attn_visible_row(vis->p, vis->v, vis->n_q, vis->n_k, i, row);
        for (size_t j = 0; j < vis->n_k; j++)
            m[r * vis->n_k + j] = row[j];
    }
    api_buf_puts(b, "\n" VISIBLE_OP "\n");
    struct api_text_matrix tm = {
        .data = m, .rows = vis->n_rows, .cols = vis->n_k, .stride = vis->n_k,
        .row_labels = *queries, .col_labels = *keys, .decimals = 0, .indent = "  ",
    };
    api_text_matrix(b, &tm);
    free(m);
    free(row);
}

/* FlexAttention's BlockMask prints full tiles as █ and partial ones as ░; ▒ reads better
 * beside · in a terminal's font. */
static const char *const TILE_GLYPHS[3] = { "\xC2\xB7", "\xE2\x96\x92", "\xE2\x96\x88" };

void api_text_block_map(struct api_buf *b, const struct api_visibility *vis, size_t block_q,
                        size_t block_k, int decimals, const struct api_labels *queries)
{
    struct attn_block_map m;
    if (attn_block_map(&m, vis->p, vis->v, vis->n_q, vis->n_k, block_q, block_k) != ATTN_OK) {
        b->failed = true; /* admitted with the page: not expected */
        return;
    }
    char sparsity[API_TEXT_NUMBER];
    api_text_number(sparsity, attn_block_map_sparsity(&m), decimals);
    api_buf_puts(b, "\n" BLOCK_MAP_OP "\n");
    api_buf_printf(b, API_TR("  block [%zu, %zu]  tiles (%zu, %zu)  sparsity %s "
                             "(%zu of %zu tiles empty)\n"),
                   block_q, block_k, m.rows, m.cols, sparsity, m.empty, m.rows * m.cols);
    struct api_text_tiles tt = {
        .tiles = m.tiles, .rows = m.rows, .cols = m.cols, .row_labels = *queries,
        .row_step = block_q, .glyphs = { TILE_GLYPHS[0], TILE_GLYPHS[1], TILE_GLYPHS[2] },
        .indent = "  ",
    };
    api_text_tiles(b, &tt);
    api_buf_printf(b, API_TR("  %s full  %s partial  %s empty; a line is %zu queries, a "
                             "character %zu keys\n"),
                   TILE_GLYPHS[2], TILE_GLYPHS[1], TILE_GLYPHS[0], block_q, block_k);
    attn_block_map_free(&m);
}

size_t api_text_visibility_bytes(bool visible, bool block_map, size_t n_rows, size_t n_q,
                                 size_t n_k, size_t block_q, size_t block_k)
{
    enum { LINES = 1024 }; /* the step lines, the block's line and the legend, translated */
    size_t bytes = 0;
    if (visible)
        bytes += api_text_matrix_bytes(n_rows, n_k) + LINES;
    if (block_map) {
        size_t rows = api_block_map_tiles(n_q, 1, block_q, 1);
        size_t cols = api_block_map_tiles(1, n_k, 1, block_k);
        bytes += api_text_tiles_bytes(rows, cols) + LINES;
    }
    return bytes;
}

bool api_page_tiles_init(struct api_page_tiles *out, const struct api_visibility *vis,
                         size_t block_q, size_t block_k)
{
    memset(out, 0, sizeof *out);
    if (attn_block_map(&out->map, vis->p, vis->v, vis->n_q, vis->n_k, block_q, block_k) !=
        ATTN_OK)
        return false;
    char sparsity[API_NUMBER_MAX];
    api_format_double(api_round_decimals(attn_block_map_sparsity(&out->map), 4), sparsity);
    snprintf(out->legend, sizeof out->legend, API_TR("tiles of %zu x %zu (block_map); sparsity %s"),
             block_q, block_k, sparsity);
    out->svg = (struct api_svg_tiles){
        .kinds = out->map.tiles, .rows = out->map.rows, .cols = out->map.cols,
        .block_q = block_q, .block_k = block_k,
        .words = { API_TR("empty"), API_TR("partial"), API_TR("full") },
        .tile = API_TR("tile"), .legend = out->legend,
    };
    return true;
}

void api_page_tiles_free(struct api_page_tiles *t)
{
    attn_block_map_free(&t->map);
    memset(t, 0, sizeof *t);
}
