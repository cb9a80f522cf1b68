/*
 * api/endpoints/v2/stats.c — the V2 models' counters and their JSON (see stats.h).
 */
#include "api/endpoints/v2/stats.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

/* A count and the nanoseconds it took in all: Triton's $duration_stat. */
struct duration {
    atomic_uint_least64_t count, ns;
};

/* One batch size's row: its key is 0 while the row is free, then the size, for good. */
struct batch_row {
    atomic_uint_least64_t size;
    struct duration input, infer, output;
};

struct model_stats {
    atomic_uint_least64_t last_inference_ms;
    atomic_uint_least64_t inference_count, execution_count;
    struct duration success, fail, queue, input, infer, output;
    struct batch_row batches[API_V2_STATS_BATCH_SIZES];
};

/* Zero at start: every counter is an atomic in static storage. */
static struct model_stats stats[API_V2_MODEL_COUNT];

uint64_t api_v2_clock_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t epoch_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static void add(struct duration *d, uint64_t ns)
{
    atomic_fetch_add_explicit(&d->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&d->ns, ns, memory_order_relaxed);
}

/* The row of batch size `size` (>= 1), claimed when it is new; NULL when every row is
   another size's. */
static struct batch_row *batch_row(struct model_stats *s, uint64_t size)
{
    for (size_t i = 0; i < API_V2_STATS_BATCH_SIZES; i++) {
        struct batch_row *row = &s->batches[i];
        uint_least64_t seen = atomic_load_explicit(&row->size, memory_order_acquire);
        if (seen == 0) {
            /* Free: claim it, unless another thread just did (then seen is its size). */
            uint_least64_t free_row = 0;
            if (atomic_compare_exchange_strong(&row->size, &free_row, size))
                return row;
            seen = free_row;
        }
        if (seen == size)
            return row;
    }
    return NULL;
}

void api_v2_stats_success(enum api_v2_model model, size_t problems, const struct api_v2_timing *t)
{
    struct model_stats *s = &stats[model];
    uint64_t total = t->queue_ns + t->input_ns + t->infer_ns + t->output_ns;
    atomic_fetch_add_explicit(&s->inference_count, problems, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->execution_count, 1, memory_order_relaxed);
    add(&s->success, total);
    add(&s->queue, t->queue_ns);
    add(&s->input, t->input_ns);
    add(&s->infer, t->infer_ns);
    add(&s->output, t->output_ns);
    struct batch_row *row = batch_row(s, problems);
    if (row != NULL) {
        add(&row->input, t->input_ns);
        add(&row->infer, t->infer_ns);
        add(&row->output, t->output_ns);
    }
    /* The latest wins: requests finish out of order on several threads. */
    uint64_t now = epoch_ms();
    uint_least64_t last = atomic_load_explicit(&s->last_inference_ms, memory_order_relaxed);
    while (last < now && !atomic_compare_exchange_weak(&s->last_inference_ms, &last, now)) {
    }
}

void api_v2_stats_fail(enum api_v2_model model, uint64_t ns)
{
    add(&stats[model].fail, ns);
}

/* ---- the JSON ---- */

static long long load(atomic_uint_least64_t *x)
{
    return (long long)atomic_load_explicit(x, memory_order_relaxed);
}

/* "key": {"count", "ns"}. */
static void write_duration(struct jw *w, const char *key, struct duration *d)
{
    jw_key(w, key);
    jw_object_begin(w);
    JW_KEY(w, "count");
    jw_int(w, load(&d->count));
    JW_KEY(w, "ns");
    jw_int(w, load(&d->ns));
    jw_object_end(w);
}

static int by_size(const void *a, const void *b)
{
    uint64_t x = (*(struct batch_row *const *)a)->size, y = (*(struct batch_row *const *)b)->size;
    return (x > y) - (x < y);
}

/* batch_stats: a row a batch size seen, smallest first (as Triton's map orders them). */
static void write_batches(struct jw *w, struct model_stats *s)
{
    struct batch_row *rows[API_V2_STATS_BATCH_SIZES];
    size_t n = 0;
    for (size_t i = 0; i < API_V2_STATS_BATCH_SIZES; i++)
        if (atomic_load_explicit(&s->batches[i].size, memory_order_acquire) != 0)
            rows[n++] = &s->batches[i];
    qsort(rows, n, sizeof rows[0], by_size);
    jw_array_begin(w);
    for (size_t i = 0; i < n; i++) {
        jw_object_begin(w);
        JW_KEY(w, "batch_size");
        jw_int(w, load(&rows[i]->size));
        write_duration(w, "compute_input", &rows[i]->input);
        write_duration(w, "compute_infer", &rows[i]->infer);
        write_duration(w, "compute_output", &rows[i]->output);
        jw_object_end(w);
    }
    jw_array_end(w);
}

void api_v2_stats_write(struct jw *w, enum api_v2_model model, const char *name)
{
    struct model_stats *s = &stats[model];
    /* attnd keeps no response cache: its hits and misses stay 0, as Triton's do without one. */
    struct duration none = { 0, 0 };
    jw_object_begin(w);
    JW_KEY(w, "name");
    jw_string(w, name);
    JW_KEY(w, "version");
    jw_string(w, "1");
    JW_KEY(w, "last_inference");
    jw_int(w, load(&s->last_inference_ms));
    JW_KEY(w, "inference_count");
    jw_int(w, load(&s->inference_count));
    JW_KEY(w, "execution_count");
    jw_int(w, load(&s->execution_count));
    JW_KEY(w, "inference_stats");
    jw_object_begin(w);
    write_duration(w, "success", &s->success);
    write_duration(w, "fail", &s->fail);
    write_duration(w, "queue", &s->queue);
    write_duration(w, "compute_input", &s->input);
    write_duration(w, "compute_infer", &s->infer);
    write_duration(w, "compute_output", &s->output);
    write_duration(w, "cache_hit", &none);
    write_duration(w, "cache_miss", &none);
    jw_object_end(w);
    /* One response a request: Triton fills response_stats for models that send several. */
    JW_KEY(w, "response_stats");
    jw_object_begin(w);
    jw_object_end(w);
    JW_KEY(w, "batch_stats");
    write_batches(w, s);
    /* The memory a request holds is admitted and given back with it: none stays the model's. */
    JW_KEY(w, "memory_usage");
    jw_array_begin(w);
    jw_array_end(w);
    jw_object_end(w);
}
