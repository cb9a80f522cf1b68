/*
 * api/json/matrix_write.c — see matrix_write.h.
 */
#include "api/json/matrix_write.h"

#include <stdatomic.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/numfmt.h"
#include "api/json/spare_threads.h"
#include "api/json/test_hooks.h"

static atomic_ulong splits, pieces_aside;

unsigned long api_write_splits(void)
{
    return atomic_load(&splits);
}

unsigned long api_write_pieces_aside(void)
{
    return atomic_load(&pieces_aside);
}

static void write_rows(struct jw *w, const struct attn_matrix *m, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        jw_double_array(w, m->data + i * m->stride, m->cols);
}

/* Whether to split m: large enough, more than one thread allowed, no other request. */
static bool worth_splitting(const struct attn_matrix *m)
{
    return m->rows >= 2 && api_spare_threads_for(m->rows * m->cols) > 1;
}

/* Room for `rows` rows of m: each number at its usual most bytes, and the last row's
 * reservation (API_NUMBER_ROOM a number), so that writing them never regrows. */
static size_t rows_room(const struct attn_matrix *m, size_t rows)
{
    return rows * m->cols * API_ANSWER_BYTES_PER_NUMBER + m->cols * API_NUMBER_ROOM + 64;
}

/*
 * A split matrix is cut into pieces of a few rows, which the request's thread and one
 * helper take in turn from a shared count, whoever is free first: on a shared machine
 * one core is often slower than the other for a while, and with fixed halves the
 * faster core would wait for the slower at the end of every block. The request's
 * thread writes a piece straight into the answer when every piece before it is there
 * already, and otherwise, like the helper, into a buffer of its own, which it takes
 * over (jw_adopt) in order. One helper for the whole matrix, not one per piece: a
 * thread's start costs as much as writing several pieces (docs/performance.md).
 */

/* Pieces taken but not yet in the answer, at most: memory the answer holds twice
 * when it copies rather than adopts them. */
#define PIECES_AHEAD 8

struct shared_pieces {
    const struct attn_matrix *m;
    size_t rows_per_piece, pieces;
    int round;
    struct jw *texts;     /* one a piece written out of turn */
    unsigned char *ready; /* one a piece: its text is in texts */
    size_t next;          /* the next piece to take */
    size_t placed;        /* pieces in the answer, in order */
    pthread_mutex_t lock;
    pthread_cond_t changed;
};

static size_t piece_start(const struct shared_pieces *s, size_t k)
{
    return k * s->rows_per_piece;
}

static size_t piece_end(const struct shared_pieces *s, size_t k)
{
    size_t end = (k + 1) * s->rows_per_piece;
    return end < s->m->rows ? end : s->m->rows;
}

/* Whether a piece is left that may be taken now (the lock held). */
static bool may_take(const struct shared_pieces *s)
{
    return s->next < s->pieces && s->next < s->placed + PIECES_AHEAD;
}

/* Piece k into a buffer of its own, and marks it ready (the lock not held). */
static void write_piece_aside(struct shared_pieces *s, size_t k)
{
    struct jw *h = &s->texts[k];
    jw_init(h, s->round);
    jw_presize(h, rows_room(s->m, piece_end(s, k) - piece_start(s, k)));
    jw_array_begin(h); /* so jw puts commas between the rows; the '[' is cut when placed */
    write_rows(h, s->m, piece_start(s, k), piece_end(s, k));
    atomic_fetch_add(&pieces_aside, 1);
    pthread_mutex_lock(&s->lock);
    s->ready[k] = 1;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
}

static void *help_with_pieces(void *arg)
{
    struct shared_pieces *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->next < s->pieces && !may_take(s))
            pthread_cond_wait(&s->changed, &s->lock);
        if (s->next >= s->pieces)
            break;
        size_t k = s->next++;
        pthread_mutex_unlock(&s->lock);
        write_piece_aside(s, k);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/*
 * The request's side: places ready pieces in order, else takes the next piece (into
 * the answer itself when it is the next to place), else waits for the helper's.
 */
