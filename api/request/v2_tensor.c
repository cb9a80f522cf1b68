/*
 * api/request/v2_tensor.c — a V2 inference request's header, binary pieces and
 * numbers (see v2_tensor.h).
 */
#include "api/request/v2_tensor.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/i18n/lang.h"
#include "api/json/numfmt.h"
#include "api/request/fields.h"
#include "api/request/float16.h"

static const struct { const char *name; size_t size; } dtypes[API_V2_DTYPE_COUNT] = {
    [API_V2_BOOL] = { "BOOL", 1 },   [API_V2_UINT8] = { "UINT8", 1 },
    [API_V2_INT8] = { "INT8", 1 },   [API_V2_INT32] = { "INT32", 4 },
    [API_V2_INT64] = { "INT64", 8 }, [API_V2_FP32] = { "FP32", 4 },
    [API_V2_FP64] = { "FP64", 8 }, [API_V2_FP16] = { "FP16", 2 },
    [API_V2_BF16] = { "BF16", 2 }, [API_V2_BYTES] = { "BYTES", 4 },
};

const char *api_v2_dtype_name(enum api_v2_dtype t)
{
    return dtypes[t].name;
}

size_t api_v2_dtype_size(enum api_v2_dtype t)
{
    return dtypes[t].size;
}

bool api_v2_header_length(const char *value, size_t body_len, size_t *out,
                          struct api_error *err)
{
    if (value == NULL) {
        *out = body_len;
        return true;
    }
    /* Digits only: strtoull would take a sign, spaces and "0x". */
    size_t n = strspn(value, "0123456789");
    unsigned long long len = 0;
    bool ok = n > 0 && n <= 19 && value[n] == '\0';
    if (ok) {
        errno = 0;
        len = strtoull(value, NULL, 10);
        ok = errno == 0;
    }
    if (!ok || len > body_len) {
        api_error_set(err, API_INVALID_VALUE, "Inference-Header-Content-Length \"%.40s\" is "
                      "not the length of a JSON header within the body's %zu bytes", value,
                      body_len);
        api_error_hint(err, "send the byte length of the JSON header that starts the body; "
                       "the binary tensors follow it");
        return false;
    }
    *out = (size_t)len;
    return true;
}

/* ---- the header ---- */

static bool read_dtype(const json_t *node, size_t i, enum api_v2_dtype *out,
                       struct api_error *err)
{
    const char *s = json_string_value(node);
    for (int t = 0; s != NULL && t < API_V2_DTYPE_COUNT; t++)
        if (t != API_V2_BYTES && strcmp(s, dtypes[t].name) == 0) {
            *out = (enum api_v2_dtype)t;
            return true;
        }
    if (node == NULL)
        api_error_set(err, API_MISSING_FIELD, "inputs[%zu] has no datatype", i);
    else
        api_error_set(err, API_INVALID_VALUE, "inputs[%zu].datatype is not one attnd reads", i);
    api_error_at(err, "/inputs/%zu/datatype", i);
    api_error_hint(err, "use FP32, FP64, FP16 or BF16 (INT32 and INT64 are read too; BOOL, "
                   "UINT8 or INT8 for a MASK)");
    return false;
}

