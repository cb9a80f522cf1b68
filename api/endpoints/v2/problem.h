/*
 * api/endpoints/v2/problem.h — the attention problem as the V2 models `attention` and
 * `verify` read it (v2/problem.c): inputs Q, K, V, MASK, BIAS, the document lengths and
 * GRAD_OUTPUT, each with or without a leading batch size B, and the attention
 * parameters (scale, causal, mask_semantics, the variants'), into one struct
 * api_attention_req whose matrices are views that point at one problem at a time.
 *
 * Not here: which inputs, parameters and outputs a model takes besides (v2/attention.c,
 * v2/verify.c), running it.
 */
#ifndef API_ENDPOINTS_V2_PROBLEM_H
#define API_ENDPOINTS_V2_PROBLEM_H

#include <stdbool.h>
#include <stddef.h>

#include "api/endpoints/attention/attention.h"
#include "api/endpoints/v2/common.h"

/*
 * Its inputs read, and one problem's request. The request's matrices are views into the
 * inputs (this struct owns them), so api_attention_req_deinit is never called on it:
 * api_v2_problem_deinit frees what it holds.
 */
struct api_v2_problem {
    struct api_v2_input q, k, v, mask, bias;
    struct api_v2_input d_out;    /* GRAD_OUTPUT: dO of every problem, or absent */
    size_t batch;                 /* 0: no batch dimension */
    struct api_attention_req req; /* one problem's request; its matrices are views */
    unsigned char *allow;         /* the mask as allowed cells (all problems), owned */
    const struct api_v2_infer *header; /* borrowed: for pointers into it */
};

/* Finds Q, K, V, MASK, BIAS and GRAD_OUTPUT in r (the caller checked r's names). */
void api_v2_problem_find(struct api_v2_problem *p, const struct api_v2_infer *r);

/*
 * In this order: Q, K and V's batch and shapes (K's width Q's, V's rows K's, the output
 * within --max-cells, the arithmetic within --max-work); GRAD_OUTPUT exactly OUTPUT's
 * shape; MASK, BIAS, the lengths, causal and mask_semantics; the variants' parameters
 * and scale. The request holds what api_v2_problem_deinit frees, on false too.
 */
bool api_v2_problem_check_qkv(struct api_v2_problem *p, const struct api_limits *limits,
                              struct api_error *err);
bool api_v2_problem_check_grad_output(const struct api_v2_problem *p, struct api_error *err);
bool api_v2_problem_read_grid(struct api_v2_problem *p, const struct api_v2_infer *r,
                              struct api_error *err);
bool api_v2_problem_read_options(struct api_v2_problem *p, const struct api_v2_infer *r,
                                 struct api_error *err);

/*
 * The V2 shape of a tensor of `rows` × `cols` a problem (rows 0: one vector of cols), the
 * batch size first when there is one, into want (3 sizes); its rank.
 */
size_t api_v2_problem_shape(const struct api_v2_problem *p, size_t rows, size_t cols,
                            size_t want[3]);

/* Whether t's shape is exactly want's `rank` sizes. */
bool api_v2_shape_is(const struct api_v2_tensor *t, const size_t *want, size_t rank);

/* shape[] as "[2, 3]", for a message. */
void api_v2_shape_text(char *buf, size_t size, const size_t *shape, size_t rank);

/* The input /v1 would name for the working set, as a pointer to its shape, into buf. */
void api_v2_problem_limit_pointer(const struct api_v2_problem *p, char *buf, size_t size);

/* Once admitted: reads the inputs' numbers (Q, K, V, GRAD_OUTPUT, MASK, BIAS). */
bool api_v2_problem_load(struct api_v2_problem *p, struct api_error *err);

/* Points the request's views at problem b (a shared MASK or BIAS stays where it is). */
void api_v2_problem_point(struct api_v2_problem *p, size_t b);

/* The bytes the inputs take once read. */
size_t api_v2_problem_input_bytes(const struct api_v2_problem *p);

void api_v2_problem_deinit(struct api_v2_problem *p);

#endif
