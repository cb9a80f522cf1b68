/*
 * api/endpoints/block_map.c — `visible` and `block_map` as JSON (see block_map.h).
 */
#include "api/endpoints/block_map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    size_t rows = n_q / block_q + (n_q % block_q != 0);
    size_t cols = n_k / block_k + (n_k % block_k != 0);
    return rows > SIZE_MAX / cols ? SIZE_MAX : rows * cols;
}
