/*
 * api/endpoints/v2/common.h — what the Open Inference Protocol's files share: the
 * outputs an answer carries, the inputs read into doubles, the checks every model
 * makes (names, datatypes, batch sizes, outputs asked for, parameters), and the
 * models' names.
 *
 * The V2 files: v2.c routes /v2 and answers health and metadata; v2/infer.c runs
 * POST .../infer through the one pipeline and writes the answer (JSON or binary
 * tensors); v2/attention.c and v2/multihead.c turn V2 tensors into the /v1 requests
 * (struct api_attention_req, api_multihead_req) so that the math, the limits and the
 * faults are /v1's; v2/grid.c reads MASK and BIAS for both. A leading batch size B on
 * the inputs is B independent problems of one shape: each runs alone and its outputs
 * are copied into the answer's (B, ...) tensors, so one trace is alive at a time.
 * Without a batch, the outputs are the trace's own matrices: the answer takes the
 * trace over and sends its binary tensors from there, never copied.
 *
 * Dimension legend: B batch, n_q queries, n_k keys, d_k, d_v, d_model widths, h heads.
 */
#ifndef API_ENDPOINTS_V2_COMMON_H
#define API_ENDPOINTS_V2_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/http/problem.h"
#include "api/json/buf.h"
#include "api/request/v2_tensor.h"

/* The models served, by name: "attention", "multihead" and "verify". */
enum api_v2_model { API_V2_ATTENTION = 0, API_V2_MULTIHEAD, API_V2_VERIFY, API_V2_MODEL_COUNT };

/* The model's name ("attention"). */
const char *api_v2_model_name(enum api_v2_model model);


/*
 * One output of the answer: float64 numbers, row-major, with its V2 shape, in n_parts
 * runs of part_len numbers each (count in all), in order. The runs lie in the trace
 * that computed them (borrowed: api_v2_outs.owner holds it) or, for a batch, in `data`.
 */
struct api_v2_out {
    const char *name;             /* static, e.g. "WEIGHTS" */
    size_t rank;
    size_t shape[API_V2_MAX_RANK];
    size_t count;
    double *data;                 /* owned (a batch's numbers), or NULL; -inf where MASKED
                                     blocks */
    const double **parts;         /* owned list; the numbers are data's or the owner's */
    size_t n_parts, part_len;
    bool binary;
    enum api_v2_dtype dtype;      /* how it is sent: FP64, FP32, FP16 or BF16 */
    bool dtype_asked;             /* by its parameters.datatype (else the model's default) */
    bool has_sparsity;            /* BLOCK_MAP: its parameters carry sparsity */
    double sparsity;
    /* BYTES (no numbers, n_parts 0): element i is text[ends[i - 1] (0 for i = 0), ends[i]);
       both owned */
    struct api_buf text;
    size_t *ends;
};

/*
 * The answer's outputs, and what their borrowed numbers lie in: a trace, taken over
 * with owner_free (NULL when none), holding owner_bytes. The whole struct may move
 * into the answer's pieces (api_v2_outs_move), which then free it once sent.
 */
struct api_v2_outs {
    struct api_v2_out out[API_V2_MAX_TENSORS];
    size_t n;
    void *owner;
    void (*owner_free)(void *owner);
    size_t owner_bytes;
};

/* Frees every output's numbers and parts, and the owner. */
void api_v2_outs_deinit(struct api_v2_outs *o);

/* The memory o holds: its outputs' own numbers and the owner's bytes. */
size_t api_v2_outs_bytes(const struct api_v2_outs *o);

/*
 * o moved into a malloc'd copy (o is zeroed), for api_segments.owner; NULL (o kept)
 * when memory runs out. api_v2_outs_free(copy) frees it.
 */
struct api_v2_outs *api_v2_outs_move(struct api_v2_outs *o);
void api_v2_outs_free(void *outs);

/*
 * Allocates out's numbers for the shape (B problems of `rank` sizes each; B == 0:
 * no batch dimension), as one part. False when memory runs out.
 */
bool api_v2_out_alloc(struct api_v2_out *out, size_t batch, size_t rank, const size_t *shape);

/*
 * A BYTES output of one element a problem: shape (B), or (1) without a batch (as an
 * unbatched Triton model gives one string), its elements appended in order by
 * api_v2_out_append_bytes. False when memory runs out.
 */
bool api_v2_out_alloc_bytes(struct api_v2_out *out, size_t batch);
/* Appends element i (the next one) of a BYTES output: s[0, len). False when memory runs
 * out. */
bool api_v2_out_append_bytes(struct api_v2_out *out, size_t i, const char *s, size_t len);

/*
 * Sets out's shape (no batch) and room for n_parts parts of count / n_parts numbers,
 * which the caller points into the owner's memory. False when memory runs out.
 */
bool api_v2_out_borrow(struct api_v2_out *out, size_t rank, const size_t *shape, size_t n_parts);

/*
 * An input tensor: found while the request is parsed (its shape is all admission
 * needs), its numbers read into doubles only once the working set is admitted.
 */
struct api_v2_input {
    const struct api_v2_tensor *t; /* NULL when the request has no such input */
    enum api_cells cells;         /* what a cell may hold: FLAGS for a mask (0 or 1), a
                                     kernel's answer NaN and infinities (NAN_WORDS) */
    double *data;                 /* owned, t->count numbers; NULL until loaded */
};

