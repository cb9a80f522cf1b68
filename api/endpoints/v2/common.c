/*
 * api/endpoints/v2/common.c — what the V2 files share (see v2/common.h).
 */
#include "api/endpoints/v2/common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http/admission.h"
#include "api/json/numfmt.h"
#include "api/request/fields.h"

static const char *const model_names[API_V2_MODEL_COUNT] = { "attention", "multihead",
                                                              "verify" };

const char *api_v2_model_name(enum api_v2_model model)
{
    return model_names[model];
}

void api_v2_outs_deinit(struct api_v2_outs *o)
{
    for (size_t i = 0; i < o->n; i++) {
        free(o->out[i].data);
        free(o->out[i].parts);
        api_buf_deinit(&o->out[i].text);
        free(o->out[i].ends);
    }
    if (o->owner_free != NULL)
        o->owner_free(o->owner);
    memset(o, 0, sizeof *o);
}

size_t api_v2_outs_bytes(const struct api_v2_outs *o)
{
    size_t bytes = o->owner_bytes;
    for (size_t i = 0; i < o->n; i++)
        if (o->out[i].data != NULL)
            bytes = api_v2_add(bytes, api_v2_mul(o->out[i].count, sizeof(double)));
        else if (o->out[i].ends != NULL) /* BYTES */
            bytes = api_v2_add(bytes, o->out[i].text.cap + o->out[i].count * sizeof(size_t));
    return bytes;
}

struct api_v2_outs *api_v2_outs_move(struct api_v2_outs *o)
{
    struct api_v2_outs *moved = malloc(sizeof *moved);
    if (moved != NULL) {
        *moved = *o;
        memset(o, 0, sizeof *o);
    }
    return moved;
}

void api_v2_outs_free(void *outs)
{
    if (outs == NULL)
        return;
    api_v2_outs_deinit(outs);
    free(outs);
}

/* out's shape: B (when > 0) then `rank` sizes; returns the count of numbers. */
static size_t set_shape(struct api_v2_out *out, size_t batch, size_t rank, const size_t *shape)
{
    size_t count = batch > 0 ? batch : 1, r = 0;
    if (batch > 0)
        out->shape[r++] = batch;
    for (size_t d = 0; d < rank; d++) {
        out->shape[r++] = shape[d];
        count = api_v2_mul(count, shape[d]);
    }
    out->rank = r;
    out->count = count;
    return count;
}

void api_v2_out_sent_as(struct api_v2_out *out, const char *name,
                        const struct api_v2_picks *picks, size_t i)
{
    out->name = name;
    out->binary = picks->binary[i];
    out->dtype = picks->dtype[i];
    out->dtype_asked = picks->dtype_asked[i];
}

bool api_v2_out_alloc(struct api_v2_out *out, size_t batch, size_t rank, const size_t *shape)
{
    size_t count = set_shape(out, batch, rank, shape);
    /* Admission bounded it (unless the request limit is off): refuse what cannot be
       counted rather than wrap. */
    out->data = count <= SIZE_MAX / sizeof *out->data ? malloc(count * sizeof *out->data) : NULL;
    out->parts = malloc(sizeof *out->parts);
    if (out->data == NULL || out->parts == NULL) {
        free(out->data);
        free(out->parts);
        out->data = NULL;
        out->parts = NULL;
        return false;
    }
    out->parts[0] = out->data;
    out->n_parts = 1;
    out->part_len = count;
    return true;
}

bool api_v2_out_alloc_bytes(struct api_v2_out *out, size_t batch)
{
    const size_t one = 1;
    size_t count = set_shape(out, batch, batch > 0 ? 0 : 1, &one);
    api_buf_init(&out->text);
    out->ends = calloc(count, sizeof *out->ends);
    return out->ends != NULL;
}

bool api_v2_out_append_bytes(struct api_v2_out *out, size_t i, const char *s, size_t len)
{
    api_buf_append(&out->text, s, len);
    out->ends[i] = out->text.len;
    return !out->text.failed;
}

bool api_v2_out_borrow(struct api_v2_out *out, size_t rank, const size_t *shape, size_t n_parts)
{
    size_t count = set_shape(out, 0, rank, shape);
    out->data = NULL;
    out->parts = calloc(n_parts, sizeof *out->parts);
    if (out->parts == NULL)
        return false;
    out->n_parts = n_parts;
    out->part_len = count / n_parts;
    return true;
}