static bool read_shape(const json_t *node, size_t i, size_t max_cells, struct api_v2_tensor *t,
                       struct api_error *err)
{
    size_t rank = json_array_size(node);
    if (!json_is_array(node) || rank == 0 || rank > API_V2_MAX_RANK) {
        api_error_set(err, node == NULL ? API_MISSING_FIELD : API_INVALID_VALUE,
                      "inputs[%zu].shape must be a list of 1 to %d sizes", i, API_V2_MAX_RANK);
        api_error_at(err, "/inputs/%zu/shape", i);
        api_error_hint(err, "e.g. [2, 4] for two rows of four; a leading size is a batch");
        return false;
    }
    size_t count = 1;
    for (size_t d = 0; d < rank; d++) {
        const json_t *s = json_array_get(node, d);
        json_int_t n = json_is_integer(s) ? json_integer_value(s) : 0;
        /* A whole number past the integers the reader keeps (2^63 and up arrive as reals)
           is a size, only too large: say so rather than "not a size". */
        if (n < 1 && json_is_real(s) && json_real_value(s) >= 1 &&
            json_real_value(s) == floor(json_real_value(s))) {
            api_error_set(err, API_LIMIT_EXCEEDED, "inputs[%zu].shape[%zu] is %.0f, too large: "
                          "inputs[%zu] may hold at most %zu elements", i, d, json_real_value(s),
                          i, max_cells);
            api_error_at(err, "/inputs/%zu/shape/%zu", i, d);
            return false;
        }
        if (n >= 1 && (unsigned long long)n > max_cells) { /* one size alone past the limit */
            api_error_set(err, API_LIMIT_EXCEEDED, "inputs[%zu].shape[%zu] is %lld, too large: "
                          "inputs[%zu] may hold at most %zu elements", i, d, (long long)n, i,
                          max_cells);
            api_error_at(err, "/inputs/%zu/shape/%zu", i, d);
            return false;
        }
        if (n < 1 || count > max_cells / (size_t)n) {
            if (n < 1)
                api_error_set(err, API_INVALID_VALUE, "inputs[%zu].shape[%zu] is not a size "
                              ">= 1", i, d);
            else
                api_error_set(err, API_LIMIT_EXCEEDED, "inputs[%zu] has more than %zu elements",
                              i, max_cells);
            api_error_at(err, "/inputs/%zu/shape/%zu", i, d);
            return false;
        }
        t->shape[d] = (size_t)n;
        count *= (size_t)n;
    }
    /* Its bytes, and its numbers as doubles, must be countable: a huge --max-cells
       must not let count · 8 wrap. */
    if (count > SIZE_MAX / sizeof(double)) {
        api_error_set(err, API_LIMIT_EXCEEDED, "inputs[%zu] has more elements than this "
                      "machine can count the bytes of", i);
        api_error_at(err, "/inputs/%zu/shape", i);
        return false;
    }
    t->rank = rank;
    t->count = count;
    return true;
}

/* parameters.binary_data_size, when the input has one: its piece of the binary bytes. */
static bool take_binary(const json_t *params, size_t i, const unsigned char *bin,
                        size_t bin_len, size_t *used, struct api_v2_tensor *t,
                        struct api_error *err)
{
    const json_t *size = json_object_get(params, "binary_data_size");
    if (size == NULL)
        return true;
    json_int_t n = json_is_integer(size) ? json_integer_value(size) : -1;
    size_t want = t->count * api_v2_dtype_size(t->dtype); /* read_shape bounded count */
    if (n < 0 || (unsigned long long)n > bin_len - *used) {
        api_error_set(err, API_INVALID_VALUE, "inputs[%zu].parameters.binary_data_size is not "
                      "a byte count within the %zu binary bytes left after the header", i,
                      bin_len - *used);
        api_error_at(err, "/inputs/%zu/parameters/binary_data_size", i);
        api_error_hint(err, "Inference-Header-Content-Length must count the JSON header only; "
                       "the binary pieces follow it in input order");
        return false;
    }
    if ((size_t)n != want) {
        api_error_set(err, API_SHAPE_MISMATCH, "inputs[%zu] is %zu %s elements (%zu bytes) but "
                      "binary_data_size says %lld bytes", i, t->count,
                      api_v2_dtype_name(t->dtype), want, (long long)n);
        api_error_at(err, "/inputs/%zu/parameters/binary_data_size", i);
        return false;
    }
    t->bytes = bin + *used;
    *used += want;
    return true;
}

/* How many leaves nested data has, at most limit + 1. */
static size_t count_leaves(const json_t *node, size_t limit, size_t depth)
{
    if (!json_is_array(node))
        return 1;
    if (depth > API_V2_MAX_RANK)
        return limit + 1;
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(node) && n <= limit; i++)
        n += count_leaves(json_array_get(node, i), limit, depth + 1);
    return n;
}

