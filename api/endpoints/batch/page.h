/*
 * api/endpoints/batch/page.h — POST /v1/attention/batch?format=text: the second note's
 * experiment table.
 *
 * A line per item and query: the item's `name` (or "item i"), the query's label, the
 * key with the largest weight ("tie" when several share it), that weight, and what
 * changed from the first item's same query (another winner, the same key with another
 * weight, a tie broken or made). An item that failed gets one line with its problem.
 *
 * The batch runs its items one at a time; each is added as it is run, and the table is
 * written at the end. The first item's weights are kept for the comparisons.
 *
 * Every word a user reads is in one table in batch/page.c.
 */
#ifndef API_ENDPOINTS_BATCH_PAGE_H
#define API_ENDPOINTS_BATCH_PAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "api/endpoints/attention/attention.h"
#include "api/json/buf.h"

/* A table being built. Owns its cells and its copy of the first item's weights. */
struct api_batch_table {
    char *cells;            /* rows × 5 slots */
    size_t rows, cap;
    double *base;           /* the first item's weights (base_q, base_k), or NULL */
    size_t base_q, base_k;
    bool base_set;          /* the first item was added (even when it failed) */
    bool failed;            /* no memory: the page cannot be complete */
};

void api_batch_table_init(struct api_batch_table *t);
void api_batch_table_deinit(struct api_batch_table *t);

/* Adds item `index` named `name` (or NULL): its lines from trace, or one line for err. */
void api_batch_table_add(struct api_batch_table *t, size_t index, const char *name,
                         const struct api_attention_req *req, const struct attn_trace *trace,
                         const struct api_error *err);

/* Writes the table (and fails b when memory ran short). */
void api_batch_table_write(const struct api_batch_table *t, struct api_buf *b);

#endif
