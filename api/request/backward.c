/*
 * api/request/backward.c — the `backward` object's two forms (see backward.h).
 */
#include "api/request/backward.h"

#include "api/request/fields.h"

bool api_read_backward_source(const json_t *node, const char *ptr, const json_t **d_out,
                              uint64_t *seed, struct api_error *err)
{
    static const struct api_field fields[] = {
        { "grad_output", "dO = dL/d(output), the output's shape" },
        { "seed", "dO from stream 8 of the generator, amplitude 1" },
    };
    char at[200];
    if (!json_is_object(node)) {
        api_error_set(err, API_INVALID_VALUE, "backward must be an object, not %s",
                      api_json_kind(node));
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "e.g. {\"seed\": 0}, or {\"grad_output\": dO} of the output's shape");
        return false;
    }
    if (!api_check_fields(node, ptr, fields, 2, err))
        return false;
    const json_t *given = api_member(node, "seed");
    *d_out = api_member(node, "grad_output");
    if ((*d_out == NULL) == (given == NULL)) {
        api_error_set(err, *d_out == NULL ? API_MISSING_FIELD : API_INVALID_VALUE,
                      "backward takes grad_output or seed: exactly one");
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "grad_output is dO itself; seed makes it from the generator "
                       "(stream 8, amplitude 1)");
        return false;
    }
    if (given == NULL)
        return true;
    long long s;
    API_FIELD_POINTER(at, ptr, "seed");
    if (!api_read_int_range(given, at, "backward.seed", 0, INT64_MAX, &s, err)) {
        api_error_hint(err, "the seed is an integer >= 0: the same seed makes the same dO");
        return false;
    }
    *seed = (uint64_t)s;
    return true;
}

bool api_backward_failed(enum attn_status st, struct api_error *err)
{
    if (st == ATTN_EOVERFLOW) {
        api_error_set(err, API_NUMERIC_OVERFLOW, "a gradient is not finite: dO or v is too "
                      "large for its products");
        api_error_at(err, "/backward");
        api_error_hint(err, "scale dO (backward.grad_output) or v down: dP = dO @ V^T must stay "
                       "within the largest double (~1.8e308)");
    } else if (st == ATTN_ENOMEM) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "backward");
    } else {
        api_error_set(err, API_INTERNAL, "the backward pass failed: %s", attn_status_str(st));
    }
    return false;
}