/* JSON data holds as many elements as the shape says (flat or nested, row-major). */
static bool check_count(const struct api_v2_tensor *t, struct api_error *err)
{
    size_t leaves = count_leaves(t->data, t->count, 0);
    if (leaves == t->count)
        return true;
    api_error_set(err, API_SHAPE_MISMATCH, "inputs[%zu] (%.64s) has shape of %zu elements "
                  "but its data %s", t->index, t->name, t->count,
                  leaves > t->count ? API_TR("has more") : API_TR("has fewer"));
    api_error_at(err, "/inputs/%zu/data", t->index);
    api_error_hint(err, "data lists the elements row-major, flat or nested; its count "
                   "must be the product of shape");
    return false;
}

static bool read_input(const json_t *node, size_t i, const unsigned char *bin, size_t bin_len,
                       size_t *used, size_t max_cells, struct api_v2_tensor *t,
                       struct api_error *err)
{
    if (!json_is_object(node)) {
        api_error_set(err, API_INVALID_VALUE, "inputs[%zu] is not an object", i);
        api_error_at(err, "/inputs/%zu", i);
        return false;
    }
    static const struct api_field known[] = {
        { "name", "the input's name" }, { "shape", "its sizes" },
        { "datatype", "FP32, FP64, ..." }, { "parameters", "binary_data_size" },
        { "data", "its numbers, row-major" },
    };
    char prefix[48];
    snprintf(prefix, sizeof prefix, "/inputs/%zu", i);
    if (!api_check_fields(node, prefix, known, 5, err))
        return false;
    t->index = i;
    t->name = json_string_value(json_object_get(node, "name"));
    if (t->name == NULL) {
        api_error_set(err, API_MISSING_FIELD, "inputs[%zu] has no name", i);
        api_error_at(err, "/inputs/%zu/name", i);
        return false;
    }
    if (!read_dtype(json_object_get(node, "datatype"), i, &t->dtype, err) ||
        !read_shape(json_object_get(node, "shape"), i, max_cells, t, err))
        return false;
    const json_t *params = json_object_get(node, "parameters");
    if (params != NULL && !json_is_object(params)) {
        api_error_set(err, API_INVALID_VALUE, "inputs[%zu].parameters is not an object", i);
        api_error_at(err, "/inputs/%zu/parameters", i);
        return false;
    }
    if (!take_binary(params, i, bin, bin_len, used, t, err))
        return false;
    t->data = json_object_get(node, "data");
    if (t->bytes != NULL && t->data != NULL) {
        api_error_set(err, API_INVALID_VALUE, "inputs[%zu] has both data and binary_data_size", i);
        api_error_at(err, "/inputs/%zu/data", i);
        return false;
    }
    if (t->bytes == NULL && !json_is_array(t->data)) {
        api_error_set(err, t->data == NULL ? API_MISSING_FIELD : API_NOT_A_MATRIX,
                      "inputs[%zu] has neither a data list nor binary_data_size", i);
        api_error_at(err, "/inputs/%zu/data", i);
        return false;
    }
    return t->bytes != NULL || check_count(t, err);
}

/* An output's parameters.datatype, when given: one of API_V2_OUTPUT_TYPES. */
static bool read_output_dtype(const json_t *node, size_t i, struct api_v2_wanted *w,
                              struct api_error *err)
{
    if (node == NULL)
        return true;
    const char *s = json_string_value(node);
    for (int t = 0; s != NULL && t < API_V2_DTYPE_COUNT; t++)
        if ((API_V2_OUTPUT_TYPES & (1u << t)) && strcmp(s, dtypes[t].name) == 0) {
            w->has_dtype = true;
            w->dtype = (enum api_v2_dtype)t;
            return true;
        }
    api_error_set(err, API_INVALID_VALUE, "outputs[%zu].parameters.datatype is not one an "
                  "output is sent in: FP64, FP32, FP16 or BF16", i);
    api_error_at(err, "/outputs/%zu/parameters/datatype", i);
    api_error_hint(err, "the math is float64; the datatype only says how each number is sent "
                   "(rounded to nearest, ties to even)");
    return false;
}