void api_v2_input_find(const struct api_v2_infer *r, const char *name, bool flags,
                       struct api_v2_input *in)
{
    in->t = api_v2_input(r, name);
    in->cells = flags ? API_CELLS_FLAGS : API_CELLS_NUMBERS;
    in->data = NULL;
}

bool api_v2_input_load(struct api_v2_input *in, struct api_error *err)
{
    if (in->t == NULL || in->data != NULL)
        return true;
    in->data = malloc(in->t->count * sizeof *in->data);
    if (in->data == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory to read %.64s", in->t->name);
        return false;
    }
    return api_v2_tensor_read(in->t, in->cells, in->data, err);
}

void api_v2_input_free(struct api_v2_input *in)
{
    free(in->data);
    in->data = NULL;
    in->t = NULL;
}

bool api_v2_within_work(const struct api_v2_tensor *t, size_t batch, size_t work,
                        const struct api_limits *limits, struct api_error *err)
{
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/inputs/%zu/shape", t->index);
    return api_within_work_limit(limits, api_v2_mul(work, batch > 0 ? batch : 1), ptr, err);
}

bool api_v2_batch_of(const struct api_v2_tensor *t, size_t rank, bool vector_ok, size_t *batch,
                     struct api_error *err)
{
    size_t b = 0;
    if (t->rank == rank + 1)
        b = t->shape[0];
    else if (t->rank != rank && !(vector_ok && t->rank == rank - 1)) {
        api_error_set(err, API_SHAPE_MISMATCH, "inputs[%zu] (%.64s) has rank %zu; it takes %zu "
                      "sizes%s, or %zu with a leading batch size", t->index, t->name, t->rank,
                      rank, vector_ok ? " (one fewer for a single row)" : "", rank + 1);
        api_error_at(err, "/inputs/%zu/shape", t->index);
        return false;
    }
    if (b != 0 && *batch != 0 && b != *batch) {
        api_error_set(err, API_SHAPE_MISMATCH, "inputs[%zu] (%.64s) has a batch of %zu, another "
                      "input %zu", t->index, t->name, b, *batch);
        api_error_at(err, "/inputs/%zu/shape/0", t->index);
        return false;
    }
    if (b != 0)
        *batch = b;
    return true;
}

enum api_v2_dtype api_v2_default_dtype(enum api_v2_dtype q)
{
    return q == API_V2_FP32 ? API_V2_FP32 : API_V2_FP64;
}

size_t api_v2_binary_bytes(const struct api_v2_picks *picks, const size_t *cells)
{
    size_t bytes = 0;
    for (size_t i = 0; i < picks->n; i++)
        if (picks->binary[i])
            bytes = api_v2_add(bytes, api_v2_mul(cells[i], api_v2_dtype_size(picks->dtype[i])));
    return bytes;
}

bool api_v2_pick_outputs(const struct api_v2_infer *r, const char *const *names, size_t n,
                         const size_t *dflt, size_t n_dflt, enum api_v2_dtype dflt_dtype,
                         struct api_v2_picks *picks, struct api_error *err)
{
    if (r->n_outputs == 0) {
        for (size_t i = 0; i < n_dflt; i++) {
            picks->index[i] = dflt[i];
            picks->binary[i] = r->binary_output;
            picks->dtype[i] = dflt_dtype;
            picks->dtype_asked[i] = false;
        }
        picks->n = n_dflt;
        return true;
    }
    for (size_t i = 0; i < r->n_outputs; i++) {
        size_t j = 0;
        while (j < n && strcmp(names[j], r->outputs[i].name) != 0)
            j++;
        if (j == n) {
            api_error_set(err, API_UNKNOWN_FIELD, "outputs[%zu] asks for %.64s, which this model "
                          "does not make", i, r->outputs[i].name);
            api_error_at(err, "/outputs/%zu/name", i);
            const char *near = api_close_name(r->outputs[i].name, names, n);
            if (near != NULL)
                api_error_hint(err, "did you mean %s? (GET the model's metadata for its outputs)",
                               near);
            else
                api_error_hint(err, "no output is close; GET the model's metadata for its outputs");
            return false;
        }
        picks->index[i] = j;
        picks->binary[i] = r->outputs[i].binary;
        picks->dtype_asked[i] = r->outputs[i].has_dtype;
        picks->dtype[i] = r->outputs[i].has_dtype ? r->outputs[i].dtype : dflt_dtype;
    }
    picks->n = r->n_outputs;
    return true;
}