/* Finds input `name` (in->t NULL when absent), a mask when flags; reads nothing. */
void api_v2_input_find(const struct api_v2_infer *r, const char *name, bool flags,
                       struct api_v2_input *in);
/* Reads a found input's numbers (nothing for an absent one); a bad number is err. */
bool api_v2_input_load(struct api_v2_input *in, struct api_error *err);
void api_v2_input_free(struct api_v2_input *in);

/*
 * The batch an input declares when its rank is `rank` + 1 (its first size), or 0 when
 * it has `rank`; false (a shape error at /inputs/i/shape) for any other rank or a
 * batch that differs from *batch once set (*batch 0 = not yet set).
 */
bool api_v2_batch_of(const struct api_v2_tensor *t, size_t rank, bool vector_ok,
                     size_t *batch, struct api_error *err);

/*
 * --max-work for a problem of `work` multiply-adds per item, `batch` items (0: none):
 * false with err the limit at t's shape, the input whose rows drive it.
 */
bool api_v2_within_work(const struct api_v2_tensor *t, size_t batch, size_t work,
                        const struct api_limits *limits, struct api_error *err);

/*
 * The outputs a request asks for, in its order, as a model names them (indices into its
 * list of output names), each binary or JSON data, and the datatype each is sent in.
 */
struct api_v2_picks {
    size_t index[API_V2_MAX_TENSORS];
    bool binary[API_V2_MAX_TENSORS];
    enum api_v2_dtype dtype[API_V2_MAX_TENSORS];
    bool dtype_asked[API_V2_MAX_TENSORS]; /* by the output's parameters.datatype */
    size_t n;
};

/*
 * The datatype an output is sent in unless it asks for one: FP32 when Q (or X) is
 * FP32, else FP64 (FP16 and BF16 inputs included: their outputs are no longer 16-bit
 * values, and FP64 holds them exactly).
 */
enum api_v2_dtype api_v2_default_dtype(enum api_v2_dtype q);

/*
 * The outputs the request asks for, as indices into names[] (n names), each with its
 * binary flag and datatype (its parameters.datatype, else dflt_dtype), into picks; none
 * asked gives the defaults (indices in dflt[], n_dflt of them). An unknown name is
 * unknown-field at /outputs/i/name.
 */
bool api_v2_pick_outputs(const struct api_v2_infer *r, const char *const *names, size_t n,
                         const size_t *dflt, size_t n_dflt, enum api_v2_dtype dflt_dtype,
                         struct api_v2_picks *picks, struct api_error *err);

/* Sets out's name and how pick i of picks is sent (binary or JSON, its datatype). */
void api_v2_out_sent_as(struct api_v2_out *out, const char *name,
                        const struct api_v2_picks *picks, size_t i);

/* The bytes of the picks' binary outputs, cells[i] numbers for pick i. */
size_t api_v2_binary_bytes(const struct api_v2_picks *picks, const size_t *cells);

/*
 * The inputs' names and datatypes against the model's: an unknown input is
 * unknown-field at /inputs/i/name, a datatype outside bits[i] (enum api_v2_dtype bits)
 * invalid-value at /inputs/i/datatype, a missing required[i] missing-field at /inputs.
 */
bool api_v2_check_inputs(const struct api_v2_infer *r, const char *model, const char *const *names,
                         const unsigned *bits, const bool *required, size_t n,
                         struct api_error *err);

/* Points err (a /v1 pointer such as "/q/1/3" or "/scale") into the V2 header instead. */
void api_v2_repoint(struct api_error *err, const struct api_v2_infer *r,
                    const char *const *v1_fields, const char *const *v2_inputs, size_t n);

/*
 * Working sets, counted as they are held (v2/attention.c, v2/multihead.c): an input's
 * bytes once read (its doubles, and a mask's allowed cells besides), and the bytes an
 * output of `cells` numbers adds to the trace it comes from in the answer: JSON text,
 * an FP32 piece, or nothing for FP64 sent from the trace as it lies (`pieces`: the
 * caller sends api_response.segments; else the answer is one copied buffer).
 */
size_t api_v2_input_bytes(const struct api_v2_input *in);

/*
 * Whether a binary answer with `bytes` of tensors goes as pieces from the trace: when
 * the caller sends pieces (segments_ok) and from API_V2_PIECES_MIN. Below it, one
 * buffer: copying a few KB costs less than the server writing a vector beside the
 * headers it sends.
 */
#define API_V2_PIECES_MIN ((size_t)64 * 1024)
bool api_v2_in_pieces(size_t bytes, bool segments_ok);
size_t api_v2_answer_bytes(size_t cells, bool binary, enum api_v2_dtype dtype, bool pieces);

/*
 * The backward pass's refusal, alike on every model: output i (`name`) is a gradient but
 * no GRAD_OUTPUT came (400 missing-field at its name). False with err set.
 */
bool api_v2_grad_without_input(const char *name, size_t i, struct api_error *err);

/* Saturating sums for working sets. */
size_t api_v2_add(size_t a, size_t b);
size_t api_v2_mul(size_t a, size_t b);

#endif
