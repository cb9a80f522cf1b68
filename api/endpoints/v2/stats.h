/*
 * api/endpoints/v2/stats.h — what each V2 model has done since the process started, as
 * Triton's statistics extension reports it (GET /v2/models[/{model}]/stats): requests
 * answered and failed, problems computed, and the nanoseconds spent in each part of a
 * request, in total and by batch size.
 *
 * The counters are the process's, one set a model (enum api_v2_model), kept with atomics:
 * the inference path (v2/infer.c) adds to them from any thread without a lock, and a
 * reader sees every finished request's numbers (counts of one request may show before
 * its nanoseconds while it finishes: each counter is exact on its own, and a sample is
 * not one instant across them, as Triton's is not across models).
 *
 * Not here: which models exist and their names (v2.c's table), routing, timing the parts
 * (v2/infer.c does, on CLOCK_MONOTONIC).
 */
#ifndef API_ENDPOINTS_V2_STATS_H
#define API_ENDPOINTS_V2_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "api/endpoints/v2/common.h"
#include "api/json/write.h"

/*
 * Distinct batch sizes that get a row of batch_stats, a model: the first this many sizes
 * seen, each with its own row from then on. A size seen after they are taken is counted
 * everywhere else (inference_stats, the counts), only not in a row of its own: a fixed
 * table needs no allocation and no lock on the inference path.
 */
#define API_V2_STATS_BATCH_SIZES 64

/* The parts of one answered request, in nanoseconds (Triton's names). */
struct api_v2_timing {
    uint64_t queue_ns;   /* waiting for a thread before it was read (the server's lane) */
    uint64_t input_ns;   /* compute_input: reading the header and decoding the tensors */
    uint64_t infer_ns;   /* compute_infer: the computation */
    uint64_t output_ns;  /* compute_output: writing the answer */
};

/* CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t api_v2_clock_ns(void);

/*
 * A request of `problems` problems (its batch size B, or 1) answered 200: counts one
 * request and one execution, adds B to the inferences, each part's nanoseconds, and
 * the time of day (CLOCK_REALTIME, ms since the epoch) as its last inference.
 */
void api_v2_stats_success(enum api_v2_model model, size_t problems, const struct api_v2_timing *t);

/* A request for the model answered 4xx or 5xx, which took ns (its queue included). */
void api_v2_stats_fail(enum api_v2_model model, uint64_t ns);

/* The model's $model_stat object ({"name", "version": "1", ...}) into w. */
void api_v2_stats_write(struct jw *w, enum api_v2_model model, const char *name);

#endif
