/*
 * api/endpoints/v2/model.h — a V2 model as the inference pipeline (v2/infer.c) calls
 * it: its steps over its own state (struct api_v2_attention, api_v2_multihead), one
 * table a model, so that the pipeline names no model and a new one is a new table.
 */
#ifndef API_V2_MODEL_H
#define API_V2_MODEL_H

#include <stdbool.h>
#include <stddef.h>

struct api_error;
struct api_limits;
struct api_v2_infer;
struct api_v2_outs;

struct api_v2_model_ops {
    /* Reads and validates r into the state (false: err; the state holds what deinit frees). */
    bool (*parse)(void *state, const struct api_v2_infer *r, const struct api_limits *limits,
                  struct api_error *err);
    /* The bytes a request holds at its peak, pieces or not (api_admit's estimate). */
    size_t (*working_set)(const void *state, size_t body_len, bool pieces);
    /* The input whose size drives the working set, as a JSON pointer. */
    const char *(*limit_field)(const void *state);
    /* Reads the admitted inputs' numbers (false: err, a number the datatype does not hold). */
    bool (*load)(void *state, struct api_error *err);
    /* Runs every problem into o (api_v2_outs_deinit frees it), once load succeeded. */
    bool (*run)(void *state, struct api_v2_outs *o, struct api_error *err);
    /* The problems a parsed request holds: its batch size B, or 1 without one. */
    size_t (*problems)(const void *state);
    void (*deinit)(void *state);
    /* The index in inputs[] of the tensor whose rows are the queries, and its name. */
    size_t (*queries_input)(const void *state);
    const char *queries;
};

#endif
