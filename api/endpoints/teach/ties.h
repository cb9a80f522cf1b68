/*
 * api/endpoints/teach/ties.h — ties in the answers of /v1/attention and /v1/multihead.
 *
 * When several keys share a row's largest weight (core/ties.h), argmax still names the
 * lowest index, but the answer says tie: summary.tied_keys lists every tied key, each
 * tied row adds a "tie" warning, and the text page writes "tie" where it would name a
 * winner. The second note's Q3 = [0.5, 0.5] and the first note's row 0 are ties.
 *
 * Every sentence a user reads is in one table in ties.c, keyed by enum api_tie_words.
 */
#ifndef API_ENDPOINTS_TIES_H
#define API_ENDPOINTS_TIES_H

#include <stdbool.h>
#include <stddef.h>

#include "api/json/buf.h"
#include "api/json/write.h"
#include "api/render/text.h"
#include "core/attention.h"

/*
 * The weights to read: `heads` traces side by side (attention: one; multihead: its
 * head[] array), each with n_q rows. Borrowed.
 */
struct api_tie_source {
    const struct attn_trace *traces;
    size_t heads, n_q;
    bool vector;   /* one query sent as a vector: tied_keys is one list */
    bool per_head; /* multihead: tied_keys is [h][n_q], warnings name the head */
    const size_t *real_rows; /* `rows`: the query index of each row, or NULL (row i is i) */
};

/*
 * The numbers the ties may add to an answer, for admission (in numbers of
 * API_ANSWER_BYTES_PER_NUMBER bytes): at worst every key of every row ties (a row of
 * equal scores does), and each index is written twice, in tied_keys and in the warning,
 * as its digits and ", "; each tied row adds its warning, sentence and members.
 */
size_t api_tie_numbers(size_t heads, size_t n_q, size_t n_k);

/* At most the bytes one tie warning takes on a text page, its line's words included. */
size_t api_tie_text_bytes(void);

/* "tied_keys": the tied keys of every row ([] for a fully masked row). */
void api_write_tied_keys(struct jw *w, const struct api_tie_source *s);

/* A {"code": "tie", ("head",) "row", "keys", "message"} item per tied row, inside the
 * open "warnings" array. */
void api_write_tie_warnings(struct jw *w, const struct api_tie_source *s);

/* The same warnings as lines of a text page, queries and keys named by their labels. */
void api_text_tie_warnings(struct api_buf *b, const struct api_tie_source *s,
                           const struct api_labels *queries, const struct api_labels *keys);

/*
 * Who wins row i of trace t, for a text cell of API_TEXT_LABEL bytes: the key's label,
 * "tie" when several keys share the largest weight, "-" for a fully masked row.
 */
void api_text_winner(char *buf, const struct attn_trace *t, size_t i,
                     const struct api_labels *keys);

/* "tie in Q3, Q5" naming the tied rows of trace t (a heatmap's caption), or "" when
 * no row ties. */
void api_text_tie_rows(char *buf, size_t size, const struct attn_trace *t, size_t n_q,
                       const struct api_labels *queries);

#endif