static void place_pieces(struct jw *w, struct shared_pieces *s)
{
    pthread_mutex_lock(&s->lock);
    while (s->placed < s->pieces) {
        size_t k = s->placed;
        if (s->ready[k]) {
            pthread_mutex_unlock(&s->lock);
            struct jw *h = &s->texts[k];
            if (h->failed || h->len < 1)
                w->failed = true;
            else /* "[row, row, ...": after the '[', a run of values; jw_adopt puts the comma first */
                jw_adopt(w, h, 1);
            jw_deinit(h);
            pthread_mutex_lock(&s->lock);
            s->placed = k + 1;
            pthread_cond_broadcast(&s->changed);
        } else if (may_take(s)) {
            size_t mine = s->next++;
            pthread_mutex_unlock(&s->lock);
            if (mine == k) {
                /* Room for the piece at once: sized by the last buffer alone, it
                 * would fill just before the end and be copied into one twice as large. */
                (void)jw_reserve(w, rows_room(s->m, piece_end(s, k) - piece_start(s, k)));
                write_rows(w, s->m, piece_start(s, k), piece_end(s, k));
                pthread_mutex_lock(&s->lock);
                s->placed = k + 1;
                pthread_cond_broadcast(&s->changed);
            } else {
                write_piece_aside(s, mine);
                pthread_mutex_lock(&s->lock);
            }
        } else {
            pthread_cond_wait(&s->changed, &s->lock);
        }
    }
    pthread_mutex_unlock(&s->lock);
}

/* Rows a piece: about API_WRITE_PIECE_CELLS cells, and at least eight pieces when
 * there are rows enough, so that the two threads can even out. */
static size_t rows_per_piece(const struct attn_matrix *m)
{
    size_t rows = API_WRITE_PIECE_CELLS / (m->cols > 0 ? m->cols : 1);
    size_t eighth = (m->rows + 7) / 8;
    if (rows > eighth)
        rows = eighth;
    return rows > 0 ? rows : 1;
}

/* m's rows, piece by piece, on this thread and a helper; false (nothing written)
 * when no helper could be started. */
static bool write_pieces_on_two_threads(struct jw *w, const struct attn_matrix *m)
{
    struct shared_pieces s = { .m = m, .rows_per_piece = rows_per_piece(m), .round = w->round };
    s.pieces = (m->rows + s.rows_per_piece - 1) / s.rows_per_piece;
    s.texts = calloc(s.pieces, sizeof *s.texts);
    s.ready = calloc(s.pieces, sizeof *s.ready);
    bool started = false;
    if (s.texts != NULL && s.ready != NULL) {
        pthread_mutex_init(&s.lock, NULL);
        pthread_cond_init(&s.changed, NULL);
        /* pthreads, not C11 threads: the sanitizers follow pthread_create only. */
        pthread_t t;
        started = pthread_create(&t, NULL, help_with_pieces, &s) == 0;
        if (started) {
            place_pieces(w, &s);
            pthread_join(t, NULL);
            atomic_fetch_add(&splits, 1);
        }
        pthread_cond_destroy(&s.changed);
        pthread_mutex_destroy(&s.lock);
    }
    free(s.ready);
    free(s.texts);
    return started;
}

bool api_matrix_same_bits(const struct attn_matrix *a, const struct attn_matrix *b)
{
    if (a->rows != b->rows || a->cols != b->cols)
        return false;
    for (size_t i = 0; i < a->rows; i++)
        if (memcmp(a->data + i * a->stride, b->data + i * b->stride, a->cols * sizeof *a->data))
            return false;
    return true;
}

void api_write_start(struct jw *w, int round, size_t numbers, bool segments_ok)
{
    jw_init(w, round);
    w->may_segment = segments_ok;
    size_t bytes = numbers < ((size_t)-1 - 1024) / API_ANSWER_BYTES_PER_NUMBER
                       ? 1024 + API_ANSWER_BYTES_PER_NUMBER * numbers
                       : (size_t)-1;
    if (segments_ok && api_spare_threads_for(numbers) > 1) /* a piece at a time */
        bytes = API_ANSWER_BYTES_PER_NUMBER * API_WRITE_PIECE_CELLS + 4096;
    jw_presize(w, bytes);
}

void api_write_matrix(struct jw *w, const struct attn_matrix *m)
{
    jw_array_begin(w);
    if (!worth_splitting(m) || !write_pieces_on_two_threads(w, m))
        write_rows(w, m, 0, m->rows);
    jw_array_end(w);
}
