/*
 * api/request/v2_tensor.h — reading an Open Inference Protocol (KServe / Triton V2)
 * inference request: its JSON header, the binary pieces after it, and each tensor's
 * numbers as doubles.
 *
 * A request body is a JSON header, optionally followed by binary tensors (Triton's
 * binary tensor data extension): the header's length comes from the
 * Inference-Header-Content-Length header, each binary input names its byte count in
 * parameters.binary_data_size, and the pieces follow in input order, little-endian,
 * row-major, unpadded (BOOL one byte). Every length is checked against the bytes
 * that are there before anything is read: a bad one is a 400 naming its pointer.
 *
 * Ownership: everything here borrows the JSON document and the body; the caller owns
 * the doubles it asks api_v2_tensor_read to fill.
 *
 * Not here: what the inputs mean (endpoints/v2_*.c), HTTP, writing answers.
 */
#ifndef API_REQUEST_V2_TENSOR_H
#define API_REQUEST_V2_TENSOR_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/http/problem.h"
#include "api/request/matrix.h"

/* BYTES (strings, Triton's encoding: each element a 4-byte little-endian length, then its
 * bytes) is only an output's (the verify model's REPORT): no input is read as it. */
enum api_v2_dtype {
    API_V2_BOOL = 0, API_V2_UINT8, API_V2_INT8, API_V2_INT32, API_V2_INT64, API_V2_FP32,
    API_V2_FP64, API_V2_FP16, API_V2_BF16, API_V2_BYTES, API_V2_DTYPE_COUNT
};

/* Bits of enum api_v2_dtype: what an input accepts. */
#define API_V2_NUMBERS ((1u << API_V2_FP32) | (1u << API_V2_FP64) | (1u << API_V2_INT32) | \
                        (1u << API_V2_INT64) | (1u << API_V2_FP16) | (1u << API_V2_BF16))
/* The datatypes an output can be sent in (its parameters.datatype). */
#define API_V2_OUTPUT_TYPES ((1u << API_V2_FP64) | (1u << API_V2_FP32) | (1u << API_V2_FP16) | \
                             (1u << API_V2_BF16))
#define API_V2_FLAGS ((1u << API_V2_BOOL) | (1u << API_V2_UINT8) | (1u << API_V2_INT8) | \
                      (1u << API_V2_INT32) | (1u << API_V2_INT64))

/* "FP32", ...; and the bytes of one element (BYTES: its length's 4). */
const char *api_v2_dtype_name(enum api_v2_dtype t);
size_t api_v2_dtype_size(enum api_v2_dtype t);

#define API_V2_MAX_RANK 4
#define API_V2_MAX_TENSORS 16

/* One input as the header describes it. Borrowed pointers. */
struct api_v2_tensor {
    const char *name;
    enum api_v2_dtype dtype;
    size_t rank;
    size_t shape[API_V2_MAX_RANK];
    size_t count;                 /* the product of shape (each factor >= 1) */
    size_t index;                 /* its position in inputs[], for pointers */
    const json_t *data;           /* `data`, or NULL when binary */
    const unsigned char *bytes;   /* its binary piece (count · element size), or NULL */
};

/* One requested output. */
struct api_v2_wanted {
    const char *name;
    bool binary;                  /* its binary_data, else the request's binary_data_output */
    size_t index;                 /* its position in outputs[] */
    bool has_dtype;               /* parameters.datatype given: dtype (API_V2_OUTPUT_TYPES) */
    enum api_v2_dtype dtype;
};

/* A request header, read. Borrowed from the document and the body. */
struct api_v2_infer {
    const char *id;               /* echoed; NULL when absent */
    const json_t *parameters;     /* the request's parameters object, or NULL */
    struct api_v2_tensor inputs[API_V2_MAX_TENSORS];
    size_t n_inputs;
    struct api_v2_wanted outputs[API_V2_MAX_TENSORS];
    size_t n_outputs;             /* 0: none asked (the model's default set) */
    bool binary_output;           /* parameters.binary_data_output */
};

/*
 * The JSON header's length from the Inference-Header-Content-Length value (NULL: the
 * whole body is JSON): a decimal within body_len, else a 400 bad-request.
 */
bool api_v2_header_length(const char *value, size_t body_len, size_t *out,
                          struct api_error *err);

/*
 * Reads the header `doc` and splits the binary bytes bin[0, bin_len) among the
 * inputs that declare binary_data_size, in order. Every shape, datatype, size, name
 * and JSON data's element count is checked, without allocating (not the numbers
 * themselves: api_v2_tensor_read reads them once the request is admitted); no bytes
 * may be left over. max_tensor_cells bounds each input's element count.
 */
bool api_v2_read_infer(const json_t *doc, const unsigned char *bin, size_t bin_len,
                       size_t max_tensor_cells, struct api_v2_infer *out,
                       struct api_error *err);

/* The input called `name`, or NULL. */
const struct api_v2_tensor *api_v2_input(const struct api_v2_infer *r, const char *name);

/*
 * Fills out[0, t->count) with t's numbers, row-major. JSON data may be flat or nested;
 * its numbers must fit the datatype (integers for INT*, true/false for BOOL). cells
 * (api/request/matrix.h): NUMBERS, finite numbers; FLAGS, a mask whose every cell is 0
 * or 1 (true/false); NAN_WORDS and LSE_WORDS, a kernel's answer, whose NaN and
 * infinities are kept (in JSON data null, "NaN", "Infinity" and "-Infinity", null being
 * -inf for LSE_WORDS).
 */
bool api_v2_tensor_read(const struct api_v2_tensor *t, enum api_cells cells, double *out,
                        struct api_error *err);

/*
 * Request parameters. Each returns true when `name` is absent (leaving *out) or
 * valid; false with a 400-worthy err naming /parameters/name otherwise.
 */
bool api_v2_param_number(const json_t *params, const char *name, double *out, bool *given,
                         struct api_error *err);
bool api_v2_param_bool(const json_t *params, const char *name, bool *out,
                       struct api_error *err);
bool api_v2_param_string(const json_t *params, const char *name, const char **out,
                         struct api_error *err);

/*
 * Refuses a request parameter that is neither in known[] nor one a client adds for
 * itself (timeout, priority, sequence_*, headers, triton_*, binary_data_output).
 */
bool api_v2_check_params(const json_t *params, const char *const *known, size_t n_known,
                         struct api_error *err);

#endif