static bool read_outputs(const json_t *node, struct api_v2_infer *r, struct api_error *err)
{
    if (node == NULL)
        return true;
    size_t n = json_array_size(node);
    if (!json_is_array(node) || n > API_V2_MAX_TENSORS) {
        api_error_set(err, API_INVALID_VALUE, "outputs must be a list of at most %d outputs",
                      API_V2_MAX_TENSORS);
        api_error_at(err, "/outputs");
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(node, i);
        const char *name = json_string_value(json_object_get(o, "name"));
        const json_t *params = json_object_get(o, "parameters");
        if (name == NULL || (params != NULL && !json_is_object(params))) {
            api_error_set(err, API_INVALID_VALUE, "outputs[%zu] needs a name (and parameters, "
                          "if any, as an object)", i);
            api_error_at(err, "/outputs/%zu", i);
            return false;
        }
        const json_t *b = json_object_get(params, "binary_data");
        if (b != NULL && !json_is_boolean(b)) {
            api_error_set(err, API_INVALID_VALUE, "outputs[%zu].parameters.binary_data is not "
                          "true or false", i);
            api_error_at(err, "/outputs/%zu/parameters/binary_data", i);
            return false;
        }
        if (!read_output_dtype(json_object_get(params, "datatype"), i, &r->outputs[i], err))
            return false;
        r->outputs[i].name = name;
        r->outputs[i].index = i;
        r->outputs[i].binary = b != NULL ? json_is_true(b) : r->binary_output;
    }
    r->n_outputs = n;
    return true;
}

bool api_v2_read_infer(const json_t *doc, const unsigned char *bin, size_t bin_len,
                       size_t max_tensor_cells, struct api_v2_infer *r, struct api_error *err)
{
    memset(r, 0, sizeof *r);
    if (!json_is_object(doc)) {
        api_error_set(err, API_INVALID_VALUE, "the inference request is not a JSON object");
        api_error_at(err, "%s", "");
        return false;
    }
    static const struct api_field known[] = {
        { "id", "echoed in the answer" }, { "parameters", "scale, causal, heads, ..." },
        { "inputs", "the tensors" }, { "outputs", "the outputs asked for" },
    };
    if (!api_check_fields(doc, "", known, 4, err))
        return false;
    const json_t *id = json_object_get(doc, "id");
    if (id != NULL && !json_is_string(id)) {
        api_error_set(err, API_INVALID_VALUE, "id is not a string");
        api_error_at(err, "/id");
        return false;
    }
    r->id = json_string_value(id);
    r->parameters = json_object_get(doc, "parameters");
    if (r->parameters != NULL && !json_is_object(r->parameters)) {
        api_error_set(err, API_INVALID_VALUE, "parameters is not an object");
        api_error_at(err, "/parameters");
        return false;
    }
    if (!api_v2_param_bool(r->parameters, "binary_data_output", &r->binary_output, err))
        return false;
    const json_t *inputs = json_object_get(doc, "inputs");
    size_t n = json_array_size(inputs);
    if (!json_is_array(inputs) || n == 0 || n > API_V2_MAX_TENSORS) {
        api_error_set(err, inputs == NULL ? API_MISSING_FIELD : API_INVALID_VALUE,
                      "inputs must be a list of 1 to %d tensors", API_V2_MAX_TENSORS);
        api_error_at(err, "/inputs");
        return false;
    }
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        if (!read_input(json_array_get(inputs, i), i, bin, bin_len, &used, max_tensor_cells,
                        &r->inputs[i], err))
            return false;
        for (size_t j = 0; j < i; j++)
            if (strcmp(r->inputs[j].name, r->inputs[i].name) == 0) {
                api_error_set(err, API_INVALID_VALUE, "inputs[%zu] repeats the name %.64s", i,
                              r->inputs[i].name);
                api_error_at(err, "/inputs/%zu/name", i);
                return false;
            }
    }
    r->n_inputs = n;
    if (used != bin_len) {
        api_error_set(err, API_INVALID_VALUE, "%zu bytes follow the binary inputs that no "
                      "input's binary_data_size accounts for", bin_len - used);
        api_error_at(err, "/inputs");
        api_error_hint(err, "each binary input needs parameters.binary_data_size, and "
                       "Inference-Header-Content-Length the JSON header's length");
        return false;
    }
    return read_outputs(json_object_get(doc, "outputs"), r, err);
}

