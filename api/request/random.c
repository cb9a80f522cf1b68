/*
 * api/request/random.c — the documented inputs of random.h, drawn from core's one
 * generator (core/random.h) so dropout and `random` read the same numbers.
 */
#include "api/request/random.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "api/request/fields.h"
#include "core/random.h"

/* Every number filled since the process started, over all threads (for tests). */
static atomic_ullong numbers_filled;

unsigned long long api_random_numbers_filled(void)
{
    return atomic_load_explicit(&numbers_filled, memory_order_relaxed);
}

void api_random_fill(double *out, size_t n, uint64_t seed, enum api_random_stream stream,
                     double amplitude)
{
    atomic_fetch_add_explicit(&numbers_filled, n, memory_order_relaxed);
    for (size_t k = 0; k < n; k++) {
        double u = attn_random_unit(seed, (unsigned)stream, (uint64_t)k);
        out[k] = (2.0 * u - 1.0) * amplitude;
    }
}

bool api_random_check_object(const json_t *node, const char *ptr, const char *example,
                             const struct api_field *known, size_t n_known,
                             struct api_error *err)
{
    if (!json_is_object(node)) {
        api_error_set(err, API_INVALID_VALUE, "random is %s; it must be an object such as %s",
                      api_json_kind(node), example);
        api_error_at(err, "%s", ptr);
        return false;
    }
    return api_check_fields(node, ptr, known, n_known, err);
}

bool api_random_read_seed(const json_t *node, const char *ptr, uint64_t *seed,
                          struct api_error *err)
{
    char seed_ptr[160];
    const json_t *value = api_member(node, "seed");
    API_FIELD_POINTER(seed_ptr, ptr, "seed");
    if (value == NULL) {
        api_error_set(err, API_MISSING_FIELD, "random.seed is required: the same seed gives "
                      "the same numbers");
        api_error_at(err, "%s", seed_ptr);
        return false;
    }
    /* jansson keeps integers exact up to 2^63-1; a real or a negative seed is refused. */
    if (!json_is_integer(value) || json_integer_value(value) < 0) {
        api_error_set(err, API_INVALID_VALUE, "random.seed must be an integer from 0 to "
                      "9223372036854775807, not %s", api_json_kind(value));
        api_error_at(err, "%s", seed_ptr);
        return false;
    }
    *seed = (uint64_t)json_integer_value(value);
    return true;
}

bool api_random_fill_matrix(struct attn_matrix *m, uint64_t seed, enum api_random_stream stream,
                            double amplitude, struct api_error *err)
{
    if (m->data != NULL)
        return true;
    size_t n = m->rows * m->cols; /* within --max-cells: checked by the parse */
    double *data = malloc(n * sizeof *data);
    if (data == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %zu random numbers", n);
        return false;
    }
    api_random_fill(data, n, seed, stream, amplitude);
    *m = attn_matrix_view(data, m->rows, m->cols);
    return true;
}
