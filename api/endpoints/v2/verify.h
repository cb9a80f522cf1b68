/*
 * api/endpoints/v2/verify.h — the V2 model `verify` (v2/verify.c): a kernel's answer
 * judged against the float64 oracle as POST /v1/verify judges it, for a batch of
 * problems sent as V2 tensors.
 */
#ifndef API_ENDPOINTS_V2_VERIFY_H
#define API_ENDPOINTS_V2_VERIFY_H

#include <stdbool.h>
#include <stddef.h>

#include "api/endpoints/v2/common.h"
#include "api/endpoints/v2/model.h"
#include "api/endpoints/v2/problem.h"
#include "api/endpoints/verify/verify.h"

/*
 * The model's state: the problem (as the attention model reads it), the candidate's
 * tensors, the rule, and what each problem's naive pass needs of its own: the
 * variants' steps and the backward's run (the gold pass has the problem's).
 */
struct api_v2_verify {
    struct api_v2_problem p;
    struct api_v2_input candidate[API_VERIFY_TENSORS]; /* OUTPUT, LSE, GRAD_Q, ... */
    enum attn_format format;
    struct attn_rule rule;
    struct api_v2_picks out;      /* the outputs asked for */
    struct attn_vtrace *naive_vsteps;     /* owned, or NULL without variants */
    struct api_backward_run *naive_run;   /* owned, or NULL without GRAD_OUTPUT */
    char limit_pointer[40];       /* the input whose size drives the working set */
};

/* The steps the inference pipeline calls (v2/model.h). */
extern const struct api_v2_model_ops api_v2_verify_ops;

#endif