const struct api_v2_tensor *api_v2_input(const struct api_v2_infer *r, const char *name)
{
    for (size_t i = 0; i < r->n_inputs; i++)
        if (strcmp(r->inputs[i].name, name) == 0)
            return &r->inputs[i];
    return NULL;
}

/* ---- the numbers ---- */

static bool is_float(enum api_v2_dtype t)
{
    return t == API_V2_FP32 || t == API_V2_FP64 || t == API_V2_FP16 || t == API_V2_BF16;
}

static bool bad_cell(const struct api_v2_tensor *t, const char *where, const char *what,
                     struct api_error *err)
{
    api_error_set(err, API_NOT_A_NUMBER, "inputs[%zu] (%.64s, %s) has %s at %s", t->index,
                  t->name, api_v2_dtype_name(t->dtype), what, where[0] ? where : "its data");
    api_error_at(err, "/inputs/%zu/data%s", t->index, where);
    if (t->dtype == API_V2_BOOL)
        api_error_hint(err, "BOOL data is true or false");
    else if (!is_float(t->dtype))
        api_error_hint(err, "%s data is integers; send FP32 or FP64 for fractions",
                       api_v2_dtype_name(t->dtype));
    return false;
}

/*
 * An FP16 or BF16 cell sent as a JSON number must be one of the format's values: the
 * kernel under test reads those values, so a number between two of them is refused,
 * with the nearest one in the hint, rather than rounded where the client cannot see.
 */
static bool half_exact(const struct api_v2_tensor *t, const char *where, double x,
                       struct api_error *err)
{
    uint16_t bits;
    bool fp16 = t->dtype == API_V2_FP16;
    bool fits = fp16 ? api_double_to_fp16(x, &bits) : api_double_to_bf16(x, &bits);
    double nearest = fp16 ? api_fp16_to_double(bits) : api_bf16_to_double(bits);
    if (fits && nearest == x)
        return true;
    const char *name = api_v2_dtype_name(t->dtype);
    char sent[API_NUMBER_MAX], near[API_NUMBER_MAX];
    api_format_double(x, sent);
    api_format_double(nearest, near);
    api_error_set(err, API_INVALID_VALUE, "inputs[%zu] (%.64s, %s) has %s at %s, which %s "
                  "does not hold exactly", t->index, t->name, name, sent,
                  where[0] ? where : "its data", name);
    api_error_at(err, "/inputs/%zu/data%s", t->index, where);
    if (fits)
        api_error_hint(err, "the nearest %s value is %s: send that (the kernel reads it), or "
                       "send the tensor as FP32 or FP64", name, near);
    else
        api_error_hint(err, "%s holds at most %g in magnitude; send the tensor as FP32 or FP64",
                       name, fp16 ? API_FP16_MAX : API_BF16_MAX);
    return false;
}

/* One JSON cell as the datatype reads it; a kernel's answer (cells NAN_WORDS or
 * LSE_WORDS) may hold null and the words for NaN and the infinities in a float tensor. */
