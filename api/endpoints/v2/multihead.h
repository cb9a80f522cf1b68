/*
 * api/endpoints/v2/multihead.h — the V2 model `multihead` (v2/multihead.c): its state
 * and the steps v2/infer.c runs.
 */
#ifndef API_ENDPOINTS_V2_MULTIHEAD_H
#define API_ENDPOINTS_V2_MULTIHEAD_H

#include <stdbool.h>
#include <stddef.h>

#include "api/endpoints/multihead/multihead.h"
#include "api/endpoints/v2/common.h"
#include "api/endpoints/v2/model.h"

/* A model's state: its inputs read, one problem's request, the outputs it picked. */
struct api_v2_multihead {
    struct api_v2_input x_q, x_kv, w[4], b[4], mask, bias;
    struct api_v2_input d_out;    /* GRAD_OUTPUT: dO of every problem, or absent */
    size_t batch;
    struct api_multihead_req req; /* one problem's request; its matrices are views */
    unsigned char *allow;
    struct api_v2_picks out;      /* the outputs asked for */
    const struct api_v2_infer *header; /* borrowed: for pointers into it */
    char limit_pointer[40];       /* the input whose size drives the working set */
};

bool api_v2_multihead_parse(void *state, const struct api_v2_infer *r,
                            const struct api_limits *limits, struct api_error *err);
/* As api_v2_attention_working_set, for the multi-head trace. */
size_t api_v2_multihead_working_set(const void *state, size_t body_len, bool pieces);
const char *api_v2_multihead_limit_field(const void *state);
bool api_v2_multihead_load(void *state, struct api_error *err);
bool api_v2_multihead_run(void *state, struct api_v2_outs *o, struct api_error *err);
void api_v2_multihead_deinit(void *state);

/* The steps above as the inference pipeline calls them (v2/model.h). */
extern const struct api_v2_model_ops api_v2_multihead_ops;

#endif
