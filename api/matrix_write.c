/*
 * api/matrix_write.c — see matrix_write.h.
 */
#include "api/matrix_write.h"

#include <stdatomic.h>
#include <stddef.h>
#include <pthread.h>
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

/* The second half's writer: rows [from, to) into a jw of its own, inside an array. */
struct half {
    const struct attn_matrix *m;
    size_t from, to;
    struct jw w;
};

static void *write_half(void *arg)
{
    struct half *h = arg;
    jw_array_begin(&h->w); /* so jw puts commas between the rows; the '[' is cut below */
    write_rows(&h->w, h->m, h->from, h->to);
    return NULL;
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

/* Rows [from, to) of m, the second half on another thread; all on this one if no
 * thread can be had. */
static void write_rows_on_two_threads(struct jw *w, const struct attn_matrix *m, size_t from,
                                      size_t to)
{
    struct half second = { .m = m, .from = from + (to - from) / 2, .to = to };
    jw_init(&second.w, w->round);
    jw_presize(&second.w, rows_room(m, to - second.from));
    /* pthreads, not C11 threads: the sanitizers follow pthread_create only. */
    pthread_t t;
    if (second.from == from || pthread_create(&t, NULL, write_half, &second) != 0) {
        jw_deinit(&second.w);
        write_rows(w, m, from, to);
        return;
    }
    /* This half too: sized by the last piece alone, its buffer would fill just before
     * the end and be copied into one twice as large. Under glibc's default malloc
     * settings that made this half take half as long again as the other (xl, in
     * process: 6 against 4 ms a block); the server's settings hide most of it. */
    (void)jw_reserve(w, rows_room(m, second.from - from));
    write_rows(w, m, from, second.from);
    pthread_join(t, NULL);
    atomic_fetch_add(&splits, 1);
    if (second.w.failed || second.w.len < 1)
        w->failed = true;
    else /* "[row, row, ...": after the '[', a run of values; jw_adopt puts the comma first */
        jw_adopt(w, &second.w, 1);
    jw_deinit(&second.w);
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
    if (!worth_splitting(m)) {
        write_rows(w, m, 0, m->rows);
    } else {
        /* Block by block, so the second half's buffer stays a few megabytes however
         * large m is (a whole half of 2048 × 2048 weights would be 40 MB more). */
        size_t block = API_SPLIT_BLOCK_CELLS / (m->cols > 0 ? m->cols : 1);
        if (block < 2)
            block = 2;
        for (size_t from = 0; from < m->rows; from += block)
            write_rows_on_two_threads(w, m, from, m->rows - from < block ? m->rows : from + block);
    }
    jw_array_end(w);
}