static bool json_cell(const struct api_v2_tensor *t, enum api_cells cells, const json_t *c,
                      const char *where, double *out, struct api_error *err)
{
    if (is_float(t->dtype) && api_non_finite_word(c, cells, out))
        return true;
    if (is_float(t->dtype) && cells >= API_CELLS_NAN_WORDS && !json_is_number(c)) {
        bad_cell(t, where, API_TR("a value that is neither a number nor a word for NaN or an "
                                  "infinity"), err);
        api_error_hint(err, "a kernel's answer holds numbers, null (NaN), or the strings \"NaN\", "
                       "\"Infinity\" and \"-Infinity\"");
        return false;
    }
    switch (t->dtype) {
    case API_V2_BOOL:
        if (!json_is_boolean(c))
            return bad_cell(t, where, "a value that is not true or false", err);
        *out = json_is_true(c) ? 1.0 : 0.0;
        return true;
    case API_V2_FP32:
    case API_V2_FP64:
        if (!json_is_number(c))
            return bad_cell(t, where, "a value that is not a number", err);
        *out = json_number_value(c);
        if (t->dtype == API_V2_FP32)
            *out = (double)(float)*out;
        if (!isfinite(*out))
            return bad_cell(t, where, "a number beyond FP32's range", err);
        return true;
    case API_V2_FP16:
    case API_V2_BF16:
        if (!json_is_number(c))
            return bad_cell(t, where, "a value that is not a number", err);
        *out = json_number_value(c);
        return half_exact(t, where, *out, err);
    default:
        if (!json_is_integer(c))
            return bad_cell(t, where, "a value that is not an integer", err);
        *out = (double)json_integer_value(c);
        return true;
    }
}

/* Walks nested data depth-first (its leaf count already checked); *n counts cells. */
static bool json_cells(const struct api_v2_tensor *t, enum api_cells cells, const json_t *node,
                       char *where, size_t where_len, double *out, size_t *n,
                       struct api_error *err)
{
    if (!json_is_array(node)) {
        if (!json_cell(t, cells, node, where, &out[*n], err))
            return false;
        (*n)++;
        return true;
    }
    size_t len = strlen(where);
    for (size_t i = 0; i < json_array_size(node); i++) {
        snprintf(where + len, where_len - len, "/%zu", i);
        if (!json_cells(t, cells, json_array_get(node, i), where, where_len, out, n, err))
            return false;
    }
    where[len] = '\0';
    return true;
}


static bool read_json(const struct api_v2_tensor *t, enum api_cells cells, double *out,
                      struct api_error *err)
{
    char where[API_V2_MAX_RANK * 24 + 8] = "";
    size_t n = 0;
    return json_cells(t, cells, t->data, where, sizeof where, out, &n, err);
}

/* Little-endian loads, whatever the host's order. */
static uint64_t load_le(const unsigned char *p, size_t size)
{
    uint64_t v = 0;
    for (size_t b = size; b-- > 0;)
        v = (v << 8) | p[b];
    return v;
}

static double binary_cell(enum api_v2_dtype t, const unsigned char *p)
{
    uint64_t v = load_le(p, api_v2_dtype_size(t));
    switch (t) {
    case API_V2_BOOL:
    case API_V2_UINT8: return (double)(uint8_t)v;
    case API_V2_INT8: return (double)(int8_t)(uint8_t)v;
    case API_V2_INT32: return (double)(int32_t)(uint32_t)v;
    case API_V2_INT64: return (double)(int64_t)v;
    case API_V2_FP16: return api_fp16_to_double((uint16_t)v);
    case API_V2_BF16: return api_bf16_to_double((uint16_t)v);
    case API_V2_FP32: {
        uint32_t u = (uint32_t)v;
        float f;
        memcpy(&f, &u, sizeof f);
        return (double)f;
    }
    default: {
        double d;
        memcpy(&d, &v, sizeof d);
        return d;
    }
    }
}

/* Whether this host stores numbers little-endian, as the wire does. */
static bool host_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static bool read_binary(const struct api_v2_tensor *t, enum api_cells cells, double *out,
                        struct api_error *err)
{
    /* a kernel's answer keeps its NaN and infinities: they are what is judged */
    bool finite_only = cells < API_CELLS_NAN_WORDS;
    size_t size = api_v2_dtype_size(t->dtype);
    /* FP64 on a little-endian host is the wire's bytes as they are: one copy. */
    bool as_is = t->dtype == API_V2_FP64 && host_little_endian();
    if (as_is)
        memcpy(out, t->bytes, t->count * sizeof *out);
    for (size_t i = 0; i < t->count; i++) {
        if (!as_is)
            out[i] = binary_cell(t->dtype, t->bytes + i * size);
        if (finite_only && !isfinite(out[i])) {
            api_error_set(err, API_NOT_A_NUMBER, "inputs[%zu] (%.64s) element %zu is not a "
                          "finite number", t->index, t->name, i);
            api_error_at(err, "/inputs/%zu/parameters/binary_data_size", t->index);
            api_error_hint(err, "NaN and infinity cannot be computed with");
            return false;
        }
        if (t->dtype == API_V2_BOOL && out[i] != 0.0 && out[i] != 1.0) {
            api_error_set(err, API_INVALID_VALUE, "inputs[%zu] (%.64s) element %zu is the byte "
                          "%g: BOOL is one byte of 0 or 1", t->index, t->name, i, out[i]);
            api_error_at(err, "/inputs/%zu/parameters/binary_data_size", t->index);
            return false;
        }
    }
    return true;
}

