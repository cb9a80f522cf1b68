/*
 * api/request/precision.h — `precision`: {"format": "float16" | "bfloat16" | "float32",
 * "accumulate": "float32" (default) | "same"}, the format a kernel computes in and where
 * its sums go (core/precision.h has the rules).
 *
 * Common names for the formats ("fp16", "half", "bf16", "fp32", "float") are refused
 * with the name meant, and so is an accumulator named by a format ("float16" where
 * "same" is meant): a reference that guessed would hide the typo in a kernel's test.
 *
 * Not here: running it (the endpoints), the report (endpoints/precision.h).
 */
#ifndef API_REQUEST_PRECISION_H
#define API_REQUEST_PRECISION_H

#include <stdbool.h>

#include <jansson.h>

#include "api/http/problem.h"
#include "core/precision.h"

struct api_precision {
    bool on;                    /* `precision` was given */
    struct attn_precision rules; /* its format and accumulator, when on */
};

/*
 * Reads `precision` from doc (absent or null: off) under prefix. A 422 names the
 * member at fault (/precision/format, /precision/accumulate) and the name meant.
 */
bool api_precision_read(const json_t *doc, const char *prefix, struct api_precision *out,
                        struct api_error *err);

/*
 * The V2 parameters precision (the format) and accumulate, read by the same rules: a 422
 * (a V2 400) at /parameters/precision or /parameters/accumulate; accumulate without
 * precision is one too.
 */
bool api_precision_read_v2(const json_t *params, struct api_precision *out,
                           struct api_error *err);

/* "float32" or "same", as the request named the accumulator. */
const char *api_precision_accumulate_name(const struct attn_precision *p);

#endif
