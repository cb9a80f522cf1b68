/*
 * api/matrix_write.c — see matrix_write.h.
 */
#include "api/matrix_write.h"

#include <stdatomic.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/numfmt.h"
#include "api/spare_threads.h"

static atomic_ulong splits;

unsigned long api_write_splits(void)
{
    return atomic_load(&splits);
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

/* How far the helper may run ahead of the blocks taken over: its buffers for blocks
 * not yet taken are memory the answer holds on top of its own text (when the writer
 * copies rather than adopts pieces). */
#define SECOND_HALVES_AHEAD 2

/*
 * The second halves of a split matrix's blocks, written by one helper thread for the
 * whole matrix, each into a jw of its own; the request's thread writes the first
 * halves and takes the second ones over in order. One thread, not one per block: a
 * thread's start cost about 90 µs in the server (1.4 ms for xl's weights), and the
 * helper may run ahead instead of meeting the request's thread after every block.
 */
struct second_halves {
    const struct attn_matrix *m;
    size_t block, blocks; /* rows a block, and how many */
    int round;
    struct jw *halves;    /* one a block */
    size_t written;       /* blocks the helper has finished */
    size_t taken;         /* blocks the request's thread has taken over */
    pthread_mutex_t lock;
    pthread_cond_t changed;
};

static size_t block_start(const struct second_halves *s, size_t b)
{
    return b * s->block;
}

static size_t block_end(const struct second_halves *s, size_t b)
{
    return s->m->rows - b * s->block < s->block ? s->m->rows : (b + 1) * s->block;
}

/* Where a block's second half starts (the whole block when it is one row). */
static size_t block_middle(const struct second_halves *s, size_t b)
{
    return block_start(s, b) + (block_end(s, b) - block_start(s, b)) / 2;
}

static void *write_second_halves(void *arg)
{
    struct second_halves *s = arg;
    for (size_t b = 0; b < s->blocks; b++) {
        pthread_mutex_lock(&s->lock);
        while (b >= s->taken + SECOND_HALVES_AHEAD)
            pthread_cond_wait(&s->changed, &s->lock);
        pthread_mutex_unlock(&s->lock);
        struct jw *h = &s->halves[b];
        jw_init(h, s->round);
        jw_presize(h, rows_room(s->m, block_end(s, b) - block_middle(s, b)));
        jw_array_begin(h); /* so jw puts commas between the rows; the '[' is cut when taken */
        write_rows(h, s->m, block_middle(s, b), block_end(s, b));
        pthread_mutex_lock(&s->lock);
        s->written = b + 1;
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
    }
    return NULL;
}

/* m's rows, block by block, the second half of each from the helper; false (nothing
 * written) when no helper could be started. */
static bool write_blocks_on_two_threads(struct jw *w, const struct attn_matrix *m, size_t block)
{
    struct second_halves s = { .m = m, .block = block, .round = w->round };
    s.blocks = (m->rows + block - 1) / block;
    s.halves = calloc(s.blocks, sizeof *s.halves);
    if (s.halves == NULL)
        return false;
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.changed, NULL);
    /* pthreads, not C11 threads: the sanitizers follow pthread_create only. */
    pthread_t t;
    bool started = pthread_create(&t, NULL, write_second_halves, &s) == 0;
    for (size_t b = 0; started && b < s.blocks; b++) {
        size_t from = block_start(&s, b), middle = block_middle(&s, b);
        /* Room for this half at once: sized by the last piece alone, the buffer would
         * fill just before the end and be copied into one twice as large. */
        (void)jw_reserve(w, rows_room(m, middle - from));
        write_rows(w, m, from, middle);
        pthread_mutex_lock(&s.lock);
        while (s.written <= b)
            pthread_cond_wait(&s.changed, &s.lock);
        pthread_mutex_unlock(&s.lock);
        struct jw *h = &s.halves[b];
        if (h->failed || h->len < 1)
            w->failed = true;
        else /* "[row, row, ...": after the '[', a run of values; jw_adopt puts the comma first */
            jw_adopt(w, h, 1);
        jw_deinit(h);
        pthread_mutex_lock(&s.lock);
        s.taken = b + 1;
        pthread_cond_broadcast(&s.changed);
        pthread_mutex_unlock(&s.lock);
    }
    if (started) {
        pthread_join(t, NULL);
        atomic_fetch_add(&splits, 1);
    }
    pthread_cond_destroy(&s.changed);
    pthread_mutex_destroy(&s.lock);
    free(s.halves);
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
    if (segments_ok && api_spare_threads_for(numbers) > 1) /* a half block at a time */
        bytes = API_ANSWER_BYTES_PER_NUMBER * API_SPLIT_BLOCK_CELLS / 2 + 4096;
    jw_presize(w, bytes);
}

void api_write_matrix(struct jw *w, const struct attn_matrix *m)
{
    jw_array_begin(w);
    /* Block by block, so the second halves' buffers stay a few megabytes however large
     * m is (a whole half of 2048 × 2048 weights would be 40 MB more). */
    size_t block = API_SPLIT_BLOCK_CELLS / (m->cols > 0 ? m->cols : 1);
    if (block < 2)
        block = 2;
    if (!worth_splitting(m) || !write_blocks_on_two_threads(w, m, block))
        write_rows(w, m, 0, m->rows);
    jw_array_end(w);
}