bool api_v2_tensor_read(const struct api_v2_tensor *t, enum api_cells cells, double *out,
                        struct api_error *err)
{
    if (!(t->bytes != NULL ? read_binary(t, cells, out, err) : read_json(t, cells, out, err)))
        return false;
    if (cells != API_CELLS_FLAGS)
        return true;
    for (size_t i = 0; i < t->count; i++)
        if (out[i] != 0.0 && out[i] != 1.0) {
            api_error_set(err, API_INVALID_VALUE, "inputs[%zu] (%.64s) element %zu is %g: a "
                          "mask is 0 or 1 (false or true)", t->index, t->name, i, out[i]);
            api_error_at(err, "/inputs/%zu/data", t->index);
            api_error_hint(err, "for an additive mask (0 / -1e9) send it as BIAS");
            return false;
        }
    return true;
}

/* ---- parameters ---- */

static bool bad_param(const char *name, const char *want, struct api_error *err)
{
    api_error_set(err, API_INVALID_VALUE, "parameters.%.48s must be %s", name, want);
    api_error_at(err, "/parameters/%.48s", name);
    return false;
}

bool api_v2_param_number(const json_t *params, const char *name, double *out, bool *given,
                         struct api_error *err)
{
    const json_t *p = json_object_get(params, name);
    if (given != NULL)
        *given = p != NULL;
    if (p == NULL)
        return true;
    if (!json_is_number(p) || !isfinite(json_number_value(p)))
        return bad_param(name, API_TR("a number"), err);
    *out = json_number_value(p);
    return true;
}

bool api_v2_param_bool(const json_t *params, const char *name, bool *out, struct api_error *err)
{
    const json_t *p = json_object_get(params, name);
    if (p == NULL)
        return true;
    if (!json_is_boolean(p))
        return bad_param(name, API_TR("true or false"), err);
    *out = json_is_true(p);
    return true;
}

bool api_v2_param_string(const json_t *params, const char *name, const char **out,
                         struct api_error *err)
{
    const json_t *p = json_object_get(params, name);
    if (p == NULL)
        return true;
    if (!json_is_string(p))
        return bad_param(name, API_TR("a string"), err);
    *out = json_string_value(p);
    return true;
}

/* What tritonclient and KServe's clients add for themselves. */
static bool client_reserved(const char *name)
{
    static const char *const exact[] = { "timeout", "priority", "headers", "binary_data_output" };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(name, exact[i]) == 0)
            return true;
    return strncmp(name, "sequence_", 9) == 0 || strncmp(name, "triton_", 7) == 0;
}

bool api_v2_check_params(const json_t *params, const char *const *known, size_t n_known,
                         struct api_error *err)
{
    const char *name;
    json_t *value;
    json_object_foreach((json_t *)params, name, value) {
        (void)value;
        if (client_reserved(name))
            continue;
        bool found = false;
        for (size_t i = 0; i < n_known && !found; i++)
            found = strcmp(name, known[i]) == 0;
        if (found)
            continue;
        api_error_set(err, API_UNKNOWN_FIELD, "parameters.%.48s is not a parameter of this "
                      "model", name);
        api_error_at(err, "/parameters/%.48s", name);
        const char *near = api_close_name(name, known, n_known);
        if (near != NULL)
            api_error_hint(err, "did you mean %s?", near);
        return false;
    }
    return true;
}