bool api_v2_check_inputs(const struct api_v2_infer *r, const char *model,
                         const char *const *names, const unsigned *bits, const bool *required,
                         size_t n, struct api_error *err)
{
    for (size_t i = 0; i < r->n_inputs; i++) {
        const struct api_v2_tensor *t = &r->inputs[i];
        size_t j = 0;
        while (j < n && strcmp(names[j], t->name) != 0)
            j++;
        if (j == n) {
            api_error_set(err, API_UNKNOWN_FIELD, "inputs[%zu] is called %.64s, which the %s "
                          "model does not take", i, t->name, model);
            api_error_at(err, "/inputs/%zu/name", i);
            const char *near = api_close_name(t->name, names, n);
            if (near != NULL)
                api_error_hint(err, "did you mean %s? (names are upper case, as the model's "
                               "metadata lists them)", near);
            else
                api_error_hint(err, "no input is close; GET the model's metadata for its inputs");
            return false;
        }
        if (!(bits[j] & (1u << t->dtype))) {
            api_error_set(err, API_INVALID_VALUE, "inputs[%zu] (%.64s) is %s, which %s is not "
                          "read as", i, t->name, api_v2_dtype_name(t->dtype), t->name);
            api_error_at(err, "/inputs/%zu/datatype", i);
            if (bits[j] & (1u << API_V2_BOOL))
                api_error_hint(err, "a mask is BOOL, or UINT8, INT8, INT32 or INT64 of 0 and 1");
            else if (!(bits[j] & (1u << API_V2_FP64))) /* the document lengths */
                api_error_hint(err, "document lengths are integers: send INT32 or INT64");
            else
                api_error_hint(err, "send FP32, FP64, FP16 or BF16 (INT32 and INT64 are read too)");
            return false;
        }
    }
    for (size_t j = 0; j < n; j++)
        if (required[j] && api_v2_input(r, names[j]) == NULL) {
            api_error_set(err, API_MISSING_FIELD, "the %s model needs an input called %s", model,
                          names[j]);
            api_error_at(err, "/inputs");
            return false;
        }
    return true;
}

void api_v2_repoint(struct api_error *err, const struct api_v2_infer *r,
                    const char *const *v1_fields, const char *const *v2_inputs, size_t n)
{
    if (!err->has_pointer)
        return;
    char was[sizeof err->pointer];
    memcpy(was, err->pointer, sizeof was);
    const char *p = was[0] == '/' ? was + 1 : was;
    size_t len = strcspn(p, "/");
    for (size_t i = 0; i < n; i++) {
        if (strlen(v1_fields[i]) != len || strncmp(p, v1_fields[i], len) != 0)
            continue;
        const struct api_v2_tensor *t = api_v2_input(r, v2_inputs[i]);
        if (t != NULL)
            api_error_at(err, "/inputs/%zu/%s", t->index,
                         t->bytes != NULL ? "parameters/binary_data_size" : "data");
        else
            api_error_at(err, "/parameters/%.*s", (int)len, p);
        return;
    }
    api_error_at(err, "/inputs");
}

size_t api_v2_input_bytes(const struct api_v2_input *in)
{
    if (in->t == NULL)
        return 0;
    return api_v2_mul(in->t->count, sizeof(double) + (in->cells == API_CELLS_FLAGS ? 1 : 0));
}

/* Whether this host stores doubles as the wire does (little-endian). */
static bool host_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

bool api_v2_in_pieces(size_t bytes, bool segments_ok)
{
    return segments_ok && bytes >= API_V2_PIECES_MIN;
}

size_t api_v2_answer_bytes(size_t cells, bool binary, enum api_v2_dtype dtype, bool pieces)
{
    if (!binary)
        return api_v2_mul(cells, API_ANSWER_BYTES_PER_NUMBER);
    if (dtype != API_V2_FP64)
        return api_v2_mul(cells, api_v2_dtype_size(dtype));
    return pieces && host_little_endian() ? 0 : api_v2_mul(cells, sizeof(double));
}

size_t api_v2_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t api_v2_mul(size_t a, size_t b)
{
    return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}


bool api_v2_grad_without_input(const char *name, size_t i, struct api_error *err)
{
    api_error_set(err, API_MISSING_FIELD, "output %s is a step of the backward pass, which "
                  "runs only with an input GRAD_OUTPUT", name);
    api_error_at(err, "/outputs/%zu/name", i);
    api_error_hint(err, "send GRAD_OUTPUT, dL/dOUTPUT of OUTPUT's shape, or leave %s out", name);
    return false;
}
