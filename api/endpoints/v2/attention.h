/*
 * api/endpoints/v2/attention.h — the V2 model `attention` (v2/attention.c): its state
 * and the steps v2/infer.c runs.
 */
#ifndef API_ENDPOINTS_V2_ATTENTION_H
#define API_ENDPOINTS_V2_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>

#include "api/endpoints/attention/attention.h"
#include "api/endpoints/v2/common.h"
#include "api/endpoints/v2/model.h"
#include "api/endpoints/v2/problem.h"

/* A model's state: the problem (its inputs read, one problem's request), the outputs it
 * picked. */
struct api_v2_attention {
    struct api_v2_problem p;
    struct api_v2_picks out;      /* the outputs asked for */
    bool streamed;                /* OUTPUT and row statistics only: no (n_q, n_k) matrix */
    char limit_pointer[40];       /* the input whose size drives the working set */
};

/* Each reads and validates r into m (false: err; m holds what deinit frees). */
bool api_v2_attention_parse(void *state, const struct api_v2_infer *r,
                            const struct api_limits *limits, struct api_error *err);
/*
 * The working set of all B problems, as held: the body, the inputs read, one trace,
 * a batch's outputs copied out of it, and the answer (v2/common.h; pieces: the caller
 * sends api_response.segments).
 */
size_t api_v2_attention_working_set(const void *state, size_t body_len, bool pieces);
const char *api_v2_attention_limit_field(const void *state);
/* Reads the inputs' numbers, and the mask's allowed cells, once admitted. */
bool api_v2_attention_load(void *state, struct api_error *err);
/* Runs every problem into o (allocated here; api_v2_outs_deinit frees it), once loaded. */
bool api_v2_attention_run(void *state, struct api_v2_outs *o, struct api_error *err);
void api_v2_attention_deinit(void *state);

/* The steps above as the inference pipeline calls them (v2/model.h). */
extern const struct api_v2_model_ops api_v2_attention_ops;

#endif
